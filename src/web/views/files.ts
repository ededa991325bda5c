// Step 4: preview every file of the bundle (secrets masked until revealed), copy or download one
// file, download the ZIP, export and import the complete JSON document.
import { h, replaceChildren, byId, saveFile, canCopy, holdFocus } from "../dom.ts";
import { formatMB, leftOut, plural } from "../explain.ts";
import * as api from "../api.ts";
import { applyPreset, bundleOfDocument, generateBody, inputOfDocument, linkSearch, stateFromInput, validateBody } from "../model.ts";
import { buildFileTree, firstFile, isEnvFile, maskSecrets, secretValues, type TreeNode } from "../secrets.ts";
import { publishedPorts, type ServicePorts } from "../ports.ts";
import { knownIds, type Store } from "../store.ts";
import { announce } from "./catalog.ts";
import { zipBundle } from "../../core/bundle.ts";
import { mergeEnv, parseEnvValues, settingsTaken } from "../../core/env-merge.ts";
import { generatedSecretNames } from "../../core/generate/env.ts";
import { signedKeys } from "../signed-keys.ts";
import { describeChanges, previewChanges, type FileChange, type PreviewChanges } from "../changes.ts";
import { CORE_VERSION_VALUE_PATTERN, IMAGE_REPOSITORY_PATTERN } from "../../schema/patterns.ts";

interface Preview {
  /** The exact body that produced it, to know when it is out of date. */
  key: string;
  doc: api.CompleteDocument;
  selected: string;
  reveal: boolean;
  /** Against the preview this one replaced, if there was one. */
  changes?: PreviewChanges;
}

