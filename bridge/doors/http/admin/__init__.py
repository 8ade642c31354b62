"""The admin console: a page at `/admin` and the tenant-admin JSON routes it calls.

`router` holds both; `PUBLIC_PATHS` are the page's own static files, which the edge serves
without a credential because they hold no data. Everything the page shows comes from `/api/v1`
with the admin's own credential: the console has no authority of its own, no server-side
session, and sees exactly what that credential may see (docs/admin-console.md).
"""

from __future__ import annotations

from fastapi import APIRouter

from bridge.doors.http.admin import api, page

__all__ = ["router", "PUBLIC_PATHS"]

router = APIRouter()
router.include_router(api.router)
router.include_router(page.router)
PUBLIC_PATHS = page.PUBLIC_PATHS
