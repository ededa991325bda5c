// Step 1 and 2: presets, skill packs and the service browser. Built once; later changes only
// toggle states and notes so keyboard focus is never lost.
import { h, replaceChildren, byId } from "../dom.ts";
import { explainConflict, formatMB, plural, selectionWords } from "../explain.ts";
import { addedClashes, applyPreset, clashesWith, handMadeSelection, matchesPreset, presetFootprint, selectionClosure, toggle, toggleService, whatItAdds, type SelectionFields } from "../model.ts";
import type { CatalogService, Preset } from "../api.ts";
import type { Store } from "../store.ts";

const nameOf = (store: Store, id: string) => store.catalog.servicesById.get(id)?.name ?? id;
const names = (store: Store, ids: readonly string[]) => ids.map((id) => nameOf(store, id)).join(", ");

export function mountPresets(store: Store): void {
  const list = byId("preset-list");
  const buttons = new Map<string, HTMLButtonElement>();
  // A preset replaces the whole selection: one made by hand can be put back, until the next change.
  const undoBar = h("div", { id: "preset-undo", class: "undo-bar", hidden: true });
  list.after(undoBar);
  let applied: object | undefined;
  const hideUndo = () => {
    applied = undefined;
    undoBar.hidden = true;
    undoBar.replaceChildren();
    document.documentElement.style.scrollPaddingBottom = "";
  };
  // Escape dismisses the offer, as it closes any bar floating over the page.
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !undoBar.hidden) hideUndo();
  });
  store.onForm(() => {
    if (applied !== undefined && store.form !== applied) hideUndo();
  });
  const offerUndo = (preset: Preset, previous: SelectionFields, button: HTMLButtonElement) => {
    const what = selectionWords(previous.services.length, previous.skillPacks.length);
    replaceChildren(undoBar,
      h("p", {}, `${preset.name} replaced the selection you made.`),
      h("button", {
        type: "button", class: "button small", id: "preset-undo-button",
        onclick: () => {
          hideUndo();
          store.setForm(previous);
          announce(`Restored your ${what}.`);
          // The undo button is gone: focus goes back to the preset, no longer chosen.
          button.focus();
        },
      }, `Undo: restore your ${what}`),
      h("button", { type: "button", class: "button small", id: "preset-undo-dismiss", "aria-label": "Dismiss the undo offer", onclick: () => { hideUndo(); button.focus(); } }, "Dismiss"),
    );
    undoBar.hidden = false;
    // The bar floats over the page's bottom: a control reached with Tab scrolls above it, never under.
    document.documentElement.style.scrollPaddingBottom = `${undoBar.getBoundingClientRect().height + 24}px`;
    applied = store.form;
    return what;
  };
  for (const preset of store.catalog.presets) {
    const button: HTMLButtonElement = h("button", {
      type: "button",
      class: "button",
      "aria-describedby": `preset-${preset.id}-desc`,
      onclick: () => {
        const previous = handMadeSelection(store.form, preset, store.catalog.presetsById);
        store.setForm(applyPreset(store.form, preset));
        store.choicesReplaced();
        const done = `Preset ${preset.name} applied: ${plural(preset.services.length, "service")}.`;
        if (previous === undefined) return announce(done);
        const what = offerUndo(preset, previous, button);
        announce(`${done} It replaced your ${what}: the Undo button at the bottom of the window restores them.`);
      },
    }, `Use ${preset.name}`);
    buttons.set(preset.id, button);
    // What the stack comes to (packs, proxy and dependencies included), as the pack cards say:
    // the preset's own figure counts only the services it lists.
    const footprint = presetFootprint(preset, store.catalog.servicesById, store.catalog.packsById);
    const facts = [
      plural(footprint.services, "service"),
      formatMB(footprint.memoryMB),
      preset.proxy ? `proxy ${preset.proxy}` : "no proxy",
      preset.gpu ? "GPU" : null,
    ].filter(Boolean).join(" · ");
    list.append(h("li", { class: "card preset", "data-preset": preset.id },
      h("h3", { class: "card-title" }, preset.name),
      h("p", { class: "card-facts" }, facts),
      h("p", { id: `preset-${preset.id}-desc`, class: "card-desc" }, preset.description),
      h("p", { class: "card-contents" }, h("span", { class: "label" }, "Services: "), names(store, preset.services)),
      preset.skillPacks.length ? h("p", { class: "card-contents" }, h("span", { class: "label" }, "Skill packs: "), preset.skillPacks.join(", ")) : null,
      button,
    ));
  }
  const sync = () => {
    for (const [id, button] of buttons) {
      const preset = store.catalog.presetsById.get(id);
      const active = preset !== undefined && matchesPreset(store.form, preset);
      // The preset in use is the current one of the list (aria-current), not a toggle: pressing it
      // again cannot take it off (aria-pressed announced a button that could be unpressed).
      if (active) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
      button.closest(".card")?.classList.toggle("active", active);
    }
  };
  store.onForm(sync);
  sync();
}

