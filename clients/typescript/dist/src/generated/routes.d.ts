/**
 * Generated from docs/openapi.json by scripts/generate.mjs (`npm run generate`). Do not edit.
 * One row per operation of the service; the client's method table must cover every key.
 * `idempotencyKey`: the request body has an `idempotency_key` (the client fills one in, so the call is safe to retry).
 */
export declare const ROUTES: {
    readonly add_team_member: {
        readonly method: "POST";
        readonly path: "/api/v1/teams/{team_id}/members";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly approvals: {
        readonly method: "GET";
        readonly path: "/api/v1/approvals";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly approve: {
        readonly method: "POST";
        readonly path: "/api/v1/memories/{memory_id}/approve";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly audit: {
        readonly method: "GET";
        readonly path: "/api/v1/audit";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly browse_memories: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/memories";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly capture: {
        readonly method: "POST";
        readonly path: "/api/v1/capture";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: true;
    };
    readonly edit_memory: {
        readonly method: "PATCH";
        readonly path: "/api/v1/memories/{memory_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly find_by_key: {
        readonly method: "GET";
        readonly path: "/api/v1/memories/by-key/{key}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly forget: {
        readonly method: "DELETE";
        readonly path: "/api/v1/memories/{memory_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly forget_subject: {
        readonly method: "POST";
        readonly path: "/api/v1/forget-subject";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly fork_session: {
        readonly method: "POST";
        readonly path: "/api/v1/sessions/fork";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly get_memory: {
        readonly method: "GET";
        readonly path: "/api/v1/memories/{memory_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly health: {
        readonly method: "GET";
        readonly path: "/health";
        readonly success: readonly [200];
        readonly authenticated: false;
        readonly idempotencyKey: false;
    };
    readonly inject_get: {
        readonly method: "GET";
        readonly path: "/api/v1/inject-context";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly inject_post: {
        readonly method: "POST";
        readonly path: "/api/v1/inject-context";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly issue_grant: {
        readonly method: "POST";
        readonly path: "/api/v1/grants";
        readonly success: readonly [201];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly issue_key: {
        readonly method: "POST";
        readonly path: "/api/v1/admin/keys";
        readonly success: readonly [201];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly list_grants: {
        readonly method: "GET";
        readonly path: "/api/v1/grants";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly list_keys: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/keys";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly list_memories: {
        readonly method: "GET";
        readonly path: "/api/v1/memories";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly memory_history: {
        readonly method: "GET";
        readonly path: "/api/v1/memories/{memory_id}/history";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly metrics: {
        readonly method: "GET";
        readonly path: "/metrics";
        readonly success: readonly [200];
        readonly authenticated: false;
        readonly idempotencyKey: false;
    };
    readonly my_role: {
        readonly method: "GET";
        readonly path: "/api/v1/roles/me";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly promote: {
        readonly method: "POST";
        readonly path: "/api/v1/memories/{memory_id}/promote";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly purge_expired: {
        readonly method: "POST";
        readonly path: "/api/v1/purge-expired";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly ready: {
        readonly method: "GET";
        readonly path: "/ready";
        readonly success: readonly [200];
        readonly authenticated: false;
        readonly idempotencyKey: false;
    };
    readonly recall_get: {
        readonly method: "GET";
        readonly path: "/api/v1/recall";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly recall_post: {
        readonly method: "POST";
        readonly path: "/api/v1/recall";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly reject: {
        readonly method: "POST";
        readonly path: "/api/v1/memories/{memory_id}/reject";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly remember: {
        readonly method: "POST";
        readonly path: "/api/v1/memories";
        readonly success: readonly [201];
        readonly authenticated: true;
        readonly idempotencyKey: true;
    };
    readonly remove_team_member: {
        readonly method: "DELETE";
        readonly path: "/api/v1/teams/{team_id}/members/{member_agent_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly revoke_grant: {
        readonly method: "DELETE";
        readonly path: "/api/v1/grants/{grant_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly revoke_key: {
        readonly method: "DELETE";
        readonly path: "/api/v1/admin/keys/{key_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly revoke_manifest: {
        readonly method: "DELETE";
        readonly path: "/api/v1/manifests/{manifest_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly role_inject: {
        readonly method: "POST";
        readonly path: "/api/v1/roles/inject";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly scope_counts: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/scopes";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly set_team_members: {
        readonly method: "PUT";
        readonly path: "/api/v1/teams/{team_id}";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly set_visible_to: {
        readonly method: "PUT";
        readonly path: "/api/v1/memories/{memory_id}/visible-to";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly start_session: {
        readonly method: "POST";
        readonly path: "/api/v1/sessions";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly tenant_directory: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/directory";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly tenant_grants: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/grants";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly tenant_manifests: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/manifests";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly who_can_read: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/memories/{memory_id}/readers";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly whoami: {
        readonly method: "GET";
        readonly path: "/api/v1/admin/whoami";
        readonly success: readonly [200];
        readonly authenticated: true;
        readonly idempotencyKey: false;
    };
    readonly write_back: {
        readonly method: "POST";
        readonly path: "/api/v1/write-back";
        readonly success: readonly [201];
        readonly authenticated: true;
        readonly idempotencyKey: true;
    };
};
export type OperationId = keyof typeof ROUTES;
