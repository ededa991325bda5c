// Step 5: deploy to Coolify or Dokploy through POST /v1/deploy, showing each step as it streams in.
// The API key stays in memory unless the user ticks "remember" (then localStorage, on this device).
import { h, replaceChildren, byId, holdFocus } from "../dom.ts";
import * as api from "../api.ts";
import { generateBody, isLoopbackHost } from "../model.ts";
import { nameProblemFor } from "../../deploy/project-names.ts";
import type { Store } from "../store.ts";

const REMEMBER_KEY = "stackgen.deploy";
const SERVER_KEY_DELAY_MS = 600;

interface Remembered { provider: string; url: string; apiKey: string }

const STATUS_TEXT: Record<string, string> = { running: "In progress", ok: "Done", failed: "Failed", skipped: "Skipped", unknown: "Outcome unknown" };
const STATUS_ICON: Record<string, string> = { running: "…", ok: "✓", failed: "✗", skipped: "–", unknown: "?" };

export function mountDeploy(store: Store): void {
  const form = byId<HTMLFormElement>("deploy-form");
  const provider = byId<HTMLSelectElement>("deploy-provider");
  const url = byId<HTMLInputElement>("deploy-url");
  const apiKey = byId<HTMLInputElement>("deploy-key");
  const remember = byId<HTMLInputElement>("deploy-remember");
  const update = byId<HTMLInputElement>("deploy-update");
  const destination = byId<HTMLInputElement>("deploy-destination");
  const serverKey = byId<HTMLInputElement>("deploy-server-key");
  // A key entered while the catalog could not load (over the rate limit) is the one in use.
  serverKey.value = api.serverKeyInUse() ?? "";
  // A check refused for a wrong key, or over the anonymous limit, is run again with the new one,
  // once the typing pauses.
  let keyTimer: ReturnType<typeof setTimeout> | undefined;
  serverKey.addEventListener("input", () => {
    api.useServerKey(serverKey.value.trim());
    clearTimeout(keyTimer);
    keyTimer = setTimeout(() => { if (store.validation.kind === "error") store.recheck(); }, SERVER_KEY_DELAY_MS);
  });
  // From another machine the server refuses a deploy without its key (unless ALLOW_REMOTE_DEPLOY):
  // said before the form is filled in, not after.
  if (!isLoopbackHost(location.hostname)) {
    const hint = byId("server-key-hint");
    hint.textContent = `This page was opened from another machine than the stackgen server's (${location.hostname}): deploying needs one of the server's API keys here, unless the server sets ALLOW_REMOTE_DEPLOY=true.`;
    hint.classList.add("warn-text");
  }
  // Destinations are Coolify's notion: the field shows only for Coolify.
  const showDestination = () => (byId("deploy-destination-field").hidden = provider.value !== "coolify");
  provider.addEventListener("change", showDestination);
  provider.addEventListener("change", () => sync());
  const submit = byId<HTMLButtonElement>("deploy-button");
  const steps = byId("deploy-steps");
  const result = byId("deploy-result");
  let running = false;

  const saved = readRemembered();
  if (saved) {
    provider.value = saved.provider;
    url.value = saved.url;
    apiKey.value = saved.apiKey;
    remember.checked = true;
  }
  showDestination();
  remember.addEventListener("change", () => {
    if (!remember.checked) localStorage.removeItem(REMEMBER_KEY);
  });

  // The platform's own rule for project names, said before the button is pressed.
  const blocker = () => store.outputBlocker("Choose what to deploy first.") ?? nameProblemFor(provider.value, store.form.projectName) ?? undefined;
  const sync = () => {
    const reason = blocker();
    submit.disabled = running || reason !== undefined;
    byId("deploy-blocked").textContent = reason ?? "";
  };
  store.onForm(sync);
  store.onValidation(sync);
  sync();

  // A new attempt: the steps and outcome of the previous one would read as this one's, also next
  // to the browser's note on a field it refuses (it sends no submit event then, only `invalid`).
  const clearOutcome = () => {
    if (running) return;
    steps.textContent = "";
    result.textContent = "";
  };
  form.addEventListener("invalid", clearOutcome, true);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (running) return;
    clearOutcome();
    if (!form.reportValidity()) return;
    const instance = url.value.trim().replace(/\/+$/, "");
    if (!/^https?:\/\//.test(instance)) return refuseField(result, url, "The instance URL must start with http:// or https://.");
    // Spaces pass the field's `required`; the key the platform sees is the trimmed one.
    const key = apiKey.value.trim();
    if (!key) return refuseField(result, apiKey, `Paste the API key of your ${provider.selectedOptions[0]?.text ?? provider.value} instance: the field holds only spaces.`);
    if (remember.checked) {
      localStorage.setItem(REMEMBER_KEY, JSON.stringify({ provider: provider.value, url: instance, apiKey: key } satisfies Remembered));
    } else {
      localStorage.removeItem(REMEMBER_KEY);
    }
    const restoreFocus = holdFocus();
    running = true;
    sync();
    replaceChildren(result, h("p", { class: "note", role: "status" }, `Deploying to ${provider.selectedOptions[0]?.text ?? provider.value}…`));
    const rows = new Map<string, HTMLLIElement>();
    try {
      let finished = false;
      const chosen = provider.value === "coolify" ? destination.value.trim() : "";
      const input = generateBody(store.form, store.catalog.presetsById);
      // The bundle being previewed, or after an import the one that keeps its secrets (made now
      // when the choices changed since).
      if (store.bundle?.key !== JSON.stringify(input)) await store.settleBundle();
      // The bundle the user previewed or downloaded for this form: deploy its secrets, not new ones.
      const bundle = store.bundle?.key === JSON.stringify(input) ? store.bundle : undefined;
      const shown = bundle?.doc;
      const what = shown ? { complete: { input, files: { ".env": shown.files[".env"] } } } : { input };
      const request = { provider: provider.value, url: instance, apiKey: key, update: update.checked, ...(chosen ? { destination: chosen } : {}), ...what };
      api.useServerKey(serverKey.value.trim());
      for await (const event of api.deploy(request)) {
        if (event.type === "step") showStep(steps, rows, event);
        else if (event.type === "result") {
          finished = true;
          // The platform now holds the bundle's secrets: leaving the page loses none of them.
          if (bundle && event.result.success) bundle.saved = true;
          // Secrets made for this deploy alone (no preview showed them), if any were made.
          const made = shown === undefined && store.form.generateSecrets;
          showResult(result, event.result, made ? (update.checked ? "update" : "new") : undefined);
        } else if (event.type === "error") {
          finished = true;
          showError(result, event.error.message);
        }
      }
      if (!finished) throw new Error("the connection closed before the deployment reported a result");
    } catch (e) {
      if (rows.size === 0) showError(result, e instanceof api.ApiError ? e.describe() : (e as Error).message);
      else {
        // The server may still be deploying: what happened next is on the platform, not here.
        for (const [step, row] of rows) if (row.dataset.status === "running") showStep(steps, rows, { type: "step", step, status: "unknown" });
        showError(result, `Lost the connection to the stackgen server during the deployment (${(e as Error).message}). It may have gone on: check the project on the platform before trying again, and tick "Update" to deploy over it.`);
      }
    } finally {
      running = false;
      sync();
      restoreFocus();
    }
  });
}

