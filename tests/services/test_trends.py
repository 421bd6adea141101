"""The workspace's trends (selectors/trends.py) from known calls: exact sums, p50/p95 as
percentile_cont gives them on both databases, grouping per day, model and agent, days without
data, keys folded past the series limit, and nothing from another workspace or outside the range."""

from datetime import date
from decimal import Decimal

import pytest
from django.db import connection

from contextstore.models import Session
from contextstore.selectors.trends import (
    NONE,
    OTHER,
    cache_totals,
    explain_trends,
    percentile,
    workspace_trends,
)
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

TODAY = date(2026, 3, 10)
XSS_MODEL = "<script>alert(1)</script>"


def _thread(workspace, actor, key: str, agent: str):
    session = session_ensure(workspace=workspace, key=key, agent=agent, actor=actor)[0]
    return thread_ensure(session=session, actor=actor)[0]


def _call(call_id: str, day: str, at: str, ms: int | None, **data) -> list[dict]:
    end = {"type": "LLMComplete", "call_id": call_id,
           "occurred_at": f"{day}T{at}.{(ms or 0):03d}000+00:00", "data": data}
    if ms is None:
        return [end]
    return [{"type": "LLMCallStart", "call_id": call_id, "occurred_at": f"{day}T{at}.000000+00:00",
             "data": {"model": data.get("model")}}, end]


