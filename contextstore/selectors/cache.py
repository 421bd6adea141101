"""Prompt-cache analysis of model calls: what a call could reuse of the call before it, as the
provider received both (tools, system, messages in wire order for the call's format), where
and why they part, what the provider said it read from its cache; and the same summed over a
session's or a workspace's latest calls.

Every verdict comes from the two requests themselves (contextstore.prompt_cache) and, for its
cause, from what the render records and the thread's history say happened between them.
"""

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.cache import cache as django_cache

from contextstore.errors import NotFound
from contextstore.llm_models import cache_saving_per_token
from contextstore.models import (
    CallCacheVerdict,
    Clear,
    Collapse,
    ContextBlockVersion,
    Event,
    RenderRecord,
    Session,
    Thread,
    Workspace,
)
from contextstore.prompt_cache import (
    PROVIDERS,
    Reported,
    Reuse,
    Segment,
    canonical,
    disagreement,
    min_prefix,
    provider_of,
    reuse,
    timestamp_like,
    word_diff,
)
from contextstore.selectors import rendering, renders
from contextstore.selectors.calls import CALL_END, CALL_START, LLMCall, call_key, llm_call_sent
from contextstore.usage import cache_usage, event_cache_usage

DIFF_LIST = 50  # changed, entered and left segments listed by a call diff
RECENT_THREADS = 10  # a session's or workspace's newest threads an aggregate looks at
RECENT_CALLS = 20  # the newest calls of each of them
KEPT_SLACK = 128  # tokens a call may lose and still count as "kept" (OpenAI caches in 128s)

CAUSES = {
    "append": "only appended",
    "tools": "tool list changed",
    "block_edit": "block edited",
    "timestamp": "a date or time in the system prompt changed",
    "system_edit": "system prompt changed",
    "summary": "summary changed",
    "collapse": "collapse",
    "clear": "clear",
    "window": "sliding window",
    "rewrite": "events rewritten or retracted",
    "suffix_moves": "suffix blocks after history move every turn",
    "format": "wire format changed",
    "options": "render options changed",
    "edit": "an earlier message changed",
}


# ------------------------------------------------------------------ a request as sent

@dataclass
class Request:
    """One model request as the provider received it, and what says how it was made."""

    segments: list[Segment]
    fmt: str | None
    model: str
    at: datetime | None  # when it was sent, as the agent says (provider cache lifetimes)
    logged: datetime | None = None  # when it reached us (thread operations are in this clock)
    tools: list[Any] = field(default_factory=list)
    blocks: dict[str, tuple[str, int, str | None]] | None = None  # name: (section, version, text hash)
    events: dict[int, int] | None = None  # event id: position
    options: dict[str, Any] | None = None
    record: RenderRecord | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        # text parts (OpenAI, Anthropic, GenAI conventions), tool results' `response` and tool
        # calls' `arguments` (GenAI conventions)
        return "\n".join(_text(c.get("text") or c.get("content") or c.get("response") or c.get("arguments")
                                or "") if isinstance(c, dict) else _text(c) for c in content)
    return "" if content is None else canonical(content)


def _plain(message: Any) -> str:
    """A message's text: its content, or its parts (GenAI conventions' messages, OTLP ingest),
    and the names and arguments of the tool calls it makes (OpenAI's `tool_calls`)."""
    if not isinstance(message, dict):
        return _text(message)
    if "content" not in message and isinstance(message.get("parts"), list):
        text = _text(message["parts"])
    else:
        text = _text(message.get("content"))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        named = [c["function"] if isinstance(c.get("function"), dict) else c
                 for c in calls if isinstance(c, dict)]
        text = "\n".join([text] * bool(text) + [f"{f.get('name', '')}({_text(f.get('arguments'))})"
                                                for f in named])
    return text


