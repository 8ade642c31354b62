/** Retries on 429/503 honour Retry-After, are bounded, and only repeat what is safe to repeat. */

import assert from "node:assert/strict";
import { test } from "node:test";

import { RateLimitedError, TransportError, UnavailableError, VikingBridgeClient, parseRetryAfter, type ClientOptions } from "../src/index.js";
import { WRITE, problem, stub } from "./stub.js";

function client(url: string, sleeps: number[], extra: Partial<ClientOptions> = {}): VikingBridgeClient {
  return new VikingBridgeClient({
    baseUrl: url,
    apiKey: "vbk_test_stubkey_0123456789",
    retry: { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 5000, sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 },
    ...extra,
  });
}

test("a GET retried through two 503s waits what Retry-After says, then succeeds", async () => {
  const s = await stub([
    { status: 503, headers: { "retry-after": "2" }, body: problem(503, "unavailable", { retry_after: 2 }) },
    { status: 503, headers: { "retry-after": "1" }, body: problem(503, "unavailable", { retry_after: 1 }) },
    { status: 200, body: { memories: [], next_cursor: null } },
  ]);
  try {
    const sleeps: number[] = [];
    const page = await client(s.url, sleeps).listMemories({ scope: "t/user/u" });
    assert.deepEqual(page.memories, []);
    assert.deepEqual(sleeps, [2000, 1000]);
    assert.equal(s.seen.length, 3);
    assert.equal(new Set(s.seen.map((r) => r.headers["x-request-id"])).size, 1, "one request id across the retries");
  } finally {
    await s.close();
  }
});

test("a 429 with an HTTP-date Retry-After is honoured; without one the backoff is exponential and bounded", async () => {
  const later = new Date(Date.now() + 3000).toUTCString();
  const s = await stub([
    { status: 429, headers: { "retry-after": later }, body: problem(429, "rate-limited") },
    { status: 429, body: problem(429, "rate-limited") },
    { status: 429, body: problem(429, "rate-limited") },
    { status: 429, body: problem(429, "rate-limited") },
  ]);
  try {
    const sleeps: number[] = [];
    await assert.rejects(client(s.url, sleeps).audit({ limit: 1 }), RateLimitedError);
    assert.equal(s.seen.length, 4, "maxAttempts bounds the calls");
    assert.ok(sleeps[0] > 1000 && sleeps[0] <= 3000, `HTTP date honoured: ${sleeps[0]}`);
    assert.deepEqual(sleeps.slice(1), [100, 200], "full jitter (random 0.5) of 200 and 400 ms");
  } finally {
    await s.close();
  }
});

test("a POST without an idempotency key is not retried; with one (filled in by the client) it is, with the same key", async () => {
  const replies = [{ status: 503, headers: { "retry-after": "1" }, body: problem(503, "unavailable") }, { status: 201, body: WRITE }];
  const once = await stub(replies);
  try {
    await assert.rejects(client(once.url, [], { autoIdempotencyKeys: false }).remember({ content: "x", kind: "note" }), UnavailableError);
    assert.equal(once.seen.length, 1, "a write without a key is sent once");
  } finally {
    await once.close();
  }
  const twice = await stub(replies);
  try {
    const sleeps: number[] = [];
    const written = await client(twice.url, sleeps).remember({ content: "x", kind: "note" });
    assert.equal(written.memory_id, "m1");
    assert.deepEqual(sleeps, [1000]);
    const [first, second] = twice.seen.map((r) => JSON.parse(r.body).idempotency_key);
    assert.ok(typeof first === "string" && first.startsWith("vbts-"), "the client filled in a key");
    assert.equal(first, second, "the retry carries the same key, so the service cannot duplicate the write");
  } finally {
    await twice.close();
  }
});

