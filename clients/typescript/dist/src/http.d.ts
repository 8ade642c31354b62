/**
 * One call of one operation: build the request from the generated route table, send it with
 * the configured fetch, retry when that is safe, turn problem+json into typed errors, and tell
 * the logger hook what happened with every credential redacted.
 *
 * It never chooses an identity: the only identity-bearing thing it sends is the credential it
 * was given (and the session id, which the service checks is bound to that credential). It
 * never hands a credential, a body or a query string to the logger.
 */
import { type OperationId } from "./generated/routes.js";
import { type ResolvedRetry } from "./retry.js";
/**
 * POST routes that only read (bridge/doors/http/routes/common.py READS: a recall changes nothing but
 * its own audit row), so they are as safe to repeat as a GET.
 */
export declare const READ_ONLY_POSTS: ReadonlySet<OperationId>;
export type QueryValue = string | number | boolean | null | undefined | readonly (string | number | boolean)[];
export interface CallInput {
    path?: Record<string, string>;
    query?: Record<string, QueryValue>;
    body?: unknown;
    signal?: AbortSignal;
    /** Statuses outside the spec's success codes whose JSON body is a result, not an error (/ready's 503). */
    acceptStatuses?: readonly number[];
    /** false: never retry this call, whatever its method. */
    retry?: boolean;
}
/** What the logger hook receives. Headers are redacted; URLs carry no query string. */
export type LogEvent = {
    event: "request";
    operation: OperationId;
    method: string;
    url: string;
    attempt: number;
    requestId: string;
    headers: Record<string, string>;
} | {
    event: "response";
    operation: OperationId;
    method: string;
    url: string;
    attempt: number;
    requestId: string;
    status: number;
    durationMs: number;
    headers: Record<string, string>;
} | {
    event: "retry";
    operation: OperationId;
    method: string;
    url: string;
    attempt: number;
    requestId: string;
    delayMs: number;
    reason: string;
} | {
    event: "error";
    operation: OperationId;
    method: string;
    url: string;
    attempt: number;
    requestId: string;
    error: string;
    status?: number;
    message: string;
};
export type Logger = (event: LogEvent) => void;
export interface Transport {
    baseUrl: URL;
    fetch: typeof globalThis.fetch;
    /** The credential header, computed per attempt (a token callback may refresh it). */
    authorize: () => Promise<Record<string, string>>;
    sessionId: string | undefined;
    retry: ResolvedRetry;
    logger: Logger | undefined;
    timeoutMs: number;
    autoIdempotencyKeys: boolean;
    userAgent: string;
    /** Every secret the transport knows, scrubbed from log messages as a last wall. */
    secrets: () => readonly string[];
}
/** Send `operation` and return its parsed result (JSON, or text for non-JSON answers). */
export declare function call(t: Transport, operation: OperationId, input?: CallInput): Promise<unknown>;
export declare function buildUrl(base: URL, template: string, path: Record<string, string>, query: Record<string, QueryValue>): URL;
