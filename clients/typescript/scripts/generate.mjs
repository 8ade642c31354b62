#!/usr/bin/env node
// Regenerate (or, with --check, verify) the two files derived from docs/openapi.json:
//   src/generated/openapi.ts  the types, by openapi-typescript's own CLI (its exact output)
//   src/generated/routes.ts   one row per operationId: method, path template, success statuses,
//                             whether it needs a credential and whether its body takes an idempotency key
// `npm run generate` after every spec change; `npm run check-generated` exits 1 when either
// file is stale, naming it. Never edit the generated files by hand.
//
// The spec: `--spec PATH|URL` (a relative PATH is taken from where npm was started; a running
// service serves its spec at /openapi.json), else the repository's docs/openapi.json when this
// package sits in its place in the viking-bridge repository. A copy of the package elsewhere
// without --spec exits 2 saying so, rather than failing on a path that only exists in the repo.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const spec = await specFile(process.argv.slice(2));
const typesFile = join(root, "src/generated/openapi.ts");
const routesFile = join(root, "src/generated/routes.ts");
const cli = join(root, "node_modules/openapi-typescript/bin/cli.js");
const METHODS = ["get", "put", "post", "delete", "patch"];

async function specFile(args) {
  const at = args.indexOf("--spec");
  const given = at >= 0 ? args[at + 1] : args.find((a) => a.startsWith("--spec="))?.slice("--spec=".length);
  if (at >= 0 && !given) fail("--spec needs a path or URL");
  if (given && /^https?:\/\//.test(given)) {
    const answer = await fetch(given).catch((e) => fail(`--spec ${given}: ${e.message}`));
    if (!answer.ok) fail(`--spec ${given}: HTTP ${answer.status}`);
    const file = join(mkdtempSync(join(tmpdir(), "vb-spec-")), "openapi.json");
    writeFileSync(file, await answer.text());
    return file;
  }
  if (given) {
    const file = resolve(process.env.INIT_CWD ?? process.cwd(), given);
    if (!existsSync(file)) fail(`--spec ${given}: no such file (${file})`);
    return file;
  }
  const inRepository = resolve(root, "../../docs/openapi.json");
  if (existsSync(inRepository)) return inRepository;
  fail("no OpenAPI spec: this copy of the package is not inside the viking-bridge repository; pass --spec PATH or --spec URL (e.g. npm run check-generated -- --spec http://127.0.0.1:8080/openapi.json)");
}

function fail(message) {
  console.error(`generate: ${message}`);
  process.exit(2);
}

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
  for (const [file] of stale) console.error(`stale: ${file} differs from what ${spec} generates; run \`npm run generate\``);
  process.exit(stale.length ? 1 : 0);
}
for (const [file, text] of wanted) writeFileSync(file, text);
console.log(`generated ${wanted.map(([f]) => f.slice(root.length + 1)).join(", ")}`);