def segments_of(*, fmt: str | None, tools: list[Any], system: list[Any], messages: list[Any],
                sections: tuple[bool, bool, bool] | None,
                counts: dict[str, list[int]] | None = None) -> list[Segment]:
    """The request's segments in wire order. `sections`: whether a render's prefix, summary and
    suffix are present (None: the agent built the messages itself). `counts`: each system
    block's and message's tokens as the render counted them (render_format.build_counted), so
    the segments add up to the render's total (with the tools: tokens.request_tokens)."""
    counted = counts if counts is not None and len(counts["system"]) == len(system) \
        and len(counts["messages"]) == len(messages) else None
    out = [Segment("tools", "tools", f"tool {t.get('name') or t.get('function', {}).get('name') or i + 1}"
                   if isinstance(t, dict) else f"tool {i + 1}", canonical(t), canonical(t))
           for i, t in enumerate(tools)]
    present = [s for s, on in zip(("prefix", "summary", "suffix"), sections or (), strict=False) if on]
    names = {"prefix": "prefix blocks", "summary": "summary", "suffix": "suffix blocks",
             "system": "system prompt"}
    for i, block in enumerate(system):
        section = present[i] if sections is not None and i < len(present) else "system"
        out.append(Segment("system", section, f"system block {i + 1} ({names[section]})",
                           canonical(block), _text(block.get("text") if isinstance(block, dict) else block),
                           counted["system"][i] if counted else None))
    head = [s for s in present if s != "suffix"] if fmt == "openai" and sections else []
    tail = 1 if fmt == "openai" and sections and sections[2] else 0
    for i, m in enumerate(messages):
        role = str(m.get("role", "")) if isinstance(m, dict) else ""
        if fmt == "raw" and isinstance(m, dict):
            section = str(m.get("section") or "history")
        elif i < len(head):
            section = head[i]
        elif tail and i == len(messages) - 1:
            section = "suffix"
        elif sections is None and role in ("system", "developer") and all(
                s.section == "system" for s in out if s.part == "messages"):
            section = "system"
        else:
            section = "history"
        where = names.get(section, "history") if section != "history" else "history"
        out.append(Segment("messages", section, f"message {i + 1} ({role or '?'}, {where})",
                           canonical(m), _plain(m), counted["messages"][i] if counted else None))
    return out


def _record_blocks(record: RenderRecord) -> dict[str, tuple[str, int, str | None]]:
    entries = [(s, e) for s in ("prefix", "suffix") for e in record.spec[s]]
    versions = {v.pk: v for v in ContextBlockVersion.objects.filter(pk__in=[e[0] for _, e in entries])}
    return {versions[e[0]].name: (s, versions[e[0]].version, e[1] if len(e) > 1 else None)
            for s, e in entries if e[0] in versions}


def _sections(record: RenderRecord) -> tuple[bool, bool, bool]:
    spec = record.spec
    return bool(spec["prefix"]), bool(spec["summary"]), bool(spec["suffix"])


def _from_record(*, record: RenderRecord, body: dict[str, Any], model: str, tools: list[Any],
                 at: datetime | None, logged: datetime | None) -> Request:
    return Request(logged=logged,
        segments=segments_of(fmt=record.format, tools=tools, system=body.get("system") or [],
                             messages=body["messages"], sections=_sections(record),
                             counts=body.get("counts")),
        fmt=record.format, model=model, at=at, tools=tools, blocks=_record_blocks(record),
        events=dict(renders.record_refs(record)),
        options={"format": record.format, "strip": record.spec["strip"], **record.spec["options"]},
        record=record)


def call_request(*, thread: Thread, call: LLMCall) -> Request | None:
    """What a logged call sent, as the provider received it; None when it is unknown. Tools
    (and an Anthropic `system` of the agent's own) are what the call logged in `data`."""
    sent = llm_call_sent(thread=thread, call=call)
    if sent["source"] is None:
        return None
    data = call.start.data if call.start is not None and isinstance(call.start.data, dict) else {}
    listed = sent["tools"]  # kept once by its hash (services/renders._request_extras)
    tools: list[Any] = listed if isinstance(listed, list) else []
    event = call.start or call.end
    assert event is not None
    at, logged = event.occurred_at, event.created_at
    if sent["record"] is not None:
        return _from_record(record=sent["record"], body=sent, model=call.model, tools=tools, at=at,
                            logged=logged)
    system: list[Any] = []
    if isinstance(data.get("system"), str | list):
        own = data["system"]
        system = [{"type": "text", "text": own}] if isinstance(own, str) else own
    return Request(segments=segments_of(fmt=None, tools=tools, system=system, messages=sent["messages"],
                                        sections=None),
                   fmt=None, model=call.model, at=at, logged=logged, tools=tools)


