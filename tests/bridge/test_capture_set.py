"""The labelled capture set (benchmarks/capture_set.py): no captured memory is a cut-off piece
of what was said, and the rules keep the kinds and seed 003 scopes the labels give."""

from __future__ import annotations

from benchmarks.capture_set import messages, report, utterances


def test_the_capture_set_is_bilingual_and_has_hundreds_of_utterances() -> None:
    items = utterances()
    assert len(items) >= 300
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in u.text) for u in items)
    assert any("Next.js" in u.text for u in items) and any("\n- " in text for text, _ in messages(items))


def test_no_captured_memory_is_truncated_and_kinds_and_scopes_hold() -> None:
    result = report()
    assert result["truncations"] == 0, result
    assert result["chatter_captured"] == 0, result
    assert result["kind_accuracy"] >= 0.95 and result["scope_accuracy"] >= 0.95, result
