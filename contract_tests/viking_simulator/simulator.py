"""The Viking Memory simulator (see the package docstring for what it models and why)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
import time as _time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable
from urllib.parse import quote

import httpx
import numpy as np

from adapters.shared.embedding import HashingEmbedder

__all__ = ["VikingSimulator", "Fault", "StoredEvent", "SimError"]

ID_RULE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")  # stricter-than-documented for user/assistant/group ids
SESSION_RULE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")  # documented: [A-Za-z0-9_], starts with a letter, <=128
COLLECTION_RULE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
FILTER_KEYS = {"user_id", "assistant_id", "group_id", "session_id", "memory_type", "start_time", "end_time"}
MAX_MESSAGES = 1000
MAX_LIMIT = 5000
_HTTP_OF_CODE = {
    1000001: 400,  # the service answers "api key auth failed" with HTTP 400
    1000003: 400,
    1000005: 404,
    1000011: 404,
    1000019: 400,
    1000023: 503,
    1000025: 500,
    1000028: 500,
    1000029: 429,
}


class SimError(Exception):
    def __init__(self, code: int, message: str, http_status: int | None = None) -> None:
        self.code = code
        self.message = message
        self.http_status = http_status or _HTTP_OF_CODE.get(code, 400)
        super().__init__(message)


@dataclass
class Fault:
    """One injected failure. `kind`:
    - "http": answer `status` with a {code,message} envelope (code defaults to none for 5xx);
    - "code": answer the Viking `code` (HTTP status from the code table unless `status` given);
    - "timeout": raise httpx.ReadTimeout; "connect": raise httpx.ConnectError (never sent);
    - "commit_then_fail": APPLY the request, then answer `status` (an ambiguous failure).
    `path` restricts it to paths containing that text; `match(path, body)` to matching bodies;
    `times` is how many requests it hits (-1: all)."""

    kind: str
    status: int | None = None
    code: int | None = None
    retry_after: str | None = None
    path: str | None = None
    match: Callable[[str, dict[str, Any]], bool] | None = None
    times: int = 1
    hits: int = 0

    def applies(self, path: str, body: dict[str, Any]) -> bool:
        if self.times == 0:
            return False
        if self.path is not None and self.path not in path:
            return False
        if self.match is not None and not self.match(path, body):
            return False
        return True


@dataclass
class StoredEvent:
    id: str
    memory_type: str
    user_id: list[str]
    assistant_id: list[str]
    group_id: str | None
    session_id: str | None
    time: int
    memory_info: dict[str, Any]
    visible_at: float
    is_profile: bool = False
    vector: np.ndarray | None = None

    def text(self) -> str:
        info = self.memory_info
        value = info.get("summary") or info.get("user_profile") or ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def as_result(self, score: float) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": score,
            "memory_type": self.memory_type,
            "user_id": list(self.user_id),
            "assistant_id": list(self.assistant_id),
            "group_id": self.group_id,
            "session_id": self.session_id,
            "time": self.time,
            "memory_info": dict(self.memory_info),
        }


@dataclass
class Collection:
    name: str
    project: str
    event_types: set[str]
    profile_types: set[str]
    events: dict[str, StoredEvent] = field(default_factory=dict)
    first_write_at: float | None = None


class VikingSimulator:
    """An in-process Viking Memory. Switches (all off by default):

    - `search_lag` / `extraction_lag`: seconds (manual clock) before event/add or session/add
      results become searchable;
    - `index_init_delay`: searches answer 1000023 until this long after a collection's first write;
    - `latency`: seconds awaited (through the injectable `sleep`) before each answer;
    - `legacy_errors`: answer data-plane errors in the older ResponseMetadata form;
    - `inject(Fault(...))`: 429/1000029, 5xx, 1000023, timeouts, connect errors, commit-then-fail;
    - `foreign_hits`: raw result items appended to every search answer (a misbehaving service);
    - `require_auth`: check bearer keys / SignerV4 signatures (on by default).
    """

    def __init__(
        self,
        *,
        region: str = "cn-beijing",
        embedder: HashingEmbedder | None = None,
        start_time: float | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.region = region
        self.embedder = embedder or HashingEmbedder(dimension=256)
        self.now = _time.time() if start_time is None else start_time
        self.collections: dict[tuple[str, str], Collection] = {}
        self.api_keys: dict[str, set[str] | None] = {}
        self.credentials: dict[str, str] = {}  # ak -> sk
        self.require_auth = True
        self.search_lag = 0.0
        self.extraction_lag = 0.0
        self.index_init_delay = 0.0
        self.latency = 0.0
        self.legacy_errors = False
        self.faults: list[Fault] = []
        self.foreign_hits: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._sleep = sleep
        self._ids = itertools.count(1)

    # -- setup ----------------------------------------------------------------------------
    def create_collection(
        self, name: str, *, project: str = "default", event_types: Iterable[str] = ("sys_event_v1",), profile_types: Iterable[str] = ("sys_profile_v1",)
    ) -> None:
        if not COLLECTION_RULE.match(name):
            raise ValueError(f"bad collection name {name!r}")
        self.collections[(project, name)] = Collection(name, project, set(event_types), set(profile_types))

    def add_api_key(self, key: str, *, collections: Iterable[str] | None = None) -> None:
        """A bearer key granted for `collections` (None: every collection)."""
        self.api_keys[key] = None if collections is None else set(collections)

    def add_credentials(self, access_key: str, secret_key: str) -> None:
        self.credentials[access_key] = secret_key

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def inject(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def events(self, collection: str, project: str = "default") -> list[StoredEvent]:
        return list(self.collections[(project, collection)].events.values())

    def all_events(self) -> list[StoredEvent]:
        return [e for c in self.collections.values() for e in c.events.values()]

    def calls_to(self, fragment: str) -> list[dict[str, Any]]:
        return [body for path, body in self.calls if fragment in path]

    # -- transport entry point ------------------------------------------------------------
    async def handler(self, request: httpx.Request) -> httpx.Response:
        raw = await request.aread()
        path = request.url.path
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        self.calls.append((path, body if isinstance(body, dict) else {}))
        if self.latency and self._sleep is not None:
            await self._sleep(self.latency)
        pascal = "/collection/" in path
        fault = next((f for f in self.faults if f.applies(path, body if isinstance(body, dict) else {})), None)
        if fault is not None:
            fault.hits += 1
            if fault.times > 0:
                fault.times -= 1
            if fault.kind == "timeout":
                raise httpx.ReadTimeout("simulated timeout", request=request)
            if fault.kind == "connect":
                raise httpx.ConnectError("simulated connect failure", request=request)
            if fault.kind != "commit_then_fail":
                return self._fault_response(fault, pascal)
        try:
            if body is None or not isinstance(body, dict):
                raise SimError(1000003, "request body is not a JSON object")
            if self.require_auth and path != "/api/memory/ping":
                self._authenticate(request, raw, body, pascal)
            result = self._dispatch(request.method, path, body)
        except SimError as err:
            return self._error(err, pascal)
        if fault is not None:  # commit_then_fail: the write happened, the answer is lost
            return self._fault_response(fault, pascal)
        return self._ok(result, pascal, path)

    # -- envelopes ------------------------------------------------------------------------
    def _rid(self) -> str:
        return f"sim-{next(self._ids):08d}"

    def _ok(self, data: dict[str, Any], pascal: bool, path: str) -> httpx.Response:
        if pascal:
            action = path.rsplit("/", 1)[-1].capitalize() + "Collection"
            return httpx.Response(200, json={"ResponseMetadata": {"RequestId": self._rid(), "Action": action}, "Result": data})
        return httpx.Response(200, json={"code": 0, "message": "success", "data": data, "request_id": self._rid()})

    def _error(self, err: SimError, pascal: bool, headers: dict[str, str] | None = None) -> httpx.Response:
        if pascal or self.legacy_errors:
            payload = {"ResponseMetadata": {"RequestId": self._rid(), "Error": {"Code": str(err.code), "Message": err.message}}}
        else:
            payload = {"code": err.code, "message": err.message, "request_id": self._rid()}
        return httpx.Response(err.http_status, json=payload, headers=headers)

    def _fault_response(self, fault: Fault, pascal: bool) -> httpx.Response:
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else None
        if fault.kind in ("code",) and fault.code is not None:
            return self._error(SimError(fault.code, f"simulated code {fault.code}", fault.status), pascal, headers)
        status = fault.status or 500
        if fault.code is not None:
            return self._error(SimError(fault.code, f"simulated code {fault.code}", status), pascal, headers)
        return httpx.Response(status, text="<html>upstream error</html>" if status >= 500 else "", headers=headers)

    # -- authentication -------------------------------------------------------------------
    def _authenticate(self, request: httpx.Request, raw: bytes, body: dict[str, Any], pascal: bool) -> None:
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer "):
            if pascal:
                raise SimError(1000001, "api key auth cannot manage collections")
            grant = self.api_keys.get(header[len("Bearer ") :], False)
            if grant is False:
                raise SimError(1000001, "api key auth failed")
            if grant is not None and body.get("collection_name") not in grant:
                raise SimError(1000001, "api key auth failed")
            return
        if header.startswith("HMAC-SHA256 "):
            self._verify_signature(request, raw, header)
            return
        raise SimError(1000001, "missing authorization")

    def _verify_signature(self, request: httpx.Request, raw: bytes, header: str) -> None:
        m = re.fullmatch(r"HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})", header)
        if not m:
            raise SimError(1000001, "malformed authorization header")
        ak, day, region, service, signed_names, signature = m.groups()
        sk = self.credentials.get(ak)
        if sk is None:
            raise SimError(1000001, "unknown access key")
        if service != "air" or region != self.region:
            raise SimError(1000001, "credential scope does not match service air / region")
        x_date = request.headers.get("x-date", "")
        if not x_date.startswith(day):
            raise SimError(1000001, "X-Date does not match the credential scope")
        body_hash = hashlib.sha256(raw).hexdigest()
        if request.headers.get("x-content-sha256") != body_hash:
            raise SimError(1000001, "X-Content-Sha256 does not match the body")
        names = signed_names.split(";")
        for required in ("host", "x-date", "x-content-sha256"):
            if required not in names:
                raise SimError(1000001, f"{required} must be signed")
        lines = []
        for name in names:
            value = request.headers.get(name)
            if value is None:
                raise SimError(1000001, f"signed header {name} missing")
            if name == "host" and value.endswith((":80", ":443")):
                value = value.rsplit(":", 1)[0]
            lines.append(f"{name}:{value}\n")
        query = "&".join(
            f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(request.url.params.multi_items())
        )
        canonical = "\n".join([request.method, quote(request.url.path), query, "".join(lines), signed_names, body_hash])
        to_sign = "\n".join(["HMAC-SHA256", x_date, f"{day}/{region}/{service}/request", hashlib.sha256(canonical.encode()).hexdigest()])
        key = sk.encode()
        for part in (day, region, service, "request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            raise SimError(1000001, "signature does not match")

    # -- dispatch -------------------------------------------------------------------------
    def _dispatch(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path == "/api/memory/ping":
            return {"status": "ok"}
        if path.startswith("/api/memory/collection/"):
            return self._collection_api(path.rsplit("/", 1)[-1], body)
        if method != "POST":
            raise SimError(1000003, f"{method} not allowed", 405)
        routes: dict[str, Callable[[Collection, dict[str, Any]], dict[str, Any]]] = {
            "/api/memory/session/add": self._session_add,
            "/api/memory/event/add": self._event_add,
            "/api/memory/event/update": self._event_update,
            "/api/memory/event/delete": self._event_delete,
            "/api/memory/event/batch_delete": self._batch_delete,
            "/api/memory/profile/add": self._profile_add,
            "/api/memory/profile/delete": self._event_delete,
            "/api/memory/search": lambda c, b: self._search(c, b, "unified"),
            "/api/memory/event/search": lambda c, b: self._search(c, b, "event"),
            "/api/memory/profile/search": lambda c, b: self._search(c, b, "profile"),
            "/api/memory/get_context": self._get_context,
        }
        route = routes.get(path)
        if route is None:
            raise SimError(1000003, f"unknown path {path}", 404)
        return route(self._collection(body), body)

    def _collection(self, body: dict[str, Any]) -> Collection:
        name = body.get("collection_name")
        project = body.get("project_name") or "default"
        if not isinstance(name, str) or not name:
            raise SimError(1000003, "collection_name is required")
        coll = self.collections.get((project, name))
        if coll is None:
            raise SimError(1000005, f"collection {name} does not exist")
        return coll

    @staticmethod
    def _check_id(value: Any, what: str) -> str:
        if not isinstance(value, str) or not ID_RULE.match(value):
            raise SimError(1000003, f"invalid {what}: {value!r}")
        return value

    def _id_list(self, value: Any, what: str) -> list[str]:
        if value is None:
            return []
        values = value if isinstance(value, list) else [value]
        return [self._check_id(v, what) for v in values]

    def _new_event_id(self, prefix: str = "ev") -> str:
        return f"{prefix}{next(self._ids):010d}"

    # -- writes ---------------------------------------------------------------------------
    def _event_add(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        etype = body.get("event_type")
        if etype not in coll.event_types:
            raise SimError(1000003, f"event_type {etype!r} is not defined in the collection")
        info = body.get("memory_info")
        if not isinstance(info, dict) or not info:
            raise SimError(1000003, "memory_info must be a non-empty object")
        users = self._id_list(body.get("user_id"), "user_id")
        assistants = self._id_list(body.get("assistant_id"), "assistant_id")
        if not users and not assistants:
            raise SimError(1000003, "user_id or assistant_id is required")
        group = body.get("group_id")
        if group is not None:
            self._check_id(group, "group_id")
        ev = StoredEvent(
            id=self._new_event_id(),
            memory_type=etype,
            user_id=users,
            assistant_id=assistants,
            group_id=group,
            session_id=None,
            time=int(body.get("time") or self.now * 1000),
            memory_info=dict(info),
            visible_at=self.now + self.search_lag,
        )
        self._store(coll, ev)
        return {"event_id": ev.id}

    def _store(self, coll: Collection, ev: StoredEvent) -> None:
        ev.vector = self.embedder.embed_one(ev.text())
        coll.events[ev.id] = ev
        if coll.first_write_at is None:
            coll.first_write_at = self.now

    def _event_update(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        eid = body.get("event_id") or body.get("profile_id")
        ev = coll.events.get(eid) if isinstance(eid, str) else None
        if ev is None:
            raise SimError(1000011, f"event {eid!r} not found")
        info = body.get("memory_info")
        if not isinstance(info, dict):
            raise SimError(1000003, "memory_info must be an object")
        ev.memory_info.update(info)
        ev.vector = self.embedder.embed_one(ev.text())
        return {"event_id": ev.id}

    def _event_delete(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        eid = body.get("event_id") or body.get("profile_id")
        if not isinstance(eid, str) or eid not in coll.events:
            raise SimError(1000011, f"event {eid!r} not found")
        del coll.events[eid]
        return {}

    def _batch_delete(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        flt = body.get("filter")
        if not isinstance(flt, dict):
            raise SimError(1000003, "filter is required")
        unknown = set(flt) - {"user_id", "assistant_id", "group_id", "event_type"}
        if unknown:
            raise SimError(1000019, f"unknown filter keys {sorted(unknown)}")
        users = set(self._id_list(flt.get("user_id"), "user_id"))
        assistants = set(self._id_list(flt.get("assistant_id"), "assistant_id"))
        if not users and not assistants:
            raise SimError(1000003, "filter needs user_id or assistant_id")
        groups = set(self._id_list(flt.get("group_id"), "group_id"))
        etype = flt.get("event_type")
        doomed = [
            e.id
            for e in coll.events.values()
            if not e.is_profile
            and (not users or users & set(e.user_id))
            and (not assistants or assistants & set(e.assistant_id))
            and (not groups or e.group_id in groups)
            and (etype is None or e.memory_type == etype)
        ]
        for eid in doomed:
            del coll.events[eid]
        return {"deleted_count": len(doomed)}

    def _profile_add(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        ptype = body.get("profile_type")
        if ptype not in coll.profile_types:
            raise SimError(1000003, f"profile_type {ptype!r} is not defined in the collection")
        info = body.get("memory_info")
        if not isinstance(info, dict):
            raise SimError(1000003, "memory_info must be an object")
        users = self._id_list(body.get("user_id"), "user_id")
        assistants = self._id_list(body.get("assistant_id"), "assistant_id")
        if not users and not assistants:
            raise SimError(1000003, "user_id or assistant_id is required")
        group = body.get("group_id")
        if body.get("is_upsert", True):
            for e in list(coll.events.values()):
                if e.is_profile and e.memory_type == ptype and e.user_id == users and e.assistant_id == assistants and e.group_id == group:
                    e.memory_info = dict(info)
                    e.vector = self.embedder.embed_one(e.text())
                    return {"profile_id": e.id}
        ev = StoredEvent(self._new_event_id("pf"), ptype, users, assistants, group, None, int(self.now * 1000), dict(info), self.now + self.search_lag, True)
        self._store(coll, ev)
        return {"profile_id": ev.id}

    def _session_add(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        sid = body.get("session_id")
        if not isinstance(sid, str) or not SESSION_RULE.match(sid):
            raise SimError(1000003, f"invalid session_id {sid!r}")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise SimError(1000003, "messages must be a non-empty list")
        if len(messages) > MAX_MESSAGES:
            raise SimError(1000003, f"at most {MAX_MESSAGES} messages per session")
        meta = body.get("metadata") or {}
        if not isinstance(meta, dict):
            raise SimError(1000003, "metadata must be an object")
        user = meta.get("default_user_id")
        assistant = meta.get("default_assistant_id")
        users = self._id_list(user, "default_user_id")
        assistants = self._id_list(assistant, "default_assistant_id")
        if not users and not assistants:
            raise SimError(1000003, "metadata needs default_user_id or default_assistant_id")
        group = meta.get("group_id")
        if group is not None:
            self._check_id(group, "group_id")
        for m in messages:
            if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system") or not isinstance(m.get("content"), str):
                raise SimError(1000003, "each message needs role user|assistant|system and string content")
        # Reusing a session id OVERWRITES what that session produced before.
        for eid in [e.id for e in coll.events.values() if e.session_id == sid]:
            del coll.events[eid]
        if "sys_event_v1" in coll.event_types:
            for m in messages:
                if m["role"] != "user" or not m["content"].strip():
                    continue
                ev = StoredEvent(
                    id=self._new_event_id("ex"),
                    memory_type="sys_event_v1",
                    user_id=list(users),
                    assistant_id=list(assistants),
                    group_id=group,
                    session_id=sid,
                    time=int(m.get("time") or meta.get("time") or self.now * 1000),
                    memory_info={"summary": m["content"]},
                    visible_at=self.now + self.extraction_lag,
                )
                self._store(coll, ev)
        return {"session_id": sid, "task_id": f"task_{sid[:24]}"}

    # -- reads ----------------------------------------------------------------------------
    def _matching(self, coll: Collection, body: dict[str, Any], kind: str) -> list[StoredEvent]:
        flt = body.get("filter")
        if not isinstance(flt, dict):
            raise SimError(1000003, "filter is required")
        unknown = set(flt) - FILTER_KEYS
        if unknown:
            raise SimError(1000019, f"unknown filter keys {sorted(unknown)}")
        users = set(self._id_list(flt.get("user_id"), "user_id"))
        assistants = set(self._id_list(flt.get("assistant_id"), "assistant_id"))
        if not users and not assistants:
            raise SimError(1000003, "filter needs user_id or assistant_id")
        types = flt.get("memory_type")
        if types is not None:
            if isinstance(types, str):
                types = [types]
            if not isinstance(types, list) or not types:
                raise SimError(1000019, "memory_type must be a non-empty list")
            known = coll.event_types | coll.profile_types
            bad = [t for t in types if t not in known]
            if bad:
                raise SimError(1000019, f"memory_type {bad} not defined in the collection")
        elif kind in ("event", "profile"):
            raise SimError(1000003, f"memory_type is required for {kind} search")
        groups = set(self._id_list(flt.get("group_id"), "group_id"))
        sessions = set(self._id_list(flt.get("session_id"), "session_id"))
        start, end = flt.get("start_time"), flt.get("end_time")
        if coll.first_write_at is not None and self.now < coll.first_write_at + self.index_init_delay:
            raise SimError(1000023, "index is initialising")
        out = []
        for e in coll.events.values():
            if e.visible_at > self.now:
                continue
            if (kind == "event" and e.is_profile) or (kind == "profile" and not e.is_profile):
                continue
            if users and not users & set(e.user_id):
                continue
            if assistants and not assistants & set(e.assistant_id):
                continue
            if groups and e.group_id not in groups:
                continue
            if sessions and e.session_id not in sessions:
                continue
            if types is not None and e.memory_type not in types:
                continue
            if start is not None and e.time < start:
                continue
            if end is not None and e.time > end:
                continue
            out.append(e)
        return out

    def _search(self, coll: Collection, body: dict[str, Any], kind: str) -> dict[str, Any]:
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise SimError(1000003, f"limit must be within 1..{MAX_LIMIT}")
        query = body.get("query")
        if query is not None and (not isinstance(query, str) or len(query) > 4000):
            raise SimError(1000003, "query must be a string of at most 4000 characters")
        matches = self._matching(coll, body, kind)
        if query:
            qv = self.embedder.embed_one(query)
            scored = [(max(0.0, min(1.0, float(np.dot(qv, e.vector)))), e) for e in matches]
            scored.sort(key=lambda se: (-se[0], -se[1].time, se[1].id))
        else:
            scored = [(1.0, e) for e in sorted(matches, key=lambda e: (-e.time, e.id))]
        results = [e.as_result(s) for s, e in scored[:limit]]
        results.extend(dict(h) for h in self.foreign_hits)
        return {"result_list": results, "count": len(results)}

    def _get_context(self, coll: Collection, body: dict[str, Any]) -> dict[str, Any]:
        found = self._search(coll, {**body, "limit": body.get("limit") or 10}, "unified")["result_list"]
        events = [r for r in found if not r["id"].startswith("pf")]
        profiles = [r for r in found if r["id"].startswith("pf")]
        text = "\n".join(str(r["memory_info"].get("summary") or r["memory_info"].get("user_profile") or "") for r in found)
        return {"events": events, "profiles": profiles, "context": text}

    # -- collection API (PascalCase) ------------------------------------------------------
    def _collection_api(self, action: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body.get("CollectionName")
        project = body.get("ProjectName") or "default"
        if not isinstance(name, str) or not COLLECTION_RULE.match(name):
            raise SimError(1000003, f"invalid CollectionName {name!r}")
        key = (project, name)
        if action == "create":
            if key in self.collections:
                raise SimError(1000003, f"collection {name} already exists")
            custom = [s.get("EventType") for s in body.get("CustomEventTypeSchemas") or [] if isinstance(s, dict)]
            self.create_collection(name, project=project, event_types=list(body.get("BuiltinEventTypes") or ["sys_event_v1"]) + [c for c in custom if c])
            return {"CollectionName": name, "ProjectName": project, "ResourceId": f"mem-{hashlib.sha256(name.encode()).hexdigest()[:12]}"}
        coll = self.collections.get(key)
        if coll is None:
            raise SimError(1000005, f"collection {name} does not exist")
        if action == "info":
            return {
                "CollectionName": name,
                "ProjectName": project,
                "EventTypes": sorted(coll.event_types),
                "ProfileTypes": sorted(coll.profile_types),
                "Stat": {"EventCount": sum(not e.is_profile for e in coll.events.values())},
            }
        if action == "delete":
            del self.collections[key]
            return {}
        if action == "list":
            return {"Collections": [c.name for c in self.collections.values() if c.project == project]}
        raise SimError(1000003, f"unknown collection action {action}")
