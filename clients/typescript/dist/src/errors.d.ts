/**
 * The client's error tree: the service's problem+json answers (bridge/doors/http/problems.py) as
 * typed exceptions, so a caller can `catch (e) { if (e instanceof NotFoundError) ... }`.
 *
 *     VikingBridgeError                      root of every error this client throws
 *      ├── ClientConfigurationError          a bad option (no credential, two credentials, bad URL)
 *      ├── TransportError                    no HTTP answer at all (refused, reset, aborted); `cause`
 *      ├── UnexpectedResponseError           an answer that is neither the spec's success nor problem+json
 *      └── ProblemError                      any RFC 9457 answer: status, type, title, detail, requestId
 *           ├── UnauthenticatedError         401 unauthenticated (+ `wwwAuthenticate`)
 *           │    ├── InvalidCredentialError  (error = InvalidCredential)
 *           │    └── ExpiredCredentialError  (error = ExpiredCredential)
 *           ├── ForbiddenError               403 forbidden: session mismatch, a caller field naming someone else
 *           ├── NotPermittedError            403 not-permitted: the policy refuses
 *           │    ├── ManifestError           (error = ManifestError) misuse of an injection manifest
 *           │    └── RoleRefusedError        (error = RoleRefused) the role file does not allow it, or none is loaded
 *           ├── NotFoundError                404 not-found (and unknown routes, http-404)
 *           ├── ConflictError                409 conflict: an idempotency key reused for other content
 *           │    └── QuotaExceededError      409 quota-exceeded: a write past a storage quota (`problem.limit` etc.)
 *           ├── InvalidInputError            400 invalid-input / malformed-request
 *           │    ├── RequestTooLargeError    413 / 414 request-too-large
 *           │    └── RequestValidationError  422 unprocessable: the request does not fit its schema
 *           ├── RateLimitedError             429 rate-limited (`retryAfterMs`)
 *           ├── UnavailableError             503 unavailable (`retryAfterMs`), retryable
 *           │    ├── RecallIncompleteError   503 recall-incomplete (`failedScopes`)
 *           │    └── RequestTimeoutError     (error = RequestTimeout) a write may still complete: retry with its key
 *           ├── CorruptStorageError          503 storage-needs-attention: an operator must act, no retry
 *           ├── ServiceMisconfiguredError    503 misconfigured: an operator must act, no retry
 *           └── InternalServerError          500 internal (quote `requestId` to the operator)
 *
 * The mapping reads the problem's `type` URN first (the service's category), then its `error`
 * member (the class name) for the finer leaves, then the status. An error never carries a
 * request header, so it can be logged or serialised without leaking a credential.
 */
export declare const PROBLEM_TYPE_PREFIX = "urn:viking-bridge:problem:";
/** The RFC 9457 body the service sends (components.schemas.Problem, plus any extension). */
export interface Problem {
    type: string;
    title: string;
    status: number;
    detail?: string;
    instance?: string;
    request_id?: string;
    error?: string;
    retry_after?: number;
    failed_scopes?: string[];
    [extension: string]: unknown;
}
export declare class VikingBridgeError extends Error {
    name: string;
}
export declare class ClientConfigurationError extends VikingBridgeError {
    name: string;
}
export declare class TransportError extends VikingBridgeError {
    name: string;
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
export declare class UnexpectedResponseError extends VikingBridgeError {
    readonly status: number;
    readonly requestId: string | undefined;
    name: string;
    constructor(message: string, status: number, requestId: string | undefined);
}
export interface ProblemContext {
    /** Milliseconds the service asked the client to wait (Retry-After), when it said so. */
    retryAfterMs?: number;
    wwwAuthenticate?: string;
    /** The operationId of the request that failed (never its headers or body). */
    operation?: string;
}
export declare class ProblemError extends VikingBridgeError {
    name: string;
    readonly status: number;
    readonly type: string;
    readonly title: string;
    readonly detail: string;
    readonly requestId: string | undefined;
    /** The service-side class name (`error` member), e.g. "SessionIdentityMismatch". */
    readonly error: string | undefined;
    readonly operation: string | undefined;
    readonly retryAfterMs: number | undefined;
    readonly problem: Problem;
    constructor(problem: Problem, context?: ProblemContext);
    /** The category slug of `type` (`not-found`, `rate-limited`, ...). */
    get category(): string;
}
export declare class UnauthenticatedError extends ProblemError {
    name: string;
    readonly wwwAuthenticate: string | undefined;
    constructor(problem: Problem, context?: ProblemContext);
}
export declare class InvalidCredentialError extends UnauthenticatedError {
    name: string;
}
export declare class ExpiredCredentialError extends UnauthenticatedError {
    name: string;
}
export declare class ForbiddenError extends ProblemError {
    name: string;
}
export declare class NotPermittedError extends ProblemError {
    name: string;
}
export declare class ManifestError extends NotPermittedError {
    name: string;
}
/** The service's loaded role file does not allow it (or no role file is loaded): the role routes, federated injection. */
export declare class RoleRefusedError extends NotPermittedError {
    name: string;
}
export declare class NotFoundError extends ProblemError {
    name: string;
}
export declare class ConflictError extends ProblemError {
    name: string;
}
/** A write past a tenant's or user's storage quota (409, type quota-exceeded; `problem` has level, measure, used, requested, limit). */
export declare class QuotaExceededError extends ConflictError {
    name: string;
}
export declare class InvalidInputError extends ProblemError {
    name: string;
}
export declare class RequestTooLargeError extends InvalidInputError {
    name: string;
}
export declare class RequestValidationError extends InvalidInputError {
    name: string;
}
export declare class RateLimitedError extends ProblemError {
    name: string;
}
export declare class UnavailableError extends ProblemError {
    name: string;
}
export declare class RecallIncompleteError extends UnavailableError {
    name: string;
    get failedScopes(): string[];
}
export declare class RequestTimeoutError extends UnavailableError {
    name: string;
}
export declare class CorruptStorageError extends ProblemError {
    name: string;
}
export declare class ServiceMisconfiguredError extends ProblemError {
    name: string;
}
export declare class InternalServerError extends ProblemError {
    name: string;
}
/** The typed exception for one problem+json answer. */
export declare function problemError(problem: Problem, context?: ProblemContext): ProblemError;
/** Whether a problem means "the same call may succeed later" (429, and 503 except operator-action ones). */
export declare function isRetryable(error: unknown): error is RateLimitedError | UnavailableError;