export function mountPacks(store: Store): void {
  const list = byId("pack-list");
  const rows = new Map<string, { box: HTMLInputElement; adds: HTMLElement }>();
  for (const pack of store.catalog.packs) {
    const boxId = `pack-${pack.id}`;
    const box = h("input", { type: "checkbox", id: boxId, "aria-describedby": `${boxId}-desc ${boxId}-adds` });
    box.addEventListener("change", () => store.setForm({ skillPacks: toggle(store.form.skillPacks, pack.id, box.checked) }));
    const adds = h("p", { id: `${boxId}-adds`, class: "card-adds" });
    rows.set(pack.id, { box, adds });
    list.append(h("li", { class: "card pack", "data-pack": pack.id },
      h("div", { class: "card-head" }, box, h("label", { for: boxId, class: "card-title" }, pack.name)),
      h("p", { id: `${boxId}-desc`, class: "card-desc" }, pack.description),
      h("p", { class: "card-contents" }, h("span", { class: "label" }, "Services: "), names(store, pack.services)),
      h("p", { class: "card-contents small" }, h("span", { class: "label" }, "Skills: "), pack.skills.join(", ")),
      adds,
    ));
  }
  const sync = () => {
    const { servicesById, packsById } = store.catalog;
    for (const [id, { box, adds }] of rows) {
      box.checked = store.form.skillPacks.includes(id);
      box.closest(".card")?.classList.toggle("active", box.checked);
      const others = { ...store.form, skillPacks: store.form.skillPacks.filter((p) => p !== id) };
      const current = selectionClosure(others, servicesById, packsById);
      const { added, memoryMB } = whatItAdds(packsById.get(id)?.services ?? [], current, servicesById);
      const clashing = box.checked ? [] : addedClashes(added, current, servicesById);
      adds.textContent = (added.length
        ? `${box.checked ? "Brings" : "Adds"} ${added.length} service${added.length > 1 ? "s" : ""} (+${formatMB(memoryMB)}): ${names(store, added)}`
        : "Adds no new services to your stack (its skills are still included).")
        + clashing.map((c) => ` ${names(store, [c.id])} would conflict with ${names(store, c.with)} in your stack.`).join("");
    }
  };
  store.onForm(sync);
  sync();
}

interface ServiceRow {
  service: CatalogService;
  item: HTMLLIElement;
  box: HTMLInputElement;
  note: HTMLElement;
  haystack: string;
}

