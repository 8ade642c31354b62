/**
 * Generated from docs/openapi.json by scripts/generate.mjs (`npm run generate`). Do not edit.
 * One row per operation of the service; the client's method table must cover every key.
 * `idempotencyKey`: the request body has an `idempotency_key` (the client fills one in, so the call is safe to retry).
 */
export const ROUTES = {
  "add_team_member": { method: "POST", path: "/api/v1/teams/{team_id}/members", success: [200], authenticated: true, idempotencyKey: false },
  "approvals": { method: "GET", path: "/api/v1/approvals", success: [200], authenticated: true, idempotencyKey: false },
  "approve": { method: "POST", path: "/api/v1/memories/{memory_id}/approve", success: [200], authenticated: true, idempotencyKey: false },
  "audit": { method: "GET", path: "/api/v1/audit", success: [200], authenticated: true, idempotencyKey: false },
  "capture": { method: "POST", path: "/api/v1/capture", success: [200], authenticated: true, idempotencyKey: true },
  "edit_memory": { method: "PATCH", path: "/api/v1/memories/{memory_id}", success: [200], authenticated: true, idempotencyKey: false },
  "find_by_key": { method: "GET", path: "/api/v1/memories/by-key/{key}", success: [200], authenticated: true, idempotencyKey: false },
  "forget": { method: "DELETE", path: "/api/v1/memories/{memory_id}", success: [200], authenticated: true, idempotencyKey: false },
  "forget_subject": { method: "POST", path: "/api/v1/forget-subject", success: [200], authenticated: true, idempotencyKey: false },
  "fork_session": { method: "POST", path: "/api/v1/sessions/fork", success: [200], authenticated: true, idempotencyKey: false },
  "get_memory": { method: "GET", path: "/api/v1/memories/{memory_id}", success: [200], authenticated: true, idempotencyKey: false },
  "health": { method: "GET", path: "/health", success: [200], authenticated: false, idempotencyKey: false },
  "inject_get": { method: "GET", path: "/api/v1/inject-context", success: [200], authenticated: true, idempotencyKey: false },
  "inject_post": { method: "POST", path: "/api/v1/inject-context", success: [200], authenticated: true, idempotencyKey: false },
  "issue_grant": { method: "POST", path: "/api/v1/grants", success: [201], authenticated: true, idempotencyKey: false },
  "list_grants": { method: "GET", path: "/api/v1/grants", success: [200], authenticated: true, idempotencyKey: false },
  "list_memories": { method: "GET", path: "/api/v1/memories", success: [200], authenticated: true, idempotencyKey: false },
  "memory_history": { method: "GET", path: "/api/v1/memories/{memory_id}/history", success: [200], authenticated: true, idempotencyKey: false },
  "metrics": { method: "GET", path: "/metrics", success: [200], authenticated: false, idempotencyKey: false },
  "my_role": { method: "GET", path: "/api/v1/roles/me", success: [200], authenticated: true, idempotencyKey: false },
  "promote": { method: "POST", path: "/api/v1/memories/{memory_id}/promote", success: [200], authenticated: true, idempotencyKey: false },
  "purge_expired": { method: "POST", path: "/api/v1/purge-expired", success: [200], authenticated: true, idempotencyKey: false },
  "ready": { method: "GET", path: "/ready", success: [200], authenticated: false, idempotencyKey: false },
  "recall_get": { method: "GET", path: "/api/v1/recall", success: [200], authenticated: true, idempotencyKey: false },
  "recall_post": { method: "POST", path: "/api/v1/recall", success: [200], authenticated: true, idempotencyKey: false },
  "reject": { method: "POST", path: "/api/v1/memories/{memory_id}/reject", success: [200], authenticated: true, idempotencyKey: false },
  "remember": { method: "POST", path: "/api/v1/memories", success: [201], authenticated: true, idempotencyKey: true },
  "remove_team_member": { method: "DELETE", path: "/api/v1/teams/{team_id}/members/{member_agent_id}", success: [200], authenticated: true, idempotencyKey: false },
  "revoke_grant": { method: "DELETE", path: "/api/v1/grants/{grant_id}", success: [200], authenticated: true, idempotencyKey: false },
  "revoke_manifest": { method: "DELETE", path: "/api/v1/manifests/{manifest_id}", success: [200], authenticated: true, idempotencyKey: false },
  "role_inject": { method: "POST", path: "/api/v1/roles/inject", success: [200], authenticated: true, idempotencyKey: false },
  "scope_counts": { method: "GET", path: "/api/v1/admin/scopes", success: [200], authenticated: true, idempotencyKey: false },
  "set_team_members": { method: "PUT", path: "/api/v1/teams/{team_id}", success: [200], authenticated: true, idempotencyKey: false },
  "set_visible_to": { method: "PUT", path: "/api/v1/memories/{memory_id}/visible-to", success: [200], authenticated: true, idempotencyKey: false },
  "start_session": { method: "POST", path: "/api/v1/sessions", success: [200], authenticated: true, idempotencyKey: false },
  "tenant_grants": { method: "GET", path: "/api/v1/admin/grants", success: [200], authenticated: true, idempotencyKey: false },
  "tenant_manifests": { method: "GET", path: "/api/v1/admin/manifests", success: [200], authenticated: true, idempotencyKey: false },
  "who_can_read": { method: "GET", path: "/api/v1/admin/memories/{memory_id}/readers", success: [200], authenticated: true, idempotencyKey: false },
  "whoami": { method: "GET", path: "/api/v1/admin/whoami", success: [200], authenticated: true, idempotencyKey: false },
  "write_back": { method: "POST", path: "/api/v1/write-back", success: [201], authenticated: true, idempotencyKey: true },
} as const;

export type OperationId = keyof typeof ROUTES;