def _record_tools(record: RenderRecord) -> list[Any]:
    """The tools a render counted (its `tools_hash` option), as stored; none when it counted
    none or their text is gone (erased)."""
    tools_hash = record.spec["options"].get("tools_hash")
    if not isinstance(tools_hash, str):
        return []
    try:
        return renders.render_tools(workspace_id=record.thread.workspace_id, tools_hash=tools_hash)
    except NotFound:
        return []


def records_compare(*, a: RenderRecord, b: RenderRecord) -> dict[str, Any]:
    """compare() for two render records, as their format sends them (no model; the tools each
    counted, so a request's total is the record's own)."""
    before, after = (_from_record(record=r, body=_counted(renders.render_rebuild_counted(record=r)),
                                  model="", tools=_record_tools(r), at=r.created_at, logged=r.created_at)
                     for r in (a, b))
    return compare(thread=a.thread, before=before, after=after)


def _counted(rebuilt: tuple[dict[str, Any], dict[str, list[int]]]) -> dict[str, Any]:
    body, counts = rebuilt
    return {**body, "counts": counts}


def render_request(*, rendered: rendering.Rendered, model: str, tools: list[Any]) -> Request:
    """A render made now, as it would be sent."""
    body = rendered.body
    blocks = {b.name: (section.name, b.version, renders.sha256(text) if b.expr is not None else None)
              for section in (rendered.prefix, rendered.suffix) for b, text in section.shown}
    sections = (bool(rendered.prefix.shown), bool(rendered.summary), bool(rendered.suffix.shown))
    return Request(
        segments=segments_of(fmt=body["format"], tools=tools, system=body.get("system") or [],
                             messages=body["messages"], sections=sections, counts=rendered.counts),
        fmt=body["format"], model=model, at=None, tools=tools, blocks=blocks,
        events={i.event.pk: i.event.position for unit in rendered.units for i in unit},
        options={"format": body["format"], "strip": body["stats"]["strip_thinking"], **rendered.options})


# ------------------------------------------------------------------ why they part

def _span(positions: list[int]) -> str:
    first, last = min(positions), max(positions)
    return f"#{first}" if first == last else f"#{first}–#{last}"


def _history_cause(thread: Thread, before: Request, after: Request) -> tuple[str, str]:
    if before.events is not None and after.events is not None:
        gone = {pk: pos for pk, pos in before.events.items() if pk not in after.events}
        if gone:
            status = dict(Event.objects.filter(pk__in=gone).values_list("pk", "status"))
            first = min(gone, key=lambda pk: gone[pk])
            reason = status.get(first, "removed")
            same = [gone[pk] for pk in gone if status.get(pk, "removed") == reason]
            if reason == Event.Status.COLLAPSED:
                return "collapse", f"events {_span(same)} were collapsed into a summary"
            if reason == Event.Status.CLEARED:
                plural = "" if len(same) == 1 else "s"
                return "clear", f"the context was cleared: {len(same)} event{plural} ({_span(same)}) left it"
            if reason == Event.Status.ACTIVE:
                return "window", (f"the oldest events ({_span(same)}) no longer fit the budget and "
                                  "slid out of the window")
            return "rewrite", f"events {_span(same)} were {reason}"
        if before.options != after.options:
            return "options", f"the render options changed ({before.options} → {after.options})"
        return "edit", "an earlier message changed"
    since = {"created_at__gt": before.logged, **({"created_at__lte": after.logged} if after.logged else {})}
    clears = Clear.objects.filter(thread=thread, **since).count()
    if clears:
        times = "once" if clears == 1 else f"{clears} times"
        return "clear", f"the context was cleared between the calls ({times})"
    collapses = list(Collapse.objects.filter(thread=thread, **since).order_by("pk")[:5])
    if collapses:
        return "collapse", "events " + ", ".join(
            f"#{c.start_position}–#{c.end_position}" for c in collapses) + " were collapsed into a summary"
    history = [s.text for s in after.segments if s.section == "history"]
    old = [s.text for s in before.segments if s.section == "history"]
    if history and history[0] in old[1:]:
        return "window", f"the oldest {old.index(history[0])} messages were dropped (sliding window)"
    return "edit", "an earlier message changed or was removed"


