// End-to-end tests of the web UI: the real servers in-process, driven with Debian's chromium
// through playwright-core. Every test fails on a console error, a page error, a failed request,
// an HTTP error answer or a request to any other origin (the UI must work offline).
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { unzipSync, strFromU8 } from "fflate";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { startServers } from "../../src/api/server.ts";
import { readGuardConfig } from "../../src/api/guard/index.ts";
import { parseEnvValues } from "../../src/core/env-merge.ts";
import { signJwt } from "../../src/core/generate/secrets.ts";
import { generatedSecretNames } from "../../src/core/generate/env.ts";
import { formatMB, plural } from "../../src/web/explain.ts";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
const SCREENSHOTS = join(import.meta.dir, "../../docs/screenshots");
const TEST_TIMEOUT_MS = 60_000;
const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };

if (!haveChromium) {
  if (process.env.CI === "true") {
    test("web UI needs chromium", () => {
      throw new Error(`${CHROMIUM} is missing; install it (apt-get install -y chromium) to run the UI tests`);
    });
  } else {
    console.warn(`SKIP test/web/ui.test.ts: ${CHROMIUM} not found (apt-get install -y chromium)`);
  }
}

type Servers = ReturnType<typeof startServers>;

describe.skipIf(!haveChromium)("web UI", () => {
  let servers: Servers;
  let browser: Browser;
  let base: string;
  let context: BrowserContext | undefined;
  let problems: string[] = [];
  const cleanups: (() => Promise<unknown> | unknown)[] = [];

  beforeAll(async () => {
    // Generous limits: the suite generates more often than the anonymous limit of 10 allows.
    const guardConfig = readGuardConfig({ ...process.env, RATE_LIMIT_GENERATE: "1000", RATE_LIMIT_STANDARD: "10000", API_KEYS: "", LOG_LEVEL: "error" });
    servers = startServers({ port: 0, uiPort: 0, uiAnyPort: true, host: "127.0.0.1", guardConfig });
    base = `http://127.0.0.1:${servers.ui!.port}`;
    const { chromium } = await import("playwright-core");
    // launch() gives every run a fresh temporary profile (user-data-dir) that is deleted on close.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await servers?.stop();
  });

  afterEach(async () => {
    await context?.close();
    context = undefined;
    for (const cleanup of cleanups.splice(0)) await cleanup();
    const found = problems;
    problems = [];
    expect(found).toEqual([]);
  });

  /** A fresh context (own storage) and a loaded page, with every problem recorded; `ready`
   *  false returns as soon as the page is opened, before the catalog has loaded. */
  async function openPage(viewport = WIDE, origin = base, ready = true): Promise<Page> {
    context = await browser.newContext({ viewport, acceptDownloads: true });
    const page = await context.newPage();
    page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => {
      // Chromium reports a streamed fetch whose body the page read to the end with a reader as
      // net::ERR_ABORTED (checked: all bytes arrive, and res.text() on the same answer "finishes").
      // The deploy test checks that the final result line arrived, so a real abort still fails it.
      const readToEnd = new URL(r.url()).pathname === "/v1/deploy" && r.failure()?.errorText === "net::ERR_ABORTED";
      if (!readToEnd) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`); });
    page.on("request", (r) => {
      const url = r.url();
      if (!url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:")) problems.push(`request off the server: ${url}`);
    });
    await page.goto(origin + "/");
    if (!ready) return page;
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    return page;
  }

  /** A second server with its own guard settings (stopped after the test); its UI's origin. */
  function serverWith(guardEnv: Record<string, string>): string {
    const guardConfig = readGuardConfig({ ...process.env, LOG_LEVEL: "error", ...guardEnv });
    const other = startServers({ port: 0, uiPort: 0, uiAnyPort: true, host: "127.0.0.1", guardConfig });
    cleanups.push(() => other.stop());
    return `http://127.0.0.1:${other.ui!.port}`;
  }

  /** Waits until the live validation has answered the current selection. */
  async function settled(page: Page): Promise<void> {
    await page.waitForTimeout(350); // the debounce
    await page.waitForSelector("#summary-body[aria-busy=false] #validity");
  }

  /** Holds the next request to `url` until the function returned is called. */
  async function holdNext(page: Page, url: string): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route(url, async (route) => { await held; await route.continue(); }, { times: 1 });
    return release;
  }

  /** A page that imported `first` (its secrets kept), then added qdrant, its deploy form filled in
   *  for a platform that answers at once. */
  async function importedThenChanged(first: unknown): Promise<Page> {
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "first.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(first)) });
    await page.waitForSelector("#files-message:has-text('Imported first.json')");
    await page.locator("#svc-qdrant").check();
    await settled(page);
    return withDeployForm(page);
  }

  /** A page with redis chosen, its deploy form filled in as in importedThenChanged. */
  async function redisWithDeployForm(): Promise<Page> {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    return withDeployForm(page);
  }

  /** The deploy form filled in, for a platform (faked) that answers at once. */
  async function withDeployForm(page: Page): Promise<Page> {
    await page.fill("#deploy-url", "http://127.0.0.1:9");
    await page.fill("#deploy-key", "k-123456789");
    const result = { type: "result", result: { success: true, steps: [] } };
    await page.route("**/v1/deploy", (route) => route.fulfill({ status: 200, contentType: "application/x-ndjson", body: `${JSON.stringify(result)}\n` }));
    return page;
  }

  /** The .env the preview shows, its secrets revealed. */
  async function previewedEnv(page: Page): Promise<string> {
    await page.click("#preview button[data-path='.env']");
    if ((await page.getAttribute("#reveal-button", "aria-pressed")) === "false") await page.click("#reveal-button");
    return (await page.textContent("#file-content"))!;
  }

  async function shoot(page: Page, view: string, target?: string): Promise<void> {
    if (target) await page.locator(target).evaluate((el) => el.scrollIntoView({ block: "start", behavior: "instant" }));
    const width = page.viewportSize()!.width;
    await page.screenshot({ path: join(SCREENSHOTS, `${view}-${width}.png`) });
  }

  /** Services whose maturity badge reaches past the right edge of their card. */
  const badgesOutside = (page: Page) => page.locator("li.svc").evaluateAll((cards) => cards
    .filter((card) => card.querySelector(".badge")!.getBoundingClientRect().right > card.getBoundingClientRect().right)
    .map((card) => card.getAttribute("data-service")));

  const resolved = (page: Page) => page.locator("#resolved-list li").evaluateAll((els) => els.map((e) => e.getAttribute("data-service")));

  async function apiJson(path: string, body?: unknown): Promise<any> {
    const res = await fetch(base + path, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    return res.json();
  }

  test("loads the whole catalog with a favicon and labelled controls", async () => {
    const page = await openPage();
    const catalog = await apiJson("/v1/services");
    expect(await page.locator("li.svc").count()).toBe(catalog.total);
    expect(await page.locator("#preset-list li").count()).toBe((await apiJson("/v1/presets")).presets.length);
    expect(await page.locator("#pack-list li").count()).toBe((await apiJson("/v1/skills")).packs.length);
    expect(await page.locator("link[rel=icon]").getAttribute("href")).toStartWith("data:image/svg+xml");
    // Empty selection: the EMPTY_STACK warning is explained.
    await expect(page.locator('#warning-list [data-code="EMPTY_STACK"]').textContent()).resolves.toContain("Nothing selected");

    const unlabelled = await page.evaluate(() => Array.from(document.querySelectorAll("input, select, button, textarea"))
      .filter((el) => {
        const labels = (el as HTMLInputElement).labels;
        const named = (labels && labels.length > 0) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || (el.tagName === "BUTTON" && el.textContent!.trim());
        return !named;
      })
      .map((el) => el.outerHTML.slice(0, 80)));
    expect(unlabelled).toEqual([]);

    // A preset card states what the preset resolves to (packs, proxy, dependencies), as the
    // summary will once it is applied, not the preset's own figure.
    for (const preset of (await apiJson("/v1/presets")).presets as any[]) {
      const check = await apiJson("/v1/validate", { services: preset.services, skillPacks: preset.skillPacks, proxy: preset.proxy ?? undefined, gpu: preset.gpu });
      expect(await page.locator(`#preset-list [data-preset="${preset.id}"] .card-facts`).textContent())
        .toStartWith(`${plural(check.resolvedServices.length, "service")} · ${formatMB(check.estimatedMemoryMB)} · `);
    }
    // No maturity badge sticks out of its card, however long the service's name.
    expect(await badgesOutside(page)).toEqual([]);

    // Search and filters narrow the list.
    await page.fill("#service-search", "postgres");
    expect(await page.locator("li.svc:visible").count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('li.svc[data-service="postgresql"]').isVisible()).toBe(true);
    expect(await page.locator('li.svc[data-service="redis"]').isVisible()).toBe(false);
    // The group heading and the maturity badge a card shows are found too.
    const shownFor = async (words: string) => {
      await page.fill("#service-search", words);
      return (await page.locator("li.svc:visible").evaluateAll((els) => els.map((e) => e.getAttribute("data-service")))).sort();
    };
    const vectorCategory = catalog.categories.find((c: any) => /vector/i.test(c.name));
    expect(await shownFor(vectorCategory.name.toLowerCase())).toEqual(expect.arrayContaining(catalog.services.filter((s: any) => s.category === vectorCategory.id).map((s: any) => s.id)));
    expect(await shownFor("experimental")).toEqual(expect.arrayContaining(catalog.services.filter((s: any) => s.maturity === "experimental").map((s: any) => s.id)));
    // A search that finds nothing says so, and one button clears every filter.
    await page.selectOption("#maturity-filter", "stable");
    await page.fill("#service-search", "no-such-service-anywhere");
    expect(await page.locator("#no-match").isVisible()).toBe(true);
    await page.click("#clear-filters");
    expect(await page.locator("#no-match").isVisible()).toBe(false);
    expect(await page.inputValue("#service-search")).toBe("");
    expect(await page.inputValue("#maturity-filter")).toBe("");
    expect(await page.textContent("#service-count")).toBe(`Showing all ${catalog.total} services.`);
    await page.fill("#service-search", "");
    await page.selectOption("#category-filter", "proxy");
    const proxies = await page.locator("li.svc:visible").evaluateAll((els) => els.map((e) => e.getAttribute("data-service")));
    expect(proxies.sort()).toEqual(catalog.services.filter((s: any) => s.category === "proxy").map((s: any) => s.id).sort());
    const badge = await page.locator('li.svc[data-service="caddy"] .badge').textContent();
    expect(badge).toBe(catalog.services.find((s: any) => s.id === "caddy").maturity);
  }, TEST_TIMEOUT_MS);

  test("the page, its script and its stylesheet arrive compressed, and the page works from them", async () => {
    const page = await openPage();
    // Bytes on the wire against bytes after decoding, as the browser measured them.
    const sizes = await page.evaluate(() => (performance.getEntriesByType("navigation") as PerformanceResourceTiming[])
      .concat(performance.getEntriesByType("resource") as PerformanceResourceTiming[])
      .filter((entry) => /\/$|\.js$|\.css$/.test(new URL(entry.name).pathname))
      .map((entry) => ({ path: new URL(entry.name).pathname, encoded: entry.encodedBodySize, decoded: entry.decodedBodySize })));
    expect(sizes.map((s) => s.path.replace(/[^/.]+(?=\.(js|css)$)/, "*")).sort()).toEqual(["/", "/*.css", "/*.js"]);
    for (const { path, encoded, decoded } of sizes) {
      expect(encoded, path).toBeGreaterThan(0);
      expect(encoded, path).toBeLessThan(decoded / 2);
    }
    expect(await page.locator("li.svc").count()).toBe((await apiJson("/v1/services")).total);
  }, TEST_TIMEOUT_MS);

  test("a preset used over a selection made by hand can be undone, until the next change", async () => {
    const page = await openPage(NARROW);
    const presets = (await apiJson("/v1/presets")).presets as any[];
    const researcher = presets.find((p) => p.id === "researcher");
    const devops = presets.find((p) => p.id === "devops");
    const mine = ["gitea", "vaultwarden", "redis"];
    for (const id of mine) await page.locator(`#svc-${id}`).check();
    await page.locator("#pack-local-ai").check();
    await settled(page);
    const checked = () => page.locator("#service-list input[type=checkbox]:checked").evaluateAll((els) => els.map((e) => e.id.replace(/^svc-/, "")).sort());
    const packs = () => page.locator("#pack-list input:checked").evaluateAll((els) => els.map((e) => e.id.replace(/^pack-/, "")));
    const useResearcher = page.getByRole("button", { name: `Use ${researcher.name}` });
    await useResearcher.click();
    const undo = page.getByRole("button", { name: "Undo: restore your 3 services and 1 skill pack" });
    expect(await undo.isVisible()).toBe(true);
    // Inside the window, wherever the card was.
    const box = (await undo.boundingBox())!;
    expect(box.y + box.height).toBeLessThanOrEqual(NARROW.height);
    await page.waitForSelector("#announcer:has-text('It replaced your 3 services and 1 skill pack')");
    expect(await checked()).toEqual([...researcher.services].sort());
    await settled(page);
    await undo.click();
    expect(await checked()).toEqual([...mine].sort());
    expect(await packs()).toEqual(["local-ai"]);
    expect(await useResearcher.getAttribute("aria-current")).toBeNull();
    expect(await useResearcher.getAttribute("aria-pressed")).toBeNull();
    expect(await page.locator("#preset-undo").isHidden()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(`Use ${researcher.name}`);
    await page.waitForSelector("#announcer:has-text('Restored your 3 services and 1 skill pack')");
    await settled(page);
    expect((await resolved(page)).sort()).toEqual(expect.arrayContaining(mine));

    // Any change after the preset ends the offer: an undo then would drop that change.
    await useResearcher.click();
    expect(await page.locator("#preset-undo").isVisible()).toBe(true);
    await page.locator("#svc-gitea").check();
    expect(await page.locator("#preset-undo").isHidden()).toBe(true);
    // The offer floats over the page: controls reached with Tab scroll above it, and Escape
    // (or its Dismiss button) puts it away.
    await page.getByRole("button", { name: `Use ${devops.name}` }).click();
    expect(await page.locator("#preset-undo").isVisible()).toBe(true);
    const bar = (await page.locator("#preset-undo").boundingBox())!;
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press("Tab");
      const focused = await page.evaluate(() => {
        const r = document.activeElement!.getBoundingClientRect();
        return { top: r.top, bottom: r.bottom, inBar: !!document.activeElement!.closest("#preset-undo") };
      });
      if (!focused.inBar) expect(focused.bottom <= bar.y || focused.top >= bar.y + bar.height, `tab stop ${i}`).toBe(true);
    }
    await page.keyboard.press("Escape");
    expect(await page.locator("#preset-undo").isHidden()).toBe(true);
    await page.locator("#svc-gitea").check();
    await page.getByRole("button", { name: "Use Minimal" }).click();
    expect(await page.locator("#preset-undo").isVisible()).toBe(true);
    await page.locator("#preset-undo-dismiss").click();
    expect(await page.locator("#preset-undo").isHidden()).toBe(true);
    // A preset over an untouched preset loses nothing made by hand: no offer.
    await useResearcher.click();
    await page.getByRole("button", { name: `Use ${devops.name}` }).click();
    expect(await page.locator("#preset-undo").isHidden()).toBe(true);
    // A preset changed by hand (its pack dropped) is the user's own: offered back in its words.
    await page.locator("#pack-devops").uncheck();
    await page.getByRole("button", { name: "Use Minimal" }).click();
    expect(await page.getByRole("button", { name: `Undo: restore your ${devops.services.length} services`, exact: true }).isVisible()).toBe(true);
    await settled(page);
  }, TEST_TIMEOUT_MS);

  test("a preset, an added service and the live validation", async () => {
    const page = await openPage();
    const presets = (await apiJson("/v1/presets")).presets as any[];
    const researcher = presets.find((p) => p.id === "researcher");
    // Keyboard only: focus the preset button and press Enter.
    await page.getByRole("button", { name: `Use ${researcher.name}` }).focus();
    await page.keyboard.press("Enter");
    await settled(page);
    await shoot(page, "builder", "#start");
    expect(await page.getByRole("button", { name: `Use ${researcher.name}` }).getAttribute("aria-current")).toBe("true");
    // The address bar names the preset while the selection is still its own: a reload (or the
    // link shared) shows it as chosen again.
    await page.waitForFunction(() => new URLSearchParams(location.search).get("preset") === "researcher");
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(await page.getByRole("button", { name: `Use ${researcher.name}` }).getAttribute("aria-current")).toBe("true");
    expect(await page.textContent("#link-note")).toContain(`preset ${researcher.name}`);
    const expected = await apiJson("/v1/validate", { services: researcher.services, skillPacks: researcher.skillPacks, proxy: researcher.proxy ?? undefined, gpu: researcher.gpu, platform: "linux/amd64" });
    expect((await resolved(page)).sort()).toEqual([...expected.resolvedServices].sort());
    for (const id of researcher.services) expect(await page.locator(`#svc-${id}`).isChecked()).toBe(true);

    // Adding n8n brings PostgreSQL as a dependency, shown with its reason, and raises the memory.
    const beforeMemory = await page.locator("#memory-text strong").textContent();
    expect(await page.locator('li.svc[data-service="n8n"] .svc-note').textContent()).toContain("PostgreSQL");
    await page.locator("#svc-n8n").check();
    await settled(page);
    const withN8n = await apiJson("/v1/validate", { services: [...researcher.services, "n8n"], skillPacks: researcher.skillPacks, proxy: researcher.proxy ?? undefined, gpu: researcher.gpu, platform: "linux/amd64" });
    expect((await resolved(page)).sort()).toEqual([...withN8n.resolvedServices].sort());
    const dep = withN8n.addedDependencies.find((d: any) => d.service === "postgresql");
    expect(dep).toBeDefined();
    expect(await page.locator('#dependency-list li[data-service="postgresql"]').textContent()).toContain(dep.reason);
    expect(await page.locator("#memory-text strong").textContent()).not.toBe(beforeMemory);
    expect(await page.locator('li.svc[data-service="postgresql"]').getAttribute("class")).toContain("included");
    // No longer the preset's selection: the link stops naming it.
    await page.waitForFunction(() => location.search.includes("n8n") && !location.search.includes("preset="));

    // The host size changes the verdict on memory.
    await page.selectOption("#host-size", "2");
    expect(await page.locator(".memory").getAttribute("class")).toContain("memory-over");
    // Over the host, the meter draws in its error colour: its value lies beyond `high` (a value
    // on `high` draws as merely tight).
    expect(await page.locator(".memory meter").evaluate((m: HTMLMeterElement) => m.value > m.high)).toBe(true);
    await page.selectOption("#host-size", "64");
    expect(await page.locator(".memory").getAttribute("class")).toContain("memory-fine");
    await shoot(page, "validation", "#summary");

    // A skill pack adds its services.
    await page.locator("#pack-devops").check();
    await settled(page);
    const packs = (await apiJson("/v1/skills")).packs as any[];
    for (const id of packs.find((p) => p.id === "devops").services) expect(await resolved(page)).toContain(id);
  }, TEST_TIMEOUT_MS);

  test("apps that hand their admin account to the first visitor are named in Your stack", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    expect(await page.locator("#first-start-list").count()).toBe(0);
    await page.locator("#svc-portainer").check();
    await settled(page);
    const item = page.locator('#first-start-list [data-service="portainer"]');
    expect(await item.textContent()).toContain("within five minutes");
  }, TEST_TIMEOUT_MS);

  test("values a service cannot start without are named in Your stack", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    expect(await page.locator("#before-start-list").count()).toBe(0);
    await page.locator("#svc-tailscale").check();
    await settled(page);
    const item = page.locator('#before-start-list [data-variable="TAILSCALE_AUTHKEY"]');
    expect(await item.getAttribute("data-service")).toBe("tailscale");
    expect(await item.textContent()).toContain("fill in TAILSCALE_AUTHKEY in .env");
  }, TEST_TIMEOUT_MS);

  test("conflicting services are explained and block generation", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await page.locator("#svc-valkey").check();
    await settled(page);
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("false");
    const conflict = page.locator('#conflict-list [data-code="SERVICE_CONFLICT"]');
    expect(await conflict.textContent()).toContain("cannot run together");
    expect(await conflict.textContent()).toContain("Valkey");
    expect(await page.locator('li.svc[data-service="valkey"]').getAttribute("class")).toContain("clash");
    expect(await page.locator("#preview-button").isDisabled()).toBe(true);
    expect(await page.locator("#zip-button").isDisabled()).toBe(true);
    expect(await page.locator("#deploy-button").isDisabled()).toBe(true);
    await shoot(page, "conflict", "#summary");
    await page.locator("#svc-valkey").uncheck();
    await settled(page);
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("true");
    expect(await page.locator("#preview-button").isDisabled()).toBe(false);
  }, TEST_TIMEOUT_MS);

  test("a check's answer that arrives after the next change is not shown as the verdict on it", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    // Time stands still but when the test moves it: the next check waits for its debounce.
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1_000);
    const release = await holdNext(page, "**/v1/validate");
    // A valid selection is sent; a conflicting one is made while its answer is on the way.
    await page.locator("#svc-n8n").check();
    const sent = page.waitForRequest("**/v1/validate");
    await page.clock.runFor(300);
    await sent;
    await page.locator("#svc-valkey").check();
    const answered = page.waitForResponse("**/v1/validate");
    release();
    await answered;
    await page.waitForTimeout(200); // the page reads the answer
    // The answer for n8n without Valkey is no verdict on the choices now: still checking.
    expect(await page.textContent("#status-bar")).toContain("checking…");
    expect(await page.locator("#preview-button").isDisabled()).toBe(true);
    await page.clock.runFor(300);
    await page.waitForSelector("#summary-body[aria-busy=false] #validity");
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("false");
    expect(await page.locator("#preview-button").isDisabled()).toBe(true);
  }, TEST_TIMEOUT_MS);

  test("the two proxies are one choice: ticking Traefik replaces Caddy, in the option too", async () => {
    const page = await openPage();
    await page.locator("#svc-caddy").check();
    expect(await page.locator("#opt-proxy").inputValue()).toBe("caddy");
    await page.locator("#svc-traefik").check();
    await settled(page);
    expect(await page.locator("#svc-caddy").isChecked()).toBe(false);
    expect(await page.locator("#opt-proxy").inputValue()).toBe("traefik");
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("true");
    await page.locator("#svc-traefik").uncheck();
    expect(await page.locator("#opt-proxy").inputValue()).toBe("");
  }, TEST_TIMEOUT_MS);

  test("a failed stack check can be run again, and blocks neither the preview nor the ZIP", async () => {
    const page = await openPage();
    let server: "busy" | "gone" | "up" = "busy";
    await page.route("**/v1/validate", (route) => server === "busy"
      ? route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "INTERNAL_ERROR", message: "Server busy" } }) })
      : server === "gone" ? route.abort("connectionrefused") : route.continue());
    await page.locator("#svc-n8n").check();
    await page.fill("#opt-projectName", "retry-check");
    await page.waitForSelector("#recheck-button");
    expect(await page.locator("#summary-body").textContent()).toContain("Could not check the stack: Server busy");
    expect(await page.locator("#preview-button").isDisabled()).toBe(false);
    expect(await page.locator("#zip-button").isDisabled()).toBe(false);
    expect(await page.textContent("#check-advice")).toContain("Files and deploy may still work");
    // The server gone: the advice says so, rather than promising files and deploy.
    server = "gone";
    await page.click("#recheck-button");
    await page.waitForSelector("#check-advice:has-text('cannot be reached')");
    expect(await page.locator("#summary-body").textContent()).toContain("Cannot reach the stackgen server");
    // Back at the page once it runs again: the check runs again by itself.
    server = "up";
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await page.waitForSelector("#summary-body[aria-busy=false] #validity");
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("true");
    // The refused checks were this test's doing.
    problems = problems.filter((p) => !p.includes("503") && !p.includes("ERR_CONNECTION_REFUSED"));
  }, TEST_TIMEOUT_MS);

  test("a failing stack check's alert is said once, not again with each change of the form", async () => {
    const page = await openPage();
    let server: "gone" | "limited" = "gone";
    await page.route("**/v1/validate", (route) => server === "gone" ? route.abort("connectionrefused") : route.fulfill({
      status: 429, headers: { "retry-after": "60" }, contentType: "application/json",
      body: JSON.stringify({ error: { code: "RATE_LIMITED", message: "Too many requests; try again in 60 s." } }),
    }));
    await page.locator("#svc-redis").check();
    await page.waitForSelector("#summary-body[aria-busy=false] [role=alert]");
    // What a screen reader reads out: each alert put into the panel.
    await page.evaluate(() => {
      const said: string[] = ((window as any).said = []);
      new MutationObserver((records) => {
        for (const node of records.flatMap((r) => Array.from(r.addedNodes))) if (node instanceof Element && node.matches("[role=alert]")) said.push(node.textContent!);
      }).observe(document.getElementById("summary-body")!, { childList: true, subtree: true });
    });
    const typeAndChoose = async (service: string) => {
      await page.focus("#opt-projectName");
      await page.keyboard.type("-x", { delay: 30 });
      await page.locator(`#svc-${service}`).check();
      await page.waitForTimeout(350); // the debounce
      await page.waitForSelector("#summary-body[aria-busy=false] [role=alert]");
    };
    // Checked again with each change, failing the same way: nothing new to say.
    await typeAndChoose("qdrant");
    expect(await page.evaluate(() => (window as any).said)).toEqual([]);
    // A new failure is said, once, however the form changes while it holds.
    server = "limited";
    await typeAndChoose("valkey");
    await typeAndChoose("n8n");
    const said: string[] = await page.evaluate(() => (window as any).said);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain("Too many requests");
    problems = problems.filter((p) => !/ERR_CONNECTION_REFUSED|HTTP 429|status of 429/.test(p));
  }, TEST_TIMEOUT_MS);

  test("keyboard focus stays on \"Check again\" and \"Try again\" when pressed and redrawn", async () => {
    const page = await openPage();
    let server: "busy" | "gone" | "up" = "busy";
    await page.route("**/v1/validate", (route) => server === "busy"
      ? route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "INTERNAL_ERROR", message: "Server busy" } }) })
      : server === "gone" ? route.abort("connectionrefused") : route.continue());
    const focused = () => page.evaluate(() => document.activeElement?.id);
    const checkAgain = async () => {
      await page.focus("#recheck-button");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#summary-body[aria-busy=false]");
    };
    await page.locator("#svc-redis").check();
    await page.waitForSelector("#recheck-button");
    // Failing again, the same way or another.
    await checkAgain();
    expect(await focused()).toBe("recheck-button");
    server = "gone";
    await checkAgain();
    await page.waitForSelector("#check-advice:has-text('cannot be reached')");
    expect(await focused()).toBe("recheck-button");
    // The check passes and the button goes: focus stays in Your stack.
    server = "up";
    await checkAgain();
    await page.waitForSelector("#validity");
    expect(await focused()).toBe("summary");

    // The catalog does not load: "Try again", or Enter in the key field, keeps focus there.
    await page.route("**/v1/presets", (route) => route.fulfill({
      status: 429, headers: { "retry-after": "60" }, contentType: "application/json",
      body: JSON.stringify({ error: { code: "RATE_LIMITED", message: "Too many requests; try again in 60 s." } }),
    }));
    await page.reload();
    for (const control of ["#load-retry", "#load-server-key"]) {
      await page.waitForSelector(control);
      await page.focus(control);
      const refused = page.waitForResponse("**/v1/presets");
      await page.keyboard.press("Enter");
      await refused;
      await page.waitForSelector("#loading [role=alert]");
      expect(await focused()).toBe(control.slice(1));
    }
    problems = problems.filter((p) => !/503|ERR_CONNECTION_REFUSED|HTTP 429|status of 429/.test(p));
  }, TEST_TIMEOUT_MS);

  test("preview with masked secrets, ZIP download and JSON export", async () => {
    const page = await openPage();
    await page.locator("#svc-n8n").check();
    // An option the API refuses: the header does not say "Valid", and leads to the options.
    await page.fill("#opt-projectName", "<b>ui</b>");
    await settled(page);
    expect(await page.textContent("#status-bar")).toStartWith("✗ Options need fixing");
    expect(await page.getAttribute("#status-bar", "href")).toBe("#options");
    // Your stack agrees with the header (it said "✓ This stack is valid." beside "✗ Options need fixing").
    expect(await page.textContent("#validity")).not.toContain("✓");
    expect(await page.textContent("#validity")).toContain("options marked in step 3");
    await page.fill("#opt-projectName", "ui-preview");
    expect(await page.textContent("#status-bar")).toStartWith("✓ Valid");
    expect(await page.textContent("#validity")).toBe("✓ This stack is valid.");
    // A domain without a proxy does nothing in the bundle: the hint says so until one is chosen.
    await page.fill("#opt-domain", "example.test");
    expect(await page.textContent("#opt-domain-hint")).toContain("A domain needs a reverse proxy");
    await page.selectOption("#opt-proxy", "caddy");
    expect(await page.textContent("#opt-domain-hint")).toBe("Services get <service>.<domain>.");
    await settled(page);
    // Pressed from the keyboard: the button is disabled while it works, and focus comes back to it.
    await page.focus("#preview-button");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#file-content");
    await page.waitForFunction(() => !(document.getElementById("preview-button") as HTMLButtonElement).disabled);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("preview-button");
    const paths = await page.locator(".file-link").evaluateAll((els) => els.map((e) => e.getAttribute("data-path")));
    expect(paths).toContain("docker-compose.yml");
    expect(paths).toContain(".env");
    expect(paths).toContain("Caddyfile");
    await page.locator('.file-link[data-path="docker-compose.yml"]').click();
    expect(await page.locator("#file-content").textContent()).toContain("name: ui-preview");

    await page.locator('.file-link[data-path=".env"]').click();
    const masked = (await page.locator("#file-content").textContent())!;
    const secretLine = masked.split("\n").find((l) => /^[A-Z0-9_]*(PASSWORD|SECRET|KEY|TOKEN)[A-Z0-9_]*=./.test(l));
    expect(secretLine).toBeDefined();
    expect(secretLine!).toEndWith("=••••••••");
    // A toggle keeps its name and says its state: a label that changed too read "Hide secrets, pressed".
    expect(await page.getByRole("button", { name: "Show secrets", pressed: false }).count()).toBe(1);
    await page.click("#reveal-button");
    expect(await page.getByRole("button", { name: "Show secrets", pressed: true }).count()).toBe(1);
    const revealed = (await page.locator("#file-content").textContent())!;
    const name = secretLine!.split("=")[0];
    const value = revealed.split("\n").find((l) => l.startsWith(`${name}=`))!.slice(name.length + 1);
    expect(value).toMatch(/^[A-Za-z0-9]{32,}$/);
    expect(masked).not.toContain(value);
    await page.click("#reveal-button"); // hide again before the screenshot
    await shoot(page, "preview", "#files");

    const [zipDownload] = await Promise.all([page.waitForEvent("download"), page.click("#zip-button")]);
    expect(zipDownload.suggestedFilename()).toBe("ui-preview.zip");
    const entries = unzipSync(new Uint8Array(readFileSync((await zipDownload.path())!)));
    expect(Object.keys(entries)).toContain("ui-preview/docker-compose.yml");
    expect(Object.keys(entries)).toContain("ui-preview/.env");
    const compose = strFromU8(entries["ui-preview/docker-compose.yml"]);
    expect(compose).toContain("n8n");
    expect(compose).toContain("postgresql");
    // No platform chosen: the server's own, and the compose file pins none.
    expect(compose).not.toContain("platform:");
    // The ZIP holds the files previewed: the same secrets, not a second generation's.
    expect(strFromU8(entries["ui-preview/.env"])).toContain(`${name}=${value}`);
    await page.waitForSelector("#files-message:has-text('Downloaded ui-preview.zip')");

    const [jsonDownload] = await Promise.all([page.waitForEvent("download"), page.click("#export-button")]);
    const doc = JSON.parse(readFileSync((await jsonDownload.path())!, "utf8"));
    expect(doc.formatVersion).toBe("1");
    expect(doc.input.projectName).toBe("ui-preview");
    expect(doc.input.services).toEqual(["n8n"]);
    expect(doc.input.proxy).toBe("caddy");
    expect(doc.input.domain).toBe("example.test");
    expect(Object.keys(doc.files)).toEqual(expect.arrayContaining(["docker-compose.yml", ".env"]));

    // Changing the selection marks the preview as out of date, and says so to a screen reader.
    await page.locator("#svc-redis").check();
    expect(await page.locator("#preview-stale").isVisible()).toBe(true);
    await page.waitForSelector("#announcer:has-text('Your choices changed since this preview')");
    // Framed, not faded: its text is still read, and dimmed it fell below contrast minimums.
    const look = await page.locator("#preview .preview-grid").evaluate((el) => ({ opacity: getComputedStyle(el).opacity, outline: getComputedStyle(el).outlineStyle }));
    expect(look).toEqual({ opacity: "1", outline: "dashed" });
  }, TEST_TIMEOUT_MS);

  test("a new preview marks the files that changed since the one before: new, changed, removed", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    // The first preview has nothing to compare with.
    expect(await page.locator("#preview-changes").count()).toBe(0);
    expect(await page.locator(".file-change").count()).toBe(0);
    await page.click("#preview button[data-path='.env']");
    await page.locator("#svc-qdrant").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#preview-changes");
    // The file being read stays on screen (a new preview jumped back to docker-compose.yml).
    expect(await page.textContent("#file-title")).toBe(".env");
    const marked = Object.fromEntries(await page.locator(".file-link:has(.file-change)").evaluateAll((links) => links.map((a) => [a.getAttribute("data-path"), a.querySelector(".file-change")!.getAttribute("data-change")])));
    expect(marked["skills/qdrant/SKILL.md"]).toBe("new");
    expect(marked["docker-compose.yml"]).toBe("changed");
    expect(marked[".env"]).toBe("changed");
    expect(marked["skills/redis/SKILL.md"]).toBeUndefined();
    expect(await page.locator('.file-link[data-path="skills/qdrant/SKILL.md"]').getAttribute("aria-label")).toBe("skills/qdrant/SKILL.md (new since the previous preview)");
    expect(await page.textContent("#preview-changes")).toMatch(/^Since the previous preview: \d+ changed, 1 new\.$/);
    // Taken out again: the skill is named as removed, and the preview shows the compose file instead.
    await page.click("#preview button[data-path='skills/qdrant/SKILL.md']");
    await page.locator("#svc-qdrant").uncheck();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#preview-changes:has-text('removed')");
    expect(await page.textContent("#preview-changes")).toContain("1 removed (skills/qdrant/SKILL.md)");
    expect(await page.textContent("#file-title")).toBe("docker-compose.yml");
  }, TEST_TIMEOUT_MS);

  test("the preview lists each service's host ports as the compose file publishes them: moved ones and loopback-only ones said so", async () => {
    const page = await openPage(NARROW);
    // SearXNG and Nextcloud both use 8080: Nextcloud, the later one, is moved.
    for (const id of ["searxng", "nextcloud", "postgresql"]) await page.locator(`#svc-${id}`).check();
    await settled(page);
    expect(await page.locator('#warning-list [data-code="PORT_CONFLICT_RESOLVED"]').count()).toBe(1);
    await page.click("#preview-button");
    const table = page.getByRole("table", { name: "Host ports the stack publishes" });
    await table.waitFor();
    const rows = await page.locator("#port-table tbody tr").evaluateAll((trs) => trs.map((tr) => ({
      service: tr.getAttribute("data-service"),
      cells: Array.from(tr.children, (cell) => cell.textContent),
    })));
    // One row per published port of the compose file the preview holds.
    await page.locator('.file-link[data-path="docker-compose.yml"]').click();
    const { parse } = await import("yaml");
    const compose = parse((await page.locator("#file-content").textContent())!) as { services: Record<string, { ports?: string[] }> };
    const published = Object.entries(compose.services).flatMap(([service, s]) => (s.ports ?? []).map(() => service));
    expect(rows.map((r) => r.service)).toEqual(published);
    expect(published).toContain("core");
    const row = (service: string) => rows.filter((r) => r.service === service).map((r) => r.cells);
    expect(row("searxng")).toEqual([["SearXNG", "8080", "8080", "Every network interface"]]);
    expect(compose.services.nextcloud!.ports).toEqual(["8081:80"]);
    expect(row("nextcloud")).toEqual([["Nextcloud", "8081 (moved from 8080)", "80", "Every network interface"]]);
    expect(compose.services.postgresql!.ports).toEqual(["127.0.0.1:5432:5432"]);
    expect(row("postgresql")).toEqual([["PostgreSQL", "5432", "5432", "This machine only (127.0.0.1)"]]);
    // Named for assistive technology by its headers: the table reads as a table.
    expect(await table.getByRole("columnheader").allTextContents()).toEqual(["Service", "Host port", "Container port", "Reachable from"]);
    expect(await table.getByRole("rowheader", { name: "Nextcloud" }).count()).toBe(1);
    // A stale preview's ports are marked stale with the rest of it.
    await page.locator("#svc-redis").check();
    expect(await page.locator("#preview.stale #port-table").count()).toBe(1);
  }, TEST_TIMEOUT_MS);

  test("choices changed while the preview is generated: it is marked out of date, and the ZIP is of the new choices", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await page.fill("#opt-projectName", "before-edit");
    await settled(page);
    const release = await holdNext(page, "**/v1/generate*");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Generating the preview')");
    await page.fill("#opt-projectName", "after-edit");
    await page.locator("#svc-n8n").check();
    release();
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    await settled(page);
    // The preview shows what was generated (the old choices), and says it is out of date.
    await page.locator('.file-link[data-path="docker-compose.yml"]').click();
    expect(await page.locator("#file-content").textContent()).toContain("name: before-edit");
    expect(await page.locator("#preview-stale").isVisible()).toBe(true);
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#zip-button")]);
    expect(download.suggestedFilename()).toBe("after-edit.zip");
    const entries = unzipSync(new Uint8Array(readFileSync((await download.path())!)));
    expect(strFromU8(entries["after-edit/docker-compose.yml"])).toContain("n8n");
  }, TEST_TIMEOUT_MS);

  test("a check the server never answers ends in an error that can be retried, not in waiting for ever", async () => {
    const page = await openPage();
    expect(await page.textContent("#status-bar")).toBe("Nothing selected yet");
    await page.clock.install();
    await page.route("**/v1/validate", () => {}, { times: 1 }); // held, never answered
    await page.locator("#svc-redis").check();
    await page.clock.runFor(1_000);
    await page.waitForSelector("#status-bar:has-text('checking…')");
    expect(await page.locator("#preview-button").isDisabled()).toBe(true);
    await page.clock.runFor(20_000);
    await page.waitForSelector("#recheck-button");
    expect(await page.locator("#summary-body").textContent()).toContain("did not answer within 20 s");
    expect(await page.textContent("#status-bar")).toBe("✗ Check failed");
    await page.click("#recheck-button");
    await page.clock.runFor(1_000);
    await page.waitForSelector("#summary-body[aria-busy=false] #validity");
    expect(await page.textContent("#status-bar")).toStartWith("✓ Valid · 1 service");
    // The page gave up on the held check: that abort was this test's doing.
    problems = problems.filter((p) => !p.endsWith("/v1/validate net::ERR_ABORTED"));
  }, TEST_TIMEOUT_MS);

  test("the header's live status speaks only when its verdict changes, and an empty stack is not called valid", async () => {
    const page = await openPage();
    // Nothing chosen: a neutral note, not a green "valid".
    expect(await page.locator("#validity").getAttribute("class")).not.toContain("ok");
    expect(await page.textContent("#validity")).not.toContain("✓");
    expect(await page.textContent("#validity")).toContain("Nothing selected yet");
    await page.locator("#svc-redis").check();
    await settled(page);
    // What a screen reader hears: each change inside the header's live region.
    await page.evaluate(() => {
      const live = document.querySelector("header [aria-live]")!;
      const heard: string[] = ((window as any).heard = []);
      new MutationObserver(() => heard.push(live.textContent!)).observe(live, { childList: true, subtree: true, characterData: true });
    });
    await page.focus("#opt-projectName");
    await page.keyboard.press("End");
    await page.keyboard.type("-hello-world", { delay: 30 });
    await page.locator("#svc-n8n").check();
    await page.waitForSelector("#status-bar:has-text('checking…')");
    await settled(page);
    const check = await apiJson("/v1/validate", { services: ["redis", "n8n"] });
    expect(await page.evaluate(() => (window as any).heard)).toEqual([`✓ Valid · ${plural(check.resolvedServices.length, "service")} · ${formatMB(check.estimatedMemoryMB)}`]);
  }, TEST_TIMEOUT_MS);

  test("a platform problem shows on the service's card, and card facts are searchable", async () => {
    const page = await openPage();
    await page.locator("#svc-stable-diffusion").check();
    await page.selectOption("#opt-platform", "linux/arm64");
    await settled(page);
    expect(await page.textContent("#svc-stable-diffusion-note")).toContain("Not available for this platform: Stable Diffusion WebUI publishes no image for linux/arm64");
    await page.fill("#service-search", "gpu");
    const shown = await page.locator("li.svc:visible").evaluateAll((els) => els.map((e) => e.getAttribute("data-service")));
    expect(shown).toEqual(expect.arrayContaining(["stable-diffusion", "ollama", "comfyui"]));
  }, TEST_TIMEOUT_MS);

  test("a server key entered under Deploy goes with every call, with the key's own limits", async () => {
    const key = "ui-test-server-key-0001";
    const page = await openPage(WIDE, serverWith({ RATE_LIMIT_GENERATE: "1", RATE_LIMIT_STANDARD: "10000", API_KEYS: key }));
    await page.locator("#svc-redis").check();
    await settled(page);
    // A key the server does not know is refused on every call; the message says where it came from.
    await page.fill("#deploy-server-key", "not-a-key-of-this-server");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message[role=alert]:has-text('not one of this server')");
    // That try used up the anonymous limit (1 generation): the message says where a key goes.
    await page.fill("#deploy-server-key", "");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message[role=alert]:has-text('Too many requests')");
    expect(await page.textContent("#files-message")).toContain('enter it as the "stackgen server key" in step 5');
    await page.fill("#opt-projectName", "second-try");
    await page.fill("#deploy-server-key", key);
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    await page.locator('.file-link[data-path="docker-compose.yml"]').click();
    expect(await page.locator("#file-content").textContent()).toContain("name: second-try");
    problems = problems.filter((p) => !/HTTP (429|401)|status of (429|401)/.test(p));
  }, TEST_TIMEOUT_MS);

  test("checks spend the rate limit only when needed, and over it wait for the server's Retry-After", async () => {
    const page = await openPage();
    let calls = 0;
    page.on("request", (r) => { if (new URL(r.url()).pathname === "/v1/validate") calls++; });
    // A selection checked before is answered from memory.
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.locator("#svc-redis").uncheck();
    await settled(page);
    await page.locator("#svc-redis").check();
    await settled(page);
    expect(calls).toBe(1);
    // A domain typed slowly is checked once typing pauses, not letter by letter.
    await page.selectOption("#opt-proxy", "caddy");
    await settled(page);
    await page.locator("#opt-domain").pressSequentially("example.com", { delay: 350 });
    await settled(page);
    expect(calls).toBe(3);

    // Refused over the limit: the page says when checks start again and sends none before then.
    await page.route("**/v1/validate", (route) => route.fulfill({
      status: 429, headers: { "retry-after": "3" }, contentType: "application/json",
      body: JSON.stringify({ error: { code: "RATE_LIMITED", message: "Too many requests; try again in 3 s." } }),
    }), { times: 1 });
    await page.locator("#svc-n8n").check();
    await page.waitForSelector("#check-resume");
    expect(await page.locator("#recheck-button").count()).toBe(0);
    expect(await page.textContent("#check-resume")).toContain("Checks start again by themselves at");
    // No promise the limits may break: files have a limit of their own, a deploy shares this one.
    const advice = await page.textContent("#check-advice");
    expect(advice).toContain("Preview and download count against a limit of their own, so they may still work");
    expect(advice).toContain("A deploy counts against this limit and is refused until then.");
    const refused = calls;
    await page.locator("#svc-valkey").check();
    await page.locator("#svc-valkey").uncheck();
    await page.waitForTimeout(1_000);
    expect(calls).toBe(refused);
    // Once the wait is over, the choices as they are now are checked by themselves.
    await page.waitForSelector("#summary-body[aria-busy=false] #validity", { timeout: 10_000 });
    expect(calls).toBe(refused + 1);
    expect(await resolved(page)).toEqual(expect.arrayContaining(["n8n", "postgresql", "redis", "caddy"]));
    problems = problems.filter((p) => !/HTTP 429|status of 429/.test(p));
  }, TEST_TIMEOUT_MS);

  test("a page opened over the rate limit asks for a server key and loads by itself once the limit allows", async () => {
    const key = "ui-test-server-key-0002";
    const origin = serverWith({ RATE_LIMIT_STANDARD: "4", RATE_LIMIT_WINDOW_MS: "4000", API_KEYS: key });
    // Over the limit at the start of a window (the limiter's windows are fixed): the page that
    // opens next finds it spent however slow this machine is, with most of 4 s left.
    const spend = async () => {
      const first = await fetch(`${origin}/v1/presets`);
      await first.body?.cancel();
      const resetAtMs = Number(first.headers.get("x-ratelimit-reset")) * 1000;
      await Bun.sleep(Math.max(0, resetAtMs - Date.now()) + 50);
      for (let i = 0; i < 5; i++) await fetch(`${origin}/v1/presets`).then((r) => r.body?.cancel());
    };
    await spend();
    const page = await openPage(WIDE, origin, false);
    await page.waitForSelector("#load-server-key");
    const alert = (await page.textContent("#loading [role=alert]"))!;
    expect(alert).toContain("Too many requests");
    // Step 5 is not drawn: the advice points at the field that is.
    expect(alert).toContain("enter it in the field below");
    expect(alert).not.toContain("step 5");
    expect(await page.textContent("#status-bar")).toBe("✗ Catalog not loaded");
    expect(await page.textContent("#load-countdown")).toMatch(/^Trying again by itself in \d s\.$/);
    // The window ends: the page loads without a hand on it.
    await page.waitForSelector("body[data-ready=true]", { timeout: 10_000 });
    await settled(page);

    // Over the limit again: a key entered from the keyboard loads the page, and stays in step 5.
    await spend();
    await page.reload();
    await page.waitForSelector("#load-server-key");
    await page.focus("#load-server-key");
    await page.keyboard.type(key);
    await page.keyboard.press("Enter");
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    // Focus went with the form it was in: the builder takes it, not the page's top.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    expect(await page.inputValue("#deploy-server-key")).toBe(key);
    problems = problems.filter((p) => !/HTTP 429|status of 429/.test(p));
  }, TEST_TIMEOUT_MS);

  test("a wrong server key: the stack check says files and deploy are refused too, and runs again once the key changes", async () => {
    const page = await openPage();
    await page.fill("#deploy-server-key", "not-a-key-of-this-server");
    await page.locator("#svc-redis").check();
    await page.waitForSelector("#check-advice");
    expect(await page.textContent("#summary-body [role=alert]")).toContain("not one of this server's keys");
    expect(await page.textContent("#check-advice")).not.toContain("still work");
    expect(await page.textContent("#check-advice")).toContain("refuses files and deploy too");
    await page.fill("#deploy-server-key", "");
    await settled(page);
    expect(await page.locator("#validity").getAttribute("data-valid")).toBe("true");
    problems = problems.filter((p) => !/HTTP 401|status of 401/.test(p));
  }, TEST_TIMEOUT_MS);

  test("secrets found only in this page: a warning before leaving it, and messages that say what a download or an export holds", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "leave-warned", services: ["redis"] });
    const page = await openPage();
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => { dialogs.push(dialog.type()); void dialog.accept(); });
    // The browser asks before leaving only a page the user has acted on.
    await page.click("#summary-h");
    await page.setInputFiles("#import-input", { name: "export.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForSelector("#files-message:has-text('Imported export.json')");
    await page.waitForFunction(() => location.search.includes("leave-warned")); // the address bar's link
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(dialogs).toEqual(["beforeunload"]);
    // The choices came back from the link, the export's secrets did not: the ZIP says its files are new.
    const [zip] = await Promise.all([page.waitForEvent("download"), page.click("#zip-button")]);
    const env = strFromU8(unzipSync(new Uint8Array(readFileSync((await zip.path())!)))["leave-warned/.env"]);
    expect(env).not.toBe(exported.files[".env"]);
    await page.waitForSelector("#files-message:has-text('Downloaded leave-warned.zip')");
    expect(await page.textContent("#files-message")).toContain("files generated now, with new secrets.");
    expect(await page.textContent("#files-message")).not.toContain("the files of the preview");
    // Downloaded: nothing is lost by leaving.
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(dialogs).toEqual(["beforeunload"]);

    // A preview's secrets are asked about until they are exported; the export says it holds them.
    await page.click("#preview-button");
    await page.waitForSelector("#file-content");
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(dialogs).toEqual(["beforeunload", "beforeunload"]);
    await page.click("#preview-button");
    await page.waitForSelector("#file-content");
    await Promise.all([page.waitForEvent("download"), page.click("#export-button")]);
    await page.waitForSelector("#files-message:has-text('Exported leave-warned.stackgen.json')");
    expect(await page.textContent("#files-message")).toContain("keep it as safe as a password");
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    expect(dialogs).toEqual(["beforeunload", "beforeunload"]);
  }, TEST_TIMEOUT_MS);

  test("a deploy refused before sending clears the previous attempt's outcome", async () => {
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.route("**/v1/deploy", (route) => route.fulfill({ status: 200, contentType: "application/x-ndjson", body:
      '{"type":"step","step":"Test connection","status":"failed"}\n{"type":"result","result":{"success":false,"steps":[],"error":"API 401: Unauthorized"}}\n' }));
    await page.fill("#deploy-url", "https://coolify.example.test");
    await page.fill("#deploy-key", "some-key");
    await page.click("#deploy-button");
    await page.waitForSelector("#deploy-result [role=alert]:has-text('API 401')");
    // An address the browser refuses: its note alone, not the last attempt's failure beside it.
    await page.fill("#deploy-url", "http://[::1");
    await page.click("#deploy-button");
    expect(await page.locator("#deploy-url").evaluate((el: HTMLInputElement) => el.validity.valid)).toBe(false);
    expect(await page.textContent("#deploy-result")).toBe("");
    expect(await page.locator("#deploy-steps li").count()).toBe(0);
  }, TEST_TIMEOUT_MS);

  test("one file of the preview can be copied or downloaded as it is, secrets included", async () => {
    const page = await openPage();
    await context!.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#file-content");

    await page.locator('.file-link[data-path="docker-compose.yml"]').click();
    const shown = (await page.locator("#file-content").textContent())!;
    const [composeDownload] = await Promise.all([page.waitForEvent("download"), page.click("#save-file-button")]);
    expect(composeDownload.suggestedFilename()).toBe("docker-compose.yml");
    expect(readFileSync((await composeDownload.path())!, "utf8")).toBe(shown);
    await page.waitForSelector("#files-message:has-text('Downloaded docker-compose.yml.')");

    // .env is masked on screen; what is copied or saved is the real file.
    await page.locator('.file-link[data-path=".env"]').click();
    expect(await page.locator("#file-content").textContent()).toContain("=••••••••");
    const [envDownload] = await Promise.all([page.waitForEvent("download"), page.click("#save-file-button")]);
    // Browsers drop the leading dot; the message says so.
    expect(envDownload.suggestedFilename()).toBe("env");
    const env = readFileSync((await envDownload.path())!, "utf8");
    expect(env).not.toContain("•");
    const password = parseEnvValues(env).get("REDIS_PASSWORD")!;
    expect(password).toMatch(/^[A-Za-z0-9]{32,}$/);
    await page.waitForSelector("#files-message:has-text('Downloaded .env (with its secrets) as env: rename it to .env')");
    await page.click("#copy-file-button");
    await page.waitForSelector("#files-message:has-text('Copied .env (with its secrets) to the clipboard.')");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(env);
    // The file on screen stays masked.
    expect(await page.locator("#file-content").textContent()).not.toContain(password);
  }, TEST_TIMEOUT_MS);

  test("the address bar holds a link to the choices, and the link opens the page with them", async () => {
    const page = await openPage();
    await context!.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    expect(await page.locator("#link-note").isHidden()).toBe(true);
    await page.locator("#svc-n8n").check();
    await page.fill("#opt-projectName", "shared");
    await page.selectOption("#opt-proxy", "traefik");
    await page.fill("#opt-domain", "home.example");
    await page.locator("#opt-memoryLimits").check();
    await settled(page);
    await page.waitForFunction(() => location.search.includes("domain=home.example") && location.search.includes("memoryLimits=true"));
    const link = page.url();
    expect(Object.fromEntries(new URL(link).searchParams)).toMatchObject({ services: expect.stringContaining("n8n"), projectName: "shared", proxy: "traefik", domain: "home.example", memoryLimits: "true" });
    await page.click("#link-button");
    await page.waitForSelector("#files-message:has-text('Copied a link')");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);

    // Opened elsewhere (another tab, another person): the same choices, and a note saying so.
    const other = await context!.newPage();
    const edited = new URL(link);
    edited.searchParams.set("services", `${edited.searchParams.get("services")},no-such-service`);
    edited.hash = "deploy";
    await other.goto(edited.href);
    await other.waitForSelector("body[data-ready=true]");
    await settled(other);
    // The link's #section is in view, though the steps are drawn after the browser's own jump.
    expect(await other.evaluate(() => {
      const { top, bottom } = document.getElementById("deploy")!.getBoundingClientRect();
      return scrollY > 0 && top < innerHeight && bottom > 0;
    })).toBe(true);
    expect(await other.locator("#svc-n8n").isChecked()).toBe(true);
    expect(await other.inputValue("#opt-projectName")).toBe("shared");
    expect(await other.inputValue("#opt-proxy")).toBe("traefik");
    expect(await other.inputValue("#opt-domain")).toBe("home.example");
    expect(await other.locator("#opt-memoryLimits").isChecked()).toBe(true);
    const note = (await other.locator("#link-note").textContent())!;
    // Only what differs from a fresh page: no "0 skill packs".
    expect(note).toContain("opened with the choices in its link (project shared, 1 chosen service, proxy traefik, domain home.example, memory caps)");
    expect(note).toContain("left out: no-such-service");
    expect(await resolved(other)).toEqual(expect.arrayContaining(["n8n", "postgresql", "traefik"]));
    // The address bar no longer carries what was left out (copied on, it would be left out again).
    const address = new URL(other.url());
    expect(address.searchParams.get("services")).toBe("n8n");
    expect(address.hash).toBe("#deploy");
    // A link whose every choice is left out: no empty list of choices.
    await other.goto(`${base}/?services=no-such-service`);
    await other.waitForSelector("body[data-ready=true]");
    await settled(other);
    expect(await other.textContent("#link-note")).toStartWith("This page opened with the choices in its link, the same as a fresh page's; check them");
  }, TEST_TIMEOUT_MS);

  test("a card says before it is chosen when a dependency it brings would conflict with the stack", async () => {
    const page = await openPage();
    await page.goto(`${base}/?services=valkey`);
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    // Outline needs Redis, which conflicts with Valkey: the server would leave Redis out.
    expect(await page.textContent("#svc-outline-note")).toContain("It needs Redis, which would conflict with Valkey in your stack.");
    expect(await page.textContent("#pack-devops-adds")).toContain("Redis would conflict with Valkey in your stack.");
    expect(await page.textContent("#svc-qdrant-note")).not.toContain("conflict");
  }, TEST_TIMEOUT_MS);

  test("the note on a link's choices goes once a preset or an import replaces them", async () => {
    const page = await openPage();
    await page.goto(`${base}/?services=n8n`);
    await page.waitForSelector("body[data-ready=true]");
    expect(await page.locator("#link-note").isVisible()).toBe(true);
    await page.getByRole("button", { name: "Use Minimal" }).click();
    expect(await page.locator("#link-note").isHidden()).toBe(true);
    await settled(page);
    await page.goto(`${base}/?services=n8n`);
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(await page.locator("#link-note").isVisible()).toBe(true);
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "replaced", services: ["redis"] });
    await page.setInputFiles("#import-input", { name: "replaced.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForSelector("#files-message:has-text('Imported replaced.json')");
    expect(await page.locator("#link-note").isHidden()).toBe(true);
  }, TEST_TIMEOUT_MS);

  test("Back and Forward bring back the choices the address bar shows; an in-page link keeps them", async () => {
    const page = await openPage();
    const presets = (await apiJson("/v1/presets")).presets as any[];
    const researcher = presets.find((p) => p.id === "researcher");
    const minimal = presets.find((p) => p.name === "Minimal");
    const checked = () => page.locator("#service-list input[type=checkbox]:checked").evaluateAll((els) => els.map((e) => e.id.replace(/^svc-/, "")).sort());
    await page.goto(`${base}/?preset=researcher`);
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    await page.click("nav a[href='#services']"); // a history entry of its own
    await page.getByRole("button", { name: "Use Minimal" }).click();
    await page.waitForFunction((id) => new URLSearchParams(location.search).get("preset") === id, minimal.id);
    await page.goBack();
    expect(new URL(page.url()).search).toBe("?preset=researcher");
    await page.waitForFunction((name) => document.querySelector("[aria-current=true]")?.textContent === `Use ${name}`, researcher.name);
    expect(await checked()).toEqual([...researcher.services].sort());
    await page.goForward();
    await page.waitForFunction((name) => document.querySelector("[aria-current=true]")?.textContent === `Use ${name}`, minimal.name);
    expect(await checked()).toEqual([...minimal.services].sort());
    // A change followed at once by an in-page link (before the address bar caught up) stays.
    await page.locator("#svc-qdrant").check();
    await page.click("nav a[href='#options']");
    await page.waitForFunction(() => location.search.includes("qdrant") && location.hash === "#options");
    expect(await page.locator("#svc-qdrant").isChecked()).toBe(true);
    await settled(page);
  }, TEST_TIMEOUT_MS);

  test("importing a complete document fills the form", async () => {
    const input = {
      projectName: "imported-stack", services: ["n8n", "redis"], skillPacks: [], proxy: "traefik",
      domain: "stack.example.test", gpu: false, platform: "linux/arm64", deployment: "bare-metal",
      generateSecrets: false, coreVersion: "2026.1.0",
    };
    // The document as SPEC §2.7 shapes it (the export test checks the API's own complete format).
    const doc = { formatVersion: "1", input, ...(await apiJson("/v1/generate?format=json", input)) };
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "imported.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(doc)) });
    await page.waitForSelector("#files-message:has-text('Imported imported.json')");
    await settled(page);
    expect(await page.inputValue("#opt-projectName")).toBe("imported-stack");
    expect(await page.inputValue("#opt-proxy")).toBe("traefik");
    expect(await page.inputValue("#opt-domain")).toBe("stack.example.test");
    expect(await page.inputValue("#opt-platform")).toBe("linux/arm64");
    expect(await page.inputValue("#opt-deployment")).toBe("bare-metal");
    expect(await page.inputValue("#opt-coreVersion")).toBe("2026.1.0");
    expect(await page.locator("#opt-generateSecrets").isChecked()).toBe(false);
    expect(await page.locator("#svc-n8n").isChecked()).toBe(true);
    expect(await page.locator("#svc-redis").isChecked()).toBe(true);
    expect(await resolved(page)).toContain("postgresql");

    // A file that is not a complete document is refused with a message, and the form is kept.
    await page.setInputFiles("#import-input", { name: "broken.json", mimeType: "application/json", buffer: Buffer.from('{"formatVersion":"9"}') });
    await page.waitForSelector("#files-message[role=alert]:has-text('broken.json')");
    expect(await page.inputValue("#opt-projectName")).toBe("imported-stack");

    // An export with secrets: its files are the preview, and the options it leaves out are the
    // API's defaults again (not the bare-metal, no-secrets choices of the import before).
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "kept-secrets", services: ["redis"] });
    await page.setInputFiles("#import-input", { name: "export.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForSelector("#files-message:has-text('Imported export.json')");
    expect(await page.inputValue("#opt-deployment")).toBe("docker");
    expect(await page.locator("#opt-generateSecrets").isChecked()).toBe(true);
    expect(await page.inputValue("#opt-coreVersion")).toBe("latest");
    expect(await previewedEnv(page)).toBe(exported.files[".env"]);
    expect(await page.locator("#preview-stale").isHidden()).toBe(true);
    expect(await page.textContent("#files-message")).not.toContain("differed");

    // Its files cannot be generated again just now: nothing changes, its secrets are not lost.
    await page.route("**/v1/generate*", (route) => route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "INTERNAL_ERROR", message: "Server busy" } }) }), { times: 1 });
    const other = await apiJson("/v1/generate?format=complete", { projectName: "not-taken", services: ["n8n"] });
    await page.setInputFiles("#import-input", { name: "later.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(other)) });
    await page.waitForSelector("#files-message[role=alert]:has-text('later.json')");
    expect(await page.textContent("#files-message")).toContain("Nothing was changed");
    expect(await page.inputValue("#opt-projectName")).toBe("kept-secrets");
    problems = problems.filter((p) => !p.includes("503"));

    // An export whose files were edited: its secrets are kept, the other files are generated
    // again (what the ZIP and a deploy use), and the edit is named.
    const edited = { ...exported, files: { ...exported.files, "docker-compose.yml": `${exported.files["docker-compose.yml"]}  evil:\n    image: busybox\n    privileged: true\n` } };
    await page.setInputFiles("#import-input", { name: "edited.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(edited)) });
    await page.waitForSelector("#files-message:has-text('Imported edited.json')");
    expect(await page.textContent("#files-message")).toContain("Its docker-compose.yml differed from what this stackgen makes of its choices (edited, or made by another version) and was replaced.");
    await page.click("#preview button[data-path='docker-compose.yml']");
    expect(await page.textContent("#file-content")).not.toContain("evil");
    const [zip] = await Promise.all([page.waitForEvent("download"), page.click("#zip-button")]);
    const entries = unzipSync(new Uint8Array(readFileSync((await zip.path())!)));
    expect(strFromU8(entries["kept-secrets/docker-compose.yml"])).not.toContain("evil");
    expect(strFromU8(entries["kept-secrets/.env"])).toBe(exported.files[".env"]);
  }, TEST_TIMEOUT_MS);

  test("an import takes only this stack's variables from its .env, changes nothing when it cannot read it, and says when its secrets are not kept", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "foreign-env", services: ["redis"] });
    const page = await openPage();
    const env = `${exported.files[".env"].replace(/^CORE_IMAGE=.*$/m, "CORE_IMAGE=attacker.example/backdoor").replace(/^CORE_VERSION=.*$/m, "CORE_VERSION=$(id)")}COMPOSE_PROJECT_NAME=victim\nCOMPOSE_FILE=/etc/evil.yml\nEVIL_VAR=1\n`;
    const foreign = { ...exported, files: { ...exported.files, ".env": env } };
    await page.setInputFiles("#import-input", { name: "foreign.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(foreign)) });
    await page.waitForSelector("#files-message:has-text('Imported foreign.json')");
    expect(await page.textContent("#files-message")).toContain("Not taken from its .env: COMPOSE_PROJECT_NAME, COMPOSE_FILE, EVIL_VAR (not variables of this stack).");
    // Its secrets are taken (that is what an export is for), and a setting it changes is named.
    expect(await page.textContent("#files-message")).toContain("Settings taken from it that differ from what this stackgen makes: CORE_IMAGE;");
    // A gateway tag that is no image tag is not taken, as the API and the CLI do not take it.
    expect(await page.textContent("#files-message")).toContain("Not taken from its .env either: CORE_VERSION (not the shape that setting must have");
    expect(await previewedEnv(page)).toBe(exported.files[".env"].replace(/^CORE_IMAGE=.*$/m, "CORE_IMAGE=attacker.example/backdoor"));

    // An .env compose could not read either: refused, and the form stays as it was.
    await page.locator("#svc-n8n").check();
    await settled(page);
    const broken = { ...exported, input: { ...exported.input, services: ["valkey"] }, files: { ...exported.files, ".env": `${exported.files[".env"]}BROKEN="never closes\n` } };
    await page.setInputFiles("#import-input", { name: "unclosed.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(broken)) });
    await page.waitForSelector("#files-message[role=alert]:has-text('Could not import unclosed.json')");
    expect(await page.textContent("#files-message")).toContain("Nothing was changed.");
    expect(await page.locator("#svc-n8n").isChecked()).toBe(true);
    expect(await page.locator("#svc-valkey").isChecked()).toBe(false);

    // Files that are not a bundle (a path leading out): the choices are taken, the secrets are new, and it says so.
    const outside = { ...exported, files: { ...exported.files, "../../evil.sh": "rm -rf /" } };
    await page.setInputFiles("#import-input", { name: "outside.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(outside)) });
    await page.waitForSelector("#files-message:has-text('Imported outside.json')");
    expect(await page.textContent("#files-message")).toContain("Its .env was not kept (its files are not a bundle this stackgen can use), so the files will have new secrets: for a stack that already runs, keep its own .env.");
    // An .env that is not text is no .env to keep either: said the same way.
    const numbered = { ...exported, files: { ...exported.files, ".env": 5 } };
    await page.setInputFiles("#import-input", { name: "numbered.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(numbered)) });
    await page.waitForSelector("#files-message:has-text('Imported numbered.json')");
    expect(await page.textContent("#files-message")).toContain("Its .env was not kept (its files are not a bundle this stackgen can use)");
  }, TEST_TIMEOUT_MS);

  test("an import that keeps an export's JWT secret signs the API keys it makes anew with that secret", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "signed", services: ["supabase"] });
    // Made without secrets, then only the JWT secret filled in by hand: the keys are made on import.
    const mine = "my-own-jwt-secret-0123456789abcdefghijklmnop";
    const env = exported.files[".env"].replace(/^SUPABASE_JWT_SECRET=.*$/m, `SUPABASE_JWT_SECRET=${mine}`).replace(/^(SUPABASE_ANON_KEY|SUPABASE_SERVICE_ROLE_KEY)=.*$/gm, "$1=");
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "signed.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify({ ...exported, files: { ...exported.files, ".env": env } })) });
    await page.waitForSelector("#files-message:has-text('Imported signed.json')");
    const values = parseEnvValues(await previewedEnv(page));
    expect(values.get("SUPABASE_JWT_SECRET")).toBe(mine);
    expect(values.get("SUPABASE_ANON_KEY")).toBe(signJwt(mine, { role: "anon", iss: "supabase" }));
    expect(values.get("SUPABASE_SERVICE_ROLE_KEY")).toBe(signJwt(mine, { role: "service_role", iss: "supabase" }));
  }, TEST_TIMEOUT_MS);

  test("an import's secrets stay through later changes of choices: in the preview, the ZIP and a deploy", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "kept-later", services: ["n8n"] });
    const secrets = [...generatedSecretNames(exported.files[".env"])];
    const exportedValues = parseEnvValues(exported.files[".env"]);
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "kept.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForSelector("#files-message:has-text('Imported kept.json')");
    // A service added since the import: every imported secret stays (the running stack's data is
    // under them), the newcomer gets its own. They were all made anew, and nothing said so.
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('keeps the secrets imported from kept.json')");
    const previewed = parseEnvValues(await previewedEnv(page));
    expect(secrets.length).toBeGreaterThan(2);
    for (const name of secrets) expect([name, previewed.get(name)]).toEqual([name, exportedValues.get(name)]);
    expect(previewed.get("REDIS_PASSWORD")?.length).toBeGreaterThanOrEqual(32);
    // Another change, then the ZIP without a preview: the same secrets, the newcomer's included.
    await page.fill("#opt-domain", "kept.example.test");
    await settled(page);
    const [zip] = await Promise.all([page.waitForEvent("download"), page.click("#zip-button")]);
    await page.waitForSelector("#files-message:has-text('with the secrets imported from kept.json')");
    const zipped = parseEnvValues(strFromU8(unzipSync(new Uint8Array(readFileSync((await zip.path())!)))["kept-later/.env"]));
    for (const name of [...secrets, "REDIS_PASSWORD"]) expect([name, zipped.get(name)]).toEqual([name, previewed.get(name)]);
    // And a deploy of a later change, with no preview of it: the platform gets them too.
    const { CoolifyFake } = await import("../deploy/fakes/coolify-fake.ts");
    const fake = await new CoolifyFake().start();
    cleanups.push(() => fake.stop());
    await page.fill("#opt-domain", "");
    await settled(page);
    await page.fill("#deploy-url", fake.url);
    await page.fill("#deploy-key", fake.token);
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#deploy-button");
    const deployed = parseEnvValues((await sent).postDataJSON().complete.files[".env"]);
    await page.waitForSelector("#dashboard-link");
    await page.waitForSelector("#deploy-button:enabled");
    for (const name of [...secrets, "REDIS_PASSWORD"]) expect([name, deployed.get(name)]).toEqual([name, previewed.get(name)]);
    expect(await page.locator("#deploy-secrets-note").count()).toBe(0);

    // A preview and a deploy of new choices at once share one generation: a service added now
    // gets one secret, the same in both (two generations made two, and kept the later one).
    await page.locator("#svc-minio").check();
    await page.check("#deploy-update");
    await settled(page);
    let generations = 0;
    await page.route("**/v1/generate*", async (route) => {
      generations++;
      await new Promise((done) => setTimeout(done, 300));
      await route.continue();
    });
    const raced = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#preview-button");
    await page.click("#deploy-button");
    const racedEnv = parseEnvValues((await raced).postDataJSON().complete.files[".env"]);
    await page.waitForSelector("#dashboard-link");
    await page.waitForSelector("#deploy-button:enabled");
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    await page.unroute("**/v1/generate*");
    expect(generations).toBe(1);
    const shownEnv = parseEnvValues(await previewedEnv(page));
    expect(racedEnv.get("MINIO_ROOT_PASSWORD")?.length).toBeGreaterThanOrEqual(32);
    expect(shownEnv.get("MINIO_ROOT_PASSWORD")).toBe(racedEnv.get("MINIO_ROOT_PASSWORD")!);
  }, TEST_TIMEOUT_MS);

  test("a deploy while the preview of the same choices is generated sends that preview's secrets", async () => {
    const page = await redisWithDeployForm();
    const release = await holdNext(page, "**/v1/generate*");
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Generating the preview')");
    await page.click("#deploy-button");
    await page.waitForTimeout(200); // a deploy that does not wait goes out now, with new secrets
    release();
    const deployed = (await sent).postDataJSON();
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    await page.waitForSelector("#deploy-result .alert");
    expect(deployed.complete?.files[".env"]).toBe(await previewedEnv(page));
    expect(await page.locator("#deploy-secrets-note").count()).toBe(0);
  }, TEST_TIMEOUT_MS);

  test("an import picked while a preview is generated comes after it: the late preview does not replace the import", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "picked-late", services: ["n8n"] });
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await settled(page);
    const release = await holdNext(page, "**/v1/generate*");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Generating the preview')");
    expect(await page.locator("#import-button").isDisabled()).toBe(true);
    // A file chooser opened before: its file is imported once the preview is done.
    await page.setInputFiles("#import-input", { name: "late.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForTimeout(500); // an import that does not wait is done by now
    release();
    await page.waitForSelector("#files-message:has-text('Imported late.json')");
    await settled(page);
    expect(await page.textContent("#files-message")).not.toContain("Preview ready");
    expect(await page.inputValue("#opt-projectName")).toBe("picked-late");
    expect(await previewedEnv(page)).toBe(exported.files[".env"]);
    expect(await page.locator("#preview-stale").isHidden()).toBe(true);
    expect(await page.locator("#import-button").isDisabled()).toBe(false);
  }, TEST_TIMEOUT_MS);

  test("a deploy waiting on a preview that then fails goes out with the choices alone", async () => {
    const page = await redisWithDeployForm();
    let refuse!: () => void;
    const refused = new Promise<void>((r) => (refuse = r));
    await page.route("**/v1/generate*", async (route) => {
      await refused;
      await route.fulfill({ status: 429, contentType: "application/json", headers: { "retry-after": "60" }, body: JSON.stringify({ error: { code: "RATE_LIMITED", message: "Too many requests; try again in 60 s." } }) });
    }, { times: 1 });
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Generating the preview')");
    await page.click("#deploy-button");
    await page.waitForTimeout(200);
    refuse();
    const deployed = (await sent).postDataJSON();
    expect(deployed.complete).toBeUndefined();
    expect(deployed.input.services).toEqual(["redis"]);
    await page.waitForSelector("#deploy-result .alert");
    problems = problems.filter((p) => !p.includes("429"));
  }, TEST_TIMEOUT_MS);

  test("an import picked while a deploy makes its bundle comes after that bundle, not under it", async () => {
    const first = await apiJson("/v1/generate?format=complete", { projectName: "deployed-first", services: ["redis"] });
    const second = await apiJson("/v1/generate?format=complete", { projectName: "imported-next", services: ["n8n"] });
    // Changed since the import: the deploy makes the bundle that keeps its secrets.
    const page = await importedThenChanged(first);
    const release = await holdNext(page, "**/v1/generate*");
    await page.click("#deploy-button");
    await page.waitForSelector("#deploy-result:has-text('Deploying')");
    await page.setInputFiles("#import-input", { name: "second.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(second)) });
    await page.waitForTimeout(500); // an import that does not wait is done by now
    release();
    await page.waitForSelector("#deploy-result .alert");
    await page.waitForSelector("#files-message:has-text('Imported second.json')");
    await settled(page);
    expect(await page.inputValue("#opt-projectName")).toBe("imported-next");
    expect(await previewedEnv(page)).toBe(second.files[".env"]);
    expect(await page.locator("#preview-stale").isHidden()).toBe(true);
  }, TEST_TIMEOUT_MS);

  test("a deploy clicked while an import runs: its bundle of the choices before does not replace the import's", async () => {
    const first = await apiJson("/v1/generate?format=complete", { projectName: "kept-before", services: ["redis"] });
    const second = await apiJson("/v1/generate?format=complete", { projectName: "imported-during", services: ["n8n"] });
    const page = await importedThenChanged(first);
    // The import's own generation is held, then the deploy's (of the choices before the import).
    const releaseImport = await holdNext(page, "**/v1/generate*");
    await page.setInputFiles("#import-input", { name: "second.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(second)) });
    await page.waitForSelector("#files-message:has-text('Importing second.json')");
    const releaseDeploy = await holdNext(page, "**/v1/generate*");
    await page.click("#deploy-button");
    await page.waitForTimeout(300);
    releaseImport();
    await page.waitForSelector("#files-message:has-text('Imported second.json')");
    releaseDeploy();
    await page.waitForSelector("#deploy-result .alert");
    await page.waitForTimeout(300); // a late bundle that replaced the import's would be in by now
    expect(await page.inputValue("#opt-projectName")).toBe("imported-during");
    expect(await previewedEnv(page)).toBe(second.files[".env"]);
    expect(await page.textContent("#files-message")).toContain("Imported second.json");
  }, TEST_TIMEOUT_MS);

  test("an export whose choices make no files as they are is loaded to be fixed, its secrets kept for then", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "to-fix", services: ["redis"] });
    // Two services that conflict: refused with "try again", which could never work.
    const conflicting = { ...exported, input: { ...exported.input, services: ["redis", "valkey"] } };
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "conflict.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(conflicting)) });
    await page.waitForSelector("#files-message:has-text('Imported conflict.json')");
    const message = (await page.textContent("#files-message"))!;
    expect(message).toContain("Its choices make no files as they are (");
    expect(message).not.toContain("try again");
    expect(await page.locator("#svc-valkey").isChecked()).toBe(true);
    await settled(page);
    await page.locator("#svc-valkey").uncheck();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('keeps the secrets imported from conflict.json')");
    expect(parseEnvValues(await previewedEnv(page)).get("REDIS_PASSWORD")).toBe(parseEnvValues(exported.files[".env"]).get("REDIS_PASSWORD")!);
    // The refused generation is the import's doing.
    problems = problems.filter((p) => !p.includes("409"));
  }, TEST_TIMEOUT_MS);

  test("a bundle's stackgen.json brings its preset back as chosen: what the preset resolved to is left to it", async () => {
    const made = await apiJson("/v1/generate?format=json", { projectName: "from-preset", preset: "researcher" });
    const record = JSON.parse(made.files["stackgen.json"]);
    // The record lists the resolved services, the proxy among them.
    expect(record.services).toContain("caddy");
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "stackgen.json", mimeType: "application/json", buffer: Buffer.from(made.files["stackgen.json"]) });
    await page.waitForSelector("#files-message:has-text('Imported stackgen.json')");
    await settled(page);
    expect(await page.getByRole("button", { name: "Use Researcher" }).getAttribute("aria-current")).toBe("true");
    await page.waitForFunction(() => new URLSearchParams(location.search).get("preset") === "researcher");
    expect(new URL(page.url()).searchParams.get("services")!.split(",")).not.toContain("caddy");
    expect(await page.inputValue("#opt-proxy")).toBe("caddy");
  }, TEST_TIMEOUT_MS);

  test("files made from an untouched preset name it, as the API's do: an API export of the preset imports as unedited", async () => {
    const exported = await apiJson("/v1/generate?format=complete", { projectName: "from-devops", preset: "devops" });
    expect(exported.files["README.md"]).toContain("from the `devops` preset");
    const page = await openPage();
    await page.setInputFiles("#import-input", { name: "devops.json", mimeType: "application/json", buffer: Buffer.from(JSON.stringify(exported)) });
    await page.waitForSelector("#files-message:has-text('Imported devops.json')");
    expect(await page.textContent("#files-message")).not.toContain("differed");
    await page.click("#preview button[data-path='README.md']");
    expect(await page.textContent("#file-content")).toBe(exported.files["README.md"]);
    // Changed from the preset's selection: the files no longer name it.
    await page.locator("#svc-minio").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#files-message:has-text('Preview ready')");
    await page.click("#preview button[data-path='README.md']");
    expect(await page.textContent("#file-content")).not.toContain("preset");
  }, TEST_TIMEOUT_MS);

  test("keyboard import, an out-of-date preview's files, the one reverse proxy, long words and links with stray spaces", async () => {
    const page = await openPage();
    // Enter on Import JSON… opens the file chooser (clicks the file input), as on any button.
    await page.evaluate(() => {
      document.getElementById("import-input")!.addEventListener("click", (e) => {
        e.preventDefault(); // no real chooser in the way of the rest of the test
        document.body.dataset.chooserOpened = "yes";
      });
    });
    await page.focus("#import-button");
    await page.keyboard.press("Enter");
    await page.waitForSelector("body[data-chooser-opened=yes]");

    // A preview that no longer matches the choices offers none of its files to copy or save.
    await page.locator("#svc-redis").check();
    await settled(page);
    await page.click("#preview-button");
    await page.waitForSelector("#save-file-button");
    expect(await page.locator("#save-file-button").isDisabled()).toBe(false);
    await page.locator("#svc-n8n").check();
    await settled(page);
    expect(await page.locator("#preview-stale").isVisible()).toBe(true);
    expect(await page.locator("#save-file-button").isDisabled()).toBe(true);
    await page.click("#preview button[data-path='README.md']");
    expect(await page.locator("#save-file-button").isDisabled()).toBe(true);
    expect(await page.locator("#preview button[data-path='README.md']").getAttribute("aria-label")).toBe("README.md");

    // Ticking the other reverse proxy replaces the first, and says so.
    await page.selectOption("#opt-proxy", "caddy");
    await settled(page);
    await page.locator("#svc-traefik").check();
    await page.waitForSelector("#announcer:has-text('Traefik replaces Caddy as the reverse proxy')");
    expect(await page.textContent("#svc-traefik-note")).toContain("replaces Caddy as the reverse proxy");
    expect(await page.inputValue("#opt-proxy")).toBe("traefik");
    await settled(page); // no check in flight when the page is left

    // A link with a line break before the domain: the field holds what it shows.
    await page.setViewportSize(NARROW);
    await page.goto(`${base}/?services=redis&domain=%0Astack.example.com%20&skillPacks=${"x".repeat(600)}`);
    await page.waitForSelector("body[data-ready=true]");
    await settled(page);
    expect(await page.inputValue("#opt-domain")).toBe("stack.example.com");
    expect(await page.locator("#opt-domain").getAttribute("aria-invalid")).not.toBe("true");
    // The left-out 600-character id wraps instead of widening the page.
    expect(await page.textContent("body")).toContain("x".repeat(600));
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(NARROW.width);
  }, TEST_TIMEOUT_MS);

  test("known limits, and apps needing HTTPS served over plain HTTP, are shown before anything is downloaded", async () => {
    const page = await openPage();
    await page.locator("#svc-vaultwarden").check();
    await page.locator("#svc-lasuite-meet-backend").check();
    await settled(page);
    expect(await page.textContent('#known-limits-list [data-service="lasuite-meet-backend"]')).toContain("Meet needs a domain");
    expect(await page.textContent('#known-limits-list [data-service="vaultwarden"]')).toContain("Needs HTTPS in the browser");
    // A domain without a proxy is said beside the verdict too, not only under its field.
    await page.fill("#opt-domain", "example.com");
    await settled(page);
    expect(await page.textContent("#domain-unused")).toContain("example.com is not used: without a reverse proxy");
    expect(await page.textContent("#opt-domain-hint")).toContain("A domain needs a reverse proxy");
    await page.selectOption("#opt-proxy", "caddy");
    await settled(page);
    expect(await page.locator("#domain-unused").count()).toBe(0);
    expect(await page.locator('#known-limits-list [data-service="vaultwarden"]').count()).toBe(0);
    expect(await page.locator('#known-limits-list [data-service="lasuite-meet-backend"]').count()).toBe(1);
  }, TEST_TIMEOUT_MS);

  test("deploys to a fake Coolify and shows every step", async () => {
    const { CoolifyFake } = await import("../deploy/fakes/coolify-fake.ts");
    const fake = await new CoolifyFake().start();
    cleanups.push(() => fake.stop());
    const page = await openPage();
    await page.locator("#svc-redis").check();
    await page.fill("#opt-projectName", "ui-deploy");
    await settled(page);
    // A primary button keeps its colour under the mouse (its white label on the hover tint of
    // the plain buttons was unreadable).
    const previewBackground = () => page.locator("#preview-button").evaluate((el) => getComputedStyle(el).backgroundColor);
    const idleBackground = await previewBackground();
    await page.hover("#preview-button");
    expect(await previewBackground()).toBe(idleBackground);
    // The destination field is Coolify's only.
    await page.selectOption("#deploy-provider", "dokploy");
    expect(await page.locator("#deploy-destination").isVisible()).toBe(false);
    await page.selectOption("#deploy-provider", "coolify");
    expect(await page.locator("#deploy-destination").isVisible()).toBe(true);
    // A name Coolify refuses is said before the button is pressed, not after the first call.
    await page.fill("#opt-projectName", "ab");
    await settled(page);
    expect(await page.locator("#deploy-button").isDisabled()).toBe(true);
    expect(await page.textContent("#deploy-blocked")).toContain("Coolify project names need 3 to 255 characters");
    await page.fill("#opt-projectName", "ui-deploy");
    await settled(page);
    await page.fill("#deploy-url", fake.url);

    // A wrong key: a clear error, nothing remembered.
    await page.fill("#deploy-key", "wrong-key");
    await page.click("#deploy-button");
    const failure = page.locator("#deploy-result [role=alert]");
    await failure.waitFor();
    await page.waitForSelector("#deploy-button:enabled");
    expect(await failure.textContent()).toContain("401");
    expect(await page.locator("#deploy-steps li[data-status=failed]").count()).toBe(1);
    expect(await page.textContent("#deploy-hint")).toContain("Keys & Tokens > API tokens");

    // A new attempt clears the last one's steps: a URL refused before sending shows its error alone.
    await page.fill("#deploy-url", "ftp://x");
    await page.click("#deploy-button");
    await page.waitForSelector("#deploy-result [role=alert]:has-text('must start with http')");
    expect(await page.locator("#deploy-steps li").count()).toBe(0);
    // Said as the field's problem, on the field, not as a deployment that failed.
    expect(await page.textContent("#deploy-result [role=alert]")).toStartWith("Not sent: ");
    expect(await page.getAttribute("#deploy-url", "aria-invalid")).toBe("true");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("deploy-url");
    await page.fill("#deploy-url", fake.url);
    expect(await page.getAttribute("#deploy-url", "aria-invalid")).toBeNull();
    // A key of spaces passes the field's `required`: refused here, before anything is sent.
    await page.fill("#deploy-key", "   ");
    let spacesSent = false;
    const watch = (r: { url(): string }) => { if (new URL(r.url()).pathname === "/v1/deploy") spacesSent = true; };
    page.on("request", watch);
    await page.click("#deploy-button");
    await page.waitForSelector("#deploy-result [role=alert]:has-text('holds only spaces')");
    page.off("request", watch);
    expect(spacesSent).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("deploy-key");
    expect(await page.getAttribute("#deploy-key", "aria-invalid")).toBe("true");
    await page.fill("#deploy-key", "wrong-key");

    // The stackgen server's own key goes along as X-API-Key (this server knows none: refused).
    await page.fill("#deploy-server-key", "not-a-server-key");
    const withKey = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#deploy-button");
    expect((await withKey).headers()["x-api-key"]).toBe("not-a-server-key");
    await page.waitForSelector("#deploy-button:enabled");
    expect(await page.locator("#deploy-result [role=alert]").textContent()).toContain("Invalid API key.");
    await page.fill("#deploy-server-key", "");
    // Opened on the server's machine, the hint stays a plain note.
    expect(await page.locator("#server-key-hint").getAttribute("class")).not.toContain("warn-text");

    // Previewed first: the deploy carries the previewed .env, so the platform gets the secrets
    // the user has seen (and may have downloaded), not a second set.
    await page.click("#preview-button");
    await page.waitForSelector("#file-content");
    await page.fill("#deploy-key", fake.token);
    const sent = page.waitForRequest((r) => new URL(r.url()).pathname === "/v1/deploy");
    await page.click("#deploy-button");
    const previewedEnv = (await sent).postDataJSON().complete.files[".env"] as string;
    await page.waitForSelector("#dashboard-link");
    await page.waitForSelector("#deploy-button:enabled"); // the stream has ended
    const password = parseEnvValues(previewedEnv).get("REDIS_PASSWORD");
    expect(password?.length).toBeGreaterThanOrEqual(16);
    expect(fake.services[0]!.envs.get("REDIS_PASSWORD")!.value).toBe(password!);
    const steps = await page.locator("#deploy-steps li").evaluateAll((els) => els.map((e) => [e.querySelector(".step-name")!.textContent, e.getAttribute("data-status")]));
    expect(steps.length).toBeGreaterThanOrEqual(5);
    for (const [, status] of steps) expect(["ok", "skipped"]).toContain(String(status));
    expect(await page.locator("#dashboard-link").getAttribute("href")).toStartWith(fake.url);
    expect(await page.locator("#deploy-secrets-note").count()).toBe(0); // the user has these secrets
    expect(await page.evaluate(() => localStorage.getItem("stackgen.deploy"))).toBeNull();
    await shoot(page, "deploy", "#deploy");

    // "Remember" keeps URL and key for the next visit.
    await page.check("#deploy-remember");
    await page.check("#deploy-update");
    await page.click("#deploy-button");
    await page.waitForSelector("#dashboard-link");
    await page.waitForSelector("#deploy-button:enabled"); // the stream has ended
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    expect(await page.inputValue("#deploy-key")).toBe(fake.token);
    expect(await page.locator("#deploy-remember").isChecked()).toBe(true);
    await page.uncheck("#deploy-remember");
    expect(await page.evaluate(() => localStorage.getItem("stackgen.deploy"))).toBeNull();
    // Deployed without a preview: the secrets were made for the deploy alone, and the page says where they are.
    await page.check("#deploy-update");
    await page.click("#deploy-button");
    await page.waitForSelector("#dashboard-link");
    await page.waitForSelector("#deploy-button:enabled");
    expect(await page.textContent("#deploy-secrets-note")).toContain("Passwords and keys the platform already had were kept");

    // A failed run says what it left on the platform, and what a call without an answer may have made.
    const failedRun = { type: "result", result: { success: false, steps: [{ step: "Create service", status: "failed" }], error: "Coolify did not answer within 30 s", created: ["project ui-deploy"], possiblyCreated: ["service ui-deploy"] } };
    await page.route("**/v1/deploy", (route) => route.fulfill({ status: 200, contentType: "application/x-ndjson", body: `${JSON.stringify(failedRun)}\n` }));
    await page.click("#deploy-button");
    await page.waitForSelector("#deploy-possibly-created");
    expect(await page.textContent("#deploy-created")).toContain("Already created on the platform: project ui-deploy.");
    expect(await page.textContent("#deploy-possibly-created")).toContain("Possibly created on the platform: service ui-deploy");
    await page.unroute("**/v1/deploy");

    // The stream ends after a step began (a proxy in between cut it): the page does not claim
    // the deploy failed, since the server may still be at it, and says what to check.
    await page.route("**/v1/deploy", (route) => route.fulfill({ status: 200, contentType: "application/x-ndjson", body: '{"type":"step","step":"Test connection","status":"running"}\n' }));
    await page.click("#deploy-button");
    const lost = page.locator("#deploy-result [role=alert]");
    await lost.waitFor();
    expect(await lost.textContent()).toContain("Lost the connection to the stackgen server during the deployment");
    expect(await page.locator("#deploy-steps li").evaluateAll((els) => els.map((e) => e.getAttribute("data-status")))).toEqual(["unknown"]);
    // The refused server key earlier was this test's doing.
    problems = problems.filter((p) => !p.includes("401"));
  }, TEST_TIMEOUT_MS);

  test("narrow screen: readable at 390 px", async () => {
    const page = await openPage(NARROW);
    const noSideScroll = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    expect(await noSideScroll()).toBe(true);
    expect(await badgesOutside(page)).toEqual([]);
    const presets = (await apiJson("/v1/presets")).presets as any[];
    await page.getByRole("button", { name: `Use ${presets.find((p) => p.id === "minimal").name}` }).click();
    await settled(page);
    await shoot(page, "builder", "#start");
    await page.locator("#svc-n8n").check();
    await settled(page);
    await shoot(page, "validation", "#summary");
    await page.click("#preview-button");
    await page.waitForSelector("#file-content");
    expect(await noSideScroll()).toBe(true);
    await shoot(page, "preview", "#files");
    await page.locator("#svc-caddy").check();
    await page.locator("#svc-traefik").check();
    await settled(page);
    await shoot(page, "conflict", "#summary");
    await page.locator("#svc-traefik").uncheck();
    await settled(page);
    await shoot(page, "deploy", "#deploy");
    expect(await noSideScroll()).toBe(true);
  }, TEST_TIMEOUT_MS);
});
