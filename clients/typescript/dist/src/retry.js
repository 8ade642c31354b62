/**
 * When a failed call may be sent again, and how long to wait first.
 *
 * Only 429 and retryable 503s (and answers that never arrived) are retried, and only for
 * requests that are safe to repeat: idempotent methods, or a POST carrying an idempotency key
 * (the service never duplicates a write whose key it has seen), or a POST that only reads (recall).
 * `Retry-After` (seconds or an HTTP date) is waited out exactly; without it the delay is
 * exponential with full jitter.
 * Everything is bounded: attempts, each delay, and a Retry-After above `maxDelayMs` ends the
 * retries (the error is thrown at once) instead of sleeping for however long a server says.
 */
export const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);
export function resolveRetry(options = {}) {
    const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 4));
    return {
        maxAttempts,
        baseDelayMs: Math.max(0, options.baseDelayMs ?? 200),
        maxDelayMs: Math.max(0, options.maxDelayMs ?? 30_000),
        sleep: options.sleep ?? defaultSleep,
        random: options.random ?? Math.random,
    };
}
/** Whether this request may be repeated without risking a second effect. */
export function safeToRepeat(method, hasIdempotencyKey) {
    return IDEMPOTENT_METHODS.has(method.toUpperCase()) || hasIdempotencyKey;
}
/** `Retry-After` in ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value, now = Date.now()) {
    if (value == null)
        return undefined;
    const text = value.trim();
    if (/^\d+$/.test(text))
        return Number(text) * 1000;
    if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text))
        return undefined; // IMF-fixdate only
    const at = Date.parse(text);
    return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}
/**
 * The wait before attempt `attempt + 1` (attempt counts from 1), or undefined: do not retry
 * (the server asked for longer than the bound allows).
 */
export function delayBeforeRetry(policy, attempt, retryAfterMs) {
    if (retryAfterMs !== undefined)
        return retryAfterMs > policy.maxDelayMs ? undefined : retryAfterMs;
    const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
    return Math.floor(policy.random() * ceiling);
}
function defaultSleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted)
            return reject(signal.reason);
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
