/** The READMEs' TypeScript snippet is the tested example, word for word. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function region(): string {
  const source = readFileSync(join(packageRoot, "examples/quickstart.ts"), "utf8");
  const match = /\/\/ #region readme\n([\s\S]*?)\/\/ #endregion readme/.exec(source);
  assert.ok(match, "examples/quickstart.ts has no readme region");
  return match[1].trim();
}

for (const readme of ["README.md", "../../README.md"]) {
  test(`${readme} quotes examples/quickstart.ts verbatim`, () => {
    const text = readFileSync(join(packageRoot, readme), "utf8");
    const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1].trim());
    assert.ok(blocks.includes(region()), `${readme} has no \`\`\`ts block equal to the readme region of examples/quickstart.ts`);
  });
}