def _blocks_cause(before: Request, after: Request, section: str, r: Reuse) -> tuple[str, str]:
    changed = []
    for name in sorted(set(before.blocks or {}) | set(after.blocks or {})):
        x, y = (before.blocks or {}).get(name), (after.blocks or {}).get(name)
        if x == y or (x or y or ("",))[0] != section:
            continue
        if x is None:
            changed.append(f"block “{name}” added")
        elif y is None:
            changed.append(f"block “{name}” removed")
        elif x[1] != y[1]:
            changed.append(f"block “{name}” edited v{x[1]}→v{y[1]}")
        else:
            changed.append(f"live block “{name}” evaluated to another text")
    what = ", ".join(changed) or "the system prompt changed"
    clock = r.before is not None and r.after is not None and timestamp_like(r.before.plain, r.after.plain)
    kind = "timestamp" if clock else "block_edit"
    if kind == "timestamp":
        what += ", and only a date or time in it differs"
    if section == "suffix" and after.fmt == "anthropic":
        what += (": the anthropic format puts suffix blocks in system, before every message, so "
                 "no message could be reused")
    return kind, what


def cause_of(*, thread: Thread, before: Request, after: Request, r: Reuse) -> tuple[str, str]:
    """(kind, words) for why `after` stops repeating `before` where it does."""
    if r.appended:
        return "append", "nothing earlier changed: the request only grew"
    if before.fmt != after.fmt:
        was, now = before.fmt or "the agent's own messages", after.fmt or "the agent's own messages"
        return "format", f"the wire format changed ({was} → {now})"
    seg = r.before
    assert seg is not None
    if seg.part == "tools" or (r.after is not None and r.after.part == "tools"):
        had = {s.label for s in before.segments if s.part == "tools"}
        has = {s.label for s in after.segments if s.part == "tools"}
        words = [f"added {', '.join(sorted(has - had))}" if has - had else "",
                 f"removed {', '.join(sorted(had - has))}" if had - has else ""]
        detail = "; ".join(w for w in words if w) or "a definition changed"
        return "tools", f"the tool list changed: {detail}"
    if seg.section == "suffix" and seg.part == "messages":
        return "suffix_moves", ("this format sends suffix blocks after history, so they move on every "
                                "turn; everything before them was kept")
    if seg.section in ("prefix", "suffix"):
        return _blocks_cause(before, after, seg.section, r)
    if seg.section == "summary" or (r.after is not None and r.after.section == "summary"):
        return "summary", "the summary changed" + (
            f": {_history_cause(thread, before, after)[1]}" if before.events is not None else "")
    if seg.section == "system":
        if r.after is not None and timestamp_like(seg.plain, r.after.plain):
            return "timestamp", "only a date or time in the system prompt changed"
        return "system_edit", "the system prompt changed"
    return _history_cause(thread, before, after)


# ------------------------------------------------------------------ the verdict

def reported_of(call: LLMCall | None) -> Reported | None:
    """The cache tokens the provider reported: on the LLMComplete, else the provider's `usage`
    object the LLMCallStart carries (the Python client's log_llm_call(..., usage=...) puts its
    extra data there)."""
    if call is None:
        return None
    usage = event_cache_usage(call.end) if call.end is not None else None
    start = call.start.data if call.start is not None and isinstance(call.start.data, dict) else {}
    if usage is None and isinstance(start.get("usage"), dict):
        usage = cache_usage(start["usage"])
    return Reported(*usage) if usage else None


