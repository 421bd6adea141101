import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from contextstore.blockspec import check_block
from contextstore.errors import InvalidInput, NotFound
from contextstore.models import AuditLog, ContextBlock
from contextstore.selectors import rendering
from contextstore.services.blocks import block_delete, block_upsert
from contextstore.services.events import event_append
from contextstore.services.state import state_write
from contextstore.tokens import FRAME_TOKENS, count_tokens
from tests.conftest import messages


def section(render, name):
    return [m for m in render["messages"] if m["section"] == name]


def test_a_block_has_a_fixed_value_placement_order_and_version(thread, actor):
    block, created = block_upsert(thread=thread, name="plan", value="1. look", placement="prefix",
                                  actor=actor)
    same, created_again = block_upsert(thread=thread, name="plan", value="1. look", actor=actor)
    changed, _ = block_upsert(thread=thread, name="plan", value="2. fix", actor=actor)
    assert created and not created_again and same.version == 1
    assert (changed.version, changed.placement, changed.token_count) == (2, "prefix", 3)


def test_a_live_expression_is_evaluated_against_state_at_render_time(thread, actor):
    block_upsert(thread=thread, name="progress", actor=actor,
                 expr="Step {{ state.plan.step }} of {{ state.plan.total }}")
    state_write(thread=thread, state={"plan": {"step": 2, "total": 5}}, actor=actor)
    thread.refresh_from_db()
    assert section(rendering.context_render(thread=thread, max_tokens=1000), "suffix")[0]["content"] \
        == "## progress\nStep 2 of 5"


def test_a_null_value_suppresses_without_removing(thread, actor):
    block_upsert(thread=thread, name="note", value="hello", actor=actor)
    block_upsert(thread=thread, name="note", value=None, actor=actor)
    render = rendering.context_render(thread=thread, max_tokens=1000)
    assert section(render, "suffix") == []
    assert render["stats"]["sections"]["suffix"]["blocks"][0]["suppressed"] is True
    assert ContextBlock.objects.filter(thread=thread, name="note").exists()


def test_delete_removes_and_is_audited(thread, actor):
    block_upsert(thread=thread, name="note", value="x", actor=actor)
    block_delete(thread=thread, name="note", actor=actor)
    assert not ContextBlock.objects.exists()
    assert AuditLog.objects.filter(action="block.delete").exists()
    with pytest.raises(NotFound):
        block_delete(thread=thread, name="note", actor=actor)


@pytest.mark.parametrize("expr", [
    "{% load static %}{% static 'x' %}", "{% include 'base.html' %}", "{% debug %}",
    "{% now 'Y' %}", "{% extends 'x' %}",
    # work or output out of proportion to the expression: loops and padding
    "{% for a in state.s %}{% for b in state.s %}{{ b }}{% endfor %}{% endfor %}",
    '{{ "a"|ljust:"2000000000" }}', "{{ state.s|center:999999999 }}",
])
def test_expressions_cannot_reach_outside_their_data(expr):
    # every door that writes a block checks it by blockspec (tests/api/test_shape_doors.py)
    with pytest.raises(InvalidInput) as refused:
        check_block("evil", {"expr": expr})
    assert refused.value.details.keys() == {"expr"}


def test_expressions_cannot_change_the_state_they_read(thread, actor):
    state_write(thread=thread, state={"a": {"b": 1}}, actor=actor)
    block_upsert(thread=thread, name="x", expr="{{ state.a.clear }}{{ state.a.b }}", actor=actor)
    thread.refresh_from_db()
    rendering.context_render(thread=thread, max_tokens=100)
    assert thread.state == {"a": {"b": 1}}


def test_value_and_expr_together_is_refused():
    with pytest.raises(InvalidInput, match="not both"):
        check_block("x", {"value": "a", "expr": "b"})


def test_render_orders_prefix_summary_history_suffix_and_counts_each(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    block_upsert(thread=thread, name="now", value="It is Monday.", actor=actor)
    state_write(thread=thread, summary="Earlier we fixed the bug.", actor=actor)
    event_append(thread=thread, events=messages(3, words=10), actor=actor)
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=10_000)
    assert [m["section"] for m in render["messages"]] == [
        "prefix", "summary", "history", "history", "history", "suffix"]
    stats = render["stats"]
    # each message's text tokens, framed (tokens.request_tokens)
    assert stats["total_tokens"] == sum(m["tokens"] + FRAME_TOKENS for m in render["messages"])
    assert stats["sections"]["history"] == {"tokens": sum(m["tokens"] + FRAME_TOKENS
                                                          for m in section(render, "history")),
                                            "events_included": 3, "events_omitted": 0,
                                            "older_not_examined": False}


