"""Random threads (messages, tool calls with 1–3 results, reasoning, huge events, collapses,
clears) rendered at random budgets in every format: providers accept the output, no tool call
or result is orphaned, history opens with a user message and keeps whole turns, tokens stay
within budget, every event left out is reported and `fits` says whether anything was left out
for size (tests/services/test_render_coherence.py draws threads of turns to check more)."""

import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from contextstore.errors import DomainError
from contextstore.models import Event, RenderRecord
from contextstore.render_format import FORMATS, valid_items
from contextstore.selectors import rendering
from contextstore.selectors import renders as render_reads
from contextstore.services import renders
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from contextstore.services.threads import thread_clear_context
from tests.provider_types import assert_anthropic_request, assert_openai_request

names = itertools.count()
FOR_SIZE = {"oversize", "budget", "stop", "window_start"}
INVALID = {"orphan_tool_result", "unanswered_tool_call", "empty_after_strip", "no_turn_start",
           "orphan_thinking"}


def words(n: int) -> str:
    return " ".join(f"w{i % 50}" for i in range(n))


def tool_unit(k: int, size: int, together: bool, tag: int) -> list[dict]:
    calls = [{"id": f"t{tag}_{i}", "name": f"tool_{i}", "arguments": {"q": words(3)}} for i in range(k)]
    if together:
        head = [{"type": "ToolCall", "content": "calling", "data": {"tool_calls": calls}}]
    else:
        head = [{"type": "ToolCall", "data": c} for c in calls]
    results = [{"type": "ToolResult", "content": words(size), "data": {"tool_call_id": c["id"]}}
               for c in calls]
    return head + results


step = st.one_of(
    st.tuples(st.just("message"), st.sampled_from(["user", "assistant"]), st.integers(1, 80)),
    st.tuples(st.just("tools"), st.integers(1, 3), st.integers(0, 120), st.booleans()),
    st.tuples(st.just("reasoning"), st.integers(1, 60), st.booleans()),
    st.tuples(st.just("huge"), st.sampled_from(["Message", "ToolResult"]), st.integers(2000, 6000)),
    st.tuples(st.just("collapse"), st.integers(0, 40), st.integers(0, 6)),
    st.tuples(st.just("clear")),
    st.tuples(st.just("unanswered"), st.integers(1, 3)),
    st.tuples(st.just("summary"), st.integers(1, 40)),
)


def build(thread, actor, steps) -> None:
    for n, op in enumerate(steps):
        kind = op[0]
        if kind == "message":
            event_append(thread=thread, actor=actor, events=[
                {"type": "Message", "role": op[1], "content": words(op[2])}])
        elif kind == "tools":
            event_append(thread=thread, actor=actor, events=tool_unit(op[1], op[2], op[3], n))
        elif kind == "reasoning":
            thinking = {"type": "thinking", "thinking": words(op[1])}
            if op[2]:
                thinking["signature"] = "sig"
            event_append(thread=thread, actor=actor, events=[
                {"type": "Reasoning", "parts": [thinking]},
                {"type": "LLMOutput", "parts": [thinking, {"type": "text", "text": words(5)}]}])
        elif kind == "huge":
            data = {"tool_call_id": "nobody"} if op[1] == "ToolResult" else None
            event_append(thread=thread, actor=actor, events=[
                {"type": op[1], "content": words(op[2]), "data": data}])
        elif kind == "collapse":
            thread.refresh_from_db()
            try:
                collapse_create(thread=thread, start_position=op[1] + 1, end_position=op[1] + 1 + op[2],
                                summary_text=words(8), actor=actor)
            except DomainError:
                pass  # nothing active there
        elif kind == "unanswered":  # calls whose results never came (or are still to come)
            event_append(thread=thread, actor=actor, events=tool_unit(op[1], 0, False, n)[:op[1]])
        elif kind == "clear":
            thread_clear_context(thread=thread, actor=actor)
        else:
            state_write(thread=thread, summary=words(op[1]), actor=actor)
    thread.refresh_from_db()


