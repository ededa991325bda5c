// Text patterns shared by the API's schemas, the CLI and the web UI's own checks, so the form
// refuses exactly what the server would. No imports beyond limits.ts: the UI bundles it.
import { MAX_DOMAIN_LENGTH } from "./limits.ts";

/** A Compose project name, which is also the bundle's folder name. */
export const PROJECT_NAME_PATTERN = "^[a-z0-9][a-z0-9_-]{0,62}$";
export const PROJECT_NAME_MESSAGE = "Expected a Compose project name: 1 to 63 lowercase letters, digits, - and _, starting with a letter or digit";

/** An image tag for the core gateway. */
export const CORE_VERSION_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$";

/** CORE_VERSION in .env: such a tag, optionally pinned to a digest (compose reads the gateway's
 *  image as `${CORE_IMAGE}:${CORE_VERSION}`). */
export const CORE_VERSION_VALUE_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(@sha256:[a-f0-9]{64})?$";

/** CORE_IMAGE in .env: empty (the default repository) or an image repository, with an optional
 *  registry host and port, no tag. */
export const IMAGE_REPOSITORY_PATTERN = "^$|^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*$";

/** DNS labels; the last one not all digits, so an IP address is not taken for a domain. */
export const DOMAIN_PATTERN = `^(?=.{1,${MAX_DOMAIN_LENGTH}}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)*(?![0-9]+$)[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`;
