// JSON text with every character past ASCII written as a \u escape (JSON's own; parsers read the
// same value). One such character (a skill's "…") made the whole generate answer, 40 KB, a
// two-byte-per-character string that Bun had to re-encode into UTF-8 on every response; in
// ASCII it is sent as it is.
const HAS_NON_ASCII = /[\u0080-\uffff]/;
const NON_ASCII = /[\u0080-\uffff]/g;

export const asciiJson = (json: string): string =>
  HAS_NON_ASCII.test(json) ? json.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : json;
