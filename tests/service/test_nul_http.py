"""A query with a NUL is the caller's mistake: 400, never a 503 `recall-incomplete` a client retries."""

from __future__ import annotations

from tests.service.servicekit import Service, assert_problem


def test_a_recall_query_with_a_nul_is_a_400(service: Service) -> None:
    c = service.client(service.api_key("nul-u1"))
    assert_problem(c.get("/api/v1/recall", params={"query": "a\x00b"}), 400)
    assert_problem(c.post("/api/v1/memories", json={"content": "a\x00b", "kind": "fact"}), 400)
