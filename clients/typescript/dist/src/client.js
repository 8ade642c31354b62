/**
 * `VikingBridgeClient`: one method per operation of the memory service, typed from the
 * generated spec. Who is asking is the credential the client was built with — no method takes
 * a tenant, user or role, and fields that name the caller (`agent_id`, `user_id`, `team_id`)
 * are only assertions the service checks against the credential (403 when they differ).
 *
 * `OPERATION_METHODS` maps every operationId of docs/openapi.json to the method that calls it;
 * its type requires a key for every generated route, so after `npm run generate` a new service
 * route is a compile error until the client covers it.
 */
import { ROUTES } from "./generated/routes.js";
import { ClientConfigurationError } from "./errors.js";
import { call } from "./http.js";
import { resolveRetry } from "./retry.js";
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);
export class VikingBridgeClient {
    // private fields: util.inspect, console.log and JSON.stringify of a client show no credential
    #options;
    #transport;
    constructor(options) {
        const baseUrl = new URL(String(options.baseUrl));
        if (baseUrl.protocol !== "https:" && baseUrl.protocol !== "http:")
            throw new ClientConfigurationError(`baseUrl must be http(s), not ${baseUrl.protocol}`);
        if (baseUrl.username || baseUrl.password)
            throw new ClientConfigurationError("baseUrl must not carry credentials; pass apiKey or token");
        if (options.apiKey !== undefined && options.token !== undefined)
            throw new ClientConfigurationError("give exactly one credential: apiKey or token, not both (the service refuses two kinds at once)");
        if (options.apiKey === "" || options.token === "")
            throw new ClientConfigurationError("an empty credential");
        const credentialed = options.apiKey !== undefined || options.token !== undefined;
        if (credentialed && baseUrl.protocol === "http:" && !LOOPBACK.has(baseUrl.hostname) && !options.allowInsecureHttp) {
            throw new ClientConfigurationError(`refusing to send a credential over plain http to ${baseUrl.hostname}; use https (or allowInsecureHttp for a trusted network)`);
        }
        const fetchImpl = options.fetch ?? globalThis.fetch;
        if (typeof fetchImpl !== "function")
            throw new ClientConfigurationError("no fetch: pass options.fetch (Node >= 20 has a global one)");
        this.#options = options;
        let lastToken;
        this.#transport = {
            baseUrl,
            fetch: fetchImpl,
            authorize: async () => {
                if (options.apiKey !== undefined) {
                    return options.apiKeyHeader === "x-api-key" ? { "x-api-key": options.apiKey } : { authorization: `ApiKey ${options.apiKey}` };
                }
                if (options.token !== undefined) {
                    lastToken = typeof options.token === "function" ? await options.token() : options.token;
                    return { authorization: `Bearer ${lastToken}` };
                }
                return {};
            },
            sessionId: options.sessionId,
            retry: resolveRetry(options.retry),
            logger: options.logger,
            timeoutMs: options.timeoutMs ?? 30_000,
            autoIdempotencyKeys: options.autoIdempotencyKeys ?? true,
            userAgent: options.userAgent ?? "viking-bridge-ts/0.1.0",
            secrets: () => [options.apiKey, typeof options.token === "string" ? options.token : lastToken].filter((s) => !!s),
        };
    }
    /** The same credential and settings, in another session (bound to this identity by the service). */
    withSession(sessionId) {
        return new VikingBridgeClient({ ...this.#options, sessionId });
    }
    get sessionId() {
        return this.#options.sessionId;
    }
    /** Call any operation by its operationId: the escape hatch for a route added before its method. */
    call(operation, input = {}) {
        return call(this.#transport, operation, input);
    }
    toJSON() {
        return { baseUrl: this.#transport.baseUrl.href, sessionId: this.#options.sessionId };
    }
    [Symbol.for("nodejs.util.inspect.custom")]() {
        return `VikingBridgeClient { baseUrl: '${this.#transport.baseUrl.href}' }`;
    }
    // -- seed 000: capture, recall, inject ---------------------------------------------------
    capture(body, options) {
        return this.call("capture", { body, ...options });
    }
    /** Recall (POST: the query text stays out of URLs and proxies' logs). */
    recall(body, options) {
        return this.call("recall_post", { body: typeof body === "string" ? { query: body } : body, ...options });
    }
    recallGet(query, options) {
        return this.call("recall_get", { query: q(query), ...options });
    }
    injectContext(body, options) {
        return this.call("inject_post", { body, ...options });
    }
    injectContextGet(query, options) {
        return this.call("inject_get", { query: q(query), ...options });
    }
    writeBack(body, options) {
        return this.call("write_back", { body, ...options });
    }
    revokeManifest(manifestId, options) {
        return this.call("revoke_manifest", { path: { manifest_id: manifestId }, ...options });
    }
    // -- memories ----------------------------------------------------------------------------
    remember(body, options) {
        return this.call("remember", { body, ...options });
    }
    listMemories(query, options) {
        return this.call("list_memories", { query: q(query), ...options });
    }
    getMemory(ref, options) {
        return this.call("get_memory", { ...at(ref), ...options });
    }
    /** One memory by id alone, looked up only in the caller's default scopes (a 404 for one elsewhere, as for none). */
    findMemory(memoryId, options) {
        return this.call("get_memory", { path: { memory_id: memoryId }, ...options });
    }
    /** Who changed a memory, what and when (from the audit log, newest first); by id alone or with its scope. */
    memoryHistory(memoryId, scope, options) {
        return this.call("memory_history", { path: { memory_id: memoryId }, query: scope === undefined ? {} : { scope }, ...options });
    }
    /** The caller's own memory stored with an idempotency key in `scope` (O(1); per writer: never another writer's). */
    findByKey(scope, key, options) {
        return this.call("find_by_key", { path: { key }, query: { scope }, ...options });
    }
    editMemory(ref, body, options) {
        return this.call("edit_memory", { ...at(ref), body, ...options });
    }
    forget(ref, options) {
        return this.call("forget", { ...at(ref), ...options });
    }
    approve(ref, options) {
        return this.call("approve", { ...at(ref), ...options });
    }
    reject(ref, options) {
        return this.call("reject", { ...at(ref), ...options });
    }
    promote(ref, body, options) {
        return this.call("promote", { ...at(ref), body, ...options });
    }
    pendingApprovals(query = {}, options) {
        return this.call("approvals", { query: q(query), ...options });
    }
    forgetSubject(body, options) {
        return this.call("forget_subject", { body, ...options });
    }
    /** Who sees one of an agent's private memories (`["*"]`: every agent of the same user); the owning agent or a tenant admin. */
    setVisibleTo(ref, body, options) {
        return this.call("set_visible_to", { ...at(ref), body, ...options });
    }
    /** Delete the caller's tenant's expired memories, one bounded run (tenant admin); `complete` says whether more remain. */
    purgeExpired(query = {}, options) {
        return this.call("purge_expired", { query: q(query), ...options });
    }
    // -- teams (tenant admin; the team is always of the admin's own tenant) -------------------
    /** Replace a team's member agents (`[]` dissolves it). */
    setTeamMembers(teamId, body, options) {
        return this.call("set_team_members", { path: { team_id: teamId }, body, ...options });
    }
    addTeamMember(teamId, body, options) {
        return this.call("add_team_member", { path: { team_id: teamId }, body, ...options });
    }
    removeTeamMember(teamId, memberAgentId, options) {
        return this.call("remove_team_member", { path: { team_id: teamId, member_agent_id: memberAgentId }, ...options });
    }
    // -- roles (need a role file loaded by the service: otherwise a RoleRefusedError) ----------
    /** Federated injection (seed 002): the manifest the child's role calls for; `agent_id` names the TARGET child. */
    roleInject(body, options) {
        return this.call("role_inject", { body, ...options });
    }
    /** The caller's own role as the loaded role file states it (never another agent's). */
    myRole(options) {
        return this.call("my_role", { ...options });
    }
    // -- grants, sessions, audit -------------------------------------------------------------
    issueGrant(body, options) {
        return this.call("issue_grant", { body, ...options });
    }
    listGrants(query = {}, options) {
        return this.call("list_grants", { query: q(query), ...options });
    }
    revokeGrant(grantId, options) {
        return this.call("revoke_grant", { path: { grant_id: grantId }, ...options });
    }
    startSession(options) {
        return this.call("start_session", { ...options });
    }
    forkSession(body = {}, options) {
        return this.call("fork_session", { body, ...options });
    }
    audit(query = {}, options) {
        return this.call("audit", { query: q(query), ...options });
    }
    /** Who the credential is (tenant, user, agent, workspace, departments, roles) and the scopes it reads by default. */
    whoami(options) {
        return this.call("whoami", { ...options });
    }
    // -- admin console (tenant admin; the tenant is always the admin's own) ------------------
    /** Every grant of the tenant, in force unless `include_inactive`. */
    tenantGrants(query = {}, options) {
        return this.call("tenant_grants", { query: q(query), ...options });
    }
    /** Live injection manifests of the tenant: who handed what to whom, until when. */
    tenantManifests(query = {}, options) {
        return this.call("tenant_manifests", { query: q(query), ...options });
    }
    /** Memories per scope of the tenant, by status. */
    scopeCounts(options) {
        return this.call("scope_counts", { ...options });
    }
    /** Who can read one memory and why (no content: the answer is about the memory's reach). */
    whoCanRead(ref, options) {
        return this.call("who_can_read", { ...at(ref), ...options });
    }
    /** One page of one scope of the tenant (any status unless `status`), only memories containing `text` when given. */
    browseMemories(query, options) {
        return this.call("browse_memories", { query: q(query), ...options });
    }
    /** The tenant's users, agents and teams, as the bridge knows them (keys, audit actors, team membership). */
    tenantDirectory(options) {
        return this.call("tenant_directory", { ...options });
    }
    /** The tenant's API keys: ids and bindings, never a secret. */
    listKeys(query = {}, options) {
        return this.call("list_keys", { query: q(query), ...options });
    }
    /** Issue a key of the tenant; the answer's `key` is the only copy of its secret. */
    issueKey(body, options) {
        return this.call("issue_key", { body, ...options });
    }
    /** Revoke a key of the tenant by its id (the 16 hex characters after `vbk_`). */
    revokeKey(keyId, options) {
        return this.call("revoke_key", { path: { key_id: keyId }, ...options });
    }
    // -- operations (no credential sent) -----------------------------------------------------
    health(options) {
        return this.call("health", { ...options });
    }
    /** Readiness; a not-ready service answers 503 with the same body, returned here (never retried). */
    ready(options) {
        return this.call("ready", { acceptStatuses: [503], retry: false, ...options });
    }
    /** Prometheus exposition text. */
    metrics(options) {
        return this.call("metrics", { ...options });
    }
}
/**
 * Every operationId of the spec -> the method that calls it. The mapped type makes a missing
 * route a compile error; test/routes.test.ts checks each value is a method of the client.
 */
export const OPERATION_METHODS = {
    add_team_member: "addTeamMember",
    approvals: "pendingApprovals",
    approve: "approve",
    audit: "audit",
    browse_memories: "browseMemories",
    capture: "capture",
    edit_memory: "editMemory",
    find_by_key: "findByKey",
    forget: "forget",
    forget_subject: "forgetSubject",
    fork_session: "forkSession",
    get_memory: "getMemory",
    health: "health",
    inject_get: "injectContextGet",
    inject_post: "injectContext",
    issue_grant: "issueGrant",
    issue_key: "issueKey",
    list_grants: "listGrants",
    list_keys: "listKeys",
    list_memories: "listMemories",
    memory_history: "memoryHistory",
    metrics: "metrics",
    my_role: "myRole",
    promote: "promote",
    purge_expired: "purgeExpired",
    ready: "ready",
    recall_get: "recallGet",
    recall_post: "recall",
    reject: "reject",
    remember: "remember",
    remove_team_member: "removeTeamMember",
    revoke_grant: "revokeGrant",
    revoke_key: "revokeKey",
    revoke_manifest: "revokeManifest",
    role_inject: "roleInject",
    scope_counts: "scopeCounts",
    set_team_members: "setTeamMembers",
    set_visible_to: "setVisibleTo",
    start_session: "startSession",
    tenant_directory: "tenantDirectory",
    tenant_grants: "tenantGrants",
    tenant_manifests: "tenantManifests",
    who_can_read: "whoCanRead",
    whoami: "whoami",
    write_back: "writeBack",
};
export const OPERATION_IDS = Object.keys(ROUTES);
function at(ref) {
    return { path: { memory_id: ref.memoryId }, query: { scope: ref.scope } };
}
function q(query) {
    return (query ?? {});
}
