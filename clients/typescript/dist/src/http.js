/**
 * One call of one operation: build the request from the generated route table, send it with
 * the configured fetch, retry when that is safe, turn problem+json into typed errors, and tell
 * the logger hook what happened with every credential redacted.
 *
 * It never chooses an identity: the only identity-bearing thing it sends is the credential it
 * was given (and the session id, which the service checks is bound to that credential). It
 * never hands a credential, a body or a query string to the logger.
 */
import { randomUUID } from "node:crypto";
import { ClientConfigurationError, TransportError, UnexpectedResponseError, isRetryable, problemError, } from "./errors.js";
import { ROUTES } from "./generated/routes.js";
import { redactHeaders, redactUrl, scrub } from "./redact.js";
import { delayBeforeRetry, parseRetryAfter, safeToRepeat } from "./retry.js";
/**
 * POST routes that only read (bridge/doors/http/routes/common.py READS: a recall changes nothing but
 * its own audit row), so they are as safe to repeat as a GET.
 */
export const READ_ONLY_POSTS = new Set(["recall_post"]);
/** Send `operation` and return its parsed result (JSON, or text for non-JSON answers). */
export async function call(t, operation, input = {}) {
    const route = ROUTES[operation];
    const url = buildUrl(t.baseUrl, route.path, input.path ?? {}, input.query ?? {});
    let body = input.body;
    if (route.idempotencyKey && t.autoIdempotencyKeys && isRecord(body) && body.idempotency_key == null) {
        body = { ...body, idempotency_key: `vbts-${randomUUID()}` };
    }
    const keyed = isRecord(body) && typeof body.idempotency_key === "string";
    const repeatable = input.retry !== false && (READ_ONLY_POSTS.has(operation) || safeToRepeat(route.method, keyed));
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const requestId = `vbts-${randomUUID()}`;
    const safeUrl = redactUrl(url);
    const base = { operation, method: route.method, url: safeUrl, requestId };
    for (let attempt = 1;; attempt++) {
        const headers = {
            accept: "application/json, application/problem+json",
            "user-agent": t.userAgent,
            "x-request-id": requestId,
            ...(route.authenticated ? await t.authorize() : {}),
            ...(t.sessionId && route.authenticated ? { "x-session-id": t.sessionId } : {}),
            ...(payload !== undefined ? { "content-type": "application/json" } : {}),
        };
        log(t, { event: "request", ...base, attempt, headers: redactHeaders(headers) });
        const started = performance.now();
        const signals = [AbortSignal.timeout(t.timeoutMs), ...(input.signal ? [input.signal] : [])];
        let response;
        try {
            response = await t.fetch(url, { method: route.method, headers, body: payload, signal: AbortSignal.any(signals), redirect: "error" });
        }
        catch (cause) {
            const error = new TransportError(`${route.method} ${safeUrl}: no answer (${describe(cause)})`, { cause });
            if (input.signal?.aborted || !repeatable || attempt >= t.retry.maxAttempts) {
                log(t, { event: "error", ...base, attempt, error: error.name, message: error.message });
                throw error;
            }
            const delayMs = delayBeforeRetry(t.retry, attempt, undefined) ?? 0;
            log(t, { event: "retry", ...base, attempt, delayMs, reason: "TransportError" });
            await t.retry.sleep(delayMs, input.signal);
            continue;
        }
        log(t, { event: "response", ...base, attempt, status: response.status, durationMs: Math.round(performance.now() - started), headers: redactHeaders(response.headers) });
        if (route.success.includes(response.status) || input.acceptStatuses?.includes(response.status)) {
            return readResult(response);
        }
        const error = await readError(response, operation, t.secrets());
        const retryAfterMs = error instanceof UnexpectedResponseError ? undefined : error.retryAfterMs;
        if (repeatable && isRetryable(error) && attempt < t.retry.maxAttempts) {
            const delayMs = delayBeforeRetry(t.retry, attempt, retryAfterMs);
            if (delayMs !== undefined) {
                log(t, { event: "retry", ...base, attempt, delayMs, reason: `${response.status} ${error.name}` });
                await t.retry.sleep(delayMs, input.signal);
                continue;
            }
        }
        log(t, { event: "error", ...base, attempt, error: error.name, status: response.status, message: error.message });
        throw error;
    }
    function log(transport, event) {
        if (!transport.logger)
            return;
        if (event.event === "error")
            event = { ...event, message: scrub(event.message, transport.secrets()) };
        try {
            transport.logger(event);
        }
        catch {
            // a failing logger must not turn a successful call into a failure
        }
    }
}
export function buildUrl(base, template, path, query) {
    const filled = template.replace(/\{([^}]+)\}/g, (_, name) => {
        const value = path[name];
        if (typeof value !== "string" || value === "")
            throw new ClientConfigurationError(`path parameter ${name} is required`);
        return encodeURIComponent(value); // an id can never add a path segment: '/' and '..' are encoded
    });
    const url = new URL(base.pathname.replace(/\/$/, "") + filled, base);
    for (const [name, value] of Object.entries(query)) {
        if (value === undefined || value === null)
            continue;
        for (const item of Array.isArray(value) ? value : [value])
            url.searchParams.append(name, String(item));
    }
    return url;
}
async function readResult(response) {
    const type = response.headers.get("content-type") ?? "";
    const text = await response.text();
    if (!type.includes("json"))
        return text;
    try {
        return JSON.parse(text);
    }
    catch {
        throw new UnexpectedResponseError(`the ${response.status} answer is not valid JSON`, response.status, response.headers.get("x-request-id") ?? undefined);
    }
}
async function readError(response, operation, secrets) {
    const requestId = response.headers.get("x-request-id") ?? undefined;
    // a server (or a proxy) echoing the credential back must not put it into an error a caller logs
    const text = scrub(await response.text().catch(() => ""), secrets);
    let parsed;
    try {
        parsed = JSON.parse(text);
    }
    catch {
        parsed = undefined;
    }
    if (!isProblem(parsed)) {
        // not problem+json (a proxy's HTML page, say): typed by status so a 503 is still retryable
        parsed = { type: "about:blank", title: response.statusText || `HTTP ${response.status}`, status: response.status, request_id: requestId };
        if (![429, 503].includes(response.status)) {
            return new UnexpectedResponseError(`${response.status} ${response.statusText} without a problem+json body`, response.status, requestId);
        }
    }
    const problem = parsed;
    const fromHeader = parseRetryAfter(response.headers.get("retry-after"));
    const fromBody = typeof problem.retry_after === "number" && problem.retry_after > 0 ? problem.retry_after * 1000 : undefined;
    return problemError(problem, {
        operation,
        retryAfterMs: fromHeader ?? fromBody,
        wwwAuthenticate: response.headers.get("www-authenticate") ?? undefined,
    });
}
function isProblem(value) {
    return isRecord(value) && typeof value.type === "string" && typeof value.status === "number" && typeof value.title === "string";
}
function isRecord(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
function describe(cause) {
    if (cause instanceof Error) {
        const code = cause.cause?.code;
        return code ? `${cause.name}: ${code}` : cause.name;
    }
    return "unknown failure";
}
