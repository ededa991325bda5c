// Child process of unit.test.ts: writes a backup whose volume holds `count` empty files (streamed
// to disk, never held whole), verifies it, and prints the RSS the verification left behind.
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { verifyBackupFile, writeArchive } from "../../src/docker/backup.ts";
import { headerBlocks } from "../../src/docker/tar.ts";

const [dir, countText] = process.argv.slice(2) as [string, string];
const count = Number(countText);
const tarPath = join(dir, "many.tar");
const fd = openSync(tarPath, "w");
const hasher = new Bun.CryptoHasher("sha256");
let size = 0;
const put = (bytes: Uint8Array) => {
  writeSync(fd, bytes);
  hasher.update(bytes);
  size += bytes.length;
};
const member = (name: string, type: "file" | "dir") => ({ name, type, mode: type === "dir" ? 0o755 : 0o644, uid: 0, gid: 0, mtime: 0, linkname: "" });
for (const block of headerBlocks(member("proj_many", "dir"), 0)) put(block);
for (let i = 0; i < count; i++) for (const block of headerBlocks(member(`proj_many/d${i % 100}/file-${i}.txt`, "file"), 0)) put(block);
put(new Uint8Array(1024));
closeSync(fd);
const archive = join(dir, "many.tar.gz");
const compose = new TextEncoder().encode("services: {}\n");
await writeArchive(archive, { project: "proj", hot: false, services: [], files: [{ path: "docker-compose.yml", data: compose, mode: 0o644 }], volumes: [{ name: "proj_many", key: "many", path: tarPath, size, sha256: hasher.digest("hex") }] });
Bun.gc(true);
// The peak, not what is left after: writing 5 to clear_refs resets the kernel's high-water mark.
const peakKiB = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))![1]);
writeFileSync("/proc/self/clear_refs", "5");
const before = process.memoryUsage().rss / 1024;
const verified = await verifyBackupFile(archive);
process.stdout.write(JSON.stringify({ volumes: verified.volumes.length, peakGrowthMiB: (peakKiB() - before) / 1024 }));