function readRemembered(): Remembered | undefined {
  try {
    const value = JSON.parse(localStorage.getItem(REMEMBER_KEY) ?? "null") as Remembered | null;
    return value && typeof value.apiKey === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function showStep(list: HTMLElement, rows: Map<string, HTMLLIElement>, event: api.DeployStepEvent): void {
  let row = rows.get(event.step);
  if (!row) {
    row = h("li", {});
    rows.set(event.step, row);
    list.append(row);
  }
  row.className = `step step-${event.status}`;
  row.dataset.status = event.status;
  replaceChildren(row,
    h("span", { class: "step-icon", "aria-hidden": "true" }, STATUS_ICON[event.status] ?? "•"),
    h("span", { class: "step-name" }, event.step),
    h("span", { class: "step-status" }, ` ${STATUS_TEXT[event.status] ?? event.status}`),
    event.detail ? h("span", { class: "step-detail" }, ` ${event.detail}`) : null,
  );
}

/** `unseen`: the deploy generated the bundle (and its secrets) itself, for a new deployment or an
 *  update (where the platform keeps the values it has); undefined when the user has them. */
function showResult(target: HTMLElement, outcome: api.DeployResultEvent["result"], unseen?: "new" | "update"): void {
  if (!outcome.success) {
    showError(target, outcome.error ?? "The deployment failed.");
    if (outcome.hint) target.append(h("p", { class: "small", id: "deploy-hint" }, outcome.hint));
    // As the CLI says it: what to clean up, or reuse with "Update an existing deployment".
    const created = outcome.created ?? [];
    const possibly = outcome.possiblyCreated ?? [];
    if (created.length) target.append(h("p", { class: "small", id: "deploy-created" }, `Already created on the platform: ${created.join(", ")}. Delete them, or tick “Update an existing deployment of the same name” and deploy again to reuse them.`));
    if (possibly.length) target.append(h("p", { class: "small", id: "deploy-possibly-created" }, `Possibly created on the platform: ${possibly.join(", ")} (the call that creates them ended without saying whether they were made: no answer, an unreadable one, or a server error). Check the platform; deploying again with “Update an existing deployment of the same name” ticked reuses what it made.`));
    return;
  }
  replaceChildren(target, h("div", { class: "alert success", role: "status" },
    h("p", {}, h("strong", {}, "Deployed."), " The platform is now starting the stack."),
    unseen
      ? h("p", { class: "small", id: "deploy-secrets-note" }, unseen === "new"
        ? "Its passwords and keys were generated for this deploy and are not in any download: they are in the platform's environment variables for this stack. To keep a copy, preview the files before deploying."
        : "Passwords and keys the platform already had were kept; any it lacked were generated for this deploy and are only in its environment variables.")
      : null,
    outcome.dashboardUrl
      ? h("p", {}, h("a", { href: outcome.dashboardUrl, target: "_blank", rel: "noopener noreferrer", id: "dashboard-link" }, "Open the dashboard"))
      : null,
    outcome.changes?.length ? h("details", {}, h("summary", {}, "Adjustments made for the platform"), h("ul", {}, ...outcome.changes.map((c) => h("li", {}, c)))) : null,
  ));
}

/** A field checked here before anything is sent: named as the field's problem (marked on it,
 *  focused), not as a deployment that failed. Unmarked again as soon as it is edited. */
function refuseField(target: HTMLElement, field: HTMLInputElement, message: string): void {
  replaceChildren(target, h("p", { class: "alert error", role: "alert", id: "deploy-field-error" }, h("strong", {}, "Not sent: "), message));
  field.setAttribute("aria-invalid", "true");
  field.setAttribute("aria-describedby", "deploy-field-error");
  field.addEventListener("input", () => {
    field.removeAttribute("aria-invalid");
    field.removeAttribute("aria-describedby");
  }, { once: true });
  field.focus();
}

function showError(target: HTMLElement, message: string): void {
  // The platform already has a project of this name (SPEC §7's two wordings): say what redeploys it.
  const exists = /Project already exists|API 409: Conflict/.test(message) && !(byId<HTMLInputElement>("deploy-update").checked);
  replaceChildren(target, h("p", { class: "alert error", role: "alert" }, h("strong", {}, "Deployment failed: "), message,
    exists ? " To redeploy that project, tick “Update an existing deployment of the same name” and deploy again." : ""));
}
