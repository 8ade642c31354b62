"""What the OpenAPI spec says beyond the models: problem responses, security schemes, headers.

Every `/api/v1` route documents the problem+json answers it can give (one shared `Problem`
schema), `Retry-After` on 429/503, and the three credential kinds as security schemes, so the
spec describes the service as a client (or schemathesis) meets it.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi.openapi.utils import get_openapi

__all__ = ["PROBLEM_RESPONSES", "openapi", "SUMMARY", "DESCRIPTION"]

SUMMARY = "Permission-first memory for multi-tenant, multi-agent AI systems. Identity comes only from credentials."
DESCRIPTION = """\
Every request under `/api/v1` carries exactly one credential: `Authorization: Bearer <JWT>`,
`Authorization: ApiKey <key>` or `X-API-Key: <key>`, or the signed `X-VB-*` headers of a trusted
gateway (HMAC over method, path, query, identity headers and the body's SHA-256). Any `X-VB-*`
header without a valid signature is a 401. `X-Session-Id` may choose the session (it must belong
to the same identity). Fields named `agent_id`, `user_id` or `team_id` that describe the caller are
assertions, accepted only when they equal the authenticated identity (else 403); fields marked
TARGET name whom an operation acts on, and the policy decides. Errors are RFC 9457 problem+json.
"""

_PROBLEM = {"$ref": "#/components/schemas/Problem"}
_RETRY = {"Retry-After": {"description": "Seconds after which a retry may succeed.", "schema": {"type": "integer", "minimum": 1}}}


def _problem(description: str, retry: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "content": {"application/problem+json": {"schema": _PROBLEM}}}
    if retry:
        out["headers"] = _RETRY
    return out


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _problem("Malformed request or invalid input (InvalidInput)"),
    401: _problem("No credential, or one that does not verify; unsigned X-VB-* headers"),
    403: _problem("The policy refuses, or a caller field names someone else"),
    404: _problem("No such memory, grant or manifest where the caller may look"),
    409: _problem("An idempotency key reused for other content"),
    413: _problem("Request body over the limit"),
    414: _problem("Query string over the limit"),
    422: _problem("The request does not fit its schema"),
    429: _problem("This identity's rate limit is exhausted", retry=True),
    503: _problem("Temporarily unavailable, timed out, or a recall that could not search every scope", retry=True),
}

PROBLEM_SCHEMA = {
    "type": "object",
    "description": "RFC 9457 problem details.",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string", "description": "urn:viking-bridge:problem:<category>"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
        "request_id": {"type": "string"},
        "error": {"type": "string", "description": "The error class (viking-bridge's error tree)."},
        "retry_after": {"type": "integer"},
        "failed_scopes": {"type": "array", "items": {"type": "string"}},
    },
}

SECURITY_SCHEMES = {
    "bearerJwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
    "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    "apiKeyAuthorization": {"type": "apiKey", "in": "header", "name": "Authorization", "description": "`ApiKey <key>`"},
    "gatewaySignature": {"type": "apiKey", "in": "header", "name": "X-VB-Signature", "description": "With the signed X-VB-* headers of a trusted gateway."},
}


_REF = {"memory_id": "$response.body#/memory_id", "scope": "$response.body#/scope"}
#: OpenAPI links, so stateful fuzzing follows real ids: (path, method, status) -> links
LINKS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("/api/v1/memories", "post", "201"): {
        name: {"operationId": name, "parameters": _REF} for name in ("get_memory", "edit_memory", "forget", "approve", "reject", "promote")
    },
    ("/api/v1/grants", "post", "201"): {"revoke_grant": {"operationId": "revoke_grant", "parameters": {"grant_id": "$response.body#/grant_id"}}},
    ("/api/v1/inject-context", "get", "200"): {"revoke_manifest": {"operationId": "revoke_manifest", "parameters": {"manifest_id": "$response.body#/manifest_id"}}},
    ("/api/v1/inject-context", "post", "200"): {"revoke_manifest": {"operationId": "revoke_manifest", "parameters": {"manifest_id": "$response.body#/manifest_id"}}},
}


def openapi(app: Any) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    spec = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version, summary=app.summary, description=app.description, routes=app.routes)
    components = spec.setdefault("components", {})
    components.setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    components["securitySchemes"] = SECURITY_SCHEMES
    alternatives = [{name: []} for name in SECURITY_SCHEMES]
    for path, item in spec.get("paths", {}).items():
        if path.startswith("/api/"):
            for operation in item.values():
                operation["security"] = alternatives
    for (path, method, status), links in LINKS.items():
        spec["paths"][path][method]["responses"][status]["links"] = links
    app.openapi_schema = spec = copy.deepcopy(spec)  # nothing shared with module constants a consumer could mutate
    return spec
