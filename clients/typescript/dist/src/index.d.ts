/** @viking-bridge/client: a typed client for the viking-bridge memory service. */
export * from "./client.js";
export * from "./errors.js";
export { REDACTED, redactHeaders, isSecretHeader } from "./redact.js";
export { parseRetryAfter, type RetryOptions } from "./retry.js";
export type { LogEvent, Logger, CallInput } from "./http.js";
export { ROUTES, type OperationId } from "./generated/routes.js";
export type { components, operations, paths } from "./generated/openapi.js";
