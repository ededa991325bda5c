// stackgen web UI entry point. Plain TypeScript modules and CSS, no framework: the page is small,
// fast to load from the binary, works offline and leaves nothing to keep up to date.
import { h, replaceChildren, byId } from "./dom.ts";
import * as api from "./api.ts";
import { initialState, inputOfLink, linkSearch, stateFromInput, validateBody } from "./model.ts";
import { Store, indexCatalog, knownIds } from "./store.ts";
import { leftOut, plural } from "./explain.ts";
import { mountPresets, mountPacks, mountServices } from "./views/catalog.ts";
import { mountSummary } from "./views/summary.ts";
import { mountOptions } from "./views/options.ts";
import { mountFiles } from "./views/files.ts";
import { mountDeploy } from "./views/deploy.ts";

const VALIDATE_DELAY_MS = 250;

async function loadCatalog() {
  const [services, presets, skills] = await Promise.all([api.getServices(), api.getPresets(), api.getSkills()]);
  return indexCatalog(services.services, services.categories, presets.presets, skills.packs);
}

/**
 * Debounced validation; answers to older requests are dropped so the newest selection wins. The
 * panel shows "checking" at once, so nothing acts on a stale answer during the debounce.
 */
function startLiveValidation(store: Store): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let sequence = 0;
  let checkedBody: string | undefined;
  const check = async () => {
    const body = validateBody(store.form);
    checkedBody = JSON.stringify(body);
    const mine = ++sequence;
    try {
      const result = await api.validate(body);
      if (mine === sequence) store.setValidation({ kind: "done", result });
    } catch (e) {
      if (mine !== sequence) return;
      checkedBody = undefined; // retry on the next change
      store.setValidation({ kind: "error", message: e instanceof api.ApiError ? e.describe() : String(e), code: e instanceof api.ApiError ? e.code : undefined });
    }
  };
  store.onForm(() => {
    if (JSON.stringify(validateBody(store.form)) === checkedBody) return; // e.g. only the project name changed
    if (store.validation.kind !== "checking") store.setValidation({ kind: "checking", last: store.lastResult() });
    clearTimeout(timer);
    timer = setTimeout(check, VALIDATE_DELAY_MS);
  });
  store.recheck = () => {
    clearTimeout(timer);
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

/** A link with choices in its query string fills the form before the views first draw it. */
function openLink(store: Store): void {
  const input = inputOfLink(location.search);
  if (!input) return;
  const { state, ignored } = stateFromInput(input, knownIds(store.catalog), store.form);
  store.form = state;
  const note = byId("link-note");
  const preset = state.presetId === null ? undefined : store.catalog.presetsById.get(state.presetId);
  const picked = [preset && `preset ${preset.name}`, plural(state.services.length, "service"), plural(state.skillPacks.length, "skill pack"), state.proxy && `proxy ${state.proxy}`, state.domain && `domain ${state.domain}`].filter(Boolean).join(", ");
  note.textContent = `This page opened with the choices in its link (${picked}); check them before you generate.${leftOut(ignored)}`;
  note.hidden = false;
}

async function main(): Promise<void> {
  const loading = byId("loading");
  let catalog;
  try {
    catalog = await loadCatalog();
  } catch (e) {
    replaceChildren(loading,
      h("p", { class: "alert error", role: "alert" }, `Could not load the catalog: ${e instanceof api.ApiError ? e.describe() : String(e)}`),
      h("button", { type: "button", class: "button", onclick: () => location.reload() }, "Try again"),
    );
    return;
  }
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
  // The address bar holds a link to the current choices: replaced, so Back still leaves the page,
  // and debounced, as browsers throttle a page that replaces its URL on every keystroke.
  let linkTimer: ReturnType<typeof setTimeout> | undefined;
  store.onForm(() => {
    clearTimeout(linkTimer);
    linkTimer = setTimeout(() => history.replaceState(null, "", `${location.pathname}${linkSearch(store.form, store.catalog.presetsById)}${location.hash}`), VALIDATE_DELAY_MS);
  });
  loading.remove();
  document.body.classList.add("ready");
  scrollToHash();
  document.body.dataset.ready = "true";
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
