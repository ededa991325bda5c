// stackgen backup create|list|restore|prune
import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "backup", description: "Create, list, restore and prune backups of a stack's volumes and config" },
  subCommands: {
    create: () => import("./create.ts").then((m) => m.default),
    list: () => import("./list.ts").then((m) => m.default),
    restore: () => import("./restore.ts").then((m) => m.default),
    prune: () => import("./prune.ts").then((m) => m.default),
  },
});
