"""Prompt-cache verdicts computed from what really happened, tested where they would be wrong:
the three contradictions the dashboard showed (issue 31) and each cause of a cache break."""

from contextstore.models import Thread
from contextstore.selectors import cache as cache_selectors
from contextstore.selectors.cache import llm_call_diff, model_view_cache, session_cache
from contextstore.selectors.calls import llm_call_at
from contextstore.services.blocks import block_upsert
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.renders import context_render_recorded
from contextstore.services.threads import thread_clear_context
from tests.conftest import messages


def recorded_call(thread: Thread, actor, *, fmt: str = "anthropic", budget: int = 50_000,
                  model: str = "claude-sonnet-4", **usage) -> int:
    """Render (recorded) and log the call that sent it; returns the LLMCallStart's seq."""
    thread.refresh_from_db()
    _, record = context_render_recorded(thread=thread, max_tokens=budget, actor=actor, fmt=fmt)
    result = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": model, "render_id": str(record.pk)}},
        {"type": "LLMComplete", "data": {"model": model, "input_tokens": 10, **usage}}])
    return result.events[0].seq


def own_call(thread: Thread, actor, sent: list, *, model: str = "gpt-4o", tools: list | None = None,
             **usage) -> int:
    start = {"model": model, "messages": sent, **({"tools": tools} if tools is not None else {})}
    result = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": start},
        {"type": "LLMComplete", "data": {"model": model, **usage}}])
    return result.events[0].seq


def diff(thread: Thread, a: int, b: int) -> dict:
    return llm_call_diff(thread=thread, a=llm_call_at(thread=thread, seq=a),
                         b=llm_call_at(thread=thread, seq=b))


def test_a_changed_suffix_block_loses_the_cache_in_the_anthropic_format_though_the_prefix_is_the_same(
        thread, actor):
    """Contradiction 1: "prompt cache lost" beside "prefix hash: same (prompt cache kept)".
    format=anthropic puts suffix blocks into `system`, before every message."""
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:00 UTC", placement="suffix",
                 actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor)
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:05 UTC", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(1, start=40))
    second = recorded_call(thread, actor)
    d = diff(thread, first, second)
    cache = d["cache"]
    assert d["render"]["prefix_changed"] is False  # the prefix blocks are the same...
    assert cache["status"] == "lost" and cache["reusable"] < 1024 < cache["total"]  # ...the cache is not
    assert cache["divergence"]["label"] == "system block 2 (suffix blocks)"
    assert cache["cause"] == "timestamp" and "clock" in cache["cause_text"]
    assert "suffix blocks in system" in cache["cause_text"]
    assert ("del", "00") in cache["divergence"]["words"] and ("add", "05") in cache["divergence"]["words"]


def test_one_shared_message_of_a_long_request_is_not_a_kept_cache(thread, actor):
    """Contradiction 2: "prompt cache kept" when 72 of 195,890 tokens were shared."""
    system = {"role": "system", "content": "You are a helpful agent."}
    old = [{"role": "user", "content": f"old question {i} " + "detail " * 80} for i in range(30)]
    new = [{"role": "user", "content": f"new question {i} " + "detail " * 80} for i in range(30)]
    first = own_call(thread, actor, [system, *old])
    second = own_call(thread, actor, [system, *new])
    cache = diff(thread, first, second)["cache"]
    assert cache["status"] == "lost" and not cache["clears_minimum"]
    assert 0 < cache["reusable"] < 100 and cache["total"] > 2000
    assert cache["lost_tokens"] > 2000 and cache["lost_cost"] > 0  # gpt-4o has a listed price


def test_the_model_view_sees_the_cache_lost_when_the_whole_history_was_cleared(thread, actor):
    """Contradiction 3: "the prompt cache still applies" after the whole history changed
    (the prefix blocks stayed the same)."""
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor, fmt="openai", model="gpt-4o")
    thread_clear_context(thread=thread, actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40, start=100))
    thread.refresh_from_db()
    view = model_view_cache(thread=thread)
    cache = view["cache"]
    assert view["format"] == "openai" and cache["status"] == "lost"
    assert cache["cause"] == "clear" and "40 events" in cache["cause_text"]


def test_an_appended_turn_keeps_the_cache_and_a_matching_provider_report_agrees(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    second = recorded_call(thread, actor, cache_read_input_tokens=2400, cache_creation_input_tokens=120)
    cache = diff(thread, first, second)["cache"]
    assert cache["status"] == "kept" and cache["cause"] == "append" and cache["lost_tokens"] == 0
    assert cache["reusable"] == cache["before_total"] and cache["divergence"] is None
    assert cache["reported"].cache_read == 2400 and cache["disagreement"] is None


def test_a_provider_that_read_nothing_where_the_prediction_kept_everything_is_flagged(thread, actor):
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    second = recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2600)
    cache = diff(thread, first, second)["cache"]
    assert cache["status"] == "kept" and "read nothing" in cache["disagreement"]


