"""Events aside from the provider conversation (errors, notifications, runtime-only types, a
framework's own types: spans, state changes) never break a tool call from its results: an
aside logged inside a tool exchange stays with it and is shown right after its last result."""

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.eventspec import RUNTIME_TYPES
from contextstore.render_format import kind_of, valid_items
from contextstore.selectors import rendering
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.tokens import FRAME_TOKENS
from tests.provider_types import assert_anthropic_request, assert_openai_request

names = itertools.count()
FOR_SIZE = {"oversize", "budget", "stop", "window_start"}
ASIDES = [
    {"type": "Error", "content": "rate limited once, retried"},
    {"type": "Notification", "content": "note: the cache was warmed"},
    {"type": "AfterAgentCall", "content": "agent call ended", "visible": True},
    {"type": "span.end", "content": "span search finished", "data": {"span_id": "ab12"}},
    {"type": "StateChanged", "role": "user", "content": "state: step=2"},
    {"type": "langgraph.checkpoint", "role": "system", "content": "checkpoint 7"},
    # The documented aside types stay asides whatever role the agent logs them with: an Error
    # logged as the assistant's once broke the exchange (both calls and results dropped).
    {"type": "Error", "role": "assistant", "content": "the model call failed, retrying"},
    {"type": "Notification", "role": "assistant", "content": "switching to the backup model"},
    {"type": "LLMComplete", "role": "assistant", "content": "call done", "visible": True},
]


def two_cities(aside: dict) -> list[dict]:
    return [
        {"type": "Message", "role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "ToolCall", "data": {"id": "p", "name": "weather", "arguments": {"city": "Paris"}}},
        {"type": "ToolCall", "data": {"id": "r", "name": "weather", "arguments": {"city": "Rome"}}},
        {"type": "ToolResult", "content": "Paris: 18C", "data": {"tool_call_id": "p"}},
        aside,
        {"type": "ToolResult", "content": "Rome: 24C", "data": {"tool_call_id": "r"}},
        {"type": "LLMOutput", "content": "Paris 18C, Rome 24C."},
    ]


def check_provider(body: dict, fmt: str) -> None:
    if fmt == "openai":
        assert_openai_request(body["messages"])
    elif fmt == "anthropic":
        assert_anthropic_request(body["system"], body["messages"])


def test_every_type_takes_part_in_a_turn_as_documented():
    assert kind_of("ToolCall", "") == "call"
    assert kind_of("ToolResult", "") == kind_of("PythonOutput", "") == kind_of("x.out", "tool") == "result"
    assert {kind_of(t, "") for t in ("Task", "Message", "LLMOutput", "Reasoning", "Summary")} == {"other"}
    assert {kind_of(a["type"], a.get("role", "")) for a in ASIDES} == {"aside"}
    assert kind_of("custom.reply", "assistant") == "other"  # the model wrote it: may hold calls
    # the documented aside types are asides whatever role they are logged with (but tool)
    assert {kind_of(t, r) for t in ("Error", "Notification", *RUNTIME_TYPES)
            for r in ("", "user", "assistant", "system")} == {"aside"}
    assert kind_of("Error", "tool") == "result"


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_an_error_between_two_results_keeps_the_whole_exchange_and_the_answer(thread, actor, fmt):
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[0]))
    thread.refresh_from_db()
    body = rendering.context_render(thread=thread, max_tokens=4000, fmt=fmt)
    check_provider(body, fmt)
    assert body["stats"]["skipped"] == [] and body["stats"]["fits"] is True
    assert body["stats"]["sections"]["history"]["events_included"] == 7
    if fmt == "openai":
        assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in body["messages"][2:]] == [
            ("tool", "p", "Paris: 18C"), ("tool", "r", "Rome: 24C"),
            ("system", None, "rate limited once, retried"),
            ("assistant", None, "Paris 18C, Rome 24C.")]
    else:
        assert body["messages"][2] == {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "p", "content": "Paris: 18C"},
            {"type": "tool_result", "tool_use_id": "r", "content": "Rome: 24C"},
            {"type": "text", "text": "rate limited once, retried"}]}
        assert body["messages"][3]["content"] == [{"type": "text", "text": "Paris 18C, Rome 24C."}]


