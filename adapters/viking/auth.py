"""Credentials for hosted Viking Memory: an API key (Bearer) or an AK/SK pair signed with SignerV4.

Both are `httpx.Auth` flows, so the client never touches a secret itself. What this module must
never do: put a secret into a repr, a log line or an exception message. `secrets()` lists the
values the client scrubs from any text it surfaces (server messages included).

SignerV4 (Volcengine's request signature, service `air`) hashes the *exact body bytes sent*; the
client therefore always sends `content=<bytes>`, never `json=`. The algorithm, checked byte for
byte against `volcengine.auth.SignerV4` in tests/viking/test_signer.py:

    canonical  = METHOD \\n path \\n sorted-query \\n {name:value\\n for signed headers} \\n
                 signed-header-names(;) \\n sha256hex(body)
    to_sign    = HMAC-SHA256 \\n X-Date \\n yyyymmdd/region/air/request \\n sha256hex(canonical)
    key        = HMAC(HMAC(HMAC(HMAC(sk, yyyymmdd), region), service), "request")
    signed headers = content-type, content-md5, host and every x-* header, lower-cased, sorted
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
from typing import Callable, Generator, Iterable, Mapping
from urllib.parse import quote

import httpx

from adapters.errors import BackendMisconfigured
from adapters.shared.http import REDACTED

__all__ = ["ApiKeyAuth", "SignerV4Auth", "VikingAuth", "sign_v4", "canonical_request_v4"]


class ApiKeyAuth(httpx.Auth):
    """`Authorization: Bearer <key>`; a key is granted per collection and cannot manage collections."""

    def __init__(self, api_key: str) -> None:
        if not api_key or not isinstance(api_key, str):
            raise BackendMisconfigured("api_key must be a non-empty string", backend="viking")
        self._api_key = api_key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._api_key}"
        yield request

    def secrets(self) -> tuple[str, ...]:
        return (self._api_key,)

    def __repr__(self) -> str:
        return f"ApiKeyAuth(api_key={REDACTED})"


def _norm_path(path: str) -> str:
    return quote(path or "/").replace("%2F", "/").replace("+", "%20")


def _norm_query(params: Iterable[tuple[str, str]]) -> str:
    items = sorted(params, key=lambda kv: kv[0])
    return "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in items).replace("+", "%20")


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def canonical_request_v4(
    method: str, path: str, query: Iterable[tuple[str, str]], headers: Mapping[str, str], body: bytes
) -> tuple[str, str, str]:
    """(canonical request, signed header names, body hash). `headers` must already hold X-Date."""
    body_hash = hashlib.sha256(body).hexdigest()
    signed: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        if low in ("content-type", "content-md5", "host") or low.startswith("x-"):
            signed[low] = value
    if "host" in signed and ":" in signed["host"]:
        host, _, port = signed["host"].partition(":")
        if port in ("80", "443"):
            signed["host"] = host
    names = ";".join(sorted(signed))
    header_block = "".join(f"{k}:{signed[k]}\n" for k in sorted(signed))
    canonical = "\n".join([method.upper(), _norm_path(path), _norm_query(query), header_block, names, body_hash])
    return canonical, names, body_hash


def sign_v4(
    *,
    ak: str,
    sk: str,
    region: str,
    service: str,
    method: str,
    path: str,
    query: Iterable[tuple[str, str]],
    headers: Mapping[str, str],
    body: bytes,
    x_date: str,
) -> str:
    """The `Authorization` header value for a request whose headers already carry X-Date and
    X-Content-Sha256 (both are signed, as `x-*` headers)."""
    canonical, names, _ = canonical_request_v4(method, path, query, headers, body)
    day = x_date[:8]
    scope = f"{day}/{region}/{service}/request"
    to_sign = "\n".join(["HMAC-SHA256", x_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(sk.encode("utf-8"), day), region), service), "request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders={names}, Signature={signature}"


def _utc_now() -> _dt.datetime:
    return _dt.datetime.now(tz=_dt.timezone.utc)


class SignerV4Auth(httpx.Auth):
    """AK/SK request signing (service `air`). `clock` is injectable for deterministic tests."""

    def __init__(
        self,
        access_key: str,
        secret_key: str,
        *,
        region: str = "cn-beijing",
        service: str = "air",
        session_token: str | None = None,
        clock: Callable[[], _dt.datetime] = _utc_now,
    ) -> None:
        if not access_key or not secret_key:
            raise BackendMisconfigured("access_key and secret_key must be non-empty", backend="viking")
        self._ak = access_key
        self._sk = secret_key
        self._token = session_token
        self.region = region
        self.service = service
        self._clock = clock

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        body = request.content  # the exact bytes that go on the wire
        x_date = self._clock().astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        request.headers["X-Date"] = x_date
        request.headers["X-Content-Sha256"] = hashlib.sha256(body).hexdigest()
        if self._token:
            request.headers["X-Security-Token"] = self._token
        request.headers["Authorization"] = sign_v4(
            ak=self._ak,
            sk=self._sk,
            region=self.region,
            service=self.service,
            method=request.method,
            path=request.url.path,
            query=request.url.params.multi_items(),
            headers={k: v for k, v in request.headers.items() if k.lower() != "authorization"},
            body=body,
            x_date=x_date,
        )
        yield request

    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self._sk, self._token) if s)

    def __repr__(self) -> str:
        return f"SignerV4Auth(access_key={self._ak[:4]}…, secret_key={REDACTED}, region={self.region!r}, service={self.service!r})"


VikingAuth = ApiKeyAuth | SignerV4Auth
