/**
 * Every route of docs/openapi.json against the LIVE service, the typed errors it answers
 * with, and reads of another identity's memory that must fail. Runs in file order; the last
 * test checks that the recording fetch saw an answer for every operation of the spec.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ConflictError,
  ForbiddenError,
  InvalidCredentialError,
  InvalidInputError,
  ManifestError,
  NotFoundError,
  NotPermittedError,
  ProblemError,
  ROUTES,
  RequestValidationError,
  RoleRefusedError,
  UnauthenticatedError,
  VikingBridgeClient,
  type OperationId,
  type Schemas,
} from "../src/index.js";
import { clientFor, liveEnv, recordingFetch, unique } from "./support.js";

const env = liveEnv();
const skip = typeof env === "string" ? env : false;
const seen = new Set<OperationId>();
const live = typeof env === "string" ? undefined : env;
const as = (key: keyof NonNullable<typeof live>["keys"]): VikingBridgeClient => clientFor(live!, live!.keys[key], { fetch: recordingFetch(seen) });
/** The second service, loaded with examples/roles/phase7.toml (the role routes' success paths). */
const roles = process.env.VB_ROLES_URL
  ? { url: process.env.VB_ROLES_URL, coordinator: process.env.VB_ROLES_KEY_COORDINATOR!, intent: process.env.VB_ROLES_KEY_INTENT!, norole: process.env.VB_ROLES_KEY_NOROLE! }
  : undefined;
const state: { secret?: Schemas["WriteResult"]; fact?: Schemas["WriteResult"]; manifest?: string; sharedKey?: string } = {};

test("health, ready and metrics answer without a credential", { skip }, async () => {
  const anon = new VikingBridgeClient({ baseUrl: live!.url, fetch: recordingFetch(seen) });
  assert.equal((await anon.health()).status, "ok");
  assert.equal((await anon.ready()).status, "ready");
  assert.match(await anon.metrics(), /vb_http_request_duration_seconds/);
});

test("alice remembers, reads, lists, edits and recalls her memories (API key and JWT)", { skip }, async () => {
  const alice = as("alice");
  const marker = unique("violet");
  state.secret = await alice.remember({ content: `alice's private note: my locker code is ${marker}`, kind: "preference" });
  assert.equal(state.secret.scope, `${live!.tenant}/user/alice`);
  state.fact = await alice.remember({ content: `payments service decision: retries use idempotency keys ${marker}`, kind: "decision", visibility: "workspace" });
  assert.equal(state.fact.scope, `${live!.tenant}/ws/${live!.workspace}`);
  const ref = { scope: state.secret.scope, memoryId: state.secret.memory_id };
  assert.match((await alice.getMemory(ref)).content, new RegExp(marker));
  const page = await alice.listMemories({ scope: state.secret.scope, limit: 50 });
  assert.ok(page.memories.some((m) => m.memory_id === state.secret!.memory_id));
  const edited = await alice.editMemory(ref, { content: `alice's private note: my locker code is ${marker}, row 3` });
  assert.equal(edited.memory_id, state.secret.memory_id);
  assert.equal((await alice.findMemory(state.secret.memory_id)).scope, state.secret.scope, "found by id alone among her memories");
  const history = await alice.memoryHistory(state.secret.memory_id);
  assert.equal(history.changes[0].action, "edit", "the edit heads the memory's history");
  const recalled = await alice.recall({ query: "locker code", budget_tokens: 2000 });
  assert.ok(recalled.memories.some((m) => m.memory_id === state.secret!.memory_id && m.why_visible), "recall finds and labels her memory");
  const viaGet = await alice.recallGet({ query: "locker code", purpose: "chat" });
  assert.ok(viaGet.memories.some((m) => m.memory_id === state.secret!.memory_id));
  const withJwt = new VikingBridgeClient({ baseUrl: live!.url, token: live!.aliceToken, fetch: recordingFetch(seen) });
  assert.ok((await withJwt.recall("locker code")).memories.some((m) => m.memory_id === state.secret!.memory_id), "the same identity through a JWT");
  state.sharedKey = `shared-${marker}`;
  const keyed = await alice.remember({ content: `alice's keyed workspace note ${marker}`, kind: "note", visibility: "workspace", idempotency_key: state.sharedKey });
  assert.equal((await alice.findByKey(keyed.scope, state.sharedKey)).memory_id, keyed.memory_id, "find-by-key finds what the keyed write stored");
  const me = await alice.whoami();
  assert.equal(me.user_id, "alice");
  assert.equal(me.tenant_id, live!.tenant);
  assert.ok(me.readable_scopes?.includes(`${live!.tenant}/user/alice`), "whoami lists her private scope as readable by default");
  const narrowed = await alice.recall({ query: "locker code", budget_tokens: 2000, only_scopes: [state.secret.scope] });
  assert.deepEqual(narrowed.scopes_searched, [state.secret.scope], "only_scopes narrows the recall to her private scope");
  const captured = await alice.capture({ content: "I prefer tabs over spaces in Go code", agent_id: "coding-agent", team_id: live!.workspace });
  assert.ok(Array.isArray(captured.written));
});