def test_a_raw_render_shows_the_aside_after_the_results_with_its_own_position(thread, actor):
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[3]))
    thread.refresh_from_db()
    body = rendering.context_render(thread=thread, max_tokens=4000)
    assert [m["position"] for m in body["messages"]] == [1, 2, 3, 4, 6, 5, 7]


def test_an_unknown_user_type_inside_an_exchange_opens_no_turn_but_opens_one_elsewhere(thread, actor):
    aside = ASIDES[4]
    event_append(thread=thread, actor=actor, events=[aside, *two_cities(aside)[1:]])
    thread.refresh_from_db()
    tokens = {e.seq: e.token_count + FRAME_TOKENS for e in thread.events.all()}  # framed, as counted
    # room for everything but the first event: the turn is the whole exchange from it, left out
    body = rendering.context_render(thread=thread, max_tokens=sum(tokens.values()) - tokens[1])
    assert [(s["seq"], s["reason"]) for s in body["stats"]["skipped"]] == [
        (n, "oversize") for n in range(7, 0, -1)]
    body = rendering.context_render(thread=thread, max_tokens=sum(tokens.values()), fmt="openai")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool", "user", "assistant"]


def test_an_unanswered_exchange_is_dropped_but_the_asides_inside_it_stay(thread, actor):
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[1])[:5])
    thread.refresh_from_db()
    body = rendering.context_render(thread=thread, max_tokens=4000, fmt="openai")
    assert_openai_request(body["messages"])
    assert [m["content"] for m in body["messages"]] == ["Weather in Paris and Rome?",
                                                         "note: the cache was warmed"]
    assert sorted((s["seq"], s["reason"]) for s in body["stats"]["skipped"]) == [
        (n, "unanswered_tool_call") for n in (2, 3, 4)]


def test_an_orphan_result_is_dropped_but_an_aside_between_orphans_stays(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "go on"},
        {"type": "ToolResult", "content": "one", "data": {"tool_call_id": "gone"}},
        ASIDES[0],
        {"type": "ToolResult", "content": "two", "data": {"tool_call_id": "gone2"}}])
    thread.refresh_from_db()
    body = rendering.context_render(thread=thread, max_tokens=4000, fmt="anthropic")
    check_provider(body, "anthropic")
    assert body["messages"][0]["content"][1]["text"] == "rate limited once, retried"
    assert sorted((s["seq"], s["reason"]) for s in body["stats"]["skipped"]) == [
        (2, "orphan_tool_result"), (4, "orphan_tool_result")]


# ------------------------------------------------------------------ random interleavings

