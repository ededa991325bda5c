// stackgen backup verify: check one archive whole (as restore does first) and say what it holds.
import { resolve } from "node:path";
import { defineCommand } from "citty";
import { checkBackupFile, verifyBackup, type BackupReport } from "../../docker/backup-list.ts";
import { jsonArg } from "../../docker/cli-support.ts";
import { formatBytes } from "../../docker/format.ts";
import { green, plural, printJson, printText, progress, red, visible, visibleValue } from "../output.ts";

export function renderReport(r: BackupReport): string {
  if (!r.verified) return [`${visibleValue(r.name)}: ${red("INVALID")}, a restore refuses it:`, ...(r.problems ?? []).map((p) => `  ${visibleValue(p)}`)].join("\n");
  const image = (s: NonNullable<BackupReport["services"]>[number]) => (s.image ? `${s.name} (${s.image})` : s.name);
  const volumes = r.volumes?.length ? r.volumes.map((v) => `${v.name} (${formatBytes(v.size)})`).join(", ") : "none";
  return [
    `${visibleValue(r.name)}: ${green("verified")} (${formatBytes(r.size)}; every member matches its sha256)`,
    `Project:  ${r.project}${r.kind ? ` (${r.kind} backup)` : ""}`,
    `Created:  ${r.createdAt} by stackgen ${visibleValue(r.toolVersion ?? "")}, ${r.hot ? "hot: copied while the services ran (a database may not restore cleanly)" : "with the services stopped"}`,
    `Services: ${r.services?.length ? r.services.map((s) => visibleValue(image(s))).join(", ") : "none"}`,
    `Volumes:  ${visibleValue(volumes)}`,
    `Config:   ${plural(r.files?.length ?? 0, "file")}`,
  ].join("\n");
}

export default defineCommand({
  meta: { name: "verify", description: "Check a backup archive whole (every checksum, as restore does first) and show what it holds; exit 1 when it does not verify. Needs no stack and no Docker" },
  args: {
    file: { type: "positional", description: "Backup archive (.tar.gz)", required: true },
    json: jsonArg,
  },
  async run({ args }) {
    const file = resolve(String(args.file));
    checkBackupFile(file);
    const report = await verifyBackup(file, progress);
    if (args.json) printJson(report);
    else printText(renderReport(report));
    if (!report.verified) process.exitCode = 1;
  },
});
