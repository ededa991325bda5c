// The "Your stack" panel: live validation (resolved services, added dependencies, warnings and
// conflicts explained) and memory against the host size the user picks.
import { h, replaceChildren, byId, holdFocus, type Child } from "../dom.ts";
import { explainConflict, explainWarning, formatMB, inPageWords, plural } from "../explain.ts";
import { domainWithoutProxy, fieldErrors } from "../model.ts";
import type { ValidateResponse } from "../api.ts";
import type { Store } from "../store.ts";
import { httpsMissingFor } from "../../core/generate/context.ts";

const HOST_SIZE_KEY = "stackgen.hostSizeGB";

export function mountSummary(store: Store): void {
  const body = byId("summary-body");
  const statusBar = byId("status-bar");
  const statusVerdict = byId("status-verdict");
  const statusChecking = byId("status-checking");
  const hostSelect = byId<HTMLSelectElement>("host-size");
  const saved = localStorage.getItem(HOST_SIZE_KEY);
  if (saved && Array.from(hostSelect.options).some((o) => o.value === saved)) hostSelect.value = saved;
  hostSelect.addEventListener("change", () => {
    localStorage.setItem(HOST_SIZE_KEY, hostSelect.value);
    render();
  });

  /** A pressed "Check again" is redrawn: focus goes to the new one, or to the panel once it is gone. */
  const replaceBody = (...children: Child[]) => {
    const restoreFocus = holdFocus(byId("summary"));
    replaceChildren(body, ...children);
    restoreFocus();
  };

  const render = () => {
    const v = store.validation;
    body.setAttribute("aria-busy", String(v.kind === "checking"));
    const result = store.lastResult();
    if (v.kind === "error") {
      // Files and deploy go through the same server: when it is away, they fail as well.
      const advice = v.code === "NETWORK_ERROR"
        ? "The stackgen server cannot be reached, so files and deploy do not work either. Start it again: the page checks again when you come back to it."
        : v.code === "UNAUTHORIZED"
          ? "The server refuses files and deploy too while that key goes with them. The page checks again when you change the key."
          // Checks and deploys share the standard rate limit; files have one of their own, maybe used up too.
          : v.code === "RATE_LIMITED"
            ? "Preview and download count against a limit of their own, so they may still work: the server checks the stack again when it generates. A deploy counts against this limit and is refused until then."
            : "Files and deploy may still work: the server checks the stack again when it generates.";
      // Over the rate limit a check now would only be refused again: the page waits by itself.
      const retry = v.retryAt
        ? h("p", { id: "check-resume" }, `Checks start again by themselves at ${new Date(v.retryAt).toLocaleTimeString()}, when the server takes calls again.`)
        : h("button", { type: "button", class: "button small", id: "recheck-button", onclick: () => store.recheck() }, "Check again");
      const panel = h("div", {},
        h("p", { class: "alert error", role: "alert" }, `Could not check the stack: ${v.message}`),
        retry,
        h("p", { class: "small muted", id: "check-advice" }, advice),
      );
      // Replaced only when its words change: a new alert is read out, and this runs on every key typed.
      if (panel.textContent !== body.textContent) replaceBody(...Array.from(panel.childNodes));
      renderStatus();
      return;
    }
    if (!result) {
      // A failed check stays until the next answer: "Checking…" between two would make its alert new.
      if (!body.querySelector("[role=alert]")) replaceChildren(body, h("p", { class: "muted" }, "Checking…"));
      return;
    }
    const hostMB = Number(hostSelect.value) * 1024;
    replaceBody(...renderResult(store, result, hostMB, v.kind === "checking"));
    renderStatus();
  };

  /** The header's live verdict is replaced only when its words change: a screen reader reads
   *  every change of it aloud, and the form changes with every key typed. */
  const showVerdict = (href: string, ...parts: Child[]) => {
    statusBar.setAttribute("href", href);
    const next = h("span", {}, ...parts);
    if (next.textContent !== statusVerdict.textContent) statusVerdict.replaceChildren(...Array.from(next.childNodes));
  };

  // The header's verdict covers the options too (a project name the API refuses): they change
  // without a new check, so it follows the form as well.
  const renderStatus = () => {
    const v = store.validation;
    // The last verdict stays until the next one, marked (outside the live region) while a check is under way.
    statusChecking.textContent = v.kind === "checking" ? " · checking…" : "";
    if (v.kind === "error") {
      showVerdict("#summary", h("span", { class: "error-text" }, v.code === "NETWORK_ERROR" ? "✗ Server unreachable" : "✗ Check failed"));
      return;
    }
    const result = store.lastResult();
    if (!result) return;
    if (result.resolvedServices.length === 0) {
      showVerdict("#start", "Nothing selected yet");
      return;
    }
    const badOptions = Object.keys(fieldErrors(store.form)).length > 0;
    const problems = [result.valid ? "" : plural(result.conflicts.length, "conflict"), badOptions ? "options need fixing" : ""].filter(Boolean).join(", ");
    // The link goes where the fix is.
    showVerdict(badOptions && result.valid ? "#options" : "#summary",
      h("span", { class: problems ? "error-text" : "ok-text" }, problems ? `✗ ${problems[0]!.toUpperCase()}${problems.slice(1)}` : "✓ Valid"),
      ` · ${plural(result.resolvedServices.length, "service")} · ${formatMB(result.estimatedMemoryMB)}`,
    );
  };
  store.onValidation(render);
  // Your stack's verdict counts the options too, as the header's does (no new check for a name).
  store.onForm(render);
  render();
}

