// Versions of the documents stackgen writes and reads back (SPEC §2.7, §9). No imports: the web
// UI checks the files it imports against them too.

/** `formatVersion` of the complete export; a document of another version is refused. */
export const COMPLETE_FORMAT_VERSION = "1";
/** `configVersion` of stackgen.json; older versions are migrated step by step on load. */
export const CURRENT_CONFIG_VERSION = 2;
