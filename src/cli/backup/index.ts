// stackgen backup create|list|restore
import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "backup", description: "Create, list and restore backups of a stack's volumes and config" },
  subCommands: {
    create: () => import("./create.ts").then((m) => m.default),
    list: () => import("./list.ts").then((m) => m.default),
    restore: () => import("./restore.ts").then((m) => m.default),
  },
});