@pytest.fixture
def calls(workspace, other_workspace, actor):
    alpha, beta = _thread(workspace, actor, "s-a", "alpha"), _thread(workspace, actor, "s-b", "beta")
    event_append(thread=alpha, actor=actor, events=[
        # Anthropic's usage: 600 read of 1,000 + 600 input tokens
        *_call("c1", "2026-03-10", "10:00:00", 200, model="gpt-4o", cost=0.25, input_tokens=1000,
               output_tokens=100, cache_read_input_tokens=600, cache_creation_input_tokens=0),
        # OpenAI's, under `usage`: 1,000 of 2,000 prompt tokens read
        *_call("c2", "2026-03-10", "10:01:00", 400, model="gpt-4o", cost=0.5, usage={
            "prompt_tokens": 2000, "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 1000}}),
        # no start: the latency the agent reported; no cache tokens reported
        *_call("c3", "2026-03-10", "10:02:00", None, model="gpt-4o", cost=0.25, input_tokens=10,
               latency_ms=1000),
        {"type": "Error", "content": "boom", "occurred_at": "2026-03-10T11:00:00+00:00"},
        *_call("old", "2026-03-01", "10:00:00", 10, model="gpt-4o", cost=9),  # before a 7-day range
    ])
    event_append(thread=beta, actor=actor, events=[
        *_call("c4", "2026-03-08", "12:00:00", 50, model=XSS_MODEL, cost=0.125, input_tokens=100,
               output_tokens=5),
        {"type": "Error", "content": "bang", "occurred_at": "2026-03-08T12:00:01+00:00"},
    ])
    rival = _thread(other_workspace, actor, "s-r", "alpha")
    event_append(thread=rival, actor=actor, events=_call("r1", "2026-03-10", "10:00:00", 5, model="gpt-4o",
                                                         cost=100, input_tokens=1))


def test_sums_and_percentiles_per_day_and_model(workspace, calls):
    t = workspace_trends(workspace=workspace, days=7, group="model", today=TODAY)
    assert t.days[0] == date(2026, 3, 4) and t.days[-1] == TODAY and len(t.days) == 7
    assert t.keys == ["gpt-4o", XSS_MODEL, NONE]  # costliest first; errors carry no model
    c = t.cell(TODAY, "gpt-4o")
    # input is every token sent: Anthropic's 1,000 plus the 600 it read from the cache
    assert (c.calls, c.cost, c.input, c.output) == (3, Decimal("1"), 3610, 150)
    assert (c.cache_read, c.cache_input, c.hit_rate) == (1600, 3600, 44.4)
    assert (c.p50, c.p95) == (pytest.approx(400, abs=0.5), pytest.approx(940, abs=0.5))
    assert t.cell(date(2026, 3, 8), XSS_MODEL).p50 == pytest.approx(50, abs=0.5)
    assert t.cell(date(2026, 3, 8), XSS_MODEL).hit_rate is None  # no cache tokens reported
    assert t.cell(TODAY, NONE).errors == 1 and t.cell(date(2026, 3, 8), NONE).errors == 1
    empty = t.cell(date(2026, 3, 9), "gpt-4o")
    assert (empty.calls, empty.cost, empty.p50) == (0, 0, None)
    assert t.totals["gpt-4o"].cost == Decimal("1")  # not the 9 before the range, nor the rival's 100


def test_grouped_per_agent(workspace, calls):
    t = workspace_trends(workspace=workspace, days=30, group="agent", today=TODAY)
    assert t.keys == ["alpha", "beta"] and len(t.days) == 30
    alpha = t.cell(date(2026, 3, 1), "alpha")  # inside 30 days: the early call counts
    assert (alpha.calls, alpha.cost) == (1, Decimal("9"))
    today = t.cell(TODAY, "alpha")
    assert (today.calls, today.errors, today.cost) == (3, 1, Decimal("1"))
    assert (t.cell(date(2026, 3, 8), "beta").errors, t.totals["beta"].cost) == (1, Decimal("0.125"))


def test_keys_past_the_limit_are_folded_into_other_with_exact_percentiles(workspace, actor):
    thread = _thread(workspace, actor, "s-many", "many")
    event_append(thread=thread, actor=actor, events=[
        e for i in range(8)
        for e in _call(f"m{i}", "2026-03-10", f"10:0{i}:00", None, model=f"m-{i}", cost=8 - i,
                       latency_ms=100 * i)])
    t = workspace_trends(workspace=workspace, days=7, group="model", today=TODAY)
    assert t.keys == ["m-0", "m-1", "m-2", "m-3", "m-4", OTHER]
    other = t.cell(TODAY, OTHER)
    assert (other.calls, other.cost) == (3, Decimal("6"))  # m-5, m-6, m-7: 3 + 2 + 1
    assert other.p50 == pytest.approx(600) and other.p95 == pytest.approx(690)


def test_cache_totals_over_every_call_of_the_workspace_and_of_a_session(workspace, calls):
    assert cache_totals(workspace=workspace) == {
        "calls": 5, "reporting": 2, "cache_read": 1600, "input": 3600, "hit_rate": 44.4}
    beta = Session.objects.get(workspace=workspace, key="s-b")
    assert cache_totals(workspace=workspace, session=beta) == {
        "calls": 1, "reporting": 0, "cache_read": 0, "input": 0, "hit_rate": None}


def test_bad_range_or_group_is_refused(workspace):
    with pytest.raises(ValueError):
        workspace_trends(workspace=workspace, days=8)
    with pytest.raises(ValueError):
        workspace_trends(workspace=workspace, group="session")


@pytest.mark.nodb
def test_percentile_interpolates_as_percentile_cont():
    assert percentile([], 0.5) is None
    assert percentile([5], 0.95) == 5
    assert percentile([1000, 200, 400], 0.5) == 400
    assert percentile([200, 400, 1000], 0.95) == pytest.approx(940)


def test_a_call_whose_data_holds_a_nul_character_is_counted_without_breaking_the_query(workspace, actor):
    thread = _thread(workspace, actor, "s-nul", "nul")
    event_append(thread=thread, actor=actor, events=_call("n1", "2026-03-10", "10:00:00", 20, model="gpt-4o",
                                                          cost=0.5, finish_reason="stop\x00"))
    t = workspace_trends(workspace=workspace, days=7, group="agent", today=TODAY)
    assert t.cell(TODAY, "nul").calls == 1  # PostgreSQL's jsonb refuses the NUL: its numbers are absent there
    assert cache_totals(workspace=workspace)["calls"] == 1


def test_trends_read_every_providers_usage_as_read_usage_does(workspace, other_workspace, actor):
    from contextstore.usage import read_usage
    from tests.test_usage import GEMINI_REST, GEMINI_SDK, _anthropic, _openai_chat, _openai_responses
    shapes = {"openai-chat": {"usage": _openai_chat()}, "openai-responses": {"usage": _openai_responses()},
              "anthropic": {"usage": _anthropic()}, "gemini-rest": {"usageMetadata": GEMINI_REST},
              "gemini-sdk": {"usage_metadata": GEMINI_SDK},
              "otel": {"gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 30,
                       "gen_ai.usage.cache_read.input_tokens": 800},
              "otel-old": {"gen_ai.usage.prompt_tokens": 70, "gen_ai.usage.completion_tokens": 8}}
    for space, names in ((workspace, list(shapes)[:4]), (other_workspace, list(shapes)[4:])):  # < MAX_SERIES
        thread = _thread(space, actor, "s-shapes", "alpha")
        event_append(thread=thread, actor=actor, events=[
            _call(model, "2026-03-10", f"10:0{i}:00", None, model=model, **shapes[model])[0]
            for i, model in enumerate(names)])
        t = workspace_trends(workspace=space, days=7, group="model", today=TODAY)
        for model in names:
            usage, cell = read_usage(shapes[model]), t.cell(TODAY, model)
            assert (cell.input, cell.output) == (usage.input, usage.output) != (0, 0), model
            cached = (usage.cache_read, usage.input) if usage.reports_cache else (0, 0)
            assert (cell.cache_read, cell.cache_input) == cached, model
    assert t.cell(TODAY, "gemini-sdk").output == 300  # its answer's 172 and its thinking's 128


def test_an_llm_calls_error_counts_against_its_model(workspace, actor):
    thread = _thread(workspace, actor, "s-err", "alpha")
    event_append(thread=thread, actor=actor, events=[
        # an Error logged inside a call (its start open, no call_id)
        {"type": "LLMCallStart", "occurred_at": "2026-03-10T10:00:00+00:00", "data": {"model": "gpt-4o"}},
        {"type": "Error", "content": "rate limited", "occurred_at": "2026-03-10T10:00:01+00:00"},
        {"type": "LLMComplete", "occurred_at": "2026-03-10T10:00:02+00:00", "data": {"model": "gpt-4o"}},
        # an Error naming its call's call_id, logged after the call ended
        *_call("k1", "2026-03-10", "10:01:00", 10, model="claude-sonnet-4", input_tokens=5),
        {"type": "Error", "call_id": "k1", "content": "bad answer",
         "occurred_at": "2026-03-10T10:01:05+00:00"},
        # a call that reports its own failure, once (its Error already counted), and one alone
        *_call("k2", "2026-03-10", "10:02:00", 10, model="gemini-2.5-pro", status="error"),
        *_call("k3", "2026-03-10", "10:03:00", 10, model="gemini-2.5-pro", error={"message": "overloaded"}),
        {"type": "LLMCallStart", "call_id": "k4", "occurred_at": "2026-03-10T10:04:00+00:00",
         "data": {"model": "gemini-2.5-pro"}},
        {"type": "Error", "call_id": "k4", "content": "timeout", "occurred_at": "2026-03-10T10:04:01+00:00"},
        {"type": "LLMComplete", "call_id": "k4", "occurred_at": "2026-03-10T10:04:02+00:00",
         "data": {"model": "gemini-2.5-pro", "error": "timeout"}},
        # an error of no call
        {"type": "Error", "content": "disk full", "occurred_at": "2026-03-10T11:00:00+00:00"},
    ])
    t = workspace_trends(workspace=workspace, days=7, group="model", today=TODAY)
    errors = {k: t.cell(TODAY, k).errors for k in t.keys}
    assert errors == {"gpt-4o": 1, "claude-sonnet-4": 1, "gemini-2.5-pro": 3, NONE: 1}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's JIT compiler")
def test_the_trends_query_is_never_jit_compiled(workspace, calls):
    """JIT is made the cheapest choice for any query (its thresholds at 0): the trends query as
    workspace_trends runs it still plans without it, where the same query outside would use it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_jit_available()")
        if not cursor.fetchone()[0]:
            pytest.skip("this PostgreSQL has no JIT compiler")
        cursor.execute("SET jit = on; SET jit_above_cost = 0; SET jit_inline_above_cost = 0; "
                       "SET jit_optimize_above_cost = 0")
        cursor.execute("EXPLAIN (ANALYZE) SELECT COUNT(*) FROM contextstore_event")
        assert any("JIT" in row[0] for row in cursor.fetchall())  # the control: JIT would be used
    plan = explain_trends(workspace=workspace)
    assert any("HashAggregate" in line or "GroupAggregate" in line for line in plan)
    assert not any("JIT" in line for line in plan)


def test_trends_and_read_usage_leave_out_the_same_malformed_counts(workspace, actor):
    """A count that is not a non-negative JSON number is absent everywhere: once a string
    "12" showed 12 on cards and 0 in trends, and a negative input_tokens -4 in trends where
    cards took the next key's 30."""
    from contextstore.usage import read_usage
    shapes = {"str": {"usage": {"prompt_tokens": "12", "completion_tokens": "5"}},
              "neg": {"usage": {"input_tokens": -4, "prompt_tokens": 30, "completion_tokens": 5}},
              "neg-read": {"usage": {"input_tokens": 9, "cache_read_input_tokens": -2,
                                     "cache_creation_input_tokens": 3, "output_tokens": 1}}}
    thread = _thread(workspace, actor, "s-malformed", "alpha")
    event_append(thread=thread, actor=actor, events=[
        _call(model, "2026-03-10", f"10:0{i}:00", None, model=model, **shapes[model])[0]
        for i, model in enumerate(shapes)])
    t = workspace_trends(workspace=workspace, days=7, group="model", today=TODAY)
    seen = {m: (t.cell(TODAY, m).input, t.cell(TODAY, m).output) for m in shapes}
    assert seen == {m: (u.input, u.output) if (u := read_usage(shapes[m])) else (0, 0) for m in shapes}
    assert seen == {"str": (0, 0), "neg": (30, 5), "neg-read": (12, 1)}
