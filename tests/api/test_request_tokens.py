"""One count for one request (issue 47.3): the render's total, the dashboard's gauge, the
prompt-cache analysis and the API's render answer say the same number for the same request,
tools and system texts included, as tokens.request_tokens counts it."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextstore.models import Thread
from contextstore.selectors import rendering
from contextstore.selectors.cache import call_request, render_request
from contextstore.selectors.calls import llm_call_at
from contextstore.selectors.renders import sha256
from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.renders import context_render_recorded
from contextstore.services.sessions import thread_ensure
from contextstore.services.state import state_write
from contextstore.tokens import FRAME_TOKENS, canonical_json, count_tokens, request_tokens, tool_tokens
from contextstore.views.threads import gauge

TOOLS = [
    {"name": "weather", "description": "The weather in a city, now.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "search", "description": "Search the web.",
     "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
]


def build(thread: Thread, actor) -> None:
    """System blocks (prefix and suffix), a summary, tool calls with their results (an Error
    between them), thinking, answers."""
    block_upsert(thread=thread, name="persona", value="You are a careful travel assistant.",
                 placement="prefix", actor=actor)
    block_upsert(thread=thread, name="now", value="Today is Monday, 7 December.", actor=actor)
    state_write(thread=thread, summary="Earlier the user planned a trip to Italy.", actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "Message", "role": "assistant", "content": "Let me look.",
         "parts": [{"type": "thinking", "thinking": "two cities, two calls", "signature": "s1"},
                   {"type": "text", "text": "Let me look."}]},
        {"type": "ToolCall", "data": {"id": "p", "name": "weather", "arguments": {"city": "Paris"}}},
        {"type": "ToolCall", "data": {"id": "r", "name": "weather", "arguments": {"city": "Rome"}}},
        {"type": "ToolResult", "content": "Paris: 18C, light rain", "data": {"tool_call_id": "p"}},
        {"type": "Error", "content": "rate limited once, retried"},
        {"type": "ToolResult", "content": "Rome: 24C, sunny", "data": {"tool_call_id": "r"}},
        {"type": "LLMOutput", "content": "Paris is 18C with rain; Rome 24C and sunny."},
        {"type": "Message", "role": "user", "content": "And tomorrow?"},
        # a call before this one logged the tools: the server keeps them by their hash
        {"type": "LLMCallStart", "data": {"model": "claude-sonnet-4", "tools": TOOLS}},
    ])
    thread.refresh_from_db()


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "raw"])
def test_the_render_the_gauge_the_cache_analysis_and_the_api_count_a_request_alike(
        api_client, thread, actor, fmt):
    build(thread, actor)
    budget = 5000
    response = api_client.get(f"/api/v1/threads/{thread.pk}/context/", {
        "max_tokens": budget, "format": fmt, "record": "true",
        "tools_hash": sha256(canonical_json(TOOLS))})
    assert response.status_code == 200, response.content
    api = response.json()
    stats = api["stats"]
    assert stats["sections"]["tools"] == {"tokens": sum(tool_tokens(t) for t in TOOLS), "count": 2}
    # the agent sends that render with the tools
    sent = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "claude-sonnet-4", "render_id": api["render_id"],
                                          "tools": TOOLS}}]).events[0]
    thread.refresh_from_db()
    request = call_request(thread=thread, call=llm_call_at(thread=thread, seq=sent.seq))
    assert request is not None
    analysis = sum(s.tokens for s in request.segments)
    render = rendering.render(thread=thread, max_tokens=budget, fmt=fmt, tools=TOOLS, reuse=False)
    assert render.body["stats"]["total_tokens"] == stats["total_tokens"] == analysis
    assert sum(s["tokens"] for s in stats["sections"].values()) == stats["total_tokens"]
    # the formula, from the texts and the events' stored counts
    events = [i.event for unit in render.units for i in unit]
    strip = fmt == "openai"
    texts = [render.prefix.text, thread.summary, render.suffix.text]
    assert stats["total_tokens"] == request_tokens(
        tools=TOOLS, system=[count_tokens(t) for t in texts if t],
        messages=[e.token_count - (e.thinking_tokens if strip else 0) for e in events])
    assert len(events) == 9 and all(t for t in texts)  # everything fit, the aside too
    if fmt != "openai":  # the gauge's render keeps thinking (openai's never does)
        assert gauge(thread, budget)["total"] == stats["total_tokens"]


def test_a_render_counts_the_tools_in_its_budget(thread, actor):
    build(thread, actor)
    without = rendering.render(thread=thread, max_tokens=5000, reuse=False).body["stats"]
    tools = sum(tool_tokens(t) for t in TOOLS)
    tight = without["total_tokens"] + tools - 1  # one token short of everything with the tools
    body = rendering.render(thread=thread, max_tokens=tight, tools=TOOLS, reuse=False).body
    assert body["stats"]["total_tokens"] <= tight and not body["stats"]["fits"]
    body = rendering.render(thread=thread, max_tokens=tight + 1, tools=TOOLS, reuse=False).body
    assert body["stats"]["total_tokens"] == tight + 1 and body["stats"]["fits"]


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_a_render_diff_counts_each_renders_tools_as_its_record_does(api_client, thread, actor, fmt):
    """The diff of two recorded renders, the second counting the tools: its prompt-cache totals
    are the records' totals (once the tools were left out of the cache analysis, so one answer
    said 398 and 287 for the same request)."""
    build(thread, actor)
    url = f"/api/v1/threads/{thread.pk}/context/"
    plain = api_client.get(url, {"max_tokens": 5000, "format": fmt, "record": "true"}).json()
    tooled = api_client.get(url, {"max_tokens": 5000, "format": fmt, "record": "true",
                                  "tools_hash": sha256(canonical_json(TOOLS))}).json()
    tools = sum(tool_tokens(t) for t in TOOLS)
    assert tooled["stats"]["total_tokens"] == plain["stats"]["total_tokens"] + tools
    diff = api_client.get(f"/api/v1/renders/{plain['render_id']}/diff/{tooled['render_id']}/").json()
    assert diff["tokens"]["total"] == {"before": plain["stats"]["total_tokens"],
                                       "after": tooled["stats"]["total_tokens"]}
    cache = diff["prompt_cache"]
    assert (cache["before_total"], cache["total"]) == (plain["stats"]["total_tokens"],
                                                       tooled["stats"]["total_tokens"])
    # the tools come first in the request: adding them leaves nothing of the earlier one to reuse
    assert cache["reusable"] < tools and diff["prompt_cache_lost"]


def test_an_unknown_tools_hash_is_refused(api_client, thread):
    response = api_client.get(f"/api/v1/threads/{thread.pk}/context/", {"tools_hash": "0" * 64})
    assert response.status_code == 404 and "tools_hash" in response.json()["error"]["message"]


names = itertools.count()
event = st.one_of(
    st.builds(lambda n, r: {"type": "Message", "role": r, "content": "word " * n},
              st.integers(0, 60), st.sampled_from(["user", "assistant"])),
    st.builds(lambda n: {"type": "Error", "content": "failed " * n}, st.integers(0, 10)),
    st.builds(lambda n, t: {"type": "Message", "role": "assistant", "content": "answer " * n,
                            "parts": [{"type": "thinking", "thinking": "hmm " * t, "signature": "s"}]},
              st.integers(0, 20), st.integers(1, 20)),
    st.builds(lambda k, n: [{"type": "ToolCall", "data": {"tool_calls": [
        {"id": f"c{i}", "name": "search", "arguments": {"q": "x" * n}} for i in range(k)]}}] + [
        {"type": "ToolResult", "content": "found " * n, "data": {"tool_call_id": f"c{i}"}}
        for i in range(k)], st.integers(1, 3), st.integers(0, 30)),
)


# the profile's number (12 in `make check`), at most 25 (CI)
@settings(max_examples=min(25, settings.default.max_examples), deadline=None)
@given(events=st.lists(event, min_size=1, max_size=14), fmt=st.sampled_from(["raw", "openai", "anthropic"]),
       budget=st.integers(50, 3000), tools=st.sampled_from([[], TOOLS]), prefix=st.booleans(),
       summary=st.booleans(), strip=st.booleans())
def test_random_threads_count_alike_in_the_render_its_record_and_the_cache_analysis(
        session, actor, events, fmt, budget, tools, prefix, summary, strip):
    thread = thread_ensure(session=session, name=f"t{next(names)}", actor=actor)[0]
    if prefix:
        block_upsert(thread=thread, name="rules", value="Answer briefly.", placement="prefix", actor=actor)
    if summary:
        state_write(thread=thread, summary="So far: nothing much.", actor=actor)
    flat = [e for x in events for e in (x if isinstance(x, list) else [x])]
    event_append(thread=thread, actor=actor, events=flat)
    thread.refresh_from_db()
    rendered, record = context_render_recorded(thread=thread, max_tokens=budget, actor=actor, fmt=fmt,
                                               strip_thinking=strip, tools=tools)
    stats = rendered.body["stats"]
    total = stats["total_tokens"]
    assert total <= budget or not stats["sections"]["history"]["events_included"]
    assert record.total_tokens == total
    assert sum(s["tokens"] for s in stats["sections"].values()) == total
    # each system block and message counted, adding up to the total with the tools
    counted = sum(rendered.counts["system"]) + sum(rendered.counts["messages"])
    assert counted + stats["sections"]["tools"]["tokens"] == total
    assert len(rendered.counts["messages"]) == len(rendered.body["messages"])
    # the cache analysis of that request, made now and rebuilt from its record
    now = render_request(rendered=rendered, model="m", tools=tools)
    assert sum(s.tokens for s in now.segments) == total
    sent = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "m", "render_id": str(record.pk),
                                          **({"tools": tools} if tools else {})}}]).events[0]
    thread.refresh_from_db()
    request = call_request(thread=thread, call=llm_call_at(thread=thread, seq=sent.seq))
    assert request is not None and sum(s.tokens for s in request.segments) == total
    # every piece framed once
    pieces = len(tools) + len(rendered.counts["system"]) + len(rendered.counts["messages"])
    assert total >= FRAME_TOKENS * pieces


@pytest.mark.parametrize("content, parts", [
    # a framework that keeps the same text twice (content and a text part): sent once
    ("Water boils at 100 °C.", [{"type": "text", "text": "Water boils at 100 °C."}]),
    # parts win over a different content, as the render sends them
    ("a summary of the parts", [{"type": "text", "text": "First."}, {"type": "text", "text": "Second."}]),
    # parts alone, and content alone
    ("", [{"type": "text", "text": "Only parts here."}]),
    ("Only content here.", None),
])
def test_an_events_count_is_the_text_the_render_sends(thread, actor, content, parts):
    event = {"type": "Message", "role": "assistant", "content": content}
    if parts is not None:
        event["parts"] = parts
    stored = event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Tell me."}, event]).events[1]
    body = rendering.render(thread=thread, max_tokens=5000, fmt="openai", reuse=False).body
    [sent] = [m for m in body["messages"] if m["role"] == "assistant"]
    text = sent["content"] if isinstance(sent["content"], str) else "".join(
        p["text"] for p in sent["content"])
    assert stored.token_count == count_tokens(text)