test("bob cannot read alice's private memory: not by id, not by listing her scope, not by recall", { skip }, async () => {
  const bob = as("bob");
  const ref = { scope: state.secret!.scope, memoryId: state.secret!.memory_id };
  const byId = await bob.getMemory(ref).then(
    (m) => assert.fail(`bob read ${m.memory_id}`),
    (e: unknown) => e,
  );
  assert.ok(byId instanceof ForbiddenError || byId instanceof NotPermittedError || byId instanceof NotFoundError, String(byId));
  assert.ok(!String((byId as Error).message).includes("locker code"));
  await assert.rejects(bob.listMemories({ scope: state.secret!.scope }), (e: unknown) => e instanceof ProblemError && [403, 404].includes(e.status));
  const recalled = await bob.recall({ query: "alice locker code", budget_tokens: 4000 });
  assert.ok(!recalled.memories.some((m) => m.memory_id === state.secret!.memory_id || m.content.includes("locker")), "bob's recall leaked alice's memory");
  assert.ok(!recalled.context.includes("locker"));
  await assert.rejects(bob.recall({ query: "locker code", user_id: "alice" }), ForbiddenError, "naming alice in the body is refused, not obeyed");
  await assert.rejects(as("carol").findByKey(state.fact!.scope, state.sharedKey!), NotFoundError, "keys are per writer: carol cannot find alice's key in their shared workspace");
  await assert.rejects(bob.findByKey(state.fact!.scope, state.sharedKey!), NotPermittedError, "bob cannot look keys up in a workspace he does not read");
  await assert.rejects(bob.recall({ query: "locker code", only_scopes: [state.secret!.scope] }), NotPermittedError, "only_scopes cannot name alice's private scope");
  await assert.rejects(bob.editMemory(ref, { content: "hijacked" }), (e: unknown) => e instanceof ProblemError && e.status === 403);
  await assert.rejects(bob.forget(ref), (e: unknown) => e instanceof ProblemError && [403, 404].includes(e.status));
});

test("another tenant's alice (same user id, same workspace name) sees nothing of the first", { skip }, async () => {
  const globex = as("globex");
  const recalled = await globex.recall({ query: "locker code payments decision", budget_tokens: 4000 });
  assert.deepEqual(recalled.memories.filter((m) => m.memory_id === state.secret!.memory_id || m.memory_id === state.fact!.memory_id), []);
  await assert.rejects(globex.getMemory({ scope: state.secret!.scope, memoryId: state.secret!.memory_id }), (e: unknown) => e instanceof ProblemError && [403, 404].includes(e.status));
  await assert.rejects(globex.listMemories({ scope: state.fact!.scope }), (e: unknown) => e instanceof ProblemError && [403, 404].includes(e.status));
});

