"""Recall stage "render": recalled memories as a context block in which every item says where it came from.

Invariant 5: each line carries the scope, the author, why it was visible (own scope, grant,
injection), and conflicting sources if any. Memory content is data: it is rendered as one JSON
string literal (quotes, newlines and control characters escaped) with `<` `>` replaced, so a
memory cannot close the block, start a new item or impersonate a label.
"""

from __future__ import annotations

import json

from typing import TYPE_CHECKING

from bridge.models import RecalledMemory

if TYPE_CHECKING:
    from bridge.recall.context import RecallContext
    from bridge.runtime import BridgeRuntime


def _escape(text: str) -> str:
    return json.dumps(" ".join(text.replace("<", "‹").replace(">", "›").split()), ensure_ascii=False)


def render_context(identity: str, purpose: str, items: list[RecalledMemory], *, partial: bool = False) -> str:
    head = f'<memory-context for="{identity}" purpose="{purpose}" items="{len(items)}"' + (' partial="true"' if partial else "")
    if not items:
        return head + "/>"
    lines = [head + ">"]
    for n, item in enumerate(items, 1):
        label = [f"scope={item.scope}", f"author={item.author}", f"visible: {item.why_visible}"]
        if item.grant_id and not item.injected_by and item.grant_id not in item.why_visible:
            label.append(f"grant={item.grant_id}")
        if item.injected_by:
            label.append("read-only" if f"injected by {item.injected_by}" in item.why_visible else f"injected_by={item.injected_by} (read-only)")
        if item.status != "active":
            label.append(f"status={item.status}")
        if item.conflicts_with:
            label.append("overrides " + ", ".join(f"{c.scope}#{c.memory_id[:8]}" for c in item.conflicts_with))
        lines.append(f"{n}. [{item.kind}] {_escape(item.content)}")
        lines.append(f"   ({'; '.join(label)}; id={item.memory_id})")
    lines.append("</memory-context>")
    return "\n".join(lines)


def stage(rt: "BridgeRuntime", ctx: "RecallContext") -> None:
    ctx.context = render_context(ctx.identity.principal, ctx.op.purpose.value, ctx.items, partial=bool(ctx.failed))
