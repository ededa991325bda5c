// `/v1/docs`: Swagger UI served from assets embedded in the binary (works with no internet access).
import { Elysia } from "elysia";
import indexHtml from "../docs/index.html" with { type: "text" };
import initJs from "../docs/init.js" with { type: "text" };
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import faviconPath from "swagger-ui-dist/favicon-32x32.png" with { type: "file" };

const asset = (path: string, type: string) => () =>
  new Response(Bun.file(path), { headers: { "content-type": type, "cache-control": "public, max-age=86400" } });

export const docsRoutes = new Elysia({ name: "docs-routes" })
  .get("/docs", () => new Response(indexHtml as unknown as string, { headers: { "content-type": "text/html; charset=utf-8" } }), {
    detail: {
      summary: "Interactive documentation",
      description: "Swagger UI for this API's OpenAPI document (/v1/openapi.json); its assets are served under /v1/docs, no internet access needed.",
      tags: ["meta"],
      responses: { 200: { description: "The Swagger UI page", content: { "text/html": { schema: { type: "string" } } } } } as never,
    },
  })
  .get("/docs/init.js", () => new Response(initJs, { headers: { "content-type": "text/javascript; charset=utf-8" } }), { detail: { hide: true } })
  .get("/docs/swagger-ui.css", asset(cssPath, "text/css; charset=utf-8"), { detail: { hide: true } })
  .get("/docs/swagger-ui-bundle.js", asset(bundlePath, "text/javascript; charset=utf-8"), { detail: { hide: true } })
  .get("/docs/favicon.png", asset(faviconPath, "image/png"), { detail: { hide: true } });
