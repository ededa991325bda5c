// JSON files as people save them: Windows editors start UTF-8 text with a byte order mark, which
// JSON.parse refuses. The API's bodies are read the same way (src/api/json-body.ts).

/** JSON.parse of a file's text, a leading byte order mark aside. */
export const parseJsonText = (text: string): unknown => JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