def compare(*, thread: Thread, before: Request, after: Request, call: LLMCall | None = None,
            details: bool = True) -> dict[str, Any]:
    """What `after` could reuse of `before`'s cache, why the rest was lost, and what the
    provider said (`call`: the call that sent `after`, with its reported usage)."""
    r = reuse(before.segments, after.segments)
    provider = provider_of(after.fmt, after.model)
    minimum = min_prefix(provider, after.model)
    kept = r.reusable if r.reusable >= minimum else 0
    # what the previous request left in the cache, less what this one reuses
    cached_before = r.before_total if r.before_total >= minimum else 0
    lost = max(min(cached_before, r.total) - kept, 0)
    if not cached_before:  # the request before was under the minimum: nothing was cached
        status = "short"
    elif not kept:
        status = "lost"
    elif lost <= KEPT_SLACK:
        status = "kept"
    else:
        status = "partial"
    kind, words = cause_of(thread=thread, before=before, after=after, r=r)
    reported = reported_of(call)
    gap = (after.at - before.at).total_seconds() if after.at and before.at else None
    out: dict[str, Any] = {
        "reusable": r.reusable, "total": r.total, "before_total": r.before_total,
        "share": round(100 * r.reusable / r.total) if r.total else 0,
        "provider": provider, "provider_name": PROVIDERS[provider].name,
        "provider_note": PROVIDERS[provider].note, "min_prefix": minimum,
        "clears_minimum": r.reusable >= minimum, "status": status,
        "lost_tokens": lost, "lost_cost": lost * cache_saving_per_token(after.model),
        "cause": kind, "cause_label": CAUSES[kind], "cause_text": words,
        "reported": reported,
        "disagreement": disagreement(reusable=r.reusable, total=r.total, minimum=minimum, reported=reported,
                                     gap_seconds=gap, ttl_seconds=PROVIDERS[provider].ttl_seconds)
        if reported else None,
        "divergence": None,
    }
    if details and r.before is not None:
        out["divergence"] = {
            "index": r.index, "label": (r.after or r.before).label, "before_label": r.before.label,
            "ended": r.after is None,
            "words": word_diff(r.before.plain, r.after.plain) if r.after is not None else [],
        }
    return out


def _preview(segment: Segment) -> dict[str, Any]:
    return {"label": segment.label, "text": segment.plain[:300], "cut": len(segment.plain) > 300}


