// stackgen web UI entry point. Plain TypeScript modules and CSS, no framework: the page is small,
// fast to load from the binary, works offline and leaves nothing to keep up to date.
import { h, replaceChildren, byId, holdFocus } from "./dom.ts";
import * as api from "./api.ts";
import type { ValidateResponse } from "./api.ts";
import { initialState, inputOfLink, linkSearch, stateFromInput, validateBody } from "./model.ts";
import { Store, indexCatalog, knownIds, type CatalogData, type Validation } from "./store.ts";
import { leftOut, plural } from "./explain.ts";
import { mountPresets, mountPacks, mountServices } from "./views/catalog.ts";
import { mountSummary } from "./views/summary.ts";
import { mountOptions } from "./views/options.ts";
import { mountFiles } from "./views/files.ts";
import { mountDeploy } from "./views/deploy.ts";

const VALIDATE_DELAY_MS = 250;
/** Typing a domain: the check waits for a pause in the typing, not for each letter (every call
 *  counts against the server's rate limit). */
const TYPING_DELAY_MS = 900;
/** Checked selections whose answers are kept: going back to one costs no call. */
const KEPT_ANSWERS = 200;

async function loadCatalog() {
  const [services, presets, skills] = await Promise.all([api.getServices(), api.getPresets(), api.getSkills()]);
  return indexCatalog(services.services, services.categories, presets.presets, skills.packs);
}

/**
 * Debounced validation; answers to older requests are dropped so the newest selection wins. The
 * panel shows "checking" at once, so nothing acts on a stale answer during the debounce. Each
 * call counts against the server's rate limit: a selection checked before is answered from
 * memory, and over the limit no call goes out until the server's Retry-After has passed.
 */
function startLiveValidation(store: Store): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let sequence = 0;
  /** The body of the check last sent or waiting to be, and that body as JSON. */
  let queued = validateBody(store.form);
  let queuedKey: string | undefined;
  const answers = new Map<string, ValidateResponse>();
  /** The rate limit's refusal while it holds: shown for any selection not checked before. */
  let limited: Validation | undefined;
  let resumeTimer: ReturnType<typeof setTimeout> | undefined;

  const check = async () => {
    const body = validateBody(store.form);
    const key = JSON.stringify(body);
    queuedKey = key;
    const mine = ++sequence;
    // An answer is shown only while its choices are still the form's: one that lands during the
    // debounce of a later change is not a verdict on the choices now (they may conflict).
    const current = () => mine === sequence && key === queuedKey;
    const known = answers.get(key);
    if (known) return store.setValidation({ kind: "done", result: known });
    if (limited) return store.setValidation(limited);
    try {
      const result = await api.validate(body);
      answers.delete(key); // re-inserted as the newest
      answers.set(key, result);
      if (answers.size > KEPT_ANSWERS) answers.delete(answers.keys().next().value!);
      if (current()) store.setValidation({ kind: "done", result });
    } catch (e) {
      const error = e instanceof api.ApiError ? e : undefined;
      if (error?.retryAfterSeconds) {
        const waitMs = error.retryAfterSeconds * 1000;
        limited = { kind: "error", message: error.describe(), code: error.code, retryAt: Date.now() + waitMs };
        clearTimeout(resumeTimer);
        resumeTimer = setTimeout(() => store.recheck(), waitMs);
      }
      if (!current()) return;
      queuedKey = undefined; // retry on the next change
      store.setValidation(limited ?? { kind: "error", message: error ? error.describe() : String(e), code: error?.code });
    }
  };
  store.onForm(() => {
    const body = validateBody(store.form);
    const key = JSON.stringify(body);
    if (key === queuedKey) return; // e.g. only the project name changed
    // Only the domain differs from the check before: it is being typed.
    const typing = JSON.stringify({ ...body, domain: undefined }) === JSON.stringify({ ...queued, domain: undefined });
    queued = body;
    queuedKey = key;
    clearTimeout(timer);
    // Known, or not to be asked now: said at once, without a call.
    if (answers.has(key) || limited) return void check();
    if (store.validation.kind !== "checking") store.setValidation({ kind: "checking", last: store.lastResult() });
    timer = setTimeout(check, typing ? TYPING_DELAY_MS : VALIDATE_DELAY_MS);
  });
  // Also what a server key entered or corrected asks for: a key has limits of its own.
  store.recheck = () => {
    clearTimeout(timer);
    clearTimeout(resumeTimer);
    limited = undefined;
    store.setValidation({ kind: "checking", last: store.lastResult() });
    void check();
  };
  // Back at the page after restarting the server (or a pause): a failed check tries again by
  // itself. Not over the rate limit, where only waiting helps.
  window.addEventListener("focus", () => {
    const v = store.validation;
    if (v.kind === "error" && v.code !== "RATE_LIMITED") store.recheck();
  });
  store.setValidation({ kind: "checking" });
  void check();
}