test("typed errors: 401, 400, 403 (forbidden, not permitted, manifest), 404, 409, 422", { skip }, async () => {
  const alice = as("alice");
  const bob = as("bob");
  const stranger = clientFor(live!, "vbk_not_a_real_key_0000000000000000", { fetch: recordingFetch(seen) });
  const unauth = await stranger.recall("anything").catch((e: unknown) => e);
  assert.ok(unauth instanceof UnauthenticatedError, String(unauth));
  assert.ok(unauth instanceof InvalidCredentialError || unauth.error === "Unauthenticated", unauth.error);
  await assert.rejects(alice.getMemory({ scope: state.secret!.scope, memoryId: unique("missing") }), NotFoundError);
  await assert.rejects(alice.recall({ query: "x", agent_id: "someone-else" }), ForbiddenError);
  await assert.rejects(bob.issueGrant({ grantee_user_id: "bob", scope: state.fact!.scope, ttl_seconds: 60, reason: "let me in" }), NotPermittedError);
  await assert.rejects(alice.injectContext({ agent_id: "wukong", task: "reinject", from_manifest_id: "m-unknown" }), ManifestError);
  const key = unique("idem");
  await alice.remember({ content: "first content", kind: "note", idempotency_key: key });
  await assert.rejects(alice.remember({ content: "other content", kind: "note", idempotency_key: key }), ConflictError);
  const invalid = await alice.remember({ content: "x", kind: "bogus" as "note" }).catch((e: unknown) => e);
  assert.ok(invalid instanceof RequestValidationError && invalid instanceof InvalidInputError && invalid.status === 422, String(invalid));
  await assert.rejects(alice.getMemory({ scope: "not a scope!", memoryId: "m1" }), (e: unknown) => e instanceof InvalidInputError && e.status === 400);
});

test("sessions: start, fork, and a session bound to alice is refused to bob", { skip }, async () => {
  const alice = as("alice");
  const started = await alice.startSession();
  assert.ok(started.session_id);
  const inSession = alice.withSession(started.session_id);
  assert.equal((await inSession.recall("locker code")).memories.some((m) => m.memory_id === state.secret!.memory_id), true);
  const forked = await inSession.forkSession();
  assert.notEqual(forked.session_id, started.session_id);
  assert.equal(forked.principal, started.principal, "a fork keeps the identity (seed 003 test 6)");
  await assert.rejects(as("bob").withSession(started.session_id).recall("locker code"), ForbiddenError);
});

test("grants: alice (admin) grants bob her workspace, bob sees it labelled, then the grant is revoked", { skip }, async () => {
  const alice = as("alice");
  const bob = as("bob");
  const grant = await alice.issueGrant({ grantee_user_id: "bob", scope: state.fact!.scope, ttl_seconds: 600, reason: "incident review" });
  assert.ok((await alice.listGrants({ grantee_user_id: "bob" })).some((g) => g.grant_id === grant.grant_id));
  const granted = await bob.recall({ query: "payments retries idempotency", include_scopes: [state.fact!.scope], budget_tokens: 4000 });
  const hit = granted.memories.find((m) => m.memory_id === state.fact!.memory_id);
  assert.ok(hit && hit.grant_id === grant.grant_id, "the granted memory is labelled with its grant");
  assert.ok(!granted.memories.some((m) => m.memory_id === state.secret!.memory_id), "a workspace grant opens nothing private");
  assert.equal((await alice.revokeGrant(grant.grant_id)).deleted, true);
  await assert.rejects(bob.recall({ query: "payments", include_scopes: [state.fact!.scope] }), (e: unknown) => e instanceof ProblemError && e.status === 403);
});

test("approvals: carol's department standard waits; alice approves one and rejects another; promote needs admin", { skip }, async () => {
  const alice = as("alice");
  const carol = as("carol");
  const a = await carol.remember({ content: `eng standard ${unique("s")}: review every PR`, kind: "standard", visibility: "department", department_id: "eng" });
  const b = await carol.remember({ content: `eng standard ${unique("s")}: no force pushes`, kind: "standard", visibility: "department", department_id: "eng" });
  assert.equal(a.status, "pending");
  const queue = await alice.pendingApprovals({ limit: 100 });
  assert.ok(queue.memories.some((m) => m.memory_id === a.memory_id) && queue.memories.some((m) => m.memory_id === b.memory_id));
  await assert.rejects(carol.pendingApprovals(), (e: unknown) => e instanceof ProblemError && e.status === 403);
  assert.equal((await alice.approve({ scope: a.scope, memoryId: a.memory_id })).status, "active");
  assert.equal((await alice.reject({ scope: b.scope, memoryId: b.memory_id })).deleted, true);
  await assert.rejects(carol.promote({ scope: state.fact!.scope, memoryId: state.fact!.memory_id }, { to: "tenant" }), NotPermittedError);
  const promoted = await alice.promote({ scope: state.fact!.scope, memoryId: state.fact!.memory_id }, { to: "tenant" });
  assert.equal(promoted.visibility, "tenant");
});