function renderResult(store: Store, result: ValidateResponse, hostMB: number, stale: boolean): HTMLElement[] {
  const name = (id: string) => store.catalog.servicesById.get(id)?.name ?? id;
  const out: HTMLElement[] = [];
  // Nothing chosen is neither a valid stack nor a wrong one: nothing can be generated yet.
  const empty = result.resolvedServices.length === 0;
  // The options the API refuses block the files as conflicts do: not called valid then.
  const badOptions = result.valid && Object.keys(fieldErrors(store.form)).length > 0;
  out.push(h("p", { id: "validity", class: `validity ${empty ? "empty" : result.valid && !badOptions ? "ok" : "bad"}`, "data-valid": String(result.valid) },
    empty ? "Nothing selected yet: start from a preset, a skill pack or a service."
      : badOptions ? "✗ The services fit together, but the options marked in step 3 need fixing first."
      : result.valid ? "✓ This stack is valid." : "✗ This stack cannot be generated until the conflicts below are fixed.",
    stale ? h("span", { class: "muted" }, " (updating…)") : null,
  ));

  const share = hostMB > 0 ? result.estimatedMemoryMB / hostMB : 0;
  const level = share > 1 ? "over" : share > 0.8 ? "tight" : "fine";
  const advice = { over: "More than the host has: pick a bigger host or remove services.", tight: "Tight: leave room for the system and the core gateway.", fine: "Fits comfortably." }[level];
  out.push(h("div", { class: `memory memory-${level}` },
    h("p", { id: "memory-text" }, h("strong", {}, formatMB(result.estimatedMemoryMB)), ` estimated of ${formatMB(hostMB)} on the host (${Math.round(share * 100)}%).`),
    // Over the host, the value goes past `high` (the meter's max grows to it): a value equal to
    // `high` would still draw as merely tight.
    h("meter", { min: 0, max: Math.max(hostMB, result.estimatedMemoryMB), low: hostMB * 0.8, high: hostMB, optimum: 0, value: result.estimatedMemoryMB, "aria-labelledby": "memory-text" }),
    h("p", { class: "small" }, advice),
  ));

  if (result.conflicts.length) {
    out.push(h("h3", {}, "Conflicts"), h("ul", { id: "conflict-list", class: "issues" }, ...result.conflicts.map((c) => {
      const help = explainConflict(c.code);
      return h("li", { class: "issue error", "data-code": c.code },
        h("strong", {}, help.title), " ", h("code", {}, c.code),
        h("p", {}, c.message),
        c.services.length ? h("p", { class: "small" }, "Involves: ", c.services.map(name).join(", ")) : null,
        help.help ? h("p", { class: "small" }, help.help) : null,
      );
    })));
  }
  if (result.warnings.length) {
    out.push(h("h3", {}, "Warnings"), h("ul", { id: "warning-list", class: "issues" }, ...result.warnings.map((w) => {
      const help = explainWarning(w.code);
      return h("li", { class: "issue warning", "data-code": w.code },
        h("strong", {}, help.title), " ", h("code", {}, w.code),
        h("p", {}, inPageWords(w.message)),
        help.help ? h("p", { class: "small" }, help.help) : null,
      );
    })));
  }
  // Values a service cannot start (or work) without, which only the user can supply.
  const services = result.resolvedServices.map((id) => store.catalog.servicesById.get(id));
  const toFill = services.flatMap((s) => (s?.variables ?? []).filter((v) => v.beforeStart).map((v) => ({ service: s!, variable: v })));
  if (toFill.length) {
    out.push(h("h3", {}, "Before the first start"), h("ul", { id: "before-start-list", class: "issues" }, ...toFill.map(({ service, variable }) =>
      h("li", { class: "issue warning", "data-service": service.id, "data-variable": variable.name },
        h("strong", {}, service.name), ": fill in ", h("code", {}, variable.name), " in .env", h("p", {}, variable.description)))));
  }
  // Apps that hand their admin account to whoever opens them first (or ship a known login).
  const firstStart = services.filter((s) => s?.firstStart);
  if (firstStart.length) {
    out.push(h("h3", {}, "Right after the first start"), h("ul", { id: "first-start-list", class: "issues" }, ...firstStart.map((s) =>
      h("li", { class: "issue warning", "data-service": s!.id }, h("strong", {}, s!.name), h("p", {}, s!.firstStart!)))));
  }
  // What the README's "Known limits" will say, and apps that need HTTPS served over plain HTTP:
  // things to know before relying on the stack, shown before anything is downloaded.
  const limits = services.filter((s) => s?.knownLimits);
  const plainHttp = httpsMissingFor(services.filter((s) => s !== undefined), store.form.domain || undefined);
  // A domain does nothing without a proxy: said beside the verdict, not only under the field.
  const domain = store.form.domain.trim();
  const unusedDomain = domainWithoutProxy(store.form) && !result.resolvedServices.some((id) => id === "caddy" || id === "traefik");
  if (limits.length || plainHttp.length || unusedDomain) {
    out.push(h("h3", {}, "Known limits"), h("ul", { id: "known-limits-list", class: "issues" },
      unusedDomain ? h("li", { class: "issue warning", id: "domain-unused" }, h("strong", {}, "Domain"),
        h("p", {}, `${domain} is not used: without a reverse proxy nothing serves <service>.${domain}. Choose Caddy or Traefik in step 3.`)) : null,
      ...limits.map((s) => h("li", { class: "issue warning", "data-service": s!.id }, h("strong", {}, s!.name), h("p", {}, inPageWords(s!.knownLimits!)))),
      ...plainHttp.map((s) => h("li", { class: "issue warning", "data-service": s.id }, h("strong", {}, s.name),
        h("p", {}, "Needs HTTPS in the browser: without a reverse proxy and a domain (step 3) it works from this machine only.")))));
  }
  if (result.addedDependencies.length) {
    out.push(h("h3", {}, "Added automatically"), h("ul", { id: "dependency-list", class: "deps" }, ...result.addedDependencies.map((d) =>
      h("li", { "data-service": d.service }, h("strong", {}, name(d.service)), ` for ${name(d.requiredBy)}: `, d.reason))));
  }
  if (result.resolvedServices.length) {
    out.push(h("h3", {}, `Services (${result.resolvedServices.length})`), h("ul", { id: "resolved-list", class: "chips" },
      ...result.resolvedServices.map((id) => h("li", { "data-service": id }, name(id)))));
    out.push(h("p", { class: "small muted" }, "Every bundle also runs the core gateway, which is not counted here."));
  }
  return out;
}
