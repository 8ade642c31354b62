/** The generated files match docs/openapi.json, and the client has a method for every operation. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { OPERATION_METHODS, ROUTES, VikingBridgeClient } from "../src/index.js";

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

test("generated types are fresh: npm run check-generated passes against docs/openapi.json", () => {
  const run = spawnSync(process.execPath, [join(packageRoot, "scripts/generate.mjs"), "--check"], { encoding: "utf8" });
  assert.equal(run.status, 0, `stale generated files (run \`npm run generate\`):\n${run.stderr}`);
});

test("every operationId of docs/openapi.json has a client method", () => {
  const spec = JSON.parse(readFileSync(join(packageRoot, "../../docs/openapi.json"), "utf8"));
  const inSpec = new Set<string>();
  for (const item of Object.values<Record<string, { operationId?: string }>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) if (["get", "put", "post", "delete", "patch"].includes(method) && op.operationId) inSpec.add(op.operationId);
  }
  assert.deepEqual([...inSpec].sort(), Object.keys(ROUTES).sort(), "the route table differs from the spec: run `npm run generate`");
  for (const [operation, method] of Object.entries(OPERATION_METHODS)) {
    assert.equal(typeof (VikingBridgeClient.prototype as unknown as Record<string, unknown>)[method], "function", `${operation} -> ${method} is not a method`);
  }
  assert.deepEqual(Object.keys(OPERATION_METHODS).sort(), [...inSpec].sort());
});