def llm_call_diff(*, thread: Thread, a: LLMCall, b: LLMCall) -> dict[str, Any]:
    """Call `b` against the call before it, `a`: the cache verdict (see compare), the segments
    that entered and left, and, when both sent a recorded render, the render diff."""
    before, after = call_request(thread=thread, call=a), call_request(thread=thread, call=b)
    out: dict[str, Any] = {"a": a, "b": b, "known": before is not None and after is not None,
                           "reported": reported_of(b)}
    if before is None or after is None:
        return out
    # segments aligned: a replaced one is shown as a word diff, not as its two whole texts
    entered: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    # aligned after the shared head and before the shared tail: a long request mostly is both
    old_all, new_all = before.segments, after.segments
    head = 0
    while head < min(len(old_all), len(new_all)) and old_all[head].text == new_all[head].text:
        head += 1
    tail = 0
    while (tail < min(len(old_all), len(new_all)) - head
           and old_all[-1 - tail].text == new_all[-1 - tail].text):
        tail += 1
    old_mid, new_mid = old_all[head:len(old_all) - tail], new_all[head:len(new_all) - tail]
    matcher = difflib.SequenceMatcher(None, [s.text for s in old_mid], [s.text for s in new_mid],
                                      autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        olds, news = old_mid[i1:i2], new_mid[j1:j2]
        if op == "replace":
            for old, new in zip(olds, news, strict=False):
                changed.append({"label": new.label, "before_label": old.label,
                                "words": word_diff(old.plain, new.plain)})
            olds, news = olds[len(news):], news[len(olds):]
        left.extend(_preview(x) for x in olds)
        entered.extend(_preview(x) for x in news)
    render = (renders.render_diff(a=before.record, b=after.record)
              if before.record is not None and after.record is not None else None)
    return {**out, "cache": compare(thread=thread, before=before, after=after, call=b),
            "count_a": len(before.segments), "count_b": len(after.segments),
            "changed": changed[:DIFF_LIST], "changed_count": len(changed),
            "entered": entered[:DIFF_LIST], "entered_count": len(entered),
            "left": left[:DIFF_LIST], "left_count": len(left), "render": render}


def latest_call_request(*, thread: Thread) -> tuple[LLMCall, Request] | None:
    """The thread's latest call whose request is known, among its newest calls."""
    for start in Event.objects.filter(thread=thread, type=CALL_START).order_by("-seq")[:RECENT_CALLS]:
        call = LLMCall(start=start, end=None)
        request = call_request(thread=thread, call=call)
        if request is not None:
            return call, request
    return None


def model_view_cache(*, thread: Thread) -> dict[str, Any] | None:
    """What the thread's latest known call could reuse if the agent sent, now, the render it
    would get with the same options: the call's verdict against the thread as it is."""
    latest = latest_call_request(thread=thread)
    if latest is None:
        return None
    call, before = latest
    record = before.record
    if record is None:
        return {"call": call, "own_messages": True}
    options = record.spec["options"]
    now = rendering.render(thread=thread, max_tokens=record.max_tokens, fmt=record.format,
                           strip_thinking=options.get("strip_thinking", False),
                           on_oversize=options.get("on_oversize", "skip"),
                           start_chunk=options.get("start_chunk"),
                           tools=before.tools if options.get("tools_hash") else ())
    after = render_request(rendered=now, model=before.model, tools=before.tools)
    return {"call": call, "own_messages": False, "format": record.format,
            "cache": compare(thread=thread, before=before, after=after)}


# ------------------------------------------------------------------ sessions and workspaces

def _recent_calls(threads: list[Thread]) -> list[tuple[Thread, list[LLMCall]]]:
    """Each thread's newest calls, oldest first, paired start to end in memory."""
    out = []
    for thread in threads:
        events = list(Event.objects.filter(thread=thread, type__in=(CALL_START, CALL_END))
                      .order_by("-seq")[:2 * RECENT_CALLS])[::-1]
        calls: list[LLMCall] = []
        open_starts: dict[tuple[str, Any], LLMCall] = {}
        for e in events:
            if e.type == CALL_START:
                call = LLMCall(start=e, end=None)
                open_starts[call_key(e)] = call
                calls.append(call)
            elif (opened := open_starts.pop(call_key(e), None)) is not None:
                opened.end = e
            else:
                calls.append(LLMCall(start=None, end=e))
        out.append((thread, calls))
    return out


@dataclass
class Tally:
    """Sums over calls: what the provider reported, what breaks lost and why."""

    calls: int = 0
    pairs: int = 0
    reporting: int = 0
    read: int = 0
    input: int = 0
    pending: int = 0  # pairs not compared yet (REBUILDS_PER_VIEW)
    lost_tokens: int = 0
    lost_cost: Decimal = Decimal(0)
    causes: dict[str, dict[str, Any]] = field(default_factory=dict)
    worst: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: "Tally") -> None:
        for name in ("calls", "pairs", "pending", "reporting", "read", "input", "lost_tokens", "lost_cost"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, c in other.causes.items():
            mine = self.causes.setdefault(kind, {**c, "count": 0, "tokens": 0, "cost": Decimal(0)})
            for name in ("count", "tokens", "cost"):
                mine[name] += c[name]
        self.worst.extend(other.worst)

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls, "pairs": self.pairs, "pending": self.pending, "reporting": self.reporting,
            "hit_rate": round(100 * self.read / self.input) if self.input else None,
            "cache_read": self.read, "input": self.input,
            "lost_tokens": self.lost_tokens, "lost_cost": self.lost_cost,
            "causes": sorted(self.causes.values(), key=lambda c: (-c["tokens"], c["cause"])),
            "worst": sorted(self.worst, key=lambda w: -w["tokens"])[:5],
        }