def test_in_the_openai_format_a_suffix_block_moves_each_turn_and_only_it_is_lost(thread, actor):
    block_upsert(thread=thread, name="rules", value="Answer in English.", placement="suffix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor, fmt="openai", model="gpt-4o")
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    second = recorded_call(thread, actor, fmt="openai", model="gpt-4o")
    cache = diff(thread, first, second)["cache"]
    assert cache["cause"] == "suffix_moves" and cache["status"] == "kept"
    assert 0 < cache["lost_tokens"] < 20  # the suffix message alone


def test_a_collapse_an_edited_block_and_a_sliding_window_are_named_as_causes(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor)
    collapse_create(thread=thread, start_position=1, end_position=20, summary_text="The first 20 turns.",
                    actor=actor)
    second = recorded_call(thread, actor)
    collapsed = diff(thread, first, second)["cache"]
    assert collapsed["cause"] == "collapse" and "#1–#20" in collapsed["cause_text"]
    block_upsert(thread=thread, name="persona", value="Be thorough and cite sources.", actor=actor)
    third = recorded_call(thread, actor)
    edited = diff(thread, second, third)["cache"]
    assert edited["cause"] == "block_edit" and "block “persona” edited v1→v2" in edited["cause_text"]
    assert ("add", "thorough and cite sources") in edited["divergence"]["words"]
    fourth = recorded_call(thread, actor, budget=800)  # the oldest turns no longer fit
    windowed = diff(thread, third, fourth)["cache"]
    assert windowed["cause"] == "window" and windowed["status"] in ("lost", "partial")


def test_a_changed_tool_list_is_named(thread, actor):
    system = {"role": "system", "content": "You are a helpful agent. " * 300}
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    first = own_call(thread, actor, [system], tools=tools)
    fetch = {"type": "function", "function": {"name": "fetch", "parameters": {}}}
    second = own_call(thread, actor, [system], tools=[*tools, fetch])
    cache = diff(thread, first, second)["cache"]
    assert cache["cause"] == "tools" and "added tool fetch" in cache["cause_text"]


def test_the_session_summary_sums_reported_hits_and_lost_tokens_by_cause(thread, session, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2500)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    recorded_call(thread, actor, cache_read_input_tokens=2500, cache_creation_input_tokens=100)
    block_upsert(thread=thread, name="persona", value="Be thorough.", actor=actor)
    recorded_call(thread, actor, cache_read_input_tokens=0, cache_creation_input_tokens=2700)
    summary = session_cache(session=session)
    assert summary["calls"] == 3 and summary["pairs"] == 2 and summary["reporting"] == 3
    # 2500 read of 10+2500 + 10+2600 + 10+2700 input tokens
    assert summary["hit_rate"] == round(100 * 2500 / 7830)
    assert [c["cause"] for c in summary["causes"]] == ["block_edit"]
    assert summary["causes"][0]["tokens"] == summary["lost_tokens"] > 2000
    assert summary["lost_cost"] > 0 and summary["worst"][0]["seq"] > 0


def test_the_clients_usage_on_the_start_is_the_providers_report_when_the_end_has_none(thread, actor):
    """ContextStore's log_llm_call(..., usage=reply.usage.model_dump()) puts it on the start."""
    event_append(thread=thread, actor=actor, events=messages(40))
    first = recorded_call(thread, actor)
    event_append(thread=thread, actor=actor, events=messages(2, start=40))
    _, record = context_render_recorded(thread=thread, max_tokens=50_000, actor=actor, fmt="anthropic")
    usage = {"input_tokens": 60, "cache_read_input_tokens": 2400, "cache_creation_input_tokens": 130}
    second = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "claude-sonnet-4", "render_id": str(record.pk),
                                          "usage": usage}},
        {"type": "LLMComplete", "data": {"model": "claude-sonnet-4", "input_tokens": 60}}]).events[0].seq
    cache = diff(thread, first, second)["cache"]
    assert cache["reported"].cache_read == 2400 and cache["reported"].input_total == 2590
    assert cache["status"] == "kept" and cache["disagreement"] is None


def test_between_two_calls_of_the_agents_own_messages_the_threads_history_names_the_cause(thread, actor):
    """Calls that logged their messages name no events: a collapse or a clear logged between
    them says why their history differs, whatever times the agent put on its events."""
    event_append(thread=thread, actor=actor, events=messages(40))
    history = [{"role": "user", "content": f"turn {i}: " + "context " * 56} for i in range(40)]
    first = own_call(thread, actor, [{"role": "system", "content": "Be brief."}, *history])
    collapse_create(thread=thread, start_position=1, end_position=20, summary_text="Twenty turns.",
                    actor=actor)
    second = own_call(thread, actor, [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "Twenty turns."}, *history[20:]])
    cache = diff(thread, first, second)["cache"]
    assert cache["cause"] == "collapse" and "#1–#20" in cache["cause_text"] and cache["status"] == "lost"
    thread_clear_context(thread=thread, actor=actor)
    third = own_call(thread, actor, [{"role": "system", "content": "Be brief."}])
    assert diff(thread, second, third)["cache"]["cause"] == "clear"


def test_after_a_request_under_the_minimum_nothing_was_cached_to_lose(thread, actor):
    short = [{"role": "user", "content": "context " * 300}]
    first = own_call(thread, actor, short)
    second = own_call(thread, actor, [*short, {"role": "user", "content": "context " * 900}])
    cache = diff(thread, first, second)["cache"]
    assert cache["status"] == "short" and cache["cause"] == "append" and cache["lost_tokens"] == 0
    assert cache["total"] > 1024 > cache["before_total"]


def test_a_view_rebuilds_a_bounded_number_of_requests_and_the_next_view_finishes(thread, session, actor,
                                                                                monkeypatch):
    monkeypatch.setattr(cache_selectors, "REBUILDS_PER_VIEW", 2)
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    event_append(thread=thread, actor=actor, events=messages(40))
    recorded_call(thread, actor)
    recorded_call(thread, actor)
    block_upsert(thread=thread, name="persona", value="Be thorough.", actor=actor)
    recorded_call(thread, actor)
    first = session_cache(session=session)
    assert first["pairs"] == 1 and first["pending"] == 1 and first["causes"] == []
    second = session_cache(session=session)  # the first pair comes from the cache now
    assert second["pairs"] == 2 and second["pending"] == 0
    assert [c["cause"] for c in second["causes"]] == ["block_edit"]
