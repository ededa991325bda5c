// skills/<id>/SKILL.md for every skill of the selected packs and resolved services; the core
// gateway mounts ./skills where the agent reads them.
import type { FileMap, GenContext } from "./context.ts";

export function skillIds(ctx: GenContext): string[] {
  const ids = new Set<string>();
  for (const packId of ctx.skillPacks) for (const k of ctx.catalog.packsById.get(packId)?.skills ?? []) ids.add(k);
  for (const s of ctx.stack.services) for (const k of s.skills) ids.add(k);
  return [...ids].sort();
}

export function skillFiles(ctx: GenContext): FileMap {
  const files: FileMap = {};
  const ids = skillIds(ctx);
  for (const id of ids) files[`skills/${id}/SKILL.md`] = ctx.catalog.skills.get(id)!.markdown;
  const index = ids.map((id) => `- [${id}](${id}/SKILL.md): ${ctx.catalog.skills.get(id)!.description}`);
  files["skills/README.md"] = `# Skills of ${ctx.projectName}\n\nThe gateway reads these from /home/node/.openclaw/skills.\n\n${index.join("\n") || "No skills for this selection."}\n`;
  return files;
}
