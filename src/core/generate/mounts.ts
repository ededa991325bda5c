// The one table of bundle files mounted into containers. The compose generator mounts them and
// the file generators write them, so a file is never written without being mounted (or mounted
// without being written).
import type { GenContext } from "./context.ts";
import { has } from "./context.ts";
import { HEADSCALE_CONFIG } from "./headscale.ts";
import { CORE_CONFIG, CORE_CONFIG_TARGET } from "./core-gateway.ts";

export interface BundleMount {
  /** Path inside the bundle, relative (`./Caddyfile`). */
  source: string;
  target: string;
  readOnly: boolean;
}

export const DOCKER_SOCKET = "/var/run/docker.sock";
export const POSTGRES_INIT_DIR = "postgres/init";
/** Where the official image runs init scripts from (on an empty volume only). */
export const POSTGRES_INIT_TARGET = "/docker-entrypoint-initdb.d";

export const needsPostgresInit = (ctx: GenContext) =>
  has(ctx, "postgresql") && ctx.stack.services.some((s) => (s.databases ?? []).length > 0);

export function bundleMounts(ctx: GenContext): Map<string, BundleMount[]> {
  const m = new Map<string, BundleMount[]>();
  const add = (id: string, source: string, target: string) => {
    if (!m.has(id)) m.set(id, []);
    m.get(id)!.push({ source, target, readOnly: true });
  };
  add("core", "./skills", "/home/node/.openclaw/skills");
  add("core", `./${CORE_CONFIG}`, CORE_CONFIG_TARGET);
  if (has(ctx, "caddy")) add("caddy", "./Caddyfile", "/etc/caddy/Caddyfile");
  if (has(ctx, "traefik")) {
    add("traefik", "./traefik/traefik.yml", "/etc/traefik/traefik.yml");
    add("traefik", "./traefik/dynamic", "/etc/traefik/dynamic");
  }
  if (has(ctx, "prometheus")) add("prometheus", "./prometheus/prometheus.yml", "/etc/prometheus/prometheus.yml");
  if (has(ctx, "grafana")) {
    add("grafana", "./grafana/provisioning", "/etc/grafana/provisioning");
    add("grafana", "./grafana/dashboards", "/var/lib/grafana/dashboards");
  }
  if (needsPostgresInit(ctx)) add("postgresql", `./${POSTGRES_INIT_DIR}`, POSTGRES_INIT_TARGET);
  if (has(ctx, "headscale")) add("headscale", `./${HEADSCALE_CONFIG}`, "/etc/headscale/config.yaml");
  return m;
}
