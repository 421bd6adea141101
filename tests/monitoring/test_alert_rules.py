"""Alert rules checked over their window (services/alerts.py): each figure at the edges
(exactly at the threshold, an empty window, no calls), scopes (agent, model, a saved view's
sessions), and state changes recorded once, ok → firing → resolved, not on every check."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model

from contextstore.errors import Conflict
from contextstore.models import AlertEvent, AlertRule, CallCacheVerdict, Event, SavedView
from contextstore.services.alerts import (
    alert_rule_create,
    alert_rule_evaluate,
    alert_rule_update,
    alerts_evaluate,
)
from contextstore.services.events import event_append
from contextstore.services.saved_views import saved_view_create, saved_view_delete
from contextstore.services.workspaces import workspace_delete
from tests.monitoring.conftest import NOW, call, make_thread

pytestmark = pytest.mark.django_db


def rule(workspace, actor, **fields) -> AlertRule:
    fields = {
        "name": "r",
        "metric": "cost",
        "comparison": "gt",
        "threshold": 1.0,
        "window_minutes": 60,
        **fields,
    }
    return alert_rule_create(workspace=workspace, actor=actor, **fields)[0]


def test_a_cost_exactly_at_the_threshold_fires_at_or_above_but_not_above(workspace, actor):
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=10, cost=0.25)
    call(thread, actor, minutes_ago=20, cost=0.75)
    above = rule(workspace, actor, comparison="gt", threshold=1.0)
    at_or_above = rule(workspace, actor, name="r2", comparison="gte", threshold=1.0)
    assert alert_rule_evaluate(rule=above, now=NOW) is None
    assert above.state == "ok" and above.last_value == 1.0
    event = alert_rule_evaluate(rule=at_or_above, now=NOW)
    assert event is not None and event.kind == "firing" and event.value == 1.0 and event.threshold == 1.0
    assert AlertRule.objects.get(pk=at_or_above.pk).state == "firing"


def test_the_window_holds_what_ended_within_it_and_nothing_of_another_workspace(
    workspace, other_workspace, actor
):
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=14, cost=2.0)
    call(thread, actor, minutes_ago=16, cost=5.0)  # outside 15 minutes
    call(make_thread(other_workspace, actor), actor, minutes_ago=1, cost=100.0)
    r = rule(workspace, actor, window_minutes=15, comparison="gte", threshold=2.0)
    alert_rule_evaluate(rule=r, now=NOW)
    assert r.last_value == 2.0 and r.state == "firing"


def test_an_empty_window_gives_zero_cost_and_errors_but_no_hit_rate_or_latency(workspace, actor):
    make_thread(workspace, actor)
    cost_low = rule(workspace, actor, comparison="lt", threshold=0.5)
    errors = rule(workspace, actor, name="e", metric="errors", comparison="gte", threshold=0)
    hit = rule(workspace, actor, name="h", metric="hit_rate", comparison="lt", threshold=50)
    p95 = rule(workspace, actor, name="l", metric="latency_p95", comparison="lt", threshold=10_000)
    assert alert_rule_evaluate(rule=cost_low, now=NOW).kind == "firing"  # 0 < 0.5
    assert cost_low.last_value == 0.0
    assert alert_rule_evaluate(rule=errors, now=NOW).value == 0.0  # 0 >= 0
    for silent in (hit, p95):
        assert alert_rule_evaluate(rule=silent, now=NOW) is None
        fresh = AlertRule.objects.get(pk=silent.pk)
        assert fresh.state == "ok" and fresh.last_value is None and fresh.last_evaluated_at == NOW


def test_calls_without_cost_or_cache_tokens_are_no_data_not_zero(workspace, actor):
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=5, input_tokens=100)  # no cost, no cache figures
    hit = rule(workspace, actor, metric="hit_rate", comparison="lt", threshold=50)
    cost = rule(workspace, actor, name="c", comparison="lte", threshold=0)
    assert alert_rule_evaluate(rule=hit, now=NOW) is None and hit.last_value is None
    assert alert_rule_evaluate(rule=cost, now=NOW).value == 0.0  # a call that reports no cost costs 0


def test_a_firing_rule_records_one_event_then_one_when_it_resolves(workspace, actor):
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=5, cost=3.0)
    r = rule(workspace, actor, threshold=1.0)
    first = alert_rule_evaluate(rule=r, now=NOW)
    assert first is not None and first.kind == "firing" and first.delivery == "none"
    assert alert_rule_evaluate(rule=r, now=NOW + timedelta(minutes=1)) is None  # still firing: no event
    assert alert_rule_evaluate(rule=r, now=NOW + timedelta(minutes=2)) is None
    resolved = alert_rule_evaluate(rule=r, now=NOW + timedelta(minutes=56))  # the call left the window
    assert resolved is not None and resolved.kind == "resolved" and resolved.value == 0.0
    assert alert_rule_evaluate(rule=r, now=NOW + timedelta(minutes=57)) is None
    assert list(AlertEvent.objects.filter(rule=r).order_by("id").values_list("kind", flat=True)) == [
        "firing",
        "resolved",
    ]
    assert r.state == "ok" and r.state_since == NOW + timedelta(minutes=56)


def test_errors_count_error_rows_and_failed_calls_once_per_model(workspace, actor):
    thread = make_thread(workspace, actor)
    at = (NOW - timedelta(minutes=3)).isoformat()
    event_append(
        thread=thread,
        actor=actor,
        events=[
            {"type": "LLMCallStart", "call_id": "a", "occurred_at": at, "data": {"model": "gpt-4o"}},
            {"type": "Error", "call_id": "a", "content": "gateway timed out", "occurred_at": at},
            {
                "type": "LLMComplete",
                "call_id": "a",
                "occurred_at": at,
                "data": {"model": "gpt-4o", "error": "boom"},
            },
            {
                "type": "LLMComplete",
                "call_id": "b",
                "occurred_at": at,
                "data": {"model": "mini", "status": "failed"},
            },
        ],
    )
    everything = rule(workspace, actor, metric="errors", comparison="gte", threshold=2)
    gpt = rule(workspace, actor, name="g", metric="errors", comparison="gte", threshold=2, model="gpt-4o")
    assert alert_rule_evaluate(rule=everything, now=NOW).value == 2.0  # the Error and mini's failed call
    assert alert_rule_evaluate(rule=gpt, now=NOW) is None and gpt.last_value == 1.0


def test_hit_rate_and_p95_latency_read_the_call_figures(workspace, actor):
    thread = make_thread(workspace, actor)
    call(
        thread, actor, minutes_ago=5, prompt_tokens=1000, prompt_tokens_details={"cached_tokens": 250}, ms=400
    )
    call(
        thread, actor, minutes_ago=4, prompt_tokens=1000, prompt_tokens_details={"cached_tokens": 750}, ms=800
    )
    hit = rule(workspace, actor, metric="hit_rate", comparison="lt", threshold=50)
    p95 = rule(workspace, actor, name="p", metric="latency_p95", comparison="gt", threshold=700)
    assert alert_rule_evaluate(rule=hit, now=NOW) is None and hit.last_value == 50.0  # not below 50
    event = alert_rule_evaluate(rule=p95, now=NOW)
    assert event is not None and event.value == pytest.approx(
        780.0, abs=0.1
    )  # percentile_cont of 400, 800 (SQLite: julianday)


def test_an_agent_or_model_scope_counts_only_its_calls(workspace, actor):
    call(make_thread(workspace, actor, "a", agent="billing"), actor, minutes_ago=5, cost=2.0, model="gpt-4o")
    call(make_thread(workspace, actor, "b", agent="search"), actor, minutes_ago=5, cost=3.0, model="mini")
    by_agent = rule(workspace, actor, agent="billing", threshold=0)
    by_model = rule(workspace, actor, name="m", model="mini", threshold=0)
    alert_rule_evaluate(rule=by_agent, now=NOW)
    alert_rule_evaluate(rule=by_model, now=NOW)
    assert (by_agent.last_value, by_model.last_value) == (2.0, 3.0)


def test_a_saved_view_scope_counts_the_sessions_it_keeps(workspace, actor):
    owner = get_user_model().objects.create_user("owner")
    call(make_thread(workspace, actor, "a", agent="billing"), actor, minutes_ago=5, cost=2.0)
    call(make_thread(workspace, actor, "b", agent="search"), actor, minutes_ago=5, cost=3.0)
    view = saved_view_create(
        workspace=workspace, owner=owner, page="sessions", name="billing", query="agent=billing", actor=actor
    )
    r = rule(workspace, actor, saved_view=view, threshold=0)
    alert_rule_evaluate(rule=r, now=NOW)
    assert r.last_value == 2.0
    view.query = "agent=billing&cost_min=abc"  # a value the page no longer takes is left out
    view.save()
    alert_rule_evaluate(rule=r, now=NOW)
    assert r.last_value == 2.0


def test_cache_breaks_count_the_verdicts_lost_or_partial(workspace, actor):
    thread = make_thread(workspace, actor)
    for minutes, status in ((5, "lost"), (4, "partial"), (3, "kept"), (90, "lost")):
        call(thread, actor, minutes_ago=minutes, cost=0.0)
        end = Event.objects.filter(thread=thread).order_by("-seq").first()
        CallCacheVerdict.objects.create(
            workspace=workspace, session=thread.session, thread=thread, call=end, seq=end.seq, status=status
        )
    r = rule(workspace, actor, metric="cache_breaks", comparison="gte", threshold=2)
    assert alert_rule_evaluate(rule=r, now=NOW).value == 2.0


def test_a_changed_condition_starts_again_from_ok(workspace, actor):
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=5, cost=3.0)
    r = rule(workspace, actor, threshold=1.0)
    alert_rule_evaluate(rule=r, now=NOW)
    alert_rule_update(rule=r, actor=actor, threshold=2.0)
    assert r.state == "ok" and r.last_evaluated_at is None
    assert alert_rule_evaluate(rule=r, now=NOW).kind == "firing"  # the new condition holds too


def test_beat_checks_the_rules_due_oldest_first_and_skips_disabled_ones(workspace, actor, settings):
    settings.ALERTS_EVALUATE_EVERY = 60
    thread = make_thread(workspace, actor)
    call(thread, actor, minutes_ago=5, cost=3.0)
    on = rule(workspace, actor, threshold=1.0)
    rule(workspace, actor, name="off", threshold=1.0, enabled=False)
    assert alerts_evaluate(now=NOW) == {"checked": 1, "changed": 1}
    assert alerts_evaluate(now=NOW + timedelta(seconds=30)) == {"checked": 0, "changed": 0}  # not due
    assert alerts_evaluate(now=NOW + timedelta(seconds=60)) == {"checked": 1, "changed": 0}
    assert AlertEvent.objects.filter(rule=on).count() == 1


def test_a_view_in_use_stays_until_its_rule_goes_but_the_workspace_takes_both(workspace, actor):
    owner = get_user_model().objects.create_user("owner")
    view = saved_view_create(
        workspace=workspace, owner=owner, page="sessions", name="v", query="", actor=actor
    )
    r = rule(workspace, actor, saved_view=view)
    with pytest.raises(Conflict):
        saved_view_delete(view=view, user=owner, actor=actor)
    assert SavedView.objects.filter(pk=view.pk).exists()
    alert_rule_evaluate(rule=r, now=NOW)
    workspace_delete(workspace=workspace, actor=actor)
    assert not SavedView.objects.exists() and not AlertRule.objects.exists()
    assert not AlertEvent.objects.exists()
