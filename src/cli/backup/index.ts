// stackgen backup create|list|verify|restore|prune
import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "backup", description: "Create, list, verify, restore and prune backups of a stack's volumes and config" },
  subCommands: {
    create: () => import("./create.ts").then((m) => m.default),
    list: () => import("./list.ts").then((m) => m.default),
    verify: () => import("./verify.ts").then((m) => m.default),
    restore: () => import("./restore.ts").then((m) => m.default),
    prune: () => import("./prune.ts").then((m) => m.default),
  },
});