export function mountServices(store: Store): void {
  const container = byId("service-list");
  const search = byId<HTMLInputElement>("service-search");
  const categorySelect = byId<HTMLSelectElement>("category-filter");
  const maturitySelect = byId<HTMLSelectElement>("maturity-filter");
  const selectedOnly = byId<HTMLInputElement>("selected-only");
  const count = byId("service-count");
  const { services, categories } = store.catalog;

  categorySelect.append(h("option", { value: "" }, `All categories (${services.length})`));
  for (const c of categories) categorySelect.append(h("option", { value: c.id }, `${c.name} (${c.count})`));

  const rows: ServiceRow[] = [];
  const groups: { section: HTMLElement; rows: ServiceRow[] }[] = [];
  for (const category of categories) {
    const members = services.filter((s) => s.category === category.id);
    if (members.length === 0) continue;
    const ul = h("ul", { class: "svc-grid" });
    const section = h("section", { class: "svc-group", "aria-labelledby": `cat-${category.id}` },
      h("h3", { id: `cat-${category.id}` }, category.name, h("span", { class: "count" }, ` ${members.length}`)),
      ul,
    );
    const groupRows = members.map((service) => serviceRow(store, service, category.name));
    for (const row of groupRows) ul.append(row.item);
    rows.push(...groupRows);
    groups.push({ section, rows: groupRows });
    container.append(section);
  }

  const applyFilters = () => {
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const category = categorySelect.value;
    const maturity = maturitySelect.value;
    const resolved = new Set(store.lastResult()?.resolvedServices ?? store.form.services);
    let shown = 0;
    for (const row of rows) {
      const visible = (!category || row.service.category === category)
        && (!maturity || row.service.maturity === maturity)
        && (!selectedOnly.checked || resolved.has(row.service.id))
        && words.every((w) => row.haystack.includes(w));
      row.item.hidden = !visible;
      if (visible) shown++;
    }
    for (const group of groups) group.section.hidden = group.rows.every((r) => r.item.hidden);
    count.textContent = shown === rows.length ? `Showing all ${rows.length} services.` : `Showing ${shown} of ${rows.length} services.`;
    noMatch.hidden = shown > 0;
  };
  for (const control of [search, categorySelect, maturitySelect, selectedOnly]) control.addEventListener("input", applyFilters);

  // An empty list says why, and offers the way back.
  const clearFilters = () => {
    search.value = "";
    categorySelect.value = "";
    maturitySelect.value = "";
    selectedOnly.checked = false;
    applyFilters();
    search.focus();
  };
  const noMatch = h("div", { id: "no-match", class: "alert warning", hidden: true },
    h("p", {}, "No service matches the search and filters."),
    h("button", { type: "button", class: "button small", id: "clear-filters", onclick: clearFilters }, "Clear the filters"),
  );
  container.before(noMatch);

  const sync = () => {
    const { servicesById, packsById } = store.catalog;
    const explicit = new Set(store.form.services);
    const current = selectionClosure(store.form, servicesById, packsById);
    const result = store.lastResult();
    const requiredBy = new Map<string, string[]>();
    for (const d of result?.addedDependencies ?? []) requiredBy.set(d.service, [...(requiredBy.get(d.service) ?? []), d.requiredBy]);
    const packOf = new Map<string, string>();
    for (const p of store.form.skillPacks) for (const s of packsById.get(p)?.services ?? []) packOf.set(s, packsById.get(p)?.name ?? p);
    for (const row of rows) {
      const id = row.service.id;
      row.box.checked = explicit.has(id);
      const included = !explicit.has(id) && current.has(id);
      row.item.classList.toggle("selected", explicit.has(id));
      row.item.classList.toggle("included", included);
      const clashes = clashesWith(id, current, servicesById);
      row.item.classList.toggle("clash", clashes.length > 0 && current.has(id));
      // Other problems the check found with this service (platform, port, a dependency): on its card
      // too, where the user looks, not only in the summary far down a phone's page.
      const problems = (result?.conflicts ?? []).filter((c) => c.code !== "SERVICE_CONFLICT" && c.services.includes(id) && current.has(id));
      replaceChildren(row.note, ...noteFor(store, row.service, { explicit, current, included, clashes, requiredBy, packOf }),
        ...problems.flatMap((c) => [" ", h("strong", { class: "warn-text" }, `${explainConflict(c.code).title}: ${c.message}`)]));
    }
    applyFilters();
  };
  store.onForm(sync);
  store.onValidation(sync);
  sync();
}

