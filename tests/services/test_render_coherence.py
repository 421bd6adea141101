"""Renders under a budget stay coherent (issue 31, item 4): whole turns, a user message first,
thinking only with the assistant message it belongs to, every call answered and every result
called, in both provider formats and under both `on_oversize` choices."""

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextstore.models import Event
from contextstore.selectors import rendering
from contextstore.selectors import renders as render_reads
from contextstore.services import renders
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.sessions import thread_ensure
from contextstore.tokens import FRAME_TOKENS
from tests.provider_types import assert_anthropic_request, assert_openai_request


def words(tag: str, n: int) -> str:
    return " ".join([tag] + [f"w{i % 40}" for i in range(n)])


def thinking(tag: str, n: int = 30) -> dict:
    return {"type": "thinking", "thinking": words(f"think-{tag}", n), "signature": f"sig-{tag}"}


def agent_turn(t: int, result_words: int) -> list[dict]:
    """A user message, reasoning, two parallel tool calls and their results, an answer."""
    calls = [{"id": f"t{t}_{i}", "name": "search", "arguments": {"q": f"q{t}.{i}"}} for i in range(2)]
    return [
        {"type": "Message", "role": "user", "content": words(f"user-{t}", 20)},
        {"type": "Reasoning", "parts": [thinking(f"{t}a")]},
        {"type": "Reasoning", "parts": [thinking(f"{t}b")]},
        {"type": "ToolCall", "content": f"calling {t}", "data": {"tool_calls": calls}},
        *({"type": "ToolResult", "content": words(f"result-{t}.{i}", result_words),
           "data": {"tool_call_id": c["id"]}} for i, c in enumerate(calls)),
        {"type": "LLMOutput", "parts": [thinking(f"{t}c"),
                                        {"type": "text", "text": words(f"answer-{t}", 15)}]},
    ]


def assert_coherent(render: dict, fmt: str) -> None:
    """Provider-valid (tests/provider_types.py checks a user message first and no orphan
    thinking too)."""
    if fmt == "openai":
        assert_openai_request(render["messages"])
    else:
        assert_anthropic_request(render["system"], render["messages"])


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("on_oversize", rendering.ON_OVERSIZE)
def test_a_small_budget_keeps_whole_turns_from_their_user_message(thread, actor, fmt, on_oversize):
    for t in range(12):
        event_append(thread=thread, actor=actor, events=agent_turn(t, 40 + 30 * (t % 4)))
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=3000, fmt=fmt, on_oversize=on_oversize)
    assert_coherent(render, fmt)
    assert render["messages"], "the newest turns fit 3,000 tokens"
    assert render["stats"]["total_tokens"] <= 3000 and render["stats"]["fits"] is False


def test_reasoning_whose_answer_was_left_out_is_left_out_too(thread, actor):
    # the answer the two reasoning events belong to is too big for the budget
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "what is in the log?"},
        {"type": "Reasoning", "parts": [thinking("a")]},
        {"type": "Reasoning", "parts": [thinking("b")]},
        {"type": "LLMOutput", "content": words("answer", 4000)},
        {"type": "Message", "role": "user", "content": "shorter please"},
        {"type": "LLMOutput", "content": "Fine."}])
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=600, fmt="anthropic")
    assert_coherent(render, "anthropic")
    assert [m["role"] for m in render["messages"]] == ["user", "assistant"]
    assert render["messages"][0]["content"] == [{"type": "text", "text": "shorter please"}]
    assert {s["seq"]: s["reason"] for s in render["stats"]["skipped"]} == {
        1: "oversize", 2: "oversize", 3: "oversize", 4: "oversize"}


def test_thinking_before_a_call_still_waiting_for_its_result_is_left_out(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "look it up"},
        {"type": "Reasoning", "parts": [thinking("a")]},
        {"type": "ToolCall", "data": {"id": "c1", "name": "search", "arguments": {}}}])
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=5000, fmt="anthropic")
    assert_coherent(render, "anthropic")
    assert render["messages"] == [{"role": "user", "content": [{"type": "text", "text": "look it up"}]}]
    assert {s["seq"]: s["reason"] for s in render["stats"]["skipped"]} == {
        2: "orphan_thinking", 3: "unanswered_tool_call"}
    assert render["stats"]["fits"] is True
    shown = thread.events.get(seq=1).token_count + FRAME_TOKENS  # framed, as counted
    assert render["stats"]["sections"]["history"]["tokens"] == shown