export function mountFiles(store: Store): void {
  const previewButton = byId<HTMLButtonElement>("preview-button");
  const zipButton = byId<HTMLButtonElement>("zip-button");
  const exportButton = byId<HTMLButtonElement>("export-button");
  const importButton = byId<HTMLButtonElement>("import-button");
  const importInput = byId<HTMLInputElement>("import-input");
  const message = byId("files-message");
  const area = byId("preview");
  let preview: Preview | undefined;
  let busy = false;

  /** The secrets of the export imported last, by name (values as written): every later
   *  generation on this page keeps them, as `stackgen generate` keeps a bundle's .env, since a
   *  stack that runs has its data under them. Secrets of services added since join them. */
  let keptSecrets: { from: string; values: Map<string, string> } | undefined;

  /** `fresh` with its .env merged over `exportEnv` (an export's, or the kept secrets) as an import
   *  takes it: this stack's variables only, a value of the wrong shape refused, API keys signed
   *  again with a kept JWT secret. */
  const mergeExported = async (exportEnv: string, fresh: api.CompleteDocument) => {
    // Only this stack's own variables: an export may be someone else's, and other settings in
    // it (COMPOSE_PROJECT_NAME, COMPOSE_FILE) would steer compose to another project. A secret
    // the export left empty (made without secrets) gets the new value.
    const secretNames = generatedSecretNames(fresh.files[".env"]!);
    // A value that reaches a config file as text (Caddy's e-mail) is taken only in its shape.
    const variables = store.catalog.services.flatMap((s) => s.variables ?? []);
    // The gateway's image settings too, which no catalog service declares (core/generate/variables.ts).
    const patterns = new Map([
      ...variables.filter((v) => v.pattern !== undefined).map((v) => [v.name, new RegExp(v.pattern!)] as const),
      ["CORE_VERSION", new RegExp(CORE_VERSION_VALUE_PATTERN)],
      ["CORE_IMAGE", new RegExp(IMAGE_REPOSITORY_PATTERN)],
    ]);
    // API keys signed with a secret the export keeps are signed again with it (Supabase's).
    const derived = await signedKeys(variables, [exportEnv, fresh.files[".env"]!]);
    return { secretNames, env: mergeEnv(exportEnv, fresh.files[".env"]!, secretNames, derived, { keepExtra: false, patterns }) };
  };

  /** Keeps the imported secrets in a bundle generated since the import (its other settings follow
   *  the choices made since, a new domain's addresses among them). */
  const withKeptSecrets = async (doc: api.CompleteDocument): Promise<api.CompleteDocument> => {
    if (!keptSecrets || doc.files[".env"] === undefined) return doc;
    const kept = keptSecrets.values;
    const names = generatedSecretNames(doc.files[".env"]);
    const only = [...kept].filter(([name]) => names.has(name)).map(([name, value]) => `${name}=${value}\n`).join("");
    const { env } = await mergeExported(only, doc);
    for (const [name, value] of parseEnvValues(env.text)) if (names.has(name) && !kept.has(name)) kept.set(name, value);
    return { ...doc, files: { ...doc.files, ".env": env.text } };
  };
  /** What a bundle generated now holds, said after a download. */
  const secretsOf = (doc: api.CompleteDocument) => !hasSecrets(doc) ? "" : keptSecrets ? `, with the secrets imported from ${keptSecrets.from}` : ", with new secrets";

  const currentKey = () => JSON.stringify(generateBody(store.form, store.catalog.presetsById));
  const blocker = () => store.outputBlocker("Choose a preset, a skill pack or a service first.");

  const say = (text: string, kind: "info" | "warning" | "error" = "info") => {
    message.textContent = text;
    message.className = { info: "note", warning: "alert warning", error: "alert error" }[kind];
    message.setAttribute("role", kind === "error" ? "alert" : "status");
  };

  // Reloading or leaving drops a bundle whose secrets are nowhere else yet (an imported export's,
  // or a preview's not downloaded): the link brings back the choices, and new secrets with them.
  window.addEventListener("beforeunload", (event) => {
    if (store.bundle && !store.bundle.saved && hasSecrets(store.bundle.doc)) event.preventDefault();
  });
  const markSaved = (doc: api.CompleteDocument) => {
    if (store.bundle?.doc === doc) store.bundle.saved = true;
  };

  const syncButtons = () => {
    const reason = blocker();
    for (const b of [previewButton, zipButton, exportButton]) b.disabled = busy || reason !== undefined;
    importButton.disabled = busy;
    byId("files-blocked").textContent = reason ?? "";
    const stale = preview !== undefined && preview.key !== currentKey();
    // Said once as it goes out of date: a note that only appears is not read out.
    if (stale && !area.classList.contains("stale")) announce(byId("preview-stale").textContent!);
    area.classList.toggle("stale", stale);
    byId("preview-stale").hidden = !stale;
    // An out-of-date preview's files are not what the choices make now: no copying or saving them.
    for (const id of ["copy-file-button", "save-file-button"]) {
      const button = document.getElementById(id) as HTMLButtonElement | null;
      if (button) button.disabled = stale;
    }
  };
  store.onForm(syncButtons);
  store.onValidation(syncButtons);
  syncButtons();

  /** The step's actions run one after the other: an import picked while a preview is generated
   *  (its file chooser opened before) comes after it, so the late preview never replaces it. */
  let queue = Promise.resolve();
  const run = (label: string, work: () => Promise<void>) => (queue = queue.then(() => runNow(label, work)));
  const runNow = async (label: string, work: () => Promise<void>) => {
    const restoreFocus = holdFocus();
    busy = true;
    syncButtons();
    say(`${label}…`);
    try {
      await work();
    } catch (e) {
      say(e instanceof api.ApiError ? e.describe() : (e as Error).message, "error");
    } finally {
      busy = false;
      syncButtons();
      restoreFocus();
    }
  };

  /** Makes `doc` the bundle of the choices `key` (the body it was generated from): the preview,
   *  and what the ZIP, the export and a deploy use (store.bundle) while the form still has them.
   *  Choices changed while it was generated leave it marked out of date. */
  const useBundle = (doc: api.CompleteDocument, key: string) => {
    const changes = preview ? previewChanges(preview.doc.files, doc.files) : undefined;
    // The file being read stays on screen while the new bundle has it.
    const selected = preview && doc.files[preview.selected] !== undefined ? preview.selected : firstFile(Object.keys(doc.files)) ?? "";
    preview = { key, doc, selected, reveal: false, changes };
    store.bundle = { key, doc, saved: false };
  };

  /** The generation under way, if any: a deploy and a preview of the same choices share it, so
   *  both hold the same secrets (two would make two sets for a service added since an import). */
  let pending: { key: string; doc: Promise<api.CompleteDocument> } | undefined;
  /** Imports that replaced the choices so far. */
  let imports = 0;

  /** The complete document for the current form, reusing the preview when it is current. */
  const completeDocument = async (): Promise<api.CompleteDocument> => {
    if (preview?.key === currentKey()) return preview.doc;
    const body = generateBody(store.form, store.catalog.presetsById);
    const key = JSON.stringify(body);
    if (pending?.key === key) return pending.doc;
    const shown = preview !== undefined;
    const importsBefore = imports;
    const doc = (async () => {
      const made = await withKeptSecrets(await api.generateComplete(body));
      // An import that replaced the choices meanwhile (a deploy clicked while it ran) keeps its
      // own preview: this bundle of the choices before it is its caller's alone.
      if (imports !== importsBefore) return made;
      useBundle(made, key);
      // A preview on screen shows what was just downloaded or exported, never an older bundle.
      if (shown) renderPreview();
      return made;
    })();
    pending = { key, doc };
    try {
      return await doc;
    } finally {
      if (pending?.doc === doc) pending = undefined;
    }
  };

  store.settleBundle = async () => {
    if (keptSecrets) await completeDocument();
    // A preview of these choices under way: the deploy takes its secrets, or, when it fails
    // (the generation limit reached), goes out with the choices alone, as it would have.
    else if (pending?.key === currentKey()) await pending.doc.catch(() => undefined);
  };

  const renderPreview = () => {
    if (!preview) return;
    const p = preview;
    const paths = Object.keys(p.doc.files);
    const secrets = paths.filter(isEnvFile).flatMap((path) => secretValues(p.doc.files[path]));
    const content = p.doc.files[p.selected] ?? "";
    const shown = p.reveal ? content : maskSecrets(p.selected, content, secrets);
    // A toggle button: one name, its state in aria-pressed (a name that changed with it was read
    // as "Hide secrets, pressed").
    const revealButton = h("button", {
      type: "button", class: "button small", id: "reveal-button", "aria-pressed": String(p.reveal),
      onclick: () => { p.reveal = !p.reveal; renderPreview(); byId("reveal-button").focus(); },
    }, "Show secrets");
    // Copy and save take the file as it is, secrets included: the masking is for the screen.
    const fileName = p.selected.split("/").pop()!;
    // Browsers drop a leading dot from a download's name (no hidden files): name it that way
    // ourselves, so what the message says is what lands in the downloads folder.
    const saveAs = fileName.replace(/^\.+/, "");
    const withSecrets = isEnvFile(p.selected) && secrets.length ? " (with its secrets)" : "";
    const copyButton = canCopy() ? h("button", {
      type: "button", class: "button small", id: "copy-file-button",
      onclick: () => navigator.clipboard.writeText(content).then(
        () => {
          if (isEnvFile(p.selected)) markSaved(p.doc);
          say(`Copied ${p.selected}${withSecrets} to the clipboard.`);
        },
        (e: Error) => say(`Could not copy ${p.selected}: ${e.message}`, "error"),
      ),
    }, "Copy") : null;
    const saveButton = h("button", {
      type: "button", class: "button small", id: "save-file-button",
      onclick: () => {
        saveFile(new Blob([content], { type: "application/octet-stream" }), saveAs);
        if (isEnvFile(p.selected)) markSaved(p.doc);
        say(`Downloaded ${p.selected}${withSecrets}${saveAs === fileName ? "." : ` as ${saveAs}: rename it to ${fileName} in the stack's folder.`}`);
      },
    }, "Download file");
    const m = p.doc.metadata;
    replaceChildren(area,
      h("p", { class: "small" }, `${plural(paths.length, "file")} · ${plural(m.totalServices, "service")} · ${formatMB(m.estimatedMemoryMB)} · generated ${new Date(m.generatedAt).toLocaleString()}`),
      p.changes ? h("p", { class: "small", id: "preview-changes" }, describeChanges(p.changes)) : null,
      portTable(store, p.doc),
      h("div", { class: "preview-grid" },
        h("nav", { class: "file-tree", "aria-label": "Files in the bundle" }, treeList(buildFileTree(paths), p.selected, p.changes?.byPath, (path) => {
          p.selected = path;
          renderPreview();
          area.querySelector<HTMLButtonElement>(`button[data-path="${CSS.escape(path)}"]`)?.focus();
        })),
        h("div", { class: "file-view" },
          h("div", { class: "file-view-head" },
            h("h3", { id: "file-title" }, p.selected),
            h("div", { class: "file-actions" }, secrets.length ? revealButton : null, copyButton, saveButton),
          ),
          h("pre", { id: "file-content", tabindex: "0", "aria-labelledby": "file-title" }, h("code", {}, shown)),
        ),
      ),
    );
    syncButtons();
  };

  previewButton.addEventListener("click", () => run("Generating the preview", async () => {
    await completeDocument();
    renderPreview();
    say(`Preview ready: ${Object.keys(preview!.doc.files).length} files${keptSecrets && hasSecrets(preview!.doc) ? `; its .env keeps the secrets imported from ${keptSecrets.from}` : ""}.`);
  }));

  // The ZIP holds exactly the files previewed (same secrets), zipped here as the API would.
  zipButton.addEventListener("click", () => run("Building the ZIP", async () => {
    const reused = preview !== undefined && preview.key === currentKey();
    const shown = area.childElementCount > 0;
    const doc = await completeDocument();
    const name = doc.input.projectName;
    const zip = new Blob([zipBundle(name, doc.files) as Uint8Array<ArrayBuffer>], { type: "application/zip" });
    saveFile(zip, `${name}.zip`);
    markSaved(doc);
    // Said as it is: after a reload, a ZIP of the same choices has new secrets, not an import's.
    const what = reused ? (shown ? "the files of the preview" : "the same files as your last download")
      : `files generated now${secretsOf(doc)}${shown ? " (the preview shows them)" : ""}`;
    say(`Downloaded ${name}.zip (${Math.ceil(zip.size / 1024)} KB), ${what}.`);
  }));

  // The same link the address bar shows (app.ts updates it a moment after each change).
  const linkButton = byId<HTMLButtonElement>("link-button");
  linkButton.hidden = !canCopy();
  linkButton.addEventListener("click", () => navigator.clipboard.writeText(`${location.origin}${location.pathname}${linkSearch(store.form, store.catalog.presetsById)}`).then(
    () => say("Copied a link that opens this page with these choices. It carries no secrets: each generation makes new ones."),
    (e: Error) => say(`Could not copy the link: ${e.message}`, "error"),
  ));

  exportButton.addEventListener("click", () => run("Exporting", async () => {
    const doc = await completeDocument();
    const fileName = `${store.form.projectName}.stackgen.json`;
    saveFile(new Blob([JSON.stringify(doc, null, 2) + "\n"], { type: "application/json" }), fileName);
    markSaved(doc);
    if (!hasSecrets(doc)) return say(`Exported ${fileName}. Import it later to restore these choices.`);
    say(`Exported ${fileName}. It holds every password and key of the bundle's .env in plain text: keep it as safe as a password, and to share only the choices, share the page's link instead (it carries no secrets). Import it later to restore these choices with these secrets.`, "warning");
  }));

  // A real button (Enter and Space both open the file chooser; a label for a hidden input takes Space only).
  importButton.addEventListener("click", () => importInput.click());
  importInput.addEventListener("change", () => {
    const file = importInput.files?.[0];
    if (!file) return;
    void run(`Importing ${file.name}`, async () => {
      // A bundle a deploy is making (outside this step's queue) lands before the import, not over it.
      await pending?.doc.catch(() => undefined);
      let imported: unknown;
      try {
        imported = JSON.parse(await file.text());
      } catch {
        throw new Error(`Could not import ${file.name}: it is not valid JSON.`);
      } finally {
        importInput.value = ""; // the same file can be picked again
      }
      let input: Record<string, unknown>;
      try {
        input = inputOfDocument(imported);
      } catch (e) {
        throw new Error(`Could not import ${file.name}: ${(e as Error).message}`);
      }
      const { state, ignored } = stateFromInput(input, knownIds(store.catalog), store.form);
      // A bundle's stackgen.json lists what its preset resolved to (dependencies, the packs'
      // services, the proxy): those the preset makes anyway are left to it, so the preset shows as
      // chosen again (and its link names it) when nothing was added to it. Only a label: the
      // stack is the same either way, so a failed check keeps the list as it is.
      const preset = state.presetId === null ? undefined : store.catalog.presetsById.get(state.presetId);
      const presetsOwn = preset !== undefined && state.services.length === preset.services.length && state.services.every((id) => preset.services.includes(id));
      if (preset && "configVersion" in (imported as object) && !presetsOwn) {
        const implied = await api.validate(validateBody(applyPreset(state, preset))).then((v) => new Set(v.resolvedServices), () => new Set<string>());
        state.services = state.services.filter((id) => preset.services.includes(id) || !implied.has(id));
      }
      const parts = [`Imported ${file.name}: project ${state.projectName}, ${plural(state.services.length, "service")}, ${plural(state.skillPacks.length, "skill pack")}.`];
      if (ignored.length) parts.push(leftOut(ignored).trim());
      // A complete export carries the secrets its data may have been written with: its .env is
      // kept. Every other file is generated again here, as a deploy does, so what the preview, the
      // ZIP and a deploy hold is what this server makes of its choices, never a file edited in
      // the export. Not when something was left out: its .env no longer matches the choices.
      // Everything is worked out before the form changes: a failure leaves the page as it was.
      const bundle = ignored.length === 0 ? bundleOfDocument(imported) : undefined;
      // Any .env entry, even one that is not text: its secrets are not kept, and the user is told.
      const files = (imported as { files?: unknown })?.files;
      const hadEnv = files !== null && typeof files === "object" && Object.hasOwn(files, ".env");
      const body = generateBody(state, store.catalog.presetsById);
      let fresh: api.CompleteDocument | undefined;
      /** Why its choices make no bundle as they are (a conflict, a name refused): they are loaded
       *  all the same, marked in the form to fix, and its secrets wait for the next generation. */
      let unusable: string | undefined;
      if (bundle) {
        try {
          fresh = await api.generateComplete(body);
        } catch (e) {
          if (!(e instanceof api.ApiError && (e.status === 400 || e.status === 409))) {
            throw new Error(`Could not import ${file.name}: its files could not be generated again (${e instanceof api.ApiError ? e.describe() : (e as Error).message}). Nothing was changed; try again.`);
          }
          unusable = e.describe();
        }
      }
      let env: ReturnType<typeof mergeEnv> | undefined;
      let secretNames = new Set<string>();
      if (bundle && fresh) {
        try {
          ({ env, secretNames } = await mergeExported(bundle.files[".env"]!, fresh));
        } catch (e) {
          throw new Error(`Could not import ${file.name}: ${(e as Error).message} Nothing was changed.`);
        }
      }
      // The secrets of this import, or none: an earlier import's are not this stack's. Choices
      // that make no bundle yet keep the secrets its own .env marks as generated, for later.
      const kept = env?.text ?? (unusable !== undefined ? bundle!.files[".env"]! : undefined);
      const keptNames = env ? secretNames : kept !== undefined ? generatedSecretNames(kept) : new Set<string>();
      let keptValues: Map<string, string> | undefined;
      try {
        keptValues = kept === undefined ? undefined : new Map([...parseEnvValues(kept)].filter(([name]) => keptNames.has(name)));
      } catch (e) {
        throw new Error(`Could not import ${file.name}: ${(e as Error).message} Nothing was changed.`);
      }
      store.setForm(state);
      imports++;
      store.choicesReplaced();
      keptSecrets = keptValues ? { from: file.name, values: keptValues } : undefined;
      if (bundle && fresh && env) {
        useBundle({ ...fresh, files: { ...fresh.files, ".env": env.text } }, JSON.stringify(body));
        renderPreview();
        const differing = Object.keys(fresh.files).filter((path) => path !== ".env" && path !== "stackgen.json" && bundle.files[path] !== undefined && bundle.files[path] !== fresh!.files[path]);
        parts.push(`The preview below keeps the secrets of its .env${env.added.length ? ` (${plural(env.added.length, "new variable")} generated)` : ""}; the other files are generated again from its choices. The ZIP, a deploy and every preview after a change of choices keep these secrets until the page is reloaded.`);
        if (env.filled.length) parts.push(`Secrets it left empty got new values: ${env.filled.join(", ")}.`);
        const taken = settingsTaken(env, fresh.files[".env"]!, secretNames);
        if (taken.length) parts.push(`Settings taken from it that differ from what this stackgen makes: ${taken.join(", ")}; check them in .env if the file is not your own.`);
        if (env.extra.length) parts.push(`Not taken from its .env: ${env.extra.join(", ")} (not variables of this stack).`);
        if (env.refused.length) parts.push(`Not taken from its .env either: ${env.refused.join(", ")} (not the shape ${env.refused.length === 1 ? "that setting" : "those settings"} must have; the generated ${env.refused.length === 1 ? "value is" : "values are"} used).`);
        if (differing.length) parts.push(`Its ${differing.join(", ")} differed from what this stackgen makes of its choices (edited, or made by another version) and ${differing.length === 1 ? "was" : "were"} replaced.`);
      } else if (unusable !== undefined) {
        parts.push(`Its choices make no files as they are (${unusable}): change what the page marks, then preview. The secrets of its .env are kept for the files made then.`);
      } else if (hadEnv) {
        // The user must know: a running stack's data was written with the export's passwords.
        parts.push(`Its .env was not kept (${ignored.length ? "its choices changed on import" : "its files are not a bundle this stackgen can use"}), so the files will have new secrets: for a stack that already runs, keep its own .env.`);
      }
      say(parts.join(" "));
      announce(parts[0]!);
    });
  });
}

/** The compose file's published ports, read once per bundle. */
const portsOfBundle = new WeakMap<api.CompleteDocument, ServicePorts[]>();

/** The host ports the bundle's compose file publishes, service by service, as `docker compose up`
 *  will bind them: a port moved off a clash shows where it went, a loopback one that it answers on
 *  this machine only. Nothing when the bundle has no compose file (or one it cannot read). */
function portTable(store: Store, doc: api.CompleteDocument): HTMLElement | null {
  const compose = doc.files["docker-compose.yml"];
  if (compose === undefined) return null;
  let services = portsOfBundle.get(doc);
  if (services === undefined) {
    try {
      services = publishedPorts(compose);
    } catch {
      services = [];
    }
    portsOfBundle.set(doc, services);
  }
  if (services.length === 0) return null;
  const nameOf = (id: string) => store.catalog.servicesById.get(id)?.name ?? (id === "core" ? "Core gateway" : id);
  const rows = services.flatMap(({ service, ports }) => ports.map((port) => {
    const usual = store.catalog.servicesById.get(service)?.ports?.find((p) => String(p.container) === port.container)?.host;
    const moved = port.host !== null && usual !== undefined && String(usual) !== port.host;
    const proto = port.protocol === "tcp" ? "" : `/${port.protocol}`;
    return h("tr", { "data-service": service, "data-host-port": port.host ?? "", "data-local-only": String(port.localOnly) },
      h("th", { scope: "row" }, nameOf(service)),
      h("td", {}, port.host === null ? "any free port" : `${port.host}${proto}`, moved ? h("span", { class: "muted" }, ` (moved from ${usual})`) : null),
      h("td", {}, `${port.container}${proto}`),
      h("td", {}, port.localOnly
        ? h("span", { class: "local-only" }, `This machine only (${port.hostIp})`)
        : port.hostIp === null ? "Every network interface" : `Address ${port.hostIp}`),
    );
  }));
  return h("div", { class: "port-table-wrap" },
    h("table", { id: "port-table", class: "port-table" },
      h("caption", {}, "Host ports the stack publishes"),
      h("thead", {}, h("tr", {}, ...["Service", "Host port", "Container port", "Reachable from"].map((label) => h("th", { scope: "col" }, label)))),
      h("tbody", {}, ...rows),
    ),
  );
}

/** Whether the bundle's env files hold any secret (none when it was made without secrets). */
const hasSecrets = (doc: api.CompleteDocument): boolean =>
  Object.entries(doc.files).some(([path, text]) => isEnvFile(path) && secretValues(text).length > 0);

function treeList(node: TreeNode, selected: string, changes: Map<string, FileChange> | undefined, pick: (path: string) => void): HTMLUListElement {
  return h("ul", {}, ...node.children.map((child) => {
    if (child.path === undefined) return h("li", { class: "folder" }, h("span", { class: "folder-name" }, `${child.name}/`), treeList(child, selected, changes, pick));
    const path = child.path;
    const change = changes?.get(path);
    return h("li", {}, h("button", {
      type: "button", class: "file-link", "data-path": path, "aria-label": change ? `${path} (${change} since the previous preview)` : path,
      "aria-current": path === selected ? "true" : false,
      onclick: () => pick(path),
    }, child.name, change ? h("span", { class: `file-change ${change}`, "data-change": change, "aria-hidden": "true" }, change) : null));
  }));
}