function serviceRow(store: Store, service: CatalogService, categoryName: string): ServiceRow {
  const boxId = `svc-${service.id}`;
  const box = h("input", { type: "checkbox", id: boxId, "data-service": service.id, "aria-describedby": `${boxId}-desc ${boxId}-note` });
  box.addEventListener("change", () => {
    const before = store.form.proxy;
    store.setForm(toggleService(store.form, service.id, box.checked));
    // A stack has one reverse proxy: ticking the other one replaces it, which must not pass unsaid.
    if (before && store.form.proxy !== before && store.form.proxy === service.id) {
      const old = store.catalog.servicesById.get(before)?.name ?? before;
      announce(`${service.name} replaces ${old} as the reverse proxy (step 3).`);
      note.textContent = `Selected: replaces ${old} as the reverse proxy (a stack has one).`;
    }
  });
  const note = h("p", { id: `${boxId}-note`, class: "svc-note" });
  const facts: string[] = [formatMB(service.estimatedMemoryMB)];
  if (service.gpu) facts.push("GPU capable");
  if (service.platforms.length === 1) facts.push(`${service.platforms[0].replace("linux/", "")} only`);
  const item = h("li", { class: "svc", "data-service": service.id },
    h("div", { class: "svc-head" },
      box,
      h("label", { for: boxId, class: "svc-name" }, service.name),
      h("span", { class: `badge badge-${service.maturity}`, title: `Maturity: ${service.maturity}` }, service.maturity),
    ),
    h("p", { class: "svc-facts" }, h("code", {}, service.id), " · ", facts.join(" · ")),
    h("p", { id: `${boxId}-desc`, class: "svc-desc" }, service.description),
    service.dependencies.length ? h("p", { class: "svc-rel" }, h("span", { class: "label" }, "Needs: "), names(store, service.dependencies)) : null,
    service.conflicts.length ? h("p", { class: "svc-rel" }, h("span", { class: "label" }, "Conflicts with: "), names(store, service.conflicts)) : null,
    note,
  );
  // The facts shown on the card and its group's heading are searchable too ("gpu", "amd64",
  // "experimental", "vector databases").
  const haystack = [service.id, service.name, service.description, service.category, categoryName, service.maturity, service.image, ...facts].join(" ").toLowerCase();
  return { service, item, box, note, haystack };
}

interface NoteContext {
  explicit: Set<string>;
  current: Set<string>;
  included: boolean;
  clashes: string[];
  requiredBy: Map<string, string[]>;
  packOf: Map<string, string>;
}

function noteFor(store: Store, service: CatalogService, ctx: NoteContext): (string | HTMLElement)[] {
  const out: (string | HTMLElement)[] = [];
  const id = service.id;
  if (ctx.explicit.has(id)) out.push("Selected.");
  else if (ctx.included) {
    const by = ctx.requiredBy.get(id);
    const pack = ctx.packOf.get(id);
    out.push(id === store.form.proxy ? "Included as the reverse proxy (step 3)." : pack ? `Included by the ${pack} pack.` : by ? `Included: needed by ${names(store, by)}.` : "Included as a dependency.");
  } else {
    const { added, memoryMB } = whatItAdds([id], ctx.current, store.catalog.servicesById);
    const extra = added.filter((x) => x !== id);
    out.push(extra.length ? `Adding it also adds ${names(store, extra)} (+${formatMB(memoryMB)} in total).` : `Adding it uses +${formatMB(memoryMB)}.`);
    // A dependency that clashes with the stack is one the server cannot add: said before choosing.
    for (const c of addedClashes(extra, ctx.current, store.catalog.servicesById)) {
      out.push(" ", h("strong", { class: "warn-text" }, `It needs ${names(store, [c.id])}, which would conflict with ${names(store, c.with)} in your stack.`));
    }
  }
  if (ctx.clashes.length) {
    const verb = ctx.current.has(id) ? "Conflicts" : "Would conflict";
    out.push(" ", h("strong", { class: "warn-text" }, `${verb} with ${names(store, ctx.clashes)} in your stack.`));
  }
  return out;
}

/** Short messages for screen readers (a polite live region). */
export function announce(message: string): void {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  // A fresh text node after clearing makes repeated identical messages heard again.
  setTimeout(() => { region.textContent = message; }, 30);
}