def test_a_system_prompt_block_is_sent_as_its_text_alone_and_others_keep_their_header(thread, actor):
    # A framework's own system prompt (the AgentScope adapter's) has no "## name" line; a block
    # of any other name keeps it, also beside it.
    prompt = "You help.\n\n# Rules\nBe brief."
    block_upsert(thread=thread, name="system_prompt", value=prompt, placement="prefix",
                 order=-(2**31), actor=actor)
    block_upsert(thread=thread, name="persona", value="Be kind.", placement="prefix", actor=actor)
    thread.refresh_from_db()
    render = rendering.context_render(thread=thread, max_tokens=1000, fmt="openai")
    text = prompt + "\n\n## persona\nBe kind."
    assert render["messages"] == [{"role": "system", "content": text}]
    assert render["stats"]["sections"]["prefix"]["tokens"] == count_tokens(text) + FRAME_TOKENS


def test_render_keeps_the_newest_events_that_fit_the_budget(thread, actor):
    event_append(thread=thread, events=messages(50, words=20), actor=actor)
    thread.refresh_from_db()
    per_event = thread.active_tokens // 50 + FRAME_TOKENS  # every message counted framed
    render = rendering.context_render(thread=thread, max_tokens=per_event * 10 + 1)
    history = section(render, "history")
    assert [m["seq"] for m in history] == list(range(41, 51))
    assert render["stats"]["sections"]["history"]["events_omitted"] == 40
    assert render["stats"]["total_tokens"] <= per_event * 10 + 1


def test_render_skips_runtime_events_and_can_strip_thinking(thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "and?"},
        {"type": "LLMCallStart"},
        {"type": "LLMOutput", "content": "", "parts": [
            {"type": "thinking", "thinking": "secret chain of thought " * 5},
            {"type": "text", "text": "the answer"}]},
    ])
    thread.refresh_from_db()
    full = rendering.context_render(thread=thread, max_tokens=1000)
    stripped = rendering.context_render(thread=thread, max_tokens=1000, strip_thinking=True)
    assert [m["type"] for m in section(full, "history")] == ["Message", "LLMOutput"]
    assert section(stripped, "history")[1]["parts"] == [{"type": "text", "text": "the answer"}]
    assert stripped["stats"]["total_tokens"] < full["stats"]["total_tokens"]


def test_the_prefix_hash_changes_only_when_the_prefix_does(thread, actor):
    block_upsert(thread=thread, name="persona", value="Be brief.", placement="prefix", actor=actor)
    first = rendering.context_render(thread=thread, max_tokens=1000)["stats"]["prefix_hash"]
    block_upsert(thread=thread, name="now", value="volatile", actor=actor)
    event_append(thread=thread, events=messages(2), actor=actor)
    thread.refresh_from_db()
    assert rendering.context_render(thread=thread, max_tokens=1000)["stats"]["prefix_hash"] == first
    block_upsert(thread=thread, name="persona", value="Be thorough.", actor=actor)
    thread.refresh_from_db()  # a render is given the thread as it is (what it kept depends on it)
    assert rendering.context_render(thread=thread, max_tokens=1000)["stats"]["prefix_hash"] != first


def _render_cost(thread, budget):
    thread.refresh_from_db()
    rendering.forget_kept()  # the full render's reads
    with CaptureQueriesContext(connection) as queries:
        render = rendering.context_render(thread=thread, max_tokens=budget)
    return len(queries), render


@pytest.mark.slow
def test_render_reads_only_what_it_returns_whatever_the_history_length(thread, actor):
    event_append(thread=thread, events=messages(200, words=30), actor=actor)
    small_queries, small = _render_cost(thread, 2000)
    for _ in range(6):
        event_append(thread=thread, events=messages(1000, words=30), actor=actor)
    large_queries, large = _render_cost(thread, 2000)
    assert large_queries == small_queries <= 4
    assert small["stats"]["sections"]["history"]["events_included"] == \
        large["stats"]["sections"]["history"]["events_included"]
    # rows read: the loop stops at the first event that does not fit
    assert large["stats"]["sections"]["history"]["events_omitted"] > 6000


def test_expressions_have_variables_filters_and_conditions(thread, actor):
    state_write(thread=thread, state={"plan": {"steps": ["look", "fix"], "done": False}}, actor=actor)
    block_upsert(thread=thread, name="plan", actor=actor, expr=(
        "{{ state.plan.steps|join:', '|upper }} ({{ state.plan.steps|length }})"
        "{% if not state.plan.done %} in progress{% endif %}{{ state.missing|default:'' }}"))
    thread.refresh_from_db()
    suffix = section(rendering.context_render(thread=thread, max_tokens=1000), "suffix")
    assert suffix[0]["content"] == "## plan\nLOOK, FIX (2) in progress"


def test_block_order_must_fit_an_integer_column():
    with pytest.raises(InvalidInput, match="32-bit"):
        check_block("x", {"value": "v", "order": 2**40})
