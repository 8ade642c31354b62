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
import type { components, operations } from "./generated/openapi.js";
import { type OperationId } from "./generated/routes.js";
import { type CallInput, type Logger } from "./http.js";
import { type RetryOptions } from "./retry.js";
export type Schemas = components["schemas"];
type Op<K extends OperationId> = operations[K];
/** The query parameters of an operation (from the spec). */
export type QueryOf<K extends OperationId> = Op<K> extends {
    parameters: {
        query?: infer Q;
    };
} ? ([Q] extends [never] ? never : NonNullable<Q>) : never;
/** The JSON body of an operation (from the spec). */
export type BodyOf<K extends OperationId> = Op<K> extends {
    requestBody?: {
        content: {
            "application/json": infer B;
        };
    };
} ? B : never;
/** The JSON result of an operation's success answer (from the spec). */
export type ResultOf<K extends OperationId> = Op<K>["responses"] extends {
    200: {
        content: {
            "application/json": infer R;
        };
    };
} ? R : Op<K>["responses"] extends {
    201: {
        content: {
            "application/json": infer R;
        };
    };
} ? R : string;
/** Where a memory lives and its id: every per-memory route takes both. */
export interface MemoryRef {
    scope: string;
    memoryId: string;
}
export interface ClientOptions {
    /** The service, e.g. "https://memory.internal:8080". Plain http only for loopback unless `allowInsecureHttp`. */
    baseUrl: string | URL;
    /** An API key (`viking-bridge keys issue`), sent as `Authorization: ApiKey <key>` (or X-API-Key, see `apiKeyHeader`). */
    apiKey?: string;
    /** A JWT, or a function returning a fresh one per attempt (refresh lives with the caller). */
    token?: string | (() => string | Promise<string>);
    apiKeyHeader?: "authorization" | "x-api-key";
    /** A session bound to this credential (`startSession`); default: the identity's default session. */
    sessionId?: string;
    /** Any fetch-compatible function (default: Node's global fetch). */
    fetch?: typeof globalThis.fetch;
    retry?: RetryOptions;
    /** Receives one event per request, answer, retry and error; never a credential, body or query string. */
    logger?: Logger;
    /** Per-attempt timeout in ms (default 30 000). */
    timeoutMs?: number;
    /** Fill in an idempotency key for capture/remember/write-back bodies without one, so they are retryable (default true). */
    autoIdempotencyKeys?: boolean;
    /** Permit a credential over plain http to a non-loopback host (default false: refused). */
    allowInsecureHttp?: boolean;
    userAgent?: string;
}
export declare class VikingBridgeClient {
    #private;
    constructor(options: ClientOptions);
    /** The same credential and settings, in another session (bound to this identity by the service). */
    withSession(sessionId: string): VikingBridgeClient;
    get sessionId(): string | undefined;
    /** Call any operation by its operationId: the escape hatch for a route added before its method. */
    call<K extends OperationId>(operation: K, input?: CallInput): Promise<ResultOf<K>>;
    toJSON(): Record<string, unknown>;
    capture(body: BodyOf<"capture">, options?: CallOptions): Promise<ResultOf<"capture">>;
    /** Recall (POST: the query text stays out of URLs and proxies' logs). */
    recall(body: BodyOf<"recall_post"> | string, options?: CallOptions): Promise<ResultOf<"recall_post">>;
    recallGet(query: QueryOf<"recall_get">, options?: CallOptions): Promise<ResultOf<"recall_get">>;
    injectContext(body: BodyOf<"inject_post">, options?: CallOptions): Promise<ResultOf<"inject_post">>;
    injectContextGet(query: QueryOf<"inject_get">, options?: CallOptions): Promise<ResultOf<"inject_get">>;
    writeBack(body: BodyOf<"write_back">, options?: CallOptions): Promise<ResultOf<"write_back">>;
    revokeManifest(manifestId: string, options?: CallOptions): Promise<ResultOf<"revoke_manifest">>;
    remember(body: BodyOf<"remember">, options?: CallOptions): Promise<ResultOf<"remember">>;
    listMemories(query: QueryOf<"list_memories">, options?: CallOptions): Promise<ResultOf<"list_memories">>;
    getMemory(ref: MemoryRef, options?: CallOptions): Promise<ResultOf<"get_memory">>;
    /** One memory by id alone, looked up only in the caller's default scopes (a 404 for one elsewhere, as for none). */
    findMemory(memoryId: string, options?: CallOptions): Promise<ResultOf<"get_memory">>;
    /** Who changed a memory, what and when (from the audit log, newest first); by id alone or with its scope. */
    memoryHistory(memoryId: string, scope?: string, options?: CallOptions): Promise<ResultOf<"memory_history">>;
    /** The caller's own memory stored with an idempotency key in `scope` (O(1); per writer: never another writer's). */
    findByKey(scope: string, key: string, options?: CallOptions): Promise<ResultOf<"find_by_key">>;
    editMemory(ref: MemoryRef, body: BodyOf<"edit_memory">, options?: CallOptions): Promise<ResultOf<"edit_memory">>;
    forget(ref: MemoryRef, options?: CallOptions): Promise<ResultOf<"forget">>;
    approve(ref: MemoryRef, options?: CallOptions): Promise<ResultOf<"approve">>;
    reject(ref: MemoryRef, options?: CallOptions): Promise<ResultOf<"reject">>;
    promote(ref: MemoryRef, body: BodyOf<"promote">, options?: CallOptions): Promise<ResultOf<"promote">>;
    pendingApprovals(query?: QueryOf<"approvals">, options?: CallOptions): Promise<ResultOf<"approvals">>;
    forgetSubject(body: BodyOf<"forget_subject">, options?: CallOptions): Promise<ResultOf<"forget_subject">>;
    /** Who sees one of an agent's private memories (`["*"]`: every agent of the same user); the owning agent or a tenant admin. */
    setVisibleTo(ref: MemoryRef, body: BodyOf<"set_visible_to">, options?: CallOptions): Promise<ResultOf<"set_visible_to">>;
    /** Delete the caller's tenant's expired memories, one bounded run (tenant admin); `complete` says whether more remain. */
    purgeExpired(query?: QueryOf<"purge_expired">, options?: CallOptions): Promise<ResultOf<"purge_expired">>;
    /** Replace a team's member agents (`[]` dissolves it). */
    setTeamMembers(teamId: string, body: BodyOf<"set_team_members">, options?: CallOptions): Promise<ResultOf<"set_team_members">>;
    addTeamMember(teamId: string, body: BodyOf<"add_team_member">, options?: CallOptions): Promise<ResultOf<"add_team_member">>;
    removeTeamMember(teamId: string, memberAgentId: string, options?: CallOptions): Promise<ResultOf<"remove_team_member">>;
    /** Federated injection (seed 002): the manifest the child's role calls for; `agent_id` names the TARGET child. */
    roleInject(body: BodyOf<"role_inject">, options?: CallOptions): Promise<ResultOf<"role_inject">>;
    /** The caller's own role as the loaded role file states it (never another agent's). */
    myRole(options?: CallOptions): Promise<ResultOf<"my_role">>;
    issueGrant(body: BodyOf<"issue_grant">, options?: CallOptions): Promise<ResultOf<"issue_grant">>;
    listGrants(query?: QueryOf<"list_grants">, options?: CallOptions): Promise<ResultOf<"list_grants">>;
    revokeGrant(grantId: string, options?: CallOptions): Promise<ResultOf<"revoke_grant">>;
    startSession(options?: CallOptions): Promise<ResultOf<"start_session">>;
    forkSession(body?: BodyOf<"fork_session">, options?: CallOptions): Promise<ResultOf<"fork_session">>;
    audit(query?: QueryOf<"audit">, options?: CallOptions): Promise<ResultOf<"audit">>;
    /** Who the credential is (tenant, user, agent, workspace, departments, roles) and the scopes it reads by default. */
    whoami(options?: CallOptions): Promise<ResultOf<"whoami">>;
    /** Every grant of the tenant, in force unless `include_inactive`. */
    tenantGrants(query?: QueryOf<"tenant_grants">, options?: CallOptions): Promise<ResultOf<"tenant_grants">>;
    /** Live injection manifests of the tenant: who handed what to whom, until when. */
    tenantManifests(query?: QueryOf<"tenant_manifests">, options?: CallOptions): Promise<ResultOf<"tenant_manifests">>;
    /** Memories per scope of the tenant, by status. */
    scopeCounts(options?: CallOptions): Promise<ResultOf<"scope_counts">>;
    /** Who can read one memory and why (no content: the answer is about the memory's reach). */
    whoCanRead(ref: MemoryRef, options?: CallOptions): Promise<ResultOf<"who_can_read">>;
    /** One page of one scope of the tenant (any status unless `status`), only memories containing `text` when given. */
    browseMemories(query: QueryOf<"browse_memories">, options?: CallOptions): Promise<ResultOf<"browse_memories">>;
    /** The tenant's users, agents and teams, as the bridge knows them (keys, audit actors, team membership). */
    tenantDirectory(options?: CallOptions): Promise<ResultOf<"tenant_directory">>;
    /** The tenant's API keys: ids and bindings, never a secret. */
    listKeys(query?: QueryOf<"list_keys">, options?: CallOptions): Promise<ResultOf<"list_keys">>;
    /** Issue a key of the tenant; the answer's `key` is the only copy of its secret. */
    issueKey(body: BodyOf<"issue_key">, options?: CallOptions): Promise<ResultOf<"issue_key">>;
    /** Revoke a key of the tenant by its id (the 16 hex characters after `vbk_`). */
    revokeKey(keyId: string, options?: CallOptions): Promise<ResultOf<"revoke_key">>;
    health(options?: CallOptions): Promise<ResultOf<"health">>;
    /** Readiness; a not-ready service answers 503 with the same body, returned here (never retried). */
    ready(options?: CallOptions): Promise<Schemas["Health"]>;
    /** Prometheus exposition text. */
    metrics(options?: CallOptions): Promise<string>;
}
export interface CallOptions {
    signal?: AbortSignal;
    retry?: boolean;
}
/**
 * Every operationId of the spec -> the method that calls it. The mapped type makes a missing
 * route a compile error; test/routes.test.ts checks each value is a method of the client.
 */
