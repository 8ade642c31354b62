/** The coding-agent plugin example: workspace ids from git remotes, and the plugin on the live service. */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { CodingMemoryPlugin, WorkspaceMismatchError, normalizeRemote, workspaceIdForRepo, workspaceIdFromRemote } from "../examples/coding-agent-plugin.js";
import { ForbiddenError, NotPermittedError } from "../src/index.js";
import { clientFor, liveEnv } from "./support.js";

const env = liveEnv();
const skip = typeof env === "string" ? env : false;
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function repoWithRemote(remote: string): string {
  const dir = mkdtempSync(join(tmpdir(), "vb-plugin-repo-"));
  dirs.push(dir);
  execFileSync("git", ["init", "-q", dir]);
  execFileSync("git", ["-C", dir, "remote", "add", "origin", remote]);
  return dir;
}

test("one repository, however its remote is spelt, is one workspace id; credentials in the URL never reach it", () => {
  const spellings = [
    "git@github.com:Acme/Payments.git",
    "https://github.com/acme/payments",
    "https://x-access-token:ghp_SECRET123@github.com/acme/payments.git",
    "ssh://git@github.com:22/acme/payments.git",
    "git+ssh://git@github.com/Acme/Payments/",
  ];
  for (const remote of spellings) assert.equal(workspaceIdFromRemote(remote), "github.com~acme~payments", remote);
  assert.ok(!workspaceIdFromRemote(spellings[2]).includes("SECRET"));
  assert.equal(normalizeRemote("git@gitlab.example.com:group/sub/repo.git"), "gitlab.example.com/group/sub/repo");
  assert.notEqual(workspaceIdFromRemote("git@github.com:acme/payments.git"), workspaceIdFromRemote("git@github.com:acme/payments-fork.git"));
  // what the id grammar cannot carry (a path with '..', unicode) becomes a hash, never an invalid id
  assert.match(workspaceIdFromRemote("https://git.example.com/a/../b.git"), /^(git-[0-9a-f]{32}|[a-z0-9_][a-z0-9_\-.@%*+=~]*)$/);
  assert.match(workspaceIdFromRemote("https://git.example.com/研发/仓库.git"), /^git-[0-9a-f]{32}$/);
});

test("workspaceIdForRepo reads the origin remote of a real git repository", () => {
  assert.equal(workspaceIdForRepo(repoWithRemote("git@github.com:Acme/Payments.git")), "github.com~acme~payments");
  assert.throws(() => workspaceIdForRepo(mkdtempSync(join(tmpdir(), "vb-not-a-repo-"))));
});

test("the plugin recalls coding context, records a decision for the repository and captures the turn", { skip }, async () => {
  const live = typeof env === "string" ? assert.fail(env) : env;
  const plugin = new CodingMemoryPlugin({ client: clientFor(live, live.keys.alice), repoDir: repoWithRemote("git@github.com:Acme/Payments.git"), agentId: "coding-agent" });
  assert.equal(plugin.workspaceId, live.workspace);
  const decision = await plugin.recordDecision("payments: money amounts are integers of minor units, never floats");
  assert.equal(decision.scope, `${live.tenant}/ws/${live.workspace}`);
  const context = await plugin.beforeTask("how are money amounts stored in payments?");
  assert.ok(context.memories.some((m) => m.memory_id === decision.memory_id), "the decision comes back for the next task");
  assert.match(context.context, /minor units/);
  const captured = await plugin.afterTurn([{ role: "user", content: "remember that I like small PRs" }]);
  assert.ok(Array.isArray(captured.written));
});

test("the plugin in another repository refuses alice's key: no recall accepted, no capture written", { skip }, async () => {
  const live = typeof env === "string" ? assert.fail(env) : env;
  const plugin = new CodingMemoryPlugin({ client: clientFor(live, live.keys.alice), repoDir: repoWithRemote("git@github.com:acme/other-repo.git") });
  await assert.rejects(plugin.beforeTask("anything"), WorkspaceMismatchError);
  await assert.rejects(plugin.recordDecision("this must not land in payments' memory"), WorkspaceMismatchError);
  // 403 either way: since team sharing (issue 13) a team_id other than the key's workspace names a
  // team, and the policy refuses a non-member (NotPermitted) before any caller-field check (Forbidden)
  await assert.rejects(plugin.afterTurn([{ role: "user", content: "this neither" }]), (e: unknown) => (e instanceof ForbiddenError || e instanceof NotPermittedError) && e.status === 403);
  const recalled = await clientFor(live, live.keys.alice).recall("this neither");
  assert.ok(!recalled.memories.some((m) => m.content.includes("this neither")), "the refused capture wrote nothing alice can read");
});

test("the README quickstart runs as written against the live service", { skip }, async () => {
  const live = typeof env === "string" ? assert.fail(env) : env;
  const { quickstart } = await import("../examples/quickstart.js");
  const context = await quickstart(live.url, live.keys.alice, repoWithRemote("https://github.com/acme/payments.git"));
  assert.match(context, /minor units/);
});
