"""Template helpers for agent content. Everything here escapes: agent text is untrusted, and
JSON is shown as text, never as HTML (format_html escapes every argument)."""

import json
from decimal import Decimal
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

from contextstore.tokens import is_thinking, part_text

register = template.Library()

FOLD_CHARS = 600
TREE_DEPTH = 12
TREE_ITEMS = 200


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON as plain text (autoescaped by the template like any other string)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def is_long(text: str) -> bool:
    return len(text or "") > FOLD_CHARS or (text or "").count("\n") > 10


@register.filter
def is_text(value: Any) -> bool:
    return isinstance(value, str)


@register.filter
def duration(ms: int | None) -> str:
    """850 -> "850 ms", 2300 -> "2.3 s", 65000 -> "1 min 5 s"."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


@register.filter
def compact(value: int | float | Decimal | None) -> str:
    """1234 -> 1.2k, 2500000 -> 2.5M: counters that fit a table cell."""
    n = float(value or 0)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{int(n)}" if n == int(n) else f"{n:.2f}"


@register.filter
def money(value: Decimal | float | None) -> str:
    n = float(value or 0)
    return f"${n:.4f}" if 0 < n < 0.01 else f"${n:.2f}"


@register.filter
def split_parts(parts: Any) -> dict[str, list]:
    """An event's parts sorted for display: thinking (behind a toggle), text, and the rest as JSON."""
    out: dict[str, list] = {"thinking": [], "text": [], "other": []}
    if not isinstance(parts, list):
        return out
    for part in parts:
        if is_thinking(part):
            out["thinking"].append(part_text(part))
        elif isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            out["text"].append(part_text(part))
        else:
            out["other"].append(part)
    return out


def _scalar(value: Any) -> SafeString:
    kind = ("null" if value is None else "bool" if isinstance(value, bool)
            else "num" if isinstance(value, int | float) else "str")
    return format_html('<span class="j-{}">{}</span>', kind, json.dumps(value, ensure_ascii=False))


def _tree(value: Any, depth: int) -> SafeString:
    if not isinstance(value, dict | list) or not value:
        return _scalar(value) if not isinstance(value, dict | list) else format_html(
            '<span class="j-empty">{}</span>', "{}" if isinstance(value, dict) else "[]")
    if depth >= TREE_DEPTH:
        return format_html('<code class="j-deep">{}</code>', json.dumps(value, ensure_ascii=False))
    pairs = list(value.items() if isinstance(value, dict) else enumerate(value))
    shown = pairs[:TREE_ITEMS]
    rows = format_html_join(
        "", '<li><span class="j-key">{}</span>: {}</li>',
        ((k, _tree(v, depth + 1)) for k, v in shown),
    )
    more = format_html('<li class="muted">… {} more</li>', len(pairs) - len(shown)) \
        if len(pairs) > len(shown) else ""
    label = f"{{{len(pairs)} keys}}" if isinstance(value, dict) else f"[{len(pairs)} items]"
    return format_html(
        '<details class="j-node"{}><summary>{}</summary><ul>{}{}</ul></details>',
        " open" if depth < 2 else "", label, rows, more,
    )


@register.simple_tag
def json_tree(value: Any) -> SafeString:
    """A collapsible tree of nested <details>, every key and value escaped."""
    return format_html('<div class="json-tree">{}</div>', _tree(value, 0))


@register.filter
def ago(when) -> str:
    """"just now" for the last minute, then Django's timesince ("3 hours ago")."""
    if when is None:
        return "—"
    if (timezone.now() - when).total_seconds() < 60:
        return "just now"
    return f"{timesince(when)} ago"
