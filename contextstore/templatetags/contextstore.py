"""Template helpers for agent content. Everything here escapes: agent text is untrusted, and
JSON is shown as text, never as HTML (format_html escapes every argument)."""

import json
import re
from decimal import Decimal
from typing import Any

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from contextstore.eventspec import EVENT_TYPES
from contextstore.markdown import looks_like_markdown, render_markdown
from contextstore.tokens import is_thinking, part_text
from contextstore.toolcalls import RESULT_PART_TYPES, ToolCall, event_calls
from contextstore.usage import cost_text

register = template.Library()

FOLD_CHARS = 600
TREE_DEPTH = 12
TREE_ITEMS = 200
CUT_CHARS = 4096  # text beyond this stays on the server until "load the rest" asks for it
TREE_OPEN_DEPTH = 2  # a JSON tree's nodes this deep and deeper start closed
TREE_LAZY_CHARS = 16_384  # a JSON text longer than this has its closed nodes built when opened
TREE_STR_CHARS = 1024  # a string in a JSON tree beyond this is cut the same way
JSON_TEXT_CHARS = 1_000_000  # output text longer than this is not parsed to show it as a tree
# What a person or a model wrote: the only text read as Markdown. Everything else (tool results,
# logs, Error text, a framework's own entries) is output, shown as it is.
PROSE_TYPES = frozenset({"Message", "LLMOutput", "Reasoning", "Task", "Feedback", "Input", "Summary"})
ARG_CHARS = 40  # an argument value in a call's inline signature beyond this is cut
SIGNATURE_CHARS = 160  # arguments beyond this are left out of the signature ("…")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Characters agent text may hold that a browser would not show as themselves are shown as a
# marker: NUL (U+0000), which a browser drops, and the bidirectional controls, which reorder the
# text around them (U+202E before "gpj.exe" makes it read "exe.jpg").
MARKED_CHARACTERS: dict[str, tuple[str, str]] = {  # character: (its name, what the marker reads)
    "\x00": ("NUL character", "\u2400"),
    "\u061c": ("ARABIC LETTER MARK", "ALM"),
    "\u200e": ("LEFT-TO-RIGHT MARK", "LRM"),
    "\u200f": ("RIGHT-TO-LEFT MARK", "RLM"),
    "\u202a": ("LEFT-TO-RIGHT EMBEDDING", "LRE"),
    "\u202b": ("RIGHT-TO-LEFT EMBEDDING", "RLE"),
    "\u202c": ("POP DIRECTIONAL FORMATTING", "PDF"),
    "\u202d": ("LEFT-TO-RIGHT OVERRIDE", "LRO"),
    "\u202e": ("RIGHT-TO-LEFT OVERRIDE", "RLO"),
    "\u2066": ("LEFT-TO-RIGHT ISOLATE", "LRI"),
    "\u2067": ("RIGHT-TO-LEFT ISOLATE", "RLI"),
    "\u2068": ("FIRST STRONG ISOLATE", "FSI"),
    "\u2069": ("POP DIRECTIONAL ISOLATE", "PDI"),
}
_MARKED = re.compile("[" + "".join(MARKED_CHARACTERS) + "]")


def _marker(char: str, json_escape: bool = False) -> SafeString:
    name, reads = MARKED_CHARACTERS[char]
    code = f"U+{ord(char):04X}"
    shown = f"\\u{ord(char):04x}" if json_escape else reads
    return format_html('<span class="nul" title="{} ({})">{}</span>', name, code, shown)


NUL_MARKER = _marker("\x00")
NUL_JSON_MARKER = _marker("\x00", json_escape=True)
_MARKERS = {c: str(_marker(c)) for c in MARKED_CHARACTERS}
# A tag of sanitized HTML (attribute values double-quoted, a quote inside one escaped).
_TAG = re.compile(r'<(?:[^>"]|"[^"]*")*>')


def has_marked(text: str) -> bool:
    return bool(_MARKED.search(text))


