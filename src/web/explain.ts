// Plain-words explanations of the validation codes of SPEC §7, and number formatting.

export const CONFLICT_HELP: Record<string, { title: string; help: string }> = {
  SERVICE_CONFLICT: {
    title: "Services that cannot run together",
    help: "These services do the same job or fight over the same resources. Keep one and remove the other.",
  },
  PORT_CONFLICT: {
    title: "Port that cannot be shared",
    help: "Two services need the same fixed host port (such as 80/443 for a reverse proxy or 53 for DNS), and it cannot be moved. Remove one of them.",
  },
  DEPENDENCY_MISSING: {
    title: "A required service cannot be added",
    help: "A service needs another one that cannot be added here: it conflicts with your selection or is not available for the chosen platform.",
  },
  PLATFORM_INCOMPATIBLE: {
    title: "Not available for this platform",
    help: "A service publishes no image for the chosen CPU platform. Switch the platform in Options or remove the service.",
  },
};

export const WARNING_HELP: Record<string, { title: string; help: string }> = {
  HIGH_MEMORY: {
    title: "High memory use",
    help: "The stack needs more than 4 GB of memory. Make sure the host has room, or drop some services.",
  },
  EXPERIMENTAL_SERVICE: {
    title: "Experimental service",
    help: "This service is experimental: expect rough edges and breaking changes between versions.",
  },
  GPU_REQUIRED: {
    title: "GPU needed on the host",
    // The same code comes with GPU support on (a reminder) and off (a service cannot run without it).
    help: "The host needs an NVIDIA GPU with the NVIDIA Container Toolkit installed. A service that cannot run without one also needs \"Use an NVIDIA GPU\" ticked in Options.",
  },
  EMPTY_STACK: {
    title: "Nothing selected yet",
    help: "Pick a preset, a skill pack or some services to build a stack.",
  },
  PORT_CONFLICT_RESOLVED: {
    title: "A host port was moved",
    help: "Two services wanted the same host port, so the later one now uses the next free port. The generated README lists the final ports.",
  },
};

const FALLBACK = { title: "Note", help: "" };
/** The server's and the catalog's words for the command line and the API, as the page says them:
 *  its own controls, not flags. */
const UI_WORDS: [RegExp, string][] = [
  [/set gpu to false, --no-gpu on the command line/g, "untick \u201cUse an NVIDIA GPU\u201d in Options"],
  [/set gpu to true \(--gpu on the command line\)/g, "tick \u201cUse an NVIDIA GPU\u201d in Options"],
  [/Generate with --domain/g, "Fill in Domain in Options"],
];
export const inPageWords = (text: string): string => UI_WORDS.reduce((out, [from, to]) => out.replace(from, to), text);

export const explainConflict = (code: string) => CONFLICT_HELP[code] ?? { ...FALLBACK, title: code };
export const explainWarning = (code: string) => WARNING_HELP[code] ?? { ...FALLBACK, title: code };

/** "1 service", "2 services": a count with its noun (as the CLI's output.ts says it). */
import { plural } from "../core/words.ts";
export { plural };

/** "3 services and 1 skill pack", "2 services", "1 skill pack": what a selection holds. */
export const selectionWords = (services: number, skillPacks: number): string =>
  [services ? plural(services, "service") : "", skillPacks ? plural(skillPacks, "skill pack") : ""].filter(Boolean).join(" and ");

/** 512 → "512 MB", 2560 → "2.5 GB". */
export function formatMB(mb: number): string {
  if (mb < 1024) return `${Math.round(mb)} MB`;
  const gb = mb / 1024;
  return `${gb >= 10 ? gb.toFixed(0) : gb.toFixed(1).replace(/\.0$/, "")} GB`;
}

/** The ids an import or a link named that the catalog lacks, as one sentence; a long list is cut
 *  short (a link can name thousands). */
export function leftOut(ignored: readonly string[], shown = 10): string {
  if (ignored.length === 0) return "";
  const more = ignored.length > shown ? ` and ${ignored.length - shown} more` : "";
  return ` Not in this catalog or not a choice of this page, left out: ${ignored.slice(0, shown).join(", ")}${more}.`;
}