def check(thread, render, budget: int, fmt: str) -> None:
    stats = render["stats"]
    history = stats["sections"]["history"]
    fixed = stats["total_tokens"] - history["tokens"]
    assert stats["total_tokens"] <= max(budget, fixed)
    if fixed > budget:
        assert stats["fits"] is False and history["events_included"] == 0

    if fmt == "openai":
        assert_openai_request(render["messages"])
    elif fmt == "anthropic":
        assert_anthropic_request(render["system"], render["messages"])
    else:  # raw: the same pairing rules, on contextstore's own fields
        as_openai = []
        for m in (m for m in render["messages"] if m["section"] == "history"):
            if m["role"] == "tool":
                as_openai.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": ""})
            elif m.get("tool_calls"):
                if as_openai and as_openai[-1].get("tool_calls") and as_openai[-1]["_open"]:
                    as_openai[-1]["tool_calls"] += [{"id": c["id"]} for c in m["tool_calls"]]
                    continue
                as_openai.append({"role": "assistant", "_open": True,
                                  "tool_calls": [{"id": c["id"]} for c in m["tool_calls"]]})
            else:
                as_openai.append({"role": m["role"], "content": m["content"]})
        pending: list[str] = []
        for m in as_openai:
            m.pop("_open", None)
            if m["role"] == "tool":
                assert pending and pending.pop(0) == m["tool_call_id"]
            else:
                assert not pending
                pending = [c["id"] for c in m.get("tool_calls", [])]
        assert not pending
        included = [m["seq"] for m in render["messages"] if m["section"] == "history"]
        assert len(included) == history["events_included"]

    # Every visible event in the working context is included or reported with a reason.
    skipped = {s["seq"]: s["reason"] for s in stats["skipped"]}
    active = list(Event.objects.filter(thread=thread, status="active", visible=True)
                  .order_by("position").values_list("seq", "position"))
    cut = min((s["position"] for s in stats["skipped"] if s["reason"] in ("budget", "stop", "window_start")),
              default=None)
    unaccounted = history["events_included"] + len(skipped)
    reported = [seq for seq, pos in active if cut is None or pos >= cut]
    if fmt == "raw":
        assert set(reported) == set(included) | set(skipped)
    assert unaccounted >= len(reported) and len(reported) >= len(skipped)
    if cut is None:
        assert unaccounted == len(active)
    if fmt == "raw":  # whole turns: a user message (or a collapse's summary) up to the next
        starts, turn_of, start = set(), {}, None
        for seq, type_, role in Event.objects.filter(thread=thread, status="active", visible=True) \
                .order_by("position").values_list("seq", "type", "role"):
            user = (role or {"Message": "user"}.get(type_)) == "user"
            if type_ == "Summary" or (type_ != "ToolResult" and user):
                starts.add(seq)
                start = seq  # the turn is the latest start by position: a collapse's summary has a newer seq
            turn_of[seq] = start
        assert not included or included[0] in starts
        shown = {turn_of[seq] for seq in included}
        assert not [seq for seq, r in skipped.items() if r in FOR_SIZE and turn_of.get(seq) in shown]
    left_for_size = any(r in FOR_SIZE for r in skipped.values())
    assert stats["fits"] == (not left_for_size and stats["total_tokens"] <= budget)
    assert set(skipped.values()) <= FOR_SIZE | INVALID


@given(steps=st.lists(step, min_size=1, max_size=16), budget=st.integers(1, 9000),
       fmt=st.sampled_from(FORMATS), on_oversize=st.sampled_from(rendering.ON_OVERSIZE),
       strip=st.booleans())
def test_random_threads_render_valid_honest_requests(session, actor, steps, budget, fmt, on_oversize, strip):
    thread = thread_ensure(session=session, name=f"p{next(names)}", actor=actor)[0]
    build(thread, actor, steps)
    thread.refresh_from_db()
    # Recorded as the API records it (on PostgreSQL, by the render's own read, from its plan)
    rendered, kept = renders.context_render_recorded(thread=thread, max_tokens=budget, fmt=fmt,
                                                     on_oversize=on_oversize, strip_thinking=strip,
                                                     actor=actor)
    check(thread, rendered.body, budget, fmt)
    # The render groups its events by the walk's units when it may (rendering.walked_units):
    # the same items as grouping them again.
    planned = rendering.render_plan(thread=thread, max_tokens=budget, fmt=fmt, on_oversize=on_oversize,
                                    strip_thinking=strip, reuse=False)
    events = rendering.load_planned(thread=thread, plan=planned.plan)
    walked = rendering.walked_units(planned.plan, events)
    assert walked is None or valid_items(events, walked) == valid_items(events)
    # the same record as one written after the render, as stored
    after = renders.render_record(thread=thread, rendered=rendered, actor=actor)
    columns = lambda r: {f.attname: getattr(r, f.attname) for f in RenderRecord._meta.concrete_fields  # noqa: E731
                         if f.attname not in ("id", "created_at")}
    assert columns(kept) == columns(after) == columns(RenderRecord.objects.get(pk=kept.pk))
    # and it rebuilds byte for byte, also after the thread changes again.
    sent = json.dumps([rendered.body.get("system"), rendered.body["messages"]])
    build(thread, actor, [("collapse", 0, 3), ("summary", 4), ("clear",), ("message", "user", 3)])
    rebuilt = render_reads.render_rebuild(record=kept)
    assert json.dumps([rebuilt.get("system"), rebuilt["messages"]]) == sent