export declare const OPERATION_METHODS: {
    readonly add_team_member: "addTeamMember";
    readonly approvals: "pendingApprovals";
    readonly approve: "approve";
    readonly audit: "audit";
    readonly browse_memories: "browseMemories";
    readonly capture: "capture";
    readonly edit_memory: "editMemory";
    readonly find_by_key: "findByKey";
    readonly forget: "forget";
    readonly forget_subject: "forgetSubject";
    readonly fork_session: "forkSession";
    readonly get_memory: "getMemory";
    readonly health: "health";
    readonly inject_get: "injectContextGet";
    readonly inject_post: "injectContext";
    readonly issue_grant: "issueGrant";
    readonly issue_key: "issueKey";
    readonly list_grants: "listGrants";
    readonly list_keys: "listKeys";
    readonly list_memories: "listMemories";
    readonly memory_history: "memoryHistory";
    readonly metrics: "metrics";
    readonly my_role: "myRole";
    readonly promote: "promote";
    readonly purge_expired: "purgeExpired";
    readonly ready: "ready";
    readonly recall_get: "recallGet";
    readonly recall_post: "recall";
    readonly reject: "reject";
    readonly remember: "remember";
    readonly remove_team_member: "removeTeamMember";
    readonly revoke_grant: "revokeGrant";
    readonly revoke_key: "revokeKey";
    readonly revoke_manifest: "revokeManifest";
    readonly role_inject: "roleInject";
    readonly scope_counts: "scopeCounts";
    readonly set_team_members: "setTeamMembers";
    readonly set_visible_to: "setVisibleTo";
    readonly start_session: "startSession";
    readonly tenant_directory: "tenantDirectory";
    readonly tenant_grants: "tenantGrants";
    readonly tenant_manifests: "tenantManifests";
    readonly who_can_read: "whoCanRead";
    readonly whoami: "whoami";
    readonly write_back: "writeBack";
};
export declare const OPERATION_IDS: OperationId[];
export {};
