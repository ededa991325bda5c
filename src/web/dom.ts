// A tiny element builder. The UI is plain DOM on purpose (no framework): the page is small, loads
// instantly from the binary, works offline and has no dependency to keep up to date.

type AttrValue = string | number | boolean | null | undefined;
type Listener = (event: Event) => void;
export type Attrs = Record<string, AttrValue | Listener>;
export type Child = Node | string | number | null | undefined | false;

/** `h("button", {type: "button", onclick: f}, "Go")`: attributes, `on*` listeners, children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.textContent = "";
  append(parent, children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing #${id} in index.html`);
  return el as T;
}

/** Saves `data` as a file through a temporary object URL (no server round trip). */
export function saveFile(data: Blob, fileName: string): void {
  const url = URL.createObjectURL(data);
  const link = h("a", { href: url, download: fileName, hidden: true });
  document.body.appendChild(link);
  link.click();
  link.remove();
  // Revoke later: the download starts asynchronously.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The Clipboard API exists only in a secure context (HTTPS, or this machine over HTTP): a page
 *  opened as http://<LAN address>:3654 shows no Copy button rather than one that always fails. */
export const canCopy = (): boolean => window.isSecureContext && typeof navigator.clipboard?.writeText === "function";

/** Remembers the focused element; the returned function puts focus back on it if it was lost
 *  meanwhile. Disabling a pressed button while its work runs drops keyboard focus to the page, and
 *  so does a redraw that replaces it: then the new control of the same id, else the fallback
 *  (one given when focus is put back, for a control drawn since), takes it. */
export function holdFocus(fallback?: HTMLElement): (laterFallback?: HTMLElement) => void {
  const focused = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
  return (laterFallback) => {
    if (!focused || (document.activeElement !== document.body && document.activeElement !== null)) return;
    const same = focused.isConnected ? focused : focused.id ? document.getElementById(focused.id) : null;
    (same ?? laterFallback ?? fallback)?.focus();
  };
}
