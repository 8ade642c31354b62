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

import {
  ClientConfigurationError,
  TransportError,
  UnexpectedResponseError,
  isRetryable,
  problemError,
  type Problem,
  type ProblemError,
} from "./errors.js";
import { ROUTES, type OperationId } from "./generated/routes.js";
import { redactHeaders, redactUrl, scrub } from "./redact.js";
import { delayBeforeRetry, parseRetryAfter, safeToRepeat, type ResolvedRetry } from "./retry.js";

/**
 * POST routes that only read (bridge/doors/http/routes/common.py READS: a recall changes nothing but
 * its own audit row), so they are as safe to repeat as a GET.
 */
export const READ_ONLY_POSTS: ReadonlySet<OperationId> = new Set<OperationId>(["recall_post"]);

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
export type LogEvent =
  | { event: "request"; operation: OperationId; method: string; url: string; attempt: number; requestId: string; headers: Record<string, string> }
  | { event: "response"; operation: OperationId; method: string; url: string; attempt: number; requestId: string; status: number; durationMs: number; headers: Record<string, string> }
  | { event: "retry"; operation: OperationId; method: string; url: string; attempt: number; requestId: string; delayMs: number; reason: string }
  | { event: "error"; operation: OperationId; method: string; url: string; attempt: number; requestId: string; error: string; status?: number; message: string };

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
export async function call(t: Transport, operation: OperationId, input: CallInput = {}): Promise<unknown> {
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

  for (let attempt = 1; ; attempt++) {
    const headers: Record<string, string> = {
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
    let response: Response;
    try {
      response = await t.fetch(url, { method: route.method, headers, body: payload, signal: AbortSignal.any(signals), redirect: "error" });
    } catch (cause) {
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

    if ((route.success as readonly number[]).includes(response.status) || input.acceptStatuses?.includes(response.status)) {
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

  function log(transport: Transport, event: LogEvent): void {
    if (!transport.logger) return;
    if (event.event === "error") event = { ...event, message: scrub(event.message, transport.secrets()) };
    try {
      transport.logger(event);
    } catch {
      // a failing logger must not turn a successful call into a failure
    }
  }
}

export function buildUrl(base: URL, template: string, path: Record<string, string>, query: Record<string, QueryValue>): URL {
  const filled = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = path[name];
    if (typeof value !== "string" || value === "") throw new ClientConfigurationError(`path parameter ${name} is required`);
    return encodeURIComponent(value); // an id can never add a path segment: '/' and '..' are encoded
  });
  const url = new URL(base.pathname.replace(/\/$/, "") + filled, base);
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(item));
  }
  return url;
}

async function readResult(response: Response): Promise<unknown> {
  const type = response.headers.get("content-type") ?? "";
  const text = await response.text();
  if (!type.includes("json")) return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new UnexpectedResponseError(`the ${response.status} answer is not valid JSON`, response.status, response.headers.get("x-request-id") ?? undefined);
  }
}

async function readError(response: Response, operation: OperationId, secrets: readonly string[]): Promise<ProblemError | UnexpectedResponseError> {
  const requestId = response.headers.get("x-request-id") ?? undefined;
  // a server (or a proxy) echoing the credential back must not put it into an error a caller logs
  const text = scrub(await response.text().catch(() => ""), secrets);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!isProblem(parsed)) {
    // not problem+json (a proxy's HTML page, say): typed by status so a 503 is still retryable
    parsed = { type: "about:blank", title: response.statusText || `HTTP ${response.status}`, status: response.status, request_id: requestId };
    if (![429, 503].includes(response.status)) {
      return new UnexpectedResponseError(`${response.status} ${response.statusText} without a problem+json body`, response.status, requestId);
    }
  }
  const problem = parsed as Problem;
  const fromHeader = parseRetryAfter(response.headers.get("retry-after"));
  const fromBody = typeof problem.retry_after === "number" && problem.retry_after > 0 ? problem.retry_after * 1000 : undefined;
  return problemError(problem, {
    operation,
    retryAfterMs: fromHeader ?? fromBody,
    wwwAuthenticate: response.headers.get("www-authenticate") ?? undefined,
  });
}

function isProblem(value: unknown): value is Problem {
  return isRecord(value) && typeof value.type === "string" && typeof value.status === "number" && typeof value.title === "string";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause.cause as { code?: string } | undefined)?.code;
    return code ? `${cause.name}: ${code}` : cause.name;
  }
  return "unknown failure";
}
