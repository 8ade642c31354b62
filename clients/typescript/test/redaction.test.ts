/** No credential reaches the logger hook, an error, or a printed client. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import { REDACTED, VikingBridgeClient, isSecretHeader, type LogEvent } from "../src/index.js";
import { WRITE, problem, stub } from "./stub.js";

const KEY = "vbk_live_SECRETKEYMATERIAL_abcdef0123456789";
const TOKEN = "eyJhbGciOiJSUzI1NiJ9.SECRETTOKENPAYLOAD.signature-part";

test("the logger hook sees redacted credential headers, no query text, and no key in error messages", async () => {
  const s = await stub([
    { status: 503, headers: { "retry-after": "1" }, body: problem(503, "unavailable") },
    { status: 200, body: { identity: "x", purpose: "chat", memories: [], context: "", tokens_used: 0, scopes_searched: [] } },
    { status: 403, body: problem(403, "forbidden", { detail: `echo ${KEY}` }) },
  ]);
  const events: LogEvent[] = [];
  try {
    const client = new VikingBridgeClient({ baseUrl: s.url, apiKey: KEY, sessionId: "sess-1", logger: (e) => events.push(e), retry: { sleep: async () => {} } });
    await client.recallGet({ query: "private query text" });
    const error = await client.recall("another private query").catch((e: unknown) => e as Error);
    assert.ok(error instanceof Error);
    assert.ok(!error.message.includes(KEY) && !inspect(error, { depth: 10 }).includes(KEY) && !JSON.stringify(error).includes(KEY), "an echoed key is scrubbed from the error");
    assert.equal(s.seen[0].headers.authorization, `ApiKey ${KEY}`, "the key did reach the server");
    const logged = JSON.stringify(events);
    assert.ok(events.some((e) => e.event === "request") && events.some((e) => e.event === "retry") && events.some((e) => e.event === "error"));
    for (const secret of [KEY, "SECRETKEYMATERIAL", "private query text", "another private query", "sess-1"]) {
      assert.ok(!logged.includes(secret), `logged ${secret}`);
    }
    const request = events.find((e) => e.event === "request");
    assert.ok(request && request.event === "request" && request.headers.authorization === REDACTED && request.headers["x-session-id"] === REDACTED);
    assert.ok(!inspect(client, { depth: 10, showHidden: true }).includes("SECRETKEYMATERIAL"));
    assert.ok(!JSON.stringify(client).includes("SECRETKEYMATERIAL"));
  } finally {
    await s.close();
  }
});

test("a bearer token (also from a callback) is redacted, and a throwing logger does not fail the call", async () => {
  const s = await stub([{ status: 201, body: WRITE }]);
  const events: LogEvent[] = [];
  try {
    const client = new VikingBridgeClient({
      baseUrl: s.url,
      token: async () => TOKEN,
      logger: (e) => {
        events.push(e);
        throw new Error("logger broke");
      },
    });
    assert.equal((await client.remember({ content: "x", kind: "note" })).memory_id, "m1");
    assert.equal(s.seen[0].headers.authorization, `Bearer ${TOKEN}`);
    assert.ok(!JSON.stringify(events).includes("SECRETTOKENPAYLOAD"));
    assert.ok(events.length >= 2);
  } finally {
    await s.close();
  }
});

test("secret-looking headers are recognised; a credential over plain http to a remote host is refused", () => {
  for (const name of ["Authorization", "X-API-Key", "Cookie", "X-VB-Signature", "X-VB-User", "X-Upstream-Token", "proxy-authorization"]) assert.ok(isSecretHeader(name), name);
  for (const name of ["content-type", "accept", "x-request-id"]) assert.ok(!isSecretHeader(name), name);
  assert.throws(() => new VikingBridgeClient({ baseUrl: "http://memory.example.com", apiKey: KEY }), /plain http/);
  assert.throws(() => new VikingBridgeClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY, token: TOKEN }), /exactly one credential/);
  assert.throws(() => new VikingBridgeClient({ baseUrl: `https://u:${KEY}@memory.example.com` }), /must not carry credentials/);
});
