// Step 3: project name, proxy, domain, GPU, platform, deployment, core version, memory caps, secrets.
import { byId } from "../dom.ts";
import { chooseProxy, domainWithoutProxy, fieldErrors, type FormState } from "../model.ts";
import type { Store } from "../store.ts";

type TextField = "projectName" | "domain" | "coreVersion";
type SelectField = "proxy" | "platform" | "deployment";
type BoxField = "gpu" | "memoryLimits" | "generateSecrets";

const TEXT: TextField[] = ["projectName", "domain", "coreVersion"];
const SELECTS: SelectField[] = ["proxy", "platform", "deployment"];
const BOXES: BoxField[] = ["gpu", "memoryLimits", "generateSecrets"];

export function mountOptions(store: Store): void {
  const input = (name: string) => byId<HTMLInputElement>(`opt-${name}`);
  const select = (name: string) => byId<HTMLSelectElement>(`opt-${name}`);

  for (const name of TEXT) input(name).addEventListener("input", (e) => store.setForm({ [name]: (e.target as HTMLInputElement).value.trim() } as Partial<FormState>));
  for (const name of SELECTS) {
    select(name).addEventListener("change", (e) => {
      const value = (e.target as HTMLSelectElement).value;
      store.setForm(name === "proxy" ? chooseProxy(store.form, value as FormState["proxy"]) : ({ [name]: value } as Partial<FormState>));
    });
  }
  for (const name of BOXES) input(name).addEventListener("change", (e) => store.setForm({ [name]: (e.target as HTMLInputElement).checked } as Partial<FormState>));

  const sync = () => {
    const form = store.form;
    // Only write values that differ, so the caret does not jump while typing.
    for (const name of TEXT) if (input(name).value.trim() !== form[name]) input(name).value = form[name];
    for (const name of SELECTS) if (select(name).value !== form[name]) select(name).value = form[name];
    for (const name of BOXES) input(name).checked = form[name];
    const errors = fieldErrors(form);
    for (const name of TEXT) {
      const message = errors[name];
      const hint = byId(`opt-${name}-error`);
      hint.textContent = message ?? "";
      hint.hidden = !message;
      input(name).setAttribute("aria-invalid", String(Boolean(message)));
    }
    // The bundle routes <service>.<domain> through its proxy: without one a domain does nothing.
    const domainHint = byId("opt-domain-hint");
    const unused = domainWithoutProxy(form);
    domainHint.textContent = unused
      ? "A domain needs a reverse proxy: choose Caddy or Traefik above, or it has no effect."
      : "Services get <service>.<domain>.";
    domainHint.classList.toggle("warn-text", unused);
    byId("secrets-note").textContent = form.generateSecrets
      ? "Random secrets are written to .env."
      : "Secrets are left empty in .env; the stack refuses to start until you fill them in.";
  };
  store.onForm(sync);
  sync();
}