test("multi-agent: alice injects context into wukong, wukong recalls under the manifest and writes back, alice revokes it", { skip }, async () => {
  const alice = as("alice");
  const child = as("aliceChild");
  // the parent agent's own memories (visibility agent): the child sees one only through a manifest
  const task = await alice.remember({ content: "ledger API experience: paginate with opaque cursors", kind: "experience", visibility: "agent" });
  const hidden = await alice.remember({ content: "ledger API experience: the staging ledger password rotates weekly", kind: "experience", visibility: "agent" });
  const before = await child.recall({ query: "ledger pagination cursors" });
  assert.ok(!before.memories.some((m) => m.memory_id === task.memory_id), "without a manifest the child sees none of the parent's private memory");
  const injected = await alice.injectContext({ agent_id: "wukong", task: "ledger API pagination", depth: "standard", memory_refs: [{ scope: task.scope, memory_id: task.memory_id }] });
  assert.equal(injected.child_agent_id, "wukong");
  assert.ok(injected.memories.some((m) => m.memory_id === task.memory_id) && injected.source.includes("coding-agent"));
  const viaGet = await alice.injectContextGet({ agent_id: "wukong", task: "ledger API pagination", depth: "minimal" });
  assert.ok(viaGet.manifest_id);
  await assert.rejects(alice.injectContext({ agent_id: "coding-agent", task: "self" }), (e: unknown) => e instanceof ProblemError && e.status === 403, "an agent cannot inject into itself");
  const underManifest = await child.recall({ query: "ledger pagination", manifest_id: injected.manifest_id });
  const seenByChild = underManifest.memories.find((m) => m.memory_id === task.memory_id);
  assert.ok(seenByChild && seenByChild.injected_by, "the child sees the injected memory, marked injected_by");
  assert.ok(!underManifest.memories.some((m) => m.memory_id === hidden.memory_id), "nothing of the parent agent's beyond the manifest");
  const written = await child.writeBack({ manifest_id: injected.manifest_id, content: "ledger pagination done with opaque cursors", kind: "experience" });
  const back = await alice.getMemory({ scope: written.scope, memoryId: written.memory_id }).catch(() => undefined);
  if (back) assert.ok(back.derived_from?.some((r) => r.includes(task.memory_id)), "write-back lineage names the injected memory");
  assert.equal((await alice.revokeManifest(injected.manifest_id)).deleted, true);
  await assert.rejects(child.recall({ query: "ledger", manifest_id: injected.manifest_id }), (e: unknown) => e instanceof ProblemError && e.status === 403);
  await alice.revokeManifest(viaGet.manifest_id);
});

test("audit, forget and forget-subject", { skip }, async () => {
  const alice = as("alice");
  const rows = await alice.audit({ limit: 20 });
  assert.ok(rows.length > 0 && rows.every((r) => r.tenant_id === live!.tenant));
  assert.ok(!JSON.stringify(rows).includes("locker code"), "the audit names ids, never content");
  assert.equal((await alice.forget({ scope: state.secret!.scope, memoryId: state.secret!.memory_id })).deleted, true);
  await assert.rejects(alice.getMemory({ scope: state.secret!.scope, memoryId: state.secret!.memory_id }), NotFoundError);
  await assert.rejects(as("bob").forgetSubject({ subject_user_id: "carol" }), NotPermittedError);
  const erased = await alice.forgetSubject({ subject_user_id: "carol" });
  assert.ok(erased.count >= 1, `carol's memories erased: ${erased.count}`);
});