def test_history_before_the_first_user_message_is_left_out(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMOutput", "content": "Hello, how can I help?"},
        {"type": "Message", "role": "user", "content": "hi"}])
    thread.refresh_from_db()
    for fmt in ("openai", "anthropic"):
        render = rendering.context_render(thread=thread, max_tokens=5000, fmt=fmt)
        assert_coherent(render, fmt)
        assert len(render["messages"]) == 1
        assert render["stats"]["skipped"][0]["reason"] == "no_turn_start"
        assert render["stats"]["fits"] is True


# ---------------------------------------------------------------- property: random threads

names = itertools.count()
# A step of a turn after its user message: reasoning (which belongs to the next text or call),
# 1-3 tool calls on one event or one each with their results, an answer with or without thinking.
step = st.one_of(
    st.tuples(st.just("think"), st.integers(5, 60)),
    st.tuples(st.just("tools"), st.integers(1, 3), st.integers(0, 400), st.booleans()),
    st.tuples(st.just("say"), st.integers(1, 80), st.booleans()),
)
turns = st.lists(st.tuples(st.integers(1, 60), st.lists(step, max_size=5)), min_size=1, max_size=8)


@dataclass
class Planned:
    """The events of a random thread, each with the tags a render shows of it and whether a
    coherent render keeps it once its turn is kept (`turn` None: it belongs to no turn)."""

    specs: list[dict] = field(default_factory=list)
    tags: list[list[str]] = field(default_factory=list)
    turn: list[int | None] = field(default_factory=list)
    kept: list[bool] = field(default_factory=list)

    def add(self, spec: dict, tags: list[str], turn: int | None, kept: bool) -> None:
        self.specs.append(spec)
        self.tags.append(tags)
        self.turn.append(turn)
        self.kept.append(kept)


def plan_thread(greeting: bool, drawn: list, waiting: bool, strip: bool) -> Planned:
    p = Planned()
    if greeting:  # an assistant message before any user message
        p.add({"type": "LLMOutput", "content": "h hello"}, [], None, False)
    for t, (size, steps) in enumerate(drawn):
        p.add({"type": "Message", "role": "user", "content": words(f"u{t}", size)}, [f"u{t}"], t, True)
        for s, op in enumerate(steps):
            if op[0] == "think":
                owned = any(o[0] != "think" for o in steps[s + 1:])  # a text or call follows
                p.add({"type": "Reasoning", "parts": [thinking(f"{t}.{s}", op[1]) | {
                    "thinking": words(f"k{t}.{s}", op[1])}]}, [f"k{t}.{s}"], t, owned and not strip)
            elif op[0] == "tools":
                ids = [f"c{t}.{s}.{i}" for i in range(op[1])]
                calls = [{"id": i, "name": "search", "arguments": {"q": i}} for i in ids]
                if op[3]:
                    p.add({"type": "ToolCall", "content": f"a{t}.{s}", "data": {"tool_calls": calls}},
                          [f"a{t}.{s}", *ids], t, True)
                else:
                    for call in calls:
                        p.add({"type": "ToolCall", "data": call}, [call["id"]], t, True)
                for i in ids:
                    p.add({"type": "ToolResult", "content": words("r" + i[1:], op[2]),
                           "data": {"tool_call_id": i}}, ["r" + i[1:]], t, True)
            else:
                parts = [thinking(f"{t}.{s}s") | {"thinking": f"k{t}.{s}s"}] if op[2] else []
                text = {"type": "text", "text": words(f"s{t}.{s}", op[1])}
                p.add({"type": "LLMOutput", "parts": [*parts, text]},
                      ([f"k{t}.{s}s"] if op[2] and not strip else []) + [f"s{t}.{s}"], t, True)
    if waiting:  # the newest turn's reasoning and a call whose result has not come yet
        last = len(drawn) - 1
        p.add({"type": "Reasoning", "parts": [thinking("w")]}, [], last, False)
        p.add({"type": "ToolCall", "data": {"id": "cw", "name": "search", "arguments": {}}}, [], last, False)
    return p


