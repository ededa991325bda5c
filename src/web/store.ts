// The page's shared state: the form (user input), the loaded catalog and the latest validation.
import type { CatalogService, Category, CompleteDocument, Preset, SkillPack, ValidateResponse } from "./api.ts";
import { fieldErrors, isEmptySelection, type FormState, type KnownIds } from "./model.ts";

export interface CatalogData {
  services: CatalogService[];
  servicesById: Map<string, CatalogService>;
  categories: Category[];
  presets: Preset[];
  presetsById: Map<string, Preset>;
  packs: SkillPack[];
  packsById: Map<string, SkillPack>;
}

export function indexCatalog(services: CatalogService[], categories: Category[], presets: Preset[], packs: SkillPack[]): CatalogData {
  return {
    services,
    servicesById: new Map(services.map((s) => [s.id, s])),
    categories,
    presets,
    presetsById: new Map(presets.map((p) => [p.id, p])),
    packs,
    packsById: new Map(packs.map((p) => [p.id, p])),
  };
}

/** The ids an imported document or a link may name (stateFromInput drops the others). */
export const knownIds = ({ servicesById, packsById, presetsById }: CatalogData): KnownIds =>
  ({ services: new Set(servicesById.keys()), packs: new Set(packsById.keys()), presets: presetsById });

export type Validation =
  | { kind: "idle" }
  | { kind: "checking"; last?: ValidateResponse }
  | { kind: "done"; result: ValidateResponse }
  // `code`: the ApiError's (NETWORK_ERROR when the server cannot be reached), to word the advice.
  // `retryAt`: over the rate limit, when (ms since the epoch) the server takes calls again; the
  // page checks again by itself then, and sends no check before.
  | { kind: "error"; message: string; code?: string; retryAt?: number };

type Listener = () => void;

/** A minimal observable: views subscribe and re-read what they need. */
export class Store {
  private formListeners = new Set<Listener>();
  private validationListeners = new Set<Listener>();
  validation: Validation = { kind: "idle" };
  /** The bundle last previewed or downloaded, with the request body that made it: a deploy of
   *  the same form sends its .env, so the platform gets the secrets the user has seen. `saved`:
   *  its secrets were downloaded, exported, copied or deployed, so leaving the page loses none. */
  bundle: { key: string; doc: CompleteDocument; saved: boolean } | undefined;

  constructor(public form: FormState, readonly catalog: CatalogData) {}

  setForm(patch: Partial<FormState>): void {
    this.form = { ...this.form, ...patch };
    for (const listener of this.formListeners) listener();
  }

  setValidation(validation: Validation): void {
    this.validation = validation;
    for (const listener of this.validationListeners) listener();
  }

  onForm(listener: Listener): void {
    this.formListeners.add(listener);
  }

  onValidation(listener: Listener): void {
    this.validationListeners.add(listener);
  }

  /** Why the bundle cannot be generated or deployed yet (`whenEmpty` for an empty selection), or
   *  undefined when it can. */
  outputBlocker(whenEmpty: string): string | undefined {
    if (isEmptySelection(this.form)) return whenEmpty;
    if (Object.keys(fieldErrors(this.form)).length) return "Fix the options marked in step 3 first.";
    const v = this.validation;
    if (v.kind === "done" && !v.result.valid) return "Fix the conflicts shown in Your stack first.";
    // A failed check (server away, rate limit) blocks nothing: generate and deploy check again.
    if (v.kind !== "done" && v.kind !== "error") return "Waiting for the stack check…";
    return undefined;
  }

  /** Makes the current form's bundle (store.bundle) when it is not there yet and its secrets are
   *  already decided: after an import that kept an export's secrets, or while a preview of these
   *  choices is being generated; nothing otherwise. Set by the files view: a deploy sends those
   *  secrets, not ones the server would make anew (the platform's would differ from the files'). */
  settleBundle: () => Promise<void> = async () => {};

  /** Says a preset or an import replaced the choices (set by app.ts: the note on a link's choices
   *  no longer describes them). */
  choicesReplaced: () => void = () => {};

  /** Runs the stack check again now (set by the live validation; the summary's "Check again"). */
  recheck: () => void = () => {};

  /** The latest validation answer, also while a newer one is on its way. */
  lastResult(): ValidateResponse | undefined {
    const v = this.validation;
    return v.kind === "done" ? v.result : v.kind === "checking" ? v.last : undefined;
  }
}
