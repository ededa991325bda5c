// skills/<id>/SKILL.md for every skill of the selected packs and resolved services; the core
// gateway mounts ./skills where the agent reads them.
import type { FileMap, GenContext } from "./context.ts";

export function skillIds(ctx: GenContext): string[] {
  const ids = new Set<string>();
  for (const packId of ctx.skillPacks) for (const k of ctx.catalog.packsById.get(packId)?.skills ?? []) ids.add(k);
  for (const s of ctx.stack.services) for (const k of s.skills) ids.add(k);
  return [...ids].sort();
}

/** `{{port <service> <container port>}}` in a skill: the host port this stack publishes that
 *  port on. Catalog host ports may clash (8080, 3000, 9000 are common), and the resolver moves
 *  the later service's, so a skill cannot name a fixed one. */
export const PORT_TOKEN = /\{\{port ([a-z0-9-]+) (\d+)\}\}/g;

function withHostPorts(ctx: GenContext, markdown: string): string {
  return markdown.replace(PORT_TOKEN, (token, id: string, container: string) => {
    const port = Number(container);
    const host = ctx.stack.ports.get(id)?.find((p) => p.container === port)?.host ?? ctx.catalog.servicesById.get(id)?.ports.find((p) => p.container === port)?.host;
    return host === undefined ? token : String(host);
  });
}

/** On bare metal, a call into the container of a natively installed service (`docker compose
 *  exec -T redis redis-cli`) becomes its host form: compose has no such service. */
function withNativeCalls(ctx: GenContext, markdown: string): string {
  for (const id of ctx.nativeIds) {
    const commands = ctx.catalog.servicesById.get(id)?.native?.hostCommands ?? {};
    for (const [command, host] of Object.entries(commands)) markdown = markdown.replaceAll(`docker compose exec -T ${id} ${command}`, host);
  }
  return markdown;
}

export function skillFiles(ctx: GenContext): FileMap {
  const files: FileMap = {};
  const ids = skillIds(ctx);
  const skills = ids.map((id) => ctx.catalog.skills.get(id)!);
  for (const [i, id] of ids.entries()) files[`skills/${id}/SKILL.md`] = withNativeCalls(ctx, withHostPorts(ctx, skills[i]!.markdown));
  const index = ids.map((id, i) => `- [${id}](${id}/SKILL.md): ${skills[i]!.description}`);
  const markdowns = skills.map((skill) => skill.markdown);
  const tools = toolsUsed(markdowns);
  const notes = [
    tools.length ? `Besides curl, the calls in these skills use ${tools.map((t) => `\`${t}\``).join(", ")}. The gateway's image may lack them: add them to an image of your own (CORE_IMAGE in .env), or run those calls where the tools are.` : "",
    markdowns.some((md) => HOST_CALL.test(md)) ? "Calls written as `docker compose …` run on the host, from the bundle directory: the gateway has no Docker access." : "",
    // The install lets the containers in only for the stack's own (database, user) pairs.
    ctx.nativeIds.has("postgresql") ? "PostgreSQL runs on the host here: containers, the gateway among them, may sign in only to the stack's own databases, each as its own user. A database or user a skill creates needs its own lines in the cluster's `pg_hba.conf` (`host <database> <user> 172.16.0.0/12 scram-sha-256`, and the same for 192.168.0.0/16), then `systemctl reload postgresql`." : "",
  ].filter(Boolean);
  files["skills/README.md"] = `# Skills of ${ctx.projectName}\n\nThe gateway reads these from /home/node/.openclaw/skills.${notes.length ? `\n\n${notes.join(" ")}` : ""}\n\n${index.join("\n") || "No skills for this selection."}\n`;
  return files;
}

/** Command-line clients the skills call besides curl. */
const CLIENT_TOOLS = ["jq", "psql", "redis-cli", "valkey-cli", "mc", "aws", "bw", "lk", "git", "ffmpeg", "temporal"];
/** A call made with docker compose: the host's, not the gateway's. */
const HOST_CALL = /^\s*docker compose /m;

/** The CLIENT_TOOLS the shell blocks of `markdowns` run, outside docker compose lines: as a
 *  command (line start, after a pipe, `;`, `&&`, `$(`, `do`, `then`, `xargs`, variable prefixes). */
function toolsUsed(markdowns: string[]): string[] {
  const code = markdowns.flatMap((md) => [...md.matchAll(/```(?:sh|bash|shell)?\n([\s\S]*?)```/g)].map((m) => m[1]!));
  const text = code.join("\n").split("\n").filter((line) => !HOST_CALL.test(line)).join("\n");
  const escape = (tool: string) => tool.replace(/[-]/g, "\\-");
  return CLIENT_TOOLS.filter((tool) => new RegExp(`(^|[|;&(]|\\$\\(|\\b(?:do|then|xargs)\\b)\\s*(?:[A-Z_][A-Z0-9_]*=\\S*\\s+)*${escape(tool)}(\\s|$)`, "m").test(text));
}