PAIR_CACHE_SECONDS = 86_400  # what a pair of recorded requests shares does not change
# Requests an aggregate rebuilds per page view (a long one is a second's work): the pairs past it
# are counted as pending and come from Django's cache once a later view has computed them.
REBUILDS_PER_VIEW = 12
PENDING = {"pending": True}


def _pair_verdict(thread: Thread, previous: LLMCall, call: LLMCall, requests: dict[int, Request | None],
                  budget: list[int]) -> dict[str, Any] | None:
    """compare() of two calls' requests, what an aggregate keeps of it; kept in Django's cache
    by the two calls' start ids (the records and messages they name never change), so a panel
    rebuilds each long render once."""
    assert previous.start is not None and call.start is not None
    # the times make a key that a row id reused after a rollback or restore cannot meet again
    key = (f"contextstore.cache.pair.{previous.start.pk}.{call.start.pk}."
           f"{previous.start.created_at.timestamp()}.{call.start.created_at.timestamp()}")
    kept = django_cache.get(key)
    if kept is not None:
        return kept or None
    missing = [c for c in (previous, call) if c.start is not None and c.start.pk not in requests]
    if len(missing) > budget[0]:
        return PENDING
    budget[0] -= len(missing)
    for c in (previous, call):
        if c.start is not None and c.start.pk not in requests:
            requests[c.start.pk] = call_request(thread=thread, call=c)
    before, after = requests[previous.start.pk], requests[call.start.pk]
    verdict = None
    if before is not None and after is not None:
        full = compare(thread=thread, before=before, after=after, details=False)
        verdict = {k: full[k] for k in ("status", "cause", "cause_label", "cause_text", "lost_tokens",
                                        "lost_cost")}
    django_cache.set(key, verdict or {}, PAIR_CACHE_SECONDS)
    return verdict


def _stored_verdict(row: CallCacheVerdict) -> dict[str, Any] | None:
    """A verdict the worker stored (services/cache_verdicts.py), as _pair_verdict gives it."""
    if row.status in (CallCacheVerdict.Status.UNKNOWN, CallCacheVerdict.Status.FIRST):
        return None
    return {"status": row.status, "cause": row.cause, "cause_label": CAUSES.get(row.cause, row.cause),
            "cause_text": row.cause_text, "lost_tokens": row.lost_tokens, "lost_cost": row.lost_cost}


def _tally(thread: Thread, calls: list[LLMCall], budget: list[int]) -> Tally:
    tally, previous = Tally(), None
    requests: dict[int, Request | None] = {}
    # the worker's verdicts, one query for the thread's newest calls; the rest rebuilt in budget
    stored = {row.call_id: row for row in CallCacheVerdict.objects.filter(
        call_id__in=[c.start.pk for c in calls if c.start is not None])}
    for call in calls:
        tally.calls += 1
        reported = reported_of(call)
        if reported is not None:
            tally.reporting += 1
            tally.read += reported.cache_read
            tally.input += reported.input_total
        if call.start is None or not call.can_show_sent:
            continue
        row = stored.get(call.start.pk)
        if previous is None:
            verdict = None
        elif row is not None and previous.start is not None and row.previous_id == previous.start.pk:
            verdict = _stored_verdict(row)
        else:
            verdict = _pair_verdict(thread, previous, call, requests, budget)
        previous = call
        if verdict is PENDING:
            tally.pending += 1
            continue
        if verdict is None:
            continue
        tally.pairs += 1
        if verdict["lost_tokens"]:
            tally.lost_tokens += verdict["lost_tokens"]
            tally.lost_cost += verdict["lost_cost"]
            c = tally.causes.setdefault(verdict["cause"], {
                "cause": verdict["cause"], "label": verdict["cause_label"], "count": 0,
                "tokens": 0, "cost": Decimal(0)})
            c["count"] += 1
            c["tokens"] += verdict["lost_tokens"]
            c["cost"] += verdict["lost_cost"]
            tally.worst.append({"thread": thread, "seq": call.seq, "tokens": verdict["lost_tokens"],
                                "cause_text": verdict["cause_text"]})
    return tally


