"""The memory service: the bridge as the one authenticated HTTP boundary.

    request -> limits (body/query size) -> EdgeAuthenticator (credential -> MemoryIdentity)
            -> rate limit (per identity) -> route: one request model -> one operation
            -> MemoryBridge.execute (timeout) -> response model | problem+json (errors.py)

Layout: `settings` (ServiceSettings), `auth` (credentials at the edge), `problems` (the error
tree -> RFC 9457, once), `limits` (body/query size, token buckets), `observability` (metrics and
JSON access logs), `schemas` (request/response models; none names the caller), `routes/`,
`app` (`create_app`), `server` (`serve`, what `viking-bridge serve` runs), `openapi` (the
committed spec). This package must never build an identity from a body, a query parameter or
an unsigned header; and never return a stack trace.
"""

from bridge.doors.http.app import create_app

__all__ = ["create_app"]