test("a POST recall is a read: retried through a 503; an inject (it creates a manifest) is not", async () => {
  const replies = [
    { status: 503, headers: { "retry-after": "1" }, body: problem(503, "unavailable") },
    { status: 200, body: { identity: "x", purpose: "chat", memories: [], context: "", tokens_used: 0, scopes_searched: [] } },
  ];
  const s = await stub(replies);
  try {
    const sleeps: number[] = [];
    assert.equal((await client(s.url, sleeps).recall("what did we decide?")).context, "");
    assert.deepEqual(sleeps, [1000]);
  } finally {
    await s.close();
  }
  const i = await stub(replies);
  try {
    await assert.rejects(client(i.url, []).injectContext({ agent_id: "child", task: "t" }), UnavailableError);
    assert.equal(i.seen.length, 1);
  } finally {
    await i.close();
  }
});

test("a Retry-After above the bound ends the retries at once; operator-action 503s are never retried", async () => {
  const s = await stub([{ status: 503, headers: { "retry-after": "3600" }, body: problem(503, "unavailable") }]);
  try {
    const sleeps: number[] = [];
    const error = await client(s.url, sleeps).getMemory({ scope: "t/user/u", memoryId: "m1" }).catch((e: unknown) => e);
    assert.ok(error instanceof UnavailableError && error.retryAfterMs === 3_600_000);
    assert.deepEqual(sleeps, []);
    assert.equal(s.seen.length, 1);
  } finally {
    await s.close();
  }
  const c = await stub([{ status: 503, body: problem(503, "storage-needs-attention", { error: "CorruptStorage" }) }]);
  try {
    await assert.rejects(client(c.url, []).audit(), (e: unknown) => e instanceof Error && e.name === "CorruptStorageError");
    assert.equal(c.seen.length, 1);
  } finally {
    await c.close();
  }
});

test("a refused connection is a TransportError, retried for a GET", async () => {
  const s = await stub([{ status: 200, body: {} }]);
  await s.close(); // nothing listens on this port any more
  const sleeps: number[] = [];
  await assert.rejects(client(s.url, sleeps).listGrants(), TransportError);
  assert.equal(sleeps.length, 3);
});

test("parseRetryAfter reads delta-seconds and HTTP dates, and nothing else", () => {
  assert.equal(parseRetryAfter("5"), 5000);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6000);
  assert.equal(parseRetryAfter("soon"), undefined);
  assert.equal(parseRetryAfter("-3"), undefined);
  assert.equal(parseRetryAfter(null), undefined);
});

test("the new routes follow the same rule: PUT teams and visible_to are retried; POST add-member, purge and role-inject are sent once", async () => {
  const busy = { status: 503, headers: { "retry-after": "1" }, body: problem(503, "unavailable") };
  const TEAM = { team_id: "t1", members: ["a"] };
  const retried: [string, (c: VikingBridgeClient) => Promise<unknown>, unknown][] = [
    ["set_team_members", (c) => c.setTeamMembers("t1", { agent_ids: ["a"] }), TEAM],
    ["remove_team_member", (c) => c.removeTeamMember("t1", "a"), TEAM],
    ["set_visible_to", (c) => c.setVisibleTo({ scope: "t/agent/a/u", memoryId: "m1" }, { visible_to: ["b"] }), { memory_id: "m1", scope: "t/agent/a/u", memory_type: "private", visible_to: ["a", "b"] }],
    ["scope_counts", (c) => c.scopeCounts(), []],
  ];
  for (const [name, run, answer] of retried) {
    const s = await stub([busy, { status: 200, body: answer }]);
    try {
      assert.deepEqual(await run(client(s.url, [])), answer, name);
      assert.equal(s.seen.length, 2, `${name} is safe to repeat: retried once`);
    } finally {
      await s.close();
    }
  }
  const once: [string, (c: VikingBridgeClient) => Promise<unknown>][] = [
    ["add_team_member", (c) => c.addTeamMember("t1", { member_agent_id: "a" })],
    ["purge_expired", (c) => c.purgeExpired()],
    ["role_inject", (c) => c.roleInject({ agent_id: "child", task: "x" })],
  ];
  for (const [name, run] of once) {
    const s = await stub([busy]);
    try {
      await assert.rejects(run(client(s.url, [])), UnavailableError, name);
      assert.equal(s.seen.length, 1, `${name} is a POST without an idempotency key: sent once`);
    } finally {
      await s.close();
    }
  }
});
