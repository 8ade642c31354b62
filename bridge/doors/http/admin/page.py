"""The console's page and its two static files, with a strict Content-Security-Policy.

The CSP allows scripts, styles and requests from this origin only, no inline script or style,
no plugins, no framing, and requires Trusted Types with no policy: the browser itself refuses
any HTML-string sink (`innerHTML`), so text from memories can only ever be rendered as text.
These files (page, script, stylesheet, icon) hold no data and need no credential (`PUBLIC_PATHS`); they must never embed any.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

__all__ = ["router", "PUBLIC_PATHS", "CSP", "SECURITY_HEADERS"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), clipboard-read=()",
    "Cache-Control": "no-store",
}
_FILES = {
    "/admin": ("index.html", "text/html; charset=utf-8"),
    "/admin/": ("index.html", "text/html; charset=utf-8"),
    "/admin/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/admin/console.css": ("console.css", "text/css; charset=utf-8"),
    "/admin/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
PUBLIC_PATHS = frozenset(_FILES)
router = APIRouter(include_in_schema=False)


def _static(name: str) -> bytes:
    return resources.files("bridge.doors.http.admin").joinpath("static", name).read_bytes()


def _route(path: str, name: str, media_type: str) -> None:
    body = _static(name)

    async def serve() -> Response:
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    router.add_api_route(path, serve, methods=["GET"], name=f"admin_console_{path.strip('/').replace('/', '_').replace('.', '_')}")


for _path, (_name, _type) in _FILES.items():
    _route(_path, _name, _type)
