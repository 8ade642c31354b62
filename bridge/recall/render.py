"""Recall stage "render": recalled memories as a context block in which every item says where it came from.

Invariant 5: each line carries the scope, the author, why it was visible (own scope, grant,
injection), and conflicting sources if any. Memory content is data: it is rendered as one JSON
string literal (quotes, newlines and control characters escaped) with `<` `>` replaced, so a
memory cannot close the block, start a new item or impersonate a label.
"""

from __future__ import annotations

from json.encoder import encode_basestring  # type: ignore[attr-defined]

from bridge.results import RecalledMemory
from bridge.recall.budget import fold_spaces

from bridge.recall.context import RecallContext, RecallRuntime


def _escape(text: str) -> str:
    # encode_basestring is what json.dumps(text, ensure_ascii=False) returns for a str, without
    # building a JSONEncoder per call
    text = text.replace("<", "‹").replace(">", "›")
    if text.isascii():
        # The usual case, without fold_spaces' isprintable scan: encode_basestring lengthens the
        # text by more than its two quotes iff it escapes something, and it escapes every
        # character below 0x20, which holds every ASCII character str.split() splits on except
        # the space (tests/bridge/test_recall_stages_reference.py checks both). Nothing escaped: the only
        # whitespace is spaces, so the text is folded when none is doubled, leading or trailing.
        quoted = encode_basestring(text)
        if len(quoted) == len(text) + 2 and "  " not in text and text[:1] != " " and text[-1:] != " ":
            return quoted
    return encode_basestring(fold_spaces(text))


def render_context(identity: str, purpose: str, items: list[RecalledMemory], *, partial: bool = False) -> str:
    head = f'<memory-context for="{identity}" purpose="{purpose}" items="{len(items)}"' + (' partial="true"' if partial else "")
    if not items:
        return head + "/>"
    lines = [head + ">"]
    add = lines.append
    for n, item in enumerate(items, 1):
        why = item.why_visible
        label = f"scope={item.scope}; author={item.author}; visible: {why}"
        if item.grant_id and not item.injected_by and item.grant_id not in why:
            label += f"; grant={item.grant_id}"
        if item.injected_by:
            label += "; read-only" if f"injected by {item.injected_by}" in why else f"; injected_by={item.injected_by} (read-only)"
        if item.status != "active":
            label += f"; status={item.status}"
        if item.conflicts_with:
            label += "; overrides " + ", ".join(f"{c.scope}#{c.memory_id[:8]}" for c in item.conflicts_with)
        add(f"{n}. [{item.kind}] {_escape(item.content)}\n   ({label}; id={item.memory_id})")  # two lines of the block
    add("</memory-context>")
    return "\n".join(lines)


def stage(rt: RecallRuntime, ctx: RecallContext) -> None:
    ctx.context = render_context(ctx.identity.principal, ctx.op.purpose.value, ctx.items, partial=bool(ctx.failed))