/** The query string the address bar had when the page last wrote or read it. */
let shownSearch = location.search;

/** The address bar holds a link to the current choices: replaced, so Back still leaves the page. */
function showLink(store: Store): void {
  history.replaceState(null, "", `${location.pathname}${linkSearch(store.form, store.catalog.presetsById)}${location.hash}`);
  shownSearch = location.search;
}

/** Back and Forward (in-page links such as "Services" add history entries) fill the form from the
 *  entry's link, so the form shows what the address bar says. An in-page link also fires popstate,
 *  its entry a copy of a query that may lag the debounced link: that changes nothing. */
function followHistory(store: Store): void {
  window.addEventListener("popstate", () => {
    if (location.search === shownSearch) return;
    shownSearch = location.search;
    const { state } = stateFromInput(inputOfLink(location.search) ?? {}, knownIds(store.catalog), initialState());
    store.setForm(state);
    store.choicesReplaced();
  });
}

/** A link with choices in its query string fills the form before the views first draw it. */
function openLink(store: Store): void {
  const input = inputOfLink(location.search);
  if (!input) return;
  const { state, ignored } = stateFromInput(input, knownIds(store.catalog), store.form);
  store.form = state;
  const note = byId("link-note");
  const preset = state.presetId === null ? undefined : store.catalog.presetsById.get(state.presetId);
  // Every choice the link sets beyond a fresh page's, so none applies unseen.
  const fresh = initialState();
  // The project name too: it names the compose project, and the platform project a deploy with
  // "Update existing" would overwrite.
  const picked = [
    state.projectName !== fresh.projectName && `project ${state.projectName}`, preset && `preset ${preset.name}`,
    state.services.length > 0 && plural(state.services.length, "chosen service"), state.skillPacks.length > 0 && plural(state.skillPacks.length, "skill pack"),
    state.proxy && `proxy ${state.proxy}`, state.domain && `domain ${state.domain}`, state.gpu && "GPU", state.platform && `platform ${state.platform}`,
    state.deployment !== fresh.deployment && `deployment ${state.deployment}`, state.coreVersion !== fresh.coreVersion && `core version ${state.coreVersion}`,
    state.memoryLimits && "memory caps", !state.generateSecrets && "no generated secrets",
  ].filter(Boolean).join(", ");
  // A link of unknown ids alone sets nothing: said so, not as an empty list.
  const what = picked ? ` (${picked})` : ", the same as a fresh page's";
  note.textContent = `This page opened with the choices in its link${what}; check them before you generate.${leftOut(ignored)}`;
  note.hidden = false;
  store.choicesReplaced = () => (note.hidden = true);
  // What was left out leaves the address bar too: a link copied from it would carry it on.
  if (ignored.length) showLink(store);
}