def shown_tags(render: dict, fmt: str) -> list[str]:
    """The tags of what a render shows, in order (each shown text starts with its tag)."""
    out = []
    for m in render["messages"]:
        if fmt == "openai":
            if m["role"] == "system":
                continue
            if m.get("content"):
                out.append(m["content"].split()[0])
            out.extend(c["id"] for c in m.get("tool_calls", []))
            continue
        for b in m["content"]:
            text = b.get("text") or b.get("thinking") or b.get("content")
            out.append(b["id"] if b["type"] == "tool_use" else text.split()[0])
    return out


@given(drawn=turns, greeting=st.booleans(), waiting=st.booleans(),
       budget=st.sampled_from([1, 200, 800, 3000, 8000, 200_000]),
       fmt=st.sampled_from(["openai", "anthropic"]),
       on_oversize=st.sampled_from(rendering.ON_OVERSIZE), strip=st.booleans())
def test_random_threads_render_whole_turns_a_provider_accepts(
        session, actor, drawn, greeting, waiting, budget, fmt, on_oversize, strip):
    stripped = strip or fmt == "openai"
    p = plan_thread(greeting, drawn, waiting, stripped)
    thread = thread_ensure(session=session, name=f"c{next(names)}", actor=actor)[0]
    event_append(thread=thread, actor=actor, events=p.specs)
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=budget, fmt=fmt, on_oversize=on_oversize,
                                      strip_thinking=strip)
    assert_coherent(render, fmt)

    shown = shown_tags(render, fmt)
    present = sorted({int(tag[1:]) for tag in shown if tag[0] == "u"})
    if on_oversize == "stop":  # history ends at the first turn that does not fit
        assert present == list(range(len(drawn) - len(present), len(drawn)))
    # Every turn shown is shown whole, in order, with nothing from outside a turn.
    events = list(Event.objects.filter(thread=thread).order_by("position"))
    kept = [n for n, t in enumerate(p.turn) if t in present and p.kept[n]]
    assert shown == [tag for n in kept for tag in p.tags[n]]
    # The stats count what was kept, and nothing left out for size means every turn came.
    stats = render["stats"]
    history = stats["sections"]["history"]
    assert history["events_included"] == len(kept)
    assert history["tokens"] == stats["total_tokens"] == sum(
        events[n].token_count - (events[n].thinking_tokens if stripped else 0) + FRAME_TOKENS for n in kept)
    assert stats["total_tokens"] <= budget
    assert stats["fits"] == (present == list(range(len(drawn))))
    if budget == 200_000:
        assert stats["fits"]


def test_a_collapse_summary_opens_history_as_a_user_message_and_old_records_rebuild_as_sent(
        thread, actor):
    event_append(thread=thread, actor=actor, events=agent_turn(0, 20) + agent_turn(1, 20))
    # the summarizer collapses the oldest events, turn 1's user message and tool call among them
    # (and so the call's results: a range never splits a tool exchange)
    collapse_create(thread=thread, start_position=1, end_position=11, summary_text="s earlier work",
                    actor=actor, widen=True)
    thread.refresh_from_db()
    rendered, record = renders.context_render_recorded(thread=thread, max_tokens=100_000, fmt="openai",
                                                       actor=actor)
    assert_coherent(rendered.body, "openai")
    assert [m["role"] for m in rendered.body["messages"]] == ["user", "assistant"]
    assert rendered.body["stats"]["skipped"] == []
    assert rendered.body["messages"][0] == {"role": "user", "content": "s earlier work"}
    assert render_reads.render_rebuild(record=record)["messages"] == rendered.body["messages"]
    # a record written before version 2 showed it as a system message, and rebuilds so
    record.spec["v"] = 1
    assert render_reads.render_rebuild(record=record)["messages"][0] == {
        "role": "system", "content": "s earlier work"}
