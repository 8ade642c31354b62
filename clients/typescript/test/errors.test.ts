/** problem+json -> typed exceptions, as bridge/doors/http/problems.py and app.py send them. */

import assert from "node:assert/strict";
import { test } from "node:test";

import * as E from "../src/errors.js";

const p = (status: number, slug: string, error?: string): E.Problem => ({ type: `urn:viking-bridge:problem:${slug}`, title: "t", status, detail: "d", request_id: "r1", error });

test("each problem category becomes its class, and leaves refine only their own category", () => {
  const cases: [E.Problem, new (...a: never[]) => E.ProblemError][] = [
    [p(401, "unauthenticated", "Unauthenticated"), E.UnauthenticatedError],
    [p(401, "unauthenticated", "InvalidCredential"), E.InvalidCredentialError],
    [p(401, "unauthenticated", "ExpiredCredential"), E.ExpiredCredentialError],
    [p(403, "forbidden", "SessionIdentityMismatch"), E.ForbiddenError],
    [p(403, "not-permitted", "NotPermitted"), E.NotPermittedError],
    [p(403, "not-permitted", "ManifestError"), E.ManifestError],
    [p(403, "not-permitted", "RoleRefused"), E.RoleRefusedError],
    [p(404, "not-found", "NotFound"), E.NotFoundError],
    [p(404, "http-404"), E.NotFoundError],
    [p(409, "conflict", "Conflict"), E.ConflictError],
    [p(409, "quota-exceeded", "QuotaExceeded"), E.QuotaExceededError],
    [p(400, "invalid-input", "InvalidIdError"), E.InvalidInputError],
    [p(400, "malformed-request"), E.InvalidInputError],
    [p(413, "request-too-large", "RequestTooLarge"), E.RequestTooLargeError],
    [p(422, "unprocessable"), E.RequestValidationError],
    [p(429, "rate-limited", "RateLimited"), E.RateLimitedError],
    [p(503, "unavailable", "StorageUnavailable"), E.UnavailableError],
    [p(503, "unavailable", "RequestTimeout"), E.RequestTimeoutError],
    [p(503, "recall-incomplete", "RecallIncomplete"), E.RecallIncompleteError],
    [p(503, "storage-needs-attention", "CorruptStorage"), E.CorruptStorageError],
    [p(503, "misconfigured", "ConfigurationError"), E.ServiceMisconfiguredError],
    [p(500, "internal"), E.InternalServerError],
    [p(418, "teapot"), E.ProblemError],
  ];
  for (const [problem, cls] of cases) {
    const error = E.problemError(problem);
    assert.equal(error.constructor, cls, `${problem.type} ${problem.error} -> ${error.name}`);
    assert.ok(error instanceof E.ProblemError && error instanceof E.VikingBridgeError && error instanceof Error);
    assert.equal(error.status, problem.status);
    assert.equal(error.requestId, "r1");
  }
  // a stray class name cannot move an error to another category
  assert.equal(E.problemError(p(404, "not-found", "InvalidCredential")).constructor, E.NotFoundError);
  assert.equal(E.problemError(p(403, "forbidden", "RequestTimeout")).constructor, E.ForbiddenError);
  assert.ok(E.isRetryable(E.problemError(p(503, "recall-incomplete"))));
  assert.ok(!E.isRetryable(E.problemError(p(503, "storage-needs-attention"))));
  assert.deepEqual((E.problemError({ ...p(503, "recall-incomplete"), failed_scopes: ["a/ws/x"] }) as E.RecallIncompleteError).failedScopes, ["a/ws/x"]);
});