async function main(): Promise<void> {
  const { catalog, restoreFocus } = await catalogOnceLoaded();
  const store = new Store(initialState(), catalog);
  openLink(store);
  mountPresets(store);
  mountPacks(store);
  mountServices(store);
  mountOptions(store);
  mountSummary(store);
  mountFiles(store);
  mountDeploy(store);
  startLiveValidation(store);
  followHistory(store);
  // The link follows the choices, debounced: browsers throttle a page that replaces its URL on
  // every keystroke.
  let linkTimer: ReturnType<typeof setTimeout> | undefined;
  store.onForm(() => {
    clearTimeout(linkTimer);
    linkTimer = setTimeout(() => showLink(store), VALIDATE_DELAY_MS);
  });
  byId("loading").remove();
  document.body.classList.add("ready");
  // A "Try again" pressed from the keyboard went with the failure's message: the builder takes
  // focus, not the page's top.
  restoreFocus?.(byId("main"));
  scrollToHash();
  document.body.dataset.ready = "true";
}

/** The catalog, loaded again after a failure when the user asks or, over the rate limit, by
 *  itself once the server's Retry-After has passed. */
async function catalogOnceLoaded(): Promise<{ catalog: CatalogData; restoreFocus?: (laterFallback?: HTMLElement) => void }> {
  let restoreFocus: ((laterFallback?: HTMLElement) => void) | undefined;
  for (;;) {
    try {
      return { catalog: await loadCatalog(), restoreFocus };
    } catch (e) {
      restoreFocus = await loadFailed(e, restoreFocus);
    }
  }
}

/** Says why the catalog did not load, and settles when it is time to try again. Over the rate
 *  limit the steps (step 5's server key among them) are not drawn: the key is asked for here.
 *  `restoreFocus`: the try before's, so a pressed "Try again" that fails again keeps focus. */
function loadFailed(e: unknown, restoreFocus?: () => void): Promise<(laterFallback?: HTMLElement) => void> {
  const loading = byId("loading");
  const verdict = byId("status-verdict");
  const error = e instanceof api.ApiError ? e : undefined;
  const limited = error?.code === "RATE_LIMITED";
  verdict.replaceChildren(h("span", { class: "error-text" }, "✗ Catalog not loaded"));
  byId("status-bar").setAttribute("href", "#loading");
  return new Promise((retry) => {
    let countdown: ReturnType<typeof setInterval> | undefined;
    const again = () => {
      clearInterval(countdown);
      const restore = holdFocus();
      verdict.textContent = "Loading…";
      replaceChildren(loading, h("p", { role: "status" }, "Loading the catalog…"));
      retry(restore);
    };
    const key = h("input", { id: "load-server-key", type: "password", autocomplete: "off", spellcheck: "false", value: api.serverKeyInUse() ?? "" });
    const wait = h("p", { class: "small muted", id: "load-countdown" });
    replaceChildren(loading,
      h("p", { class: "alert error", role: "alert" }, `Could not load the catalog: ${error ? error.describe("in the field below") : String(e)}`),
      h("form", { class: "load-retry", onsubmit: (event: Event) => { event.preventDefault(); api.useServerKey(key.value.trim()); again(); } },
        limited ? h("label", { for: "load-server-key" }, "stackgen server key ", h("span", { class: "muted" }, "(optional)")) : null,
        limited ? key : null,
        h("button", { type: "submit", class: "button", id: "load-retry" }, "Try again"),
      ),
      wait,
    );
    restoreFocus?.();
    const seconds = error?.retryAfterSeconds;
    if (!seconds) return;
    const due = Date.now() + seconds * 1000;
    // Not a live region: a countdown read out every second would drown everything else.
    const tick = () => {
      const left = Math.ceil((due - Date.now()) / 1000);
      if (left <= 0) return again();
      wait.textContent = `Trying again by itself in ${left >= 60 ? `${Math.floor(left / 60)} min ${left % 60} s` : `${left} s`}.`;
    };
    tick();
    countdown = setInterval(tick, 1000);
  });
}

/** The browser jumps to a link's `#section` before the page is drawn (the steps are hidden until
 *  the catalog loads), so it lands at the top: jump again now that the section exists. */
function scrollToHash(): void {
  let id: string;
  try {
    id = decodeURIComponent(location.hash.slice(1));
  } catch {
    return; // a malformed escape names no element
  }
  // Instant, as the browser's own jump: the smooth scrolling of the page is for clicks.
  if (id) document.getElementById(id)?.scrollIntoView({ behavior: "instant", block: "start" });
}

void main();