test("visible_to: alice shares one agent-private memory with wukong by name; carol may not change it", { skip }, async () => {
  const alice = as("alice");
  const note = await alice.remember({ content: `ledger migration plan ${unique("plan")}: dual-write for a week`, kind: "decision", visibility: "agent" });
  assert.equal(note.scope, `${live!.tenant}/agent/coding-agent/alice`);
  const ref = { scope: note.scope, memoryId: note.memory_id };
  const shared = await alice.setVisibleTo(ref, { visible_to: ["wukong"] });
  assert.equal(shared.memory_id, note.memory_id);
  assert.deepEqual(shared.visible_to, ["coding-agent", "wukong"], "the owning agent, and the one agent named");
  assert.equal(shared.memory_type, "private");
  // carol is another user (same agent name): the policy refuses, typed
  await assert.rejects(as("carol").setVisibleTo(ref, { visible_to: ["*"] }), NotPermittedError);
  const readers = await alice.whoCanRead(ref);
  assert.equal(readers.memory_id, note.memory_id);
  assert.equal(readers.scope, note.scope);
  assert.ok(readers.readers.length > 0, "the owner at least can read it");
  assert.ok(!JSON.stringify(readers).includes("dual-write"), "who-can-read names reach, never content");
  await assert.rejects(as("carol").whoCanRead(ref), NotPermittedError);
});

test("teams: a tenant admin sets, extends and shrinks a team; a member cannot change membership", { skip }, async () => {
  const alice = as("alice");
  const team = unique("team");
  assert.deepEqual((await alice.setTeamMembers(team, { agent_ids: ["coding-agent"] })).members, ["coding-agent"]);
  const added = await alice.addTeamMember(team, { member_agent_id: "wukong" });
  assert.equal(added.team_id, team);
  assert.deepEqual(added.members, ["coding-agent", "wukong"]);
  assert.deepEqual((await alice.removeTeamMember(team, "wukong")).members, ["coding-agent"]);
  await assert.rejects(as("carol").addTeamMember(team, { member_agent_id: "carol-agent" }), NotPermittedError);
  await assert.rejects(as("carol").setTeamMembers(team, { agent_ids: [] }), NotPermittedError);
  await assert.rejects(as("bob").removeTeamMember(team, "coding-agent"), NotPermittedError);
});

test("roles: without a role file the role routes refuse, typed (RoleRefusedError)", { skip }, async () => {
  // the harness's service loads no role file (VIKING_BRIDGE_ROLES_FILE): both routes must say so, never guess a role
  const alice = as("alice");
  const mine = await alice.myRole().catch((e: unknown) => e);
  assert.ok(mine instanceof RoleRefusedError && mine instanceof NotPermittedError && mine.status === 403, String(mine));
  assert.match(mine.detail, /no role file/);
  const injected = await alice.roleInject({ agent_id: "wukong", task: "ledger API pagination" }).catch((e: unknown) => e);
  assert.ok(injected instanceof RoleRefusedError && injected.error === "RoleRefused", String(injected));
  assert.match(injected.detail, /role file/);
});

test("roles: with phase 7's role file, the coordinator reads its role and gets intent's federated manifest; a role-less agent is refused", { skip: skip || roles === undefined && "no role-file service: VB_ROLES_URL unset (run tests/clients/test_typescript_client.py)" }, async () => {
  const client = (key: string): VikingBridgeClient => new VikingBridgeClient({ baseUrl: roles!.url, apiKey: key, fetch: recordingFetch(seen) });
  const coordinator = client(roles!.coordinator);
  const mine = await coordinator.myRole();
  assert.equal(mine.agent_id, "coordinator");
  assert.ok(mine.may_inject_into.includes("intent") && mine.domains.includes("purchasing"), JSON.stringify(mine));
  const intent = await client(roles!.intent).myRole();
  assert.equal(intent.depth, "minimal");
  assert.deepEqual(intent.allowed_kinds, ["decision", "standard"]);
  const rule = await coordinator.remember({
    content: `采购规则 ${unique("rule")}: a purchase order above the supplier approval threshold needs VP approval`,
    kind: "decision", visibility: "agent", metadata: { domain: "purchasing", tier: "hot" },
  });
  const fm = await coordinator.roleInject({ agent_id: "intent", task: "采购 supplier approval threshold" });
  assert.ok(fm.memories.some((m) => m.memory_id === rule.memory_id), `the purchasing rule is planned for intent: ${JSON.stringify(fm.counts)}`);
  assert.equal(fm.child_agent_id, "intent");
  assert.equal(fm.route.primary, "purchasing");
  assert.equal(fm.depth, "minimal", "the child's role's depth when the call names none");
  assert.ok(fm.manifest_id);
  await assert.rejects(client(roles!.intent).roleInject({ agent_id: "intent", task: "采购" }), (e: unknown) => e instanceof NotPermittedError && e.status === 403, "a child cannot inject into itself");
  await assert.rejects(client(roles!.norole).myRole(), RoleRefusedError);
  await coordinator.revokeManifest(fm.manifest_id);
});

