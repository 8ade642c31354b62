/** @viking-bridge/client: a typed client for the viking-bridge memory service. */
export * from "./client.js";
export * from "./errors.js";
export { REDACTED, redactHeaders, isSecretHeader } from "./redact.js";
export { parseRetryAfter } from "./retry.js";
export { ROUTES } from "./generated/routes.js";