def exchange(tag: int, k: int, style: str) -> tuple[list[dict], list[dict]]:
    """(the call events, the result events) of one tool exchange of k parallel calls."""
    calls = [{"id": f"x{tag}_{i}", "name": f"tool_{i}", "arguments": {"n": i}} for i in range(k)]
    if style == "separate":
        head = [{"type": "ToolCall", "data": c} for c in calls]
    elif style == "together":
        head = [{"type": "ToolCall", "content": "calling", "data": {"tool_calls": calls}}]
    elif style == "parts":  # the model's message carries the calls in its parts
        head = [{"type": "LLMOutput", "parts": [{"type": "text", "text": f"let me look {tag}"}] + [
            {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
            for c in calls]}]
    elif style == "responses":  # OpenAI Responses items: function_call / function_call_output
        head = [{"type": "LLMOutput", "parts": [
            {"type": "function_call", "call_id": c["id"], "name": c["name"],
             "arguments": json.dumps(c["arguments"])} for c in calls]}]
        return head, [{"type": "ToolResult", "content": "", "parts": [
            {"type": "function_call_output", "call_id": c["id"], "output": f"result {tag}.{i}"}]}
            for i, c in enumerate(calls)]
    else:  # Chat Completions messages: an assistant Message with calls, results with role tool
        head = [{"type": "Message", "role": "assistant", "parts": [
            {"type": "tool_call", "id": c["id"], "name": c["name"], "arguments": json.dumps(c["arguments"])}
            for c in calls]}]
        return head, [{"type": "Message", "role": "tool", "content": f"result {tag}.{i}",
                       "data": {"tool_call_id": c["id"]}} for i, c in enumerate(calls)]
    results = [{"type": "ToolResult", "content": f"result {tag}.{i} " + "w " * (5 * i),
                "data": {"tool_call_id": c["id"]}} for i, c in enumerate(calls)]
    return head, results


STYLES = ["separate", "together", "parts", "responses", "chat"]
turn_steps = st.lists(st.tuples(st.integers(1, 3), st.sampled_from(STYLES),
                                st.lists(st.tuples(st.integers(0, 100), st.sampled_from(range(len(ASIDES)))),
                                         max_size=4)), min_size=1, max_size=4)


@given(turns=turn_steps, budget=st.integers(20, 600), fmt=st.sampled_from(["raw", "openai", "anthropic"]),
       on_oversize=st.sampled_from(rendering.ON_OVERSIZE))
def test_asides_anywhere_in_tool_exchanges_never_split_a_call_from_its_results(
        session, actor, turns, budget, fmt, on_oversize):
    thread = thread_ensure(session=session, name=f"a{next(names)}", actor=actor)[0]
    exchanges: list[set[int]] = []  # the seqs of each exchange's calls and results
    aside_seqs: set[int] = set()
    seq = 0
    for t, (k, style, asides) in enumerate(turns):
        head, results = exchange(t, k, style)
        body = head + results
        events: list[dict] = [{"type": "Message", "role": "user", "content": f"question {t}"}]
        # asides anywhere between the first call and the last result (and around them)
        slots: dict[int, list[dict]] = {}
        for at, which in asides:
            slots.setdefault(at % (len(body) + 1), []).append(ASIDES[which])
        members = set()
        for i in range(len(body) + 1):
            for aside in slots.get(i, []):
                events.append(aside)
                aside_seqs.add(seq + len(events))
            if i < len(body):
                events.append(body[i])
                members.add(seq + len(events))
        events.append({"type": "LLMOutput", "content": f"answer {t}"})
        event_append(thread=thread, actor=actor, events=events)
        exchanges.append(members)
        seq += len(events)
    thread.refresh_from_db()

    body = rendering.context_render(thread=thread, max_tokens=budget, fmt=fmt, on_oversize=on_oversize)
    stats = body["stats"]
    check_provider(body, fmt)
    reasons = {s["seq"]: s["reason"] for s in stats["skipped"]}
    # nothing here is invalid: what is left out is left out for size, or stands before the
    # first turn's start that fits
    assert set(reasons.values()) <= FOR_SIZE
    for members in exchanges:  # every call with all its results, or none of them
        assert members <= reasons.keys() or not members & reasons.keys(), (members, reasons)
    assert stats["fits"] == (not reasons)
    shown = stats["sections"]["history"]["events_included"]
    assert shown + len(reasons) == seq or stats["sections"]["history"]["older_not_examined"]
    if fmt == "raw":
        history = [m["seq"] for m in body["messages"]]
        assert len(history) == shown and not set(history) & reasons.keys()
    # the walk's grouping, reused by the render when it may, is the grouping of the events
    planned = rendering.render_plan(thread=thread, max_tokens=budget, fmt=fmt, on_oversize=on_oversize,
                                    reuse=False)
    events_ = rendering.load_planned(thread=thread, plan=planned.plan)
    walked = rendering.walked_units(planned.plan, events_)
    assert walked is None or valid_items(events_, walked) == valid_items(events_)
    # and with room for everything, everything comes
    body = rendering.context_render(thread=thread, max_tokens=100_000, fmt=fmt)
    check_provider(body, fmt)
    assert body["stats"]["skipped"] == [] and body["stats"]["sections"]["history"]["events_included"] == seq
