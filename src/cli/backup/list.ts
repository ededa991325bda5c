// stackgen backup list: the stack's backups, newest first, each verified.
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { defineCommand } from "citty";
import { defaultBackupDir } from "../../docker/backup.ts";
import { listBackups } from "../../docker/backup-list.ts";
import { backupFolder, backupFolderArg, dirArg, jsonArg } from "../../docker/cli-support.ts";
import { formatBytes } from "../../docker/format.ts";
import { isEmptyStackDir, loadStack } from "../../docker/stack.ts";
import { green, printJson, printText, progress, red, visible, visibleValue } from "../output.ts";

export default defineCommand({
  meta: { name: "list", description: "List the stack's backups, newest first, and check each one (in a directory with no stack yet: the archives in its backups/)" },
  args: { dir: dirArg, output: backupFolderArg, json: jsonArg },
  async run({ args }) {
    // On a new machine the directory may hold only backups/ with the archives to restore from.
    const root = resolve(args.dir || ".");
    // A directory that is not there is a mistyped --dir (exit 2), not a stack without backups.
    const stack = isEmptyStackDir(root) && existsSync(root) ? undefined : loadStack(root);
    const dir = backupFolder(args.output, defaultBackupDir(root));
    const backups = await listBackups(dir, progress);
    if (args.json) {
      printJson({ directory: dir, backups });
      return;
    }
    if (backups.length === 0) {
      printText(`No backups in ${visible(dir)}`);
      return;
    }
    // Another project's archive verifies, but restore would refuse it here: say so.
    const note = (b: (typeof backups)[number]) =>
      b.problem ? `  (${b.problem})` : !stack ? `  (project ${b.project})` : b.project && b.project !== stack.project ? `  (project ${b.project}: restore refuses it here)` : "";
    // A file name is anyone's to choose, and a problem may quote a member's name: an escape
    // sequence in them must not reach the terminal (shown as \x1b, as in every message).
    const lines = backups.map((b) => `${b.createdAt}  ${formatBytes(b.size).padStart(9)}  ${b.verified ? green("verified") : red("INVALID ")}  ${visibleValue(b.name + note(b))}`);
    printText(lines.join("\n"));
  },
});
