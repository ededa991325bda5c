// Limits shared by the API's schemas and the web UI's own checks. No imports: the UI bundles it.

/** Longest base domain: `<service>.<domain>` must stay within DNS's 253 characters, and this
 *  leaves 52 for the service's label (the catalog test holds every id to it). */
export const MAX_DOMAIN_LENGTH = 200;
