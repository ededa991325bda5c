// Starts the two listeners: the API (all /v1 routes) and the UI listener, which serves the web
// UI and answers the same /v1 routes so the page can use relative URLs.
import { createApp, type AppOptions } from "./app.ts";
import uiPage from "../web/index.html";

export interface ServeOptions extends AppOptions {
  port: number;
  uiPort: number;
  host: string;
}

export function startServers(options: ServeOptions) {
  const app = createApp(options);
  const api = Bun.serve({ port: options.port, hostname: options.host, fetch: (req) => app.handle(req) });
  const ui = options.uiPort === 0 ? undefined : Bun.serve({
    port: options.uiPort,
    hostname: options.host,
    routes: { "/": uiPage },
    fetch: (req) => app.handle(req),
  });
  return {
    api,
    ui,
    stop: async () => {
      await api.stop(true);
      await ui?.stop(true);
    },
  };
}