test("admin console: tenant grants, manifests and scope counts for the admin; a member gets NotPermittedError", { skip }, async () => {
  const alice = as("alice");
  const carol = as("carol");
  const grant = await alice.issueGrant({ grantee_user_id: "bob", scope: state.fact!.scope, ttl_seconds: 600, reason: "console review" });
  const grants = await alice.tenantGrants({ limit: 100 });
  assert.ok(grants.some((g) => g.grant_id === grant.grant_id), "the admin sees the tenant's grant");
  assert.ok(grants.every((g) => g.tenant_id === live!.tenant), "only her own tenant's grants");
  const denied = await carol.tenantGrants().catch((e: unknown) => e);
  assert.ok(denied instanceof NotPermittedError && denied.status === 403 && !(denied instanceof ManifestError), String(denied));
  const foreign = await as("globex").tenantGrants({ include_inactive: true });
  assert.ok(!foreign.some((g) => g.grant_id === grant.grant_id), "another tenant's admin (same user id) sees none of them");
  const injected = await alice.injectContext({ agent_id: "wukong", task: "console: manifests" });
  const manifests = await alice.tenantManifests({ limit: 100 });
  assert.ok(manifests.some((m) => m.manifest_id === injected.manifest_id && m.child_agent_id === "wukong"));
  await assert.rejects(carol.tenantManifests(), NotPermittedError);
  const counts = await alice.scopeCounts();
  const fact = counts.find((c) => c.scope === state.fact!.scope);
  assert.ok(fact && (fact.active ?? 0) >= 1, `the workspace scope is counted: ${JSON.stringify(fact)}`);
  await assert.rejects(carol.scopeCounts(), NotPermittedError);
  const browsed = await alice.browseMemories({ scope: state.fact!.scope, limit: 50 });
  assert.ok(browsed.memories.every((m) => m.scope === state.fact!.scope), "browsing stays in the scope asked for");
  await assert.rejects(carol.browseMemories({ scope: state.fact!.scope }), NotPermittedError);
  const directory = await alice.tenantDirectory();
  assert.ok((directory.users ?? []).some((u) => u.user_id === "alice"), `the admin is in her tenant's directory: ${JSON.stringify(directory.users)}`);
  await assert.rejects(carol.tenantDirectory(), NotPermittedError);
  const issued = await alice.issueKey({ for_user: "dora", for_agent: "ts-client", label: "typescript live test" });
  assert.ok(issued.key.startsWith("vbk_") && issued.record.user_id === "dora");
  assert.ok((await alice.listKeys()).some((k) => k.key_id === issued.record.key_id), "the new key is listed");
  await assert.rejects(carol.listKeys(), NotPermittedError);
  assert.equal((await alice.revokeKey(issued.record.key_id)).deleted, true);
  await alice.revokeManifest(injected.manifest_id);
  await alice.revokeGrant(grant.grant_id);
});

test("purge-expired: the admin's run deletes an expired memory; a member may not purge", { skip }, async () => {
  const alice = as("alice");
  const short = await alice.remember({ content: `a short-lived note ${unique("ttl")}`, kind: "note", ttl_s: 1 });
  await new Promise((resolve) => setTimeout(resolve, 1500)); // let it expire on the service's clock
  await assert.rejects(as("carol").purgeExpired(), NotPermittedError);
  const report = await alice.purgeExpired({ max_deletions: 1000 });
  assert.equal(report.tenant_id, live!.tenant);
  assert.ok(report.purged >= 1 && report.memory_ids?.includes(short.memory_id), JSON.stringify(report));
  await assert.rejects(alice.getMemory({ scope: short.scope, memoryId: short.memory_id }), NotFoundError);
});

test("every route of docs/openapi.json is called at least once", { skip }, () => {
  const missing = (Object.keys(ROUTES) as OperationId[]).filter((op) => !seen.has(op));
  assert.deepEqual(missing, [], `operations never called against the live service: ${missing.join(", ")}`);
});
