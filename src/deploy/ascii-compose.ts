// Coolify refuses a compose file holding any byte outside ASCII (its API checks the decoded text
// with `mb_detect_encoding(..., 'ASCII', true)` and answers 422 "should be base64 encoded"), yet
// bundles carry non-ASCII text: an inlined skill file, a user's comment or label. YAML can say any
// character in ASCII: a double-quoted scalar takes `\uXXXX` / `\UXXXXXXXX` escapes, and a
// comment's text means nothing to the parser. So such scalars are written double-quoted with
// escapes, and comments spell their characters out; the parsed document stays the same.
import { isNode, parseDocument, visit, Scalar, type Node } from "yaml";

const NON_ASCII = /[^\x00-\x7f]/u;
const NON_ASCII_ALL = /[^\x00-\x7f]/gu;

const escape = (char: string) => {
  const code = char.codePointAt(0)!;
  return code > 0xffff ? `\\U${code.toString(16).padStart(8, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
};

/** The same compose document in ASCII only (returned unchanged when it already is). */
export function asciiCompose(yamlText: string): string {
  if (!NON_ASCII.test(yamlText)) return yamlText;
  const doc = parseDocument(yamlText);
  const spellComment = (text: string | null | undefined) => (text ? text.replace(NON_ASCII_ALL, escape) : text);
  doc.commentBefore = spellComment(doc.commentBefore) ?? null;
  doc.comment = spellComment(doc.comment) ?? null;
  visit(doc, (_key, node) => {
    if (!isNode(node)) return;
    const n = node as Node;
    n.commentBefore = spellComment(n.commentBefore) ?? undefined;
    n.comment = spellComment(n.comment) ?? undefined;
    if (node instanceof Scalar && typeof node.value === "string" && NON_ASCII.test(node.value)) node.type = Scalar.QUOTE_DOUBLE;
  });
  // Every character left outside ASCII now sits inside a double-quoted scalar, where an escape is
  // read back as the character (a backslash before it is always part of a complete escape).
  return doc.toString({ lineWidth: 0 }).replace(NON_ASCII_ALL, escape);
}
