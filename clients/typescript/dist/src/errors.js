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
export const PROBLEM_TYPE_PREFIX = "urn:viking-bridge:problem:";
export class VikingBridgeError extends Error {
    name = "VikingBridgeError";
}
export class ClientConfigurationError extends VikingBridgeError {
    name = "ClientConfigurationError";
}
export class TransportError extends VikingBridgeError {
    name = "TransportError";
    constructor(message, options) {
        super(message, options);
    }
}
export class UnexpectedResponseError extends VikingBridgeError {
    status;
    requestId;
    name = "UnexpectedResponseError";
    constructor(message, status, requestId) {
        super(message);
        this.status = status;
        this.requestId = requestId;
    }
}
export class ProblemError extends VikingBridgeError {
    name = "ProblemError";
    status;
    type;
    title;
    detail;
    requestId;
    /** The service-side class name (`error` member), e.g. "SessionIdentityMismatch". */
    error;
    operation;
    retryAfterMs;
    problem;
    constructor(problem, context = {}) {
        const detail = typeof problem.detail === "string" ? problem.detail : "";
        super(`${problem.status} ${problem.title}${detail ? `: ${detail}` : ""}${problem.request_id ? ` (request ${problem.request_id})` : ""}`);
        this.problem = problem;
        this.status = problem.status;
        this.type = problem.type;
        this.title = problem.title;
        this.detail = detail;
        this.requestId = problem.request_id;
        this.error = problem.error;
        this.operation = context.operation;
        this.retryAfterMs = context.retryAfterMs;
    }
    /** The category slug of `type` (`not-found`, `rate-limited`, ...). */
    get category() {
        return this.type.startsWith(PROBLEM_TYPE_PREFIX) ? this.type.slice(PROBLEM_TYPE_PREFIX.length) : this.type;
    }
}
export class UnauthenticatedError extends ProblemError {
    name = "UnauthenticatedError";
    wwwAuthenticate;
    constructor(problem, context = {}) {
        super(problem, context);
        this.wwwAuthenticate = context.wwwAuthenticate;
    }
}
export class InvalidCredentialError extends UnauthenticatedError {
    name = "InvalidCredentialError";
}
export class ExpiredCredentialError extends UnauthenticatedError {
    name = "ExpiredCredentialError";
}
export class ForbiddenError extends ProblemError {
    name = "ForbiddenError";
}
export class NotPermittedError extends ProblemError {
    name = "NotPermittedError";
}
export class ManifestError extends NotPermittedError {
    name = "ManifestError";
}
/** The service's loaded role file does not allow it (or no role file is loaded): the role routes, federated injection. */
export class RoleRefusedError extends NotPermittedError {
    name = "RoleRefusedError";
}
export class NotFoundError extends ProblemError {
    name = "NotFoundError";
}
export class ConflictError extends ProblemError {
    name = "ConflictError";
}
/** A write past a tenant's or user's storage quota (409, type quota-exceeded; `problem` has level, measure, used, requested, limit). */
export class QuotaExceededError extends ConflictError {
    name = "QuotaExceededError";
}
export class InvalidInputError extends ProblemError {
    name = "InvalidInputError";
}
export class RequestTooLargeError extends InvalidInputError {
    name = "RequestTooLargeError";
}
export class RequestValidationError extends InvalidInputError {
    name = "RequestValidationError";
}
export class RateLimitedError extends ProblemError {
    name = "RateLimitedError";
}
export class UnavailableError extends ProblemError {
    name = "UnavailableError";
}
export class RecallIncompleteError extends UnavailableError {
    name = "RecallIncompleteError";
    get failedScopes() {
        return Array.isArray(this.problem.failed_scopes) ? this.problem.failed_scopes.map(String) : [];
    }
}
export class RequestTimeoutError extends UnavailableError {
    name = "RequestTimeoutError";
}
export class CorruptStorageError extends ProblemError {
    name = "CorruptStorageError";
}
export class ServiceMisconfiguredError extends ProblemError {
    name = "ServiceMisconfiguredError";
}
export class InternalServerError extends ProblemError {
    name = "InternalServerError";
}
/** Leaves chosen by the service's class name, checked before the category. */
const BY_ERROR_NAME = {
    InvalidCredential: InvalidCredentialError,
    ExpiredCredential: ExpiredCredentialError,
    ManifestError,
    RoleRefused: RoleRefusedError,
    RequestTimeout: RequestTimeoutError,
};
/** The category slugs of problems.py (and app.py's validation / routing handlers). */
const BY_CATEGORY = {
    "request-too-large": RequestTooLargeError,
    "rate-limited": RateLimitedError,
    unauthenticated: UnauthenticatedError,
    "storage-needs-attention": CorruptStorageError,
    misconfigured: ServiceMisconfiguredError,
    "recall-incomplete": RecallIncompleteError,
    unavailable: UnavailableError,
    forbidden: ForbiddenError,
    "not-permitted": NotPermittedError,
    "not-found": NotFoundError,
    conflict: ConflictError,
    "quota-exceeded": QuotaExceededError,
    "invalid-input": InvalidInputError,
    "malformed-request": InvalidInputError,
    unprocessable: RequestValidationError,
    internal: InternalServerError,
};
const BY_STATUS = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: RequestTooLargeError,
    414: RequestTooLargeError,
    422: RequestValidationError,
    429: RateLimitedError,
    500: InternalServerError,
    503: UnavailableError,
};
/** The typed exception for one problem+json answer. */
export function problemError(problem, context = {}) {
    const slug = problem.type.startsWith(PROBLEM_TYPE_PREFIX) ? problem.type.slice(PROBLEM_TYPE_PREFIX.length) : "";
    const byName = problem.error ? BY_ERROR_NAME[problem.error] : undefined;
    const Leaf = (byName && matchesCategory(byName, slug, problem.status) ? byName : undefined) ?? BY_CATEGORY[slug] ?? BY_STATUS[problem.status] ?? ProblemError;
    return new Leaf(problem, context);
}
/** A class-name leaf only refines its own category (a stray `error` cannot turn a 404 into a 401). */
function matchesCategory(leaf, slug, status) {
    const parent = BY_CATEGORY[slug] ?? BY_STATUS[status];
    return parent !== undefined && (leaf === parent || leaf.prototype instanceof parent);
}
/** Whether a problem means "the same call may succeed later" (429, and 503 except operator-action ones). */
export function isRetryable(error) {
    return error instanceof RateLimitedError || error instanceof UnavailableError;
}
