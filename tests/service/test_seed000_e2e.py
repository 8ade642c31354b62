"""Seed 000's loop end to end through the real server: examples/seed000_http.py must hold."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

from tests.service.servicekit import Service

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seed000_http.py"


def _example():
    spec = importlib.util.spec_from_file_location("seed000_http", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_seed000_parent_injects_child_recalls_marked_and_writes_back_with_lineage(service: Service) -> None:
    parent = service.api_key("u-tang", agent="tangseng-brain", workspace="hawk-bridge-backend")
    child = service.api_key("u-tang", agent="wukong", workspace="hawk-bridge-backend")
    out = io.StringIO()
    result = _example().run(service.url, parent, child, out)
    assert "FAIL" not in out.getvalue(), out.getvalue()
    assert result["write_back"]["derived_from"]
    assert any(m["injected_by"] for m in result["recall"]), "the minimal manifest injected none of the parent's memories"
