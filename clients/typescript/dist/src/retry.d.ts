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
export interface RetryOptions {
    /** Total attempts including the first (default 4; 1 disables retries). */
    maxAttempts?: number;
    /** First backoff step in ms (default 200), doubled per attempt. */
    baseDelayMs?: number;
    /** Upper bound of any single wait, Retry-After included (default 30 000 ms). */
    maxDelayMs?: number;
    /** Injected for tests: how to wait (default setTimeout). */
    sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
    /** Injected for tests: a number in [0, 1) (default Math.random). */
    random?: () => number;
}
export interface ResolvedRetry {
    maxAttempts: number;
    baseDelayMs: number;
    maxDelayMs: number;
    sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
    random: () => number;
}
export declare const IDEMPOTENT_METHODS: Set<string>;
export declare function resolveRetry(options?: RetryOptions): ResolvedRetry;
/** Whether this request may be repeated without risking a second effect. */
export declare function safeToRepeat(method: string, hasIdempotencyKey: boolean): boolean;
/** `Retry-After` in ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export declare function parseRetryAfter(value: string | null | undefined, now?: number): number | undefined;
/**
 * The wait before attempt `attempt + 1` (attempt counts from 1), or undefined: do not retry
 * (the server asked for longer than the bound allows).
 */
export declare function delayBeforeRetry(policy: ResolvedRetry, attempt: number, retryAfterMs: number | undefined): number | undefined;