@register.filter(needs_autoescape=True)
def nul_marked(value: Any, autoescape: bool = True) -> SafeString:
    """Agent text for a page: escaped (where the template escapes), each NUL and bidirectional
    control shown as a marker (MARKED_CHARACTERS)."""
    text = str(conditional_escape(value) if autoescape else value)
    return mark_safe(_MARKED.sub(lambda m: _MARKERS[m.group()], text))  # noqa: S308 - escaped above, or not asked to be


@register.filter
def has_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def _markdown_nul_marked(text: str) -> str:
    """Sanitized Markdown HTML with each marked character of `text` shown as a marker.
    CommonMark turns NUL into U+FFFD, so each is a private-use character absent from the text
    while rendering; then the marker in text, and inside a tag's attribute (a link title, a
    code language) what the marker reads (␀, RLO), never the raw control."""
    if not _MARKED.search(text):
        return render_markdown(text)
    stand_in = next((c for c in map(chr, range(0xE000, 0xF900)) if c not in text), "\u2400")
    html = render_markdown(text.replace("\x00", stand_in))

    def in_tag(tag: str) -> str:
        return _MARKED.sub(lambda c: MARKED_CHARACTERS[c.group()][1], tag.replace(stand_in, "\u2400"))

    pieces = re.split(f"({_TAG.pattern})", html)
    return "".join(in_tag(p) if i % 2 else nul_marked(p.replace(stand_in, "\x00"), autoescape=False)
                   for i, p in enumerate(pieces))


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON as plain text (autoescaped by the template like any other string)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def event_type_class(event_type: str) -> str:
    """CSS class of an event's type: documented types keep their own look; any other name (a
    framework's own vocabulary) is a generic entry."""
    return f"t-{event_type.lower()}" if event_type in EVENT_TYPES else "t-generic"


@register.filter
def is_long(text: str) -> bool:
    return len(text or "") > FOLD_CHARS or (text or "").count("\n") > 10


@register.filter
def actor_name(label: str, names: dict[str, str] | None) -> str:
    """An actor label as a name: a token's name instead of its prefix (see selectors)."""
    return (names or {}).get(label, label)


@register.filter
def any_error(events: Any) -> bool:
    return any(e.is_error for e in events or ())


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


# Two different counts are both "tokens": what the events' stored text holds (counted with
# cl100k_base, the counters and the context budget) and what a model call reported using (its
# LLMComplete usage, what the provider bills). Pages label them "stored tokens" and "input /
# output tokens", each with this title.
TOKEN_TITLES = {
    "stored": "Tokens of the text the events store (counted with cl100k_base); not a model's usage",
    "usage": "Tokens the model calls reported using (their LLMComplete usage, as billed)",
}


@register.simple_tag
def token_title(kind: str) -> str:
    return TOKEN_TITLES[kind]


@register.filter
def money(value: Decimal | float | None) -> str:
    return cost_text(value)


@register.filter
def delta(value: Decimal | float | None, kind: str = "number") -> str:
    """A difference with its sign: "+$0.0012", "−350 ms", "+0.250" (kind money, ms or number);
    "—" when unknown."""
    if value is None:
        return "—"
    sign = "+" if value >= 0 else "−"
    size = Decimal(abs(value)) if isinstance(value, Decimal) else float(abs(value))
    if kind == "money":
        return sign + cost_text(size)
    if kind == "ms":
        return sign + duration(int(round(size)))
    return f"{sign}{size:.3f}"


