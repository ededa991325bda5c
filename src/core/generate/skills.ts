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
  const tools = toolsUsed(ids.map((id) => ctx.catalog.skills.get(id)!.markdown));
  const toolsNote = tools.length
    ? `\n\nBesides curl, the calls in these skills use ${tools.map((t) => `\`${t}\``).join(", ")}. The gateway's image may lack them: add them to an image of your own (CORE_IMAGE in .env), or run those calls where the tools are. Calls written as \`docker compose …\` run on the host, from the bundle directory: the gateway has no Docker access.`
    : "";
  files["skills/README.md"] = `# Skills of ${ctx.projectName}\n\nThe gateway reads these from /home/node/.openclaw/skills.${toolsNote}\n\n${index.join("\n") || "No skills for this selection."}\n`;
  return files;
}

/** Command-line clients the skills call besides curl (a tool at the start of a command line or after a pipe). */
const CLIENT_TOOLS = ["jq", "psql", "redis-cli", "valkey-cli", "mc", "aws", "bw", "lk"];

function toolsUsed(markdowns: string[]): string[] {
  const text = markdowns.join("\n");
  return CLIENT_TOOLS.filter((tool) => new RegExp(`(^|[|;&(]\\s*|\\$\\()${tool.replace("-", "\\-")}\\s`, "m").test(text));
}
