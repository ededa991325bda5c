// Small formatting helpers for day-2 command output.

/** Human duration with the two largest units: 45s, 12m30s, 3h12m, 2d5h. */
export function formatUptime(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(total / 86400);
  const h = Math.floor((total % 86400) / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (d > 0) return `${d}d${h}h`;
  if (h > 0) return `${h}h${m}m`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/** Uptime of a container from its State.StartedAt; empty when not running. */
export function uptimeOf(running: boolean, startedAt: string | undefined, now = Date.now()): string {
  if (!running || !startedAt) return "";
  const started = Date.parse(startedAt);
  if (!Number.isFinite(started) || started <= 0) return "";
  return formatUptime(now - started);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** "127.0.0.1:8080->80/tcp", or "80/tcp" when not published; duplicates removed. */
export function formatPorts(ports: { IP?: string; PrivatePort: number; PublicPort?: number; Type: string }[]): string[] {
  const out: string[] = [];
  const sorted = [...ports].sort((a, b) => a.PrivatePort - b.PrivatePort || (a.PublicPort ?? 0) - (b.PublicPort ?? 0) || Number(a.IP?.includes(":") ?? false) - Number(b.IP?.includes(":") ?? false));
  for (const p of sorted) {
    const text = p.PublicPort ? `${p.IP && p.IP.includes(":") ? `[${p.IP}]` : (p.IP ?? "0.0.0.0")}:${p.PublicPort}->${p.PrivatePort}/${p.Type}` : `${p.PrivatePort}/${p.Type}`;
    if (!out.includes(text)) out.push(text);
  }
  return out;
}

/** How often long copies say how far they are. */
export const PROGRESS_EVERY_MS = 5000;

/** A counter for a long copy of bytes that says how far it is at most every `everyMs`, the first
 *  time after `everyMs` too, so a quick copy says nothing: "<label>: 1.2 GiB[ of 4.0 GiB]". */
export function byteProgress(say: (line: string) => void, label: string, total?: number, everyMs = PROGRESS_EVERY_MS, now: () => number = Date.now): (bytes: number) => void {
  let done = 0;
  let last = now();
  return (bytes) => {
    done += bytes;
    if (now() - last < everyMs) return;
    last = now();
    say(`${label}: ${formatBytes(done)}${total ? ` of ${formatBytes(total)}` : ""}`);
  };
}
