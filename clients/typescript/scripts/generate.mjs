#!/usr/bin/env node
// Regenerate (or, with --check, verify) the two files derived from docs/openapi.json:
//   src/generated/openapi.ts  the types, by openapi-typescript's own CLI (its exact output)
//   src/generated/routes.ts   one row per operationId: method, path template, success statuses,
//                             whether it needs a credential and whether its body takes an idempotency key
// `npm run generate` after every spec change; `npm run check-generated` exits 1 when either
// file is stale, naming it. Never edit the generated files by hand.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const spec = resolve(root, "../../docs/openapi.json");
const typesFile = join(root, "src/generated/openapi.ts");
const routesFile = join(root, "src/generated/routes.ts");
const cli = join(root, "node_modules/openapi-typescript/bin/cli.js");
const METHODS = ["get", "put", "post", "delete", "patch"];

function generatedTypes() {
  const dir = mkdtempSync(join(tmpdir(), "vb-openapi-"));
  try {
    const out = join(dir, "openapi.ts");
    // --default-non-nullable false: a field with a default is optional in a request (the service fills it in)
    execFileSync(process.execPath, [cli, spec, "--output", out, "--default-non-nullable", "false"], { stdio: ["ignore", "ignore", "inherit"] });
    return readFileSync(out, "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function generatedRoutes() {
  const doc = JSON.parse(readFileSync(spec, "utf8"));
  const rows = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const success = Object.keys(op.responses ?? {}).filter((s) => /^2\d\d$/.test(s)).map(Number);
      const authenticated = Array.isArray(op.security ?? doc.security) && (op.security ?? doc.security).length > 0;
      const body = op.requestBody?.content?.["application/json"]?.schema;
      const schema = body?.$ref ? doc.components.schemas[body.$ref.split("/").pop()] : body;
      const idempotencyKey = Boolean(schema?.properties?.idempotency_key);
      rows.push({ id: op.operationId, method: method.toUpperCase(), path, success, authenticated, idempotencyKey });
    }
  }
  rows.sort((a, b) => a.id.localeCompare(b.id));
  const lines = rows.map(
    (r) => `  ${JSON.stringify(r.id)}: { method: ${JSON.stringify(r.method)}, path: ${JSON.stringify(r.path)}, success: ${JSON.stringify(r.success)}, authenticated: ${r.authenticated}, idempotencyKey: ${r.idempotencyKey} },`,
  );
  return [
    "/**",
    " * Generated from docs/openapi.json by scripts/generate.mjs (`npm run generate`). Do not edit.",
    " * One row per operation of the service; the client's method table must cover every key.",
    " * `idempotencyKey`: the request body has an `idempotency_key` (the client fills one in, so the call is safe to retry).",
    " */",
    "export const ROUTES = {",
    ...lines,
    "} as const;",
    "",
    "export type OperationId = keyof typeof ROUTES;",
    "",
  ].join("\n");
}

const wanted = [
  [typesFile, generatedTypes()],
  [routesFile, generatedRoutes()],
];
if (process.argv.includes("--check")) {
  const stale = wanted.filter(([file, text]) => {
    try {
      return readFileSync(file, "utf8") !== text;
    } catch {
      return true;
    }
  });
  for (const [file] of stale) console.error(`stale: ${file} differs from what docs/openapi.json generates; run \`npm run generate\``);
  process.exit(stale.length ? 1 : 0);
}
for (const [file, text] of wanted) writeFileSync(file, text);
console.log(`generated ${wanted.map(([f]) => f.slice(root.length + 1)).join(", ")}`);
