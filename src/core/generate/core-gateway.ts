// openclaw/openclaw.json: the gateway's configuration. Without one the gateway refuses to start
// ("Missing config … set gateway.mode=local"), and bound to the container's network (`lan`, so
// the host port and the proxy reach it) it also refuses to start until its Control UI has a list
// of allowed browser origins. The gateway checks its configuration strictly, so only settings it
// documents are written; the token stays in `.env` (OPENCLAW_GATEWAY_TOKEN in compose).
import type { FileMap, GenContext } from "./context.ts";
import { hasProxy, proxiedUrl, webServices } from "./context.ts";

export const CORE_CONFIG = "openclaw/openclaw.json";
/** Outside the gateway's state volume: the file is the bundle's, mounted read-only. */
export const CORE_CONFIG_TARGET = "/etc/openclaw/openclaw.json";
/** The port the gateway listens on inside its container (the core entry's command says so too). */
const GATEWAY_PORT = 18789;

/** Browser origins of the Control UI: this machine at the published port, and the proxy's URL. */
export function controlUiOrigins(ctx: GenContext): string[] {
  const published = ctx.stack.ports.get("core")?.find((p) => p.container === GATEWAY_PORT);
  const origins = published ? [`http://localhost:${published.host}`, `http://127.0.0.1:${published.host}`] : [];
  if (hasProxy(ctx) && webServices(ctx).some((w) => w.id === "core")) origins.push(proxiedUrl(ctx, "core"));
  return origins;
}

export function coreGatewayFiles(ctx: GenContext): FileMap {
  const config = {
    gateway: {
      mode: "local",
      bind: "lan",
      port: GATEWAY_PORT,
      controlUi: { allowedOrigins: controlUiOrigins(ctx) },
    },
  };
  return { [CORE_CONFIG]: JSON.stringify(config, null, 2) + "\n" };
}
