"""`unvalidated_builder` (routes/common.py) sets a model's state directly instead of calling
`model_construct`; the object it builds must be the one `model_construct` builds, state for
state, for the two models GET /recall builds on every request, and any call it cannot serve that
way must go to `model_construct` itself."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from bridge.doors.http.routes.common import unvalidated_builder
from bridge.doors.http.schemas import RecallRequest, RecallResponse
from bridge.results import MemoryRef, RecalledMemory

_ITEM = RecalledMemory(
    "m1", "workspace:acme/alpha", "workspace", "fact", 'Ünïcode "quoted"', 0.123456, "own workspace", "alice@assistant", "active", None, None,
    ("m0",), (MemoryRef("tenant:acme", "m9"),), (), 1.5e9,
)
_REQUESTS = [
    {"query": "q", "purpose": "chat", "budget_tokens": None, "kinds": None, "include_scopes": [], "manifest_id": None, "allow_partial": False,
     "min_score": None, "agent_id": None, "user_id": None, "only_scopes": None},
    {"query": "deploy 中文", "purpose": "coding", "budget_tokens": 12, "kinds": ["fact", "note"], "include_scopes": ["tenant:acme"], "manifest_id": "mf",
     "allow_partial": True, "min_score": 0.25, "agent_id": "a", "user_id": "u", "only_scopes": ["workspace:acme/alpha"]},
]
_RESPONSES = [
    {"identity": "alice@assistant", "purpose": "chat", "memories": [_ITEM, _ITEM], "context": "ctx", "tokens_used": 42,
     "scopes_searched": ["workspace:acme/alpha"], "partial": True, "failed_scopes": ["tenant:acme"], "guard_alarms": 1, "expired_dropped": 2},
    {"identity": "b@c", "purpose": "coding", "memories": [], "context": "", "tokens_used": 0, "scopes_searched": [], "partial": False,
     "failed_scopes": [], "guard_alarms": 0, "expired_dropped": 0},
]


def _state(model: BaseModel) -> tuple[Any, ...]:
    return (
        type(model), list(model.__dict__.items()), model.__pydantic_fields_set__, model.__pydantic_extra__, model.__pydantic_private__,
        model.model_dump_json(),
    )


@pytest.mark.parametrize(("model", "values"), [(RecallRequest, v) for v in _REQUESTS] + [(RecallResponse, v) for v in _RESPONSES])
def test_builds_what_model_construct_builds(model: type[BaseModel], values: dict[str, Any]) -> None:
    built = unvalidated_builder(model)(dict(values))
    assert _state(built) == _state(model.model_construct(**values))
    assert built == model.model_construct(**values)


def test_a_call_it_cannot_serve_goes_to_model_construct(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    original = RecallResponse.model_construct.__func__  # type: ignore[attr-defined]

    def spy(cls: type[RecallResponse], **values: Any) -> RecallResponse:
        calls.append(values)
        return original(cls, **values)

    monkeypatch.setattr(RecallResponse, "model_construct", classmethod(spy))
    build = unvalidated_builder(RecallResponse)
    full = dict(_RESPONSES[0])
    build(dict(full))
    assert calls == []  # the direct path, for every field in order
    missing = {k: v for k, v in full.items() if k != "guard_alarms"}
    shuffled = dict(reversed(list(full.items())))
    for values in (missing, shuffled, {**full, "surplus": 1}):
        assert _state(build(dict(values))) == _state(original(RecallResponse, **values))
    assert len(calls) == 3


def test_a_model_with_aliases_is_left_to_model_construct() -> None:
    class Aliased(BaseModel):
        name: str = Field(alias="Name")

    built = unvalidated_builder(Aliased)({"name": "x"})
    assert _state(built) == _state(Aliased.model_construct(name="x"))