def session_cache(*, session: Session) -> dict[str, Any]:
    """Over the newest calls of the session's newest threads: the hit rate the provider
    reported (cache reads over every input token, where usage carries cache tokens), the input
    cache breaks made the agent pay in full and its cost, and their causes, costliest first."""
    threads = list(Thread.objects.filter(session=session).order_by("-last_event_at", "-id")[:RECENT_THREADS])
    total, budget = Tally(), [REBUILDS_PER_VIEW]
    for thread, calls in _recent_calls(threads):
        total.add(_tally(thread, calls, budget))
    return {**total.summary(), "threads": len(threads), "per_thread": RECENT_CALLS,
            "rebuilds": REBUILDS_PER_VIEW}


def workspace_cache(*, workspace: Workspace) -> dict[str, Any]:
    """session_cache over the workspace's newest threads, with each session's part."""
    threads = list(Thread.objects.filter(workspace=workspace).select_related("session")
                   .order_by("-last_event_at", "-id")[:RECENT_THREADS])
    total, by_session, budget = Tally(), dict[int, tuple[Session, Tally]](), [REBUILDS_PER_VIEW]
    for thread, calls in _recent_calls(threads):
        tally = _tally(thread, calls, budget)
        total.add(tally)
        by_session.setdefault(thread.session_id, (thread.session, Tally()))[1].add(tally)
    sessions = [{"session": session, **tally.summary()} for session, tally in by_session.values()]
    return {**total.summary(), "threads": len(threads), "per_thread": RECENT_CALLS,
            "rebuilds": REBUILDS_PER_VIEW, "sessions": sorted(sessions, key=lambda s: -s["lost_cost"])}


BREAKS_PAGE = 50  # cache breaks listed per page


def session_cache_breaks(*, session: Session, page: int = 1) -> dict[str, Any]:
    """Every call of the session whose prompt cache broke against the call before it (tokens
    lost), from the verdicts the worker stored: where the requests part, why, and what it cost;
    in call order, a page at a time (an index range: a page costs the same at any history)."""
    rows = (CallCacheVerdict.objects.filter(session=session, lost_tokens__gt=0)
            .select_related("thread").order_by("call_id"))
    page = max(page, 1)
    listed = list(rows[(page - 1) * BREAKS_PAGE:page * BREAKS_PAGE + 1])
    # calls not compared yet, among the newest of the newest threads (bounded, as the panel)
    threads = Thread.objects.filter(session=session).order_by("-last_event_at", "-id")[:RECENT_THREADS]
    newest = [pk for thread in threads
              for pk in Event.objects.filter(thread=thread, type=CALL_START).order_by("-seq")
              .values_list("pk", flat=True)[:RECENT_CALLS]]
    pending = len(newest) - CallCacheVerdict.objects.filter(call_id__in=newest).count()
    return {"breaks": [{"thread": r.thread, "seq": r.seq, "status": r.status, "cause": r.cause,
                        "cause_label": CAUSES.get(r.cause, r.cause), "cause_text": r.cause_text,
                        "where": r.where, "lost_tokens": r.lost_tokens, "lost_cost": r.lost_cost}
                       for r in listed[:BREAKS_PAGE]],
            "page": page, "has_next": len(listed) > BREAKS_PAGE, "per_page": BREAKS_PAGE,
            "first_index": (page - 1) * BREAKS_PAGE + 1, "pending": pending}