def _result_text(part: dict) -> str | None:
    """The text a tool_result / function_call_output part carries (a string, or text blocks)."""
    value = part.get("content", part.get("output"))
    if isinstance(value, list):
        texts = [b["text"] for b in value
                 if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
        value = "\n".join(texts) if texts else None
    return value if isinstance(value, str) and value else None


@register.filter
def split_parts(parts: Any) -> dict[str, list]:
    """An event's parts sorted for display: thinking (behind a toggle), text, and the rest as JSON.
    A tool result part's text is shown as text too (a log read as written, not a JSON string)."""
    out: dict[str, list] = {"thinking": [], "text": [], "other": []}
    if not isinstance(parts, list):
        return out
    for part in parts:
        if is_thinking(part):
            out["thinking"].append(part_text(part))
        elif isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"):
            out["text"].append(part_text(part))
        else:
            if isinstance(part, dict) and part.get("type") in RESULT_PART_TYPES \
                    and (text := _result_text(part)) is not None:
                out["text"].append(text)
            out["other"].append(part)
    return out


def _json_text(value: Any) -> SafeString:
    """A value as JSON text, escaped; each marked character of a string (NUL, a bidirectional
    control) shown as a marker reading its JSON escape (\\u0000, \\u202e)."""
    if not (isinstance(value, str) and _MARKED.search(value)):
        return conditional_escape(json.dumps(value, ensure_ascii=False, default=str))
    out: list[SafeString] = []
    at = 0
    for m in _MARKED.finditer(value):
        out.append(conditional_escape(json.dumps(value[at:m.start()], ensure_ascii=False)[1:-1]))
        out.append(_marker(m.group(), json_escape=True))
        at = m.end()
    out.append(conditional_escape(json.dumps(value[at:], ensure_ascii=False)[1:-1]))
    return format_html('"{}"', mark_safe("".join(out)))  # noqa: S308 - each piece escaped


def _scalar(value: Any, full: bool) -> SafeString:
    kind = ("null" if value is None else "bool" if isinstance(value, bool)
            else "num" if isinstance(value, int | float) else "str")
    cut = isinstance(value, str) and not full and len(value) > TREE_STR_CHARS
    text = _json_text(value[:TREE_STR_CHARS] if cut else value)
    rest = format_html('<span class="muted"> … {} more characters</span>',
                       len(value) - TREE_STR_CHARS) if cut else ""
    return format_html('<button type="button" class="j-{} j-val" data-copy-value '
                       'title="Copy value">{}</button>{}', kind, text, rest)


def _path(parent: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _IDENT.match(str(key)):
        return f"{parent}.{key}"
    # a bidirectional control as its JSON escape, as json.dumps writes a NUL: the same key
    quoted = _MARKED.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(str(key), ensure_ascii=False))
    return f"{parent}[{quoted}]"


def _tree(value: Any, depth: int, path: str = "$", full: bool = False, lazy: bool = False) -> SafeString:
    if not isinstance(value, dict | list):
        return _scalar(value, full)
    if not value:
        return format_html('<span class="j-empty">{}</span>', "{}" if isinstance(value, dict) else "[]")
    if depth >= TREE_DEPTH:
        return format_html('<code class="j-deep">{}</code>', json.dumps(value, ensure_ascii=False))
    pairs = list(value.items() if isinstance(value, dict) else enumerate(value))
    label = f"{{{len(pairs)} keys}}" if isinstance(value, dict) else f"[{len(pairs)} items]"
    if lazy and depth >= TREE_OPEN_DEPTH:
        # A closed node of a big document: its JSON, which app.js turns into the same tree when
        # it is opened, so a 120 KB result is not 900 KB of HTML and 20,000 buttons up front.
        return format_html(
            '<details class="j-node" data-lazy-json="{}" data-depth="{}" data-path="{}"><summary>{}'
            '</summary><ul></ul></details>',
            json.dumps(value, ensure_ascii=False, default=str), depth, path, label)
    shown = pairs[:TREE_ITEMS]
    rows = format_html_join(
        "", '<li><button type="button" class="j-key" data-copy-path="{}" title="Copy path {}">{}'
            '</button>: {}</li>',
        ((p, p, nul_marked(k), _tree(v, depth + 1, p, full, lazy))
         for k, v in shown for p in [_path(path, k)]),
    )
    more = format_html('<li class="muted">… {} more</li>', len(pairs) - len(shown)) \
        if len(pairs) > len(shown) else ""
    return format_html(
        '<details class="j-node"{}><summary>{}</summary><ul>{}{}</ul></details>',
        " open" if depth < TREE_OPEN_DEPTH else "", label, rows, more,
    )


@register.simple_tag
def json_tree(value: Any, full: bool = False, lazy: bool = False) -> SafeString:
    """A collapsible tree of nested <details>, every key and value escaped. A key copies its
    path ($.a[0].b), a value copies itself (app.js); long strings are cut unless `full`.
    `lazy` (a big document): the nodes closed at first come as their JSON, built when opened."""
    return format_html('<div class="json-tree">{}</div>', _tree(value, 0, "$", full, lazy))


@register.filter
def text_kind(event: Any) -> str:
    """How an event's text is read: "prose" (user and assistant writing, Markdown allowed) or
    "output" (tool results, logs and the rest: monospace as written, or a tree when JSON)."""
    return "prose" if event.type in PROSE_TYPES and event.role != "tool" else "output"


def _json_container(text: str) -> dict | list | None:
    """The non-empty JSON object or array a text is, if it is one."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) > JSON_TEXT_CHARS:
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) and value else None


_RAW_TOGGLE = mark_safe('<button type="button" class="linkish small" data-raw-toggle '  # noqa: S308
                        'aria-pressed="false">raw</button>')


@register.simple_tag
def reader_text(text: str, thread_pk: int | None = None, seq: int | None = None,
                full: bool = False, kind: str = "prose") -> SafeString:
    """An event's text for reading; cut after CUT_CHARS unless `full`, with "load the rest".
    Prose: Markdown rendered (sanitized) with a raw toggle, or plain text, folded when long.
    Output: a JSON object or array as a foldable tree with a raw toggle (once not cut),
    anything else preformatted as written (a log's underscores and brackets are not Markdown)."""
    text = text or ""
    cut = not full and len(text) > CUT_CHARS and seq is not None
    shown = text[:CUT_CHARS] if cut else text
    clamp = " clamp" if is_long(shown) else ""
    # A cut text stays text (its page keeps the cut's size); "load the rest" brings the tree.
    tree = _json_container(text) if kind == "output" and not cut else None
    controls: str
    if tree is not None:
        body = format_html('<div class="content tree">{}</div><pre class="content raw" hidden>{}</pre>',
                           json_tree(tree, full, lazy=len(text) > TREE_LAZY_CHARS), nul_marked(shown))
        clamp, controls = "", _RAW_TOGGLE  # the tree folds by itself
    elif kind == "output":
        body = format_html('<pre class="content output{}">{}</pre>', clamp, nul_marked(shown))
        controls = ""
    elif looks_like_markdown(shown):
        body = format_html(
            '<div class="content md{}">{}</div><pre class="content raw" hidden>{}</pre>',
            clamp, mark_safe(_markdown_nul_marked(shown)), nul_marked(shown))  # noqa: S308 - nh3-sanitized
        controls = _RAW_TOGGLE
    else:
        body = format_html('<div class="content{}">{}</div>', clamp, nul_marked(shown))
        controls = ""
    if clamp:
        controls = format_html('{}<button type="button" class="linkish small" data-more>show more</button>',
                               controls)
    if cut:
        url = reverse("contextstore:event", args=[thread_pk, seq])
        controls = format_html(
            '{}<button type="button" class="btn small" data-load-rest hx-get="{}" '
            'hx-target="closest article" hx-swap="outerHTML">Load the rest ({} KB more)</button>',
            controls, url, round((len(text) - CUT_CHARS) / 1024, 1))
    return format_html('<div class="reader">{}<div class="reader-controls">{}</div></div>', body, controls)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _arg_text(value: Any) -> str:
    if isinstance(value, str) and len(value) > ARG_CHARS:
        return json.dumps(value[:ARG_CHARS - 1] + "…", ensure_ascii=False)
    return _cut(json.dumps(value, ensure_ascii=False, default=str), ARG_CHARS)


def call_signature(call: ToolCall) -> str:
    """A tool call as one line, `run_tests(path="tests/", verbose=true, …)`: values as JSON,
    each cut after ARG_CHARS, arguments after SIGNATURE_CHARS left out with "…". Arguments
    that are JSON text are read as the object they hold; other text is shown cut."""
    arguments = call.arguments
    if isinstance(arguments, str):
        parsed = _json_container(arguments)
        arguments = parsed if isinstance(parsed, dict) else arguments
    if not isinstance(arguments, dict):
        inner = "" if arguments in (None, "") else _cut(
            arguments if isinstance(arguments, str) else json.dumps(arguments, default=str), SIGNATURE_CHARS)
        return f"{call.name}({inner})"
    shown: list[str] = []
    for key, value in arguments.items():
        arg = f"{key}={_arg_text(value)}"
        if len(", ".join([*shown, arg])) > SIGNATURE_CHARS:
            shown.append("…")
            break
        shown.append(arg)
    return f"{call.name}({', '.join(shown)})"


@register.simple_tag
def call_signatures(calls: list[ToolCall]) -> SafeString:
    """Tool calls inline, `name(args)`, escaped, each titled with its whole arguments."""
    return format_html_join(
        "", '<code class="call-sig" title="{}">{}</code>',
        ((_cut(c.arguments if isinstance(c.arguments, str)
               else json.dumps(c.arguments, ensure_ascii=False, default=str), CUT_CHARS), call_signature(c))
         for c in calls))


@register.simple_tag
def tool_signatures(event: Any) -> SafeString:
    """The calls a ToolCall event makes, inline and escaped, each titled with its whole
    arguments (cut at CUT_CHARS)."""
    calls = event_calls(event.type, event.parts, event.data)
    return format_html_join(
        "", '<code class="call-sig" title="{}">{}</code>',
        ((_cut(json.dumps(c.arguments, ensure_ascii=False, default=str), CUT_CHARS), call_signature(c))
         for c in calls))


@register.filter
def ago(when) -> str:
    """"just now" for the last minute, then Django's timesince ("3 hours ago")."""
    if when is None:
        return "—"
    if (timezone.now() - when).total_seconds() < 60:
        return "just now"
    return f"{timesince(when)} ago"


@register.filter
def when(value: Any, precision: str = "seconds") -> SafeString:
    """A date and time as every page shows one: with its year and its zone, in the server's
    zone (UTC unless TIME_ZONE says otherwise), in a <time> carrying the ISO instant.
    `precision`: "seconds" (default), "minutes", or "ms" (milliseconds)."""
    if value is None:
        return format_html("{}", "—")
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    shown = local.strftime("%Y-%m-%d %H:%M" if precision == "minutes" else "%Y-%m-%d %H:%M:%S")
    if precision == "ms":
        shown += f".{local.microsecond // 1000:03d}"
    zone = local.strftime("%Z") or "UTC"
    exact = f"{local.strftime('%Y-%m-%d %H:%M:%S')}.{local.microsecond:06d} {zone} ({local.strftime('%z')})"
    return format_html('<time datetime="{}" title="{}">{} {}</time>', value.isoformat(), exact, shown, zone)


@register.filter
def grouped(value: int | None) -> str:
    """195890 -> 195,890: exact token counts, readable."""
    return f"{int(value or 0):,}"


@register.filter
def comment_html(text: str) -> SafeString:
    """A person's comment: Markdown rendered and sanitized (contextstore/markdown.py: raw HTML
    off, then nh3), or, with no Markdown in it, the escaped text with its line breaks."""
    if looks_like_markdown(text):
        return mark_safe(render_markdown(text))  # noqa: S308 - sanitized by nh3
    return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in text.split("\n")))
