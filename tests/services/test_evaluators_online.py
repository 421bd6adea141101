"""Evaluators' online run (services/evaluators.py): new calls and quiet sessions sampled by a
rule deterministic per call, each evaluated once whatever runs again or crashes, its Score
written with its provenance, a failing judge kept as an error."""

from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore import tasks
from contextstore.evaluatorspec import evaluator_version
from contextstore.models import Evaluation, Score
from contextstore.services import evaluators
from contextstore.services.evaluators import (
    MAX_ATTEMPTS,
    evaluation_run,
    evaluations_recover,
    evaluations_schedule,
    evaluator_create,
    evaluator_update,
    sampled,
    stale_after,
)
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

LATER = timedelta(seconds=60)  # past the settle window


def new(workspace, actor, kind="regex", name="polite", *, target="call", sample_rate=1.0, filter_agent="",
        filter_model="", **version):
    version = version or {"config": {"pattern": "please"}}
    return evaluator_create(workspace=workspace, actor=actor, name=name, kind=kind, target=target,
                            sample_rate=sample_rate, filter_agent=filter_agent, filter_model=filter_model,
                            **evaluator_version(kind=kind, **version))


def call(thread, actor, reply="Yes, please wait.", *, model="gpt-4o", **end):
    """A call as agents log it: its start, the reply, its LLMComplete; returns the start's seq."""
    events = event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": model, "messages": [{"role": "user", "content": "hi"}]}},
        {"type": "LLMOutput", "role": "assistant", "content": reply},
        {"type": "LLMComplete", "data": {"model": model, "input_tokens": 100, "output_tokens": 10, **end}},
    ]).events
    return events[0].seq


def run_online(now=None) -> dict:
    """Beat's pass, then each queued evaluation as a worker runs it."""
    done = evaluations_schedule(now=(now or timezone.now()) + LATER)
    for pk in Evaluation.objects.filter(status="queued").values_list("pk", flat=True):
        evaluation_run(evaluation_id=pk)
    return done


def test_a_new_call_is_scored_once_with_its_provenance(workspace, thread, actor):
    evaluator = new(workspace, actor)
    seq = call(thread, actor)
    assert run_online()["queued"] == 1
    [score] = Score.objects.all()
    assert (score.name, score.data_type, score.value, score.thread_id, score.seq) == (
        "polite", "boolean", 1.0, thread.pk, seq)  # on the call's card: named by its start
    assert score.comment == "The pattern was found at character 5: 'please'."
    assert score.author_label == "evaluator polite v1"
    evaluation = score.evaluation
    assert (evaluation.evaluator, evaluation.version.number, evaluation.status, evaluation.attempts) == (
        evaluator, 1, "done", 1)
    assert run_online()["queued"] == 0 and Score.objects.count() == 1  # a second pass: nothing again


def test_calls_stored_before_the_evaluator_are_not_scored(workspace, thread, actor):
    call(thread, actor)
    new(workspace, actor)
    run_online()
    assert not Score.objects.exists()
    call(thread, actor)
    run_online()
    assert Score.objects.count() == 1


def test_a_call_too_young_waits_and_the_watermark_stops_before_it(workspace, thread, actor):
    evaluator = new(workspace, actor)
    call(thread, actor)
    assert evaluations_schedule()["queued"] == 0  # its LLMComplete is younger than the settle window
    evaluator.refresh_from_db()
    assert evaluator.through_event < thread.events.get(type="LLMComplete").pk
    assert run_online()["queued"] == 1


def test_the_watermark_passes_other_workspaces_calls_so_a_pass_does_not_read_them_again(
        workspace, other_workspace, thread, actor):
    evaluator = new(workspace, actor)
    rival = thread_ensure(session=session_ensure(workspace=other_workspace, key="r", actor=actor)[0],
                          actor=actor)[0]
    for _ in range(3):
        call(rival, actor)
    run_online()
    evaluator.refresh_from_db()
    assert evaluator.through_event == rival.events.order_by("-pk").first().pk
    assert not Evaluation.objects.exists()
    call(thread, actor)
    run_online()
    assert Score.objects.get().session.workspace == workspace


def test_a_batch_stops_the_watermark_at_its_last_call(workspace, thread, actor):
    evaluator = new(workspace, actor)
    for _ in range(3):
        call(thread, actor)
    evaluations_schedule(batch=2, now=timezone.now() + LATER)
    evaluator.refresh_from_db()
    ends = list(thread.events.filter(type="LLMComplete").order_by("pk").values_list("pk", flat=True))
    assert evaluator.through_event == ends[1] and Evaluation.objects.count() == 2
    evaluations_schedule(batch=2, now=timezone.now() + LATER)
    assert Evaluation.objects.count() == 3


def test_sampling_picks_the_same_calls_every_run_and_never_twice(workspace, thread, actor):
    evaluator = new(workspace, actor, sample_rate=0.5)
    for _ in range(30):
        call(thread, actor)
    run_online()
    ends = list(thread.events.filter(type="LLMComplete").order_by("seq"))
    picked = {e.pk for e in ends if sampled(evaluator=evaluator, subject=f"call {e.pk}")}
    assert 5 < len(picked) < 25  # about half
    assert {int(s.split()[1]) for s in Evaluation.objects.values_list("subject", flat=True)} == picked
    # the watermark set back (as if the pass's commit were lost) picks the same ones: no new rows
    evaluator.refresh_from_db()
    evaluator.through_event = 0
    evaluator.save()
    assert run_online()["queued"] == 0
    assert Score.objects.count() == len(picked)


def test_the_filters_take_only_their_agent_and_model(workspace, thread, actor):
    new(workspace, actor, name="mini", filter_model="GPT-4o-mini")
    new(workspace, actor, name="other-agent", filter_agent="planner")
    call(thread, actor, model="gpt-4o")
    call(thread, actor, model="gpt-4o-mini")
    other = session_ensure(workspace=workspace, key="s-2", agent="Planner", actor=actor)[0]
    call(thread_ensure(session=other, actor=actor)[0], actor)
    run_online()
    assert sorted(Score.objects.values_list("name", "session__key")) == [
        ("mini", "s-1"), ("other-agent", "s-2")]


def test_a_disabled_evaluator_scores_nothing_until_enabled_and_then_only_what_came_after(
        workspace, thread, actor):
    evaluator = new(workspace, actor)
    evaluator_update(evaluator=evaluator, actor=actor, fields={"enabled": False})
    call(thread, actor)
    run_online()
    assert not Score.objects.exists()
    evaluator_update(evaluator=evaluator, actor=actor, fields={"enabled": True})
    run_online()
    assert Score.objects.count() == 1  # the watermark waited where it was: the call is scored


def test_an_edit_scores_new_calls_with_the_new_version(workspace, thread, actor):
    evaluator = new(workspace, actor)
    call(thread, actor)
    run_online()
    evaluator_update(evaluator=evaluator, actor=actor,
                     version=evaluator_version(kind="regex", config={"pattern": "thanks"}))
    call(thread, actor)
    run_online()
    assert [(e.version.number, e.score.value) for e in Evaluation.objects.order_by("pk")] == [
        (1, 1.0), (2, 0.0)]


@pytest.fixture
def judge(endpoint):
    return endpoint


def test_a_judge_scores_a_call_with_its_reply_and_keeps_its_raw_answer(workspace, thread, actor, judge):
    new(workspace, actor, kind="llm_judge", name="helpful", model="judge-1",
        prompt="Q: {{input}}\nA: {{output}}\nHelpful from 0 to 1?", config={"score_type": "numeric"})
    judge.reply = '{"score": 0.9, "reason": "It answers."}'
    call(thread, actor, reply="It is in the drawer.")
    run_online()
    [score] = Score.objects.all()
    assert (score.value, score.comment, score.evaluation.raw) == (0.9, "It answers.", judge.reply)
    assert judge.requests[0]["body"]["messages"][1]["content"] == \
        "Q: user: hi\nA: It is in the drawer.\nHelpful from 0 to 1?"


def test_a_failing_judge_keeps_an_error_and_no_score(workspace, thread, actor, judge):
    new(workspace, actor, kind="llm_judge", name="helpful", model="judge-1", prompt="{{output}}",
        config={"score_type": "boolean"})
    judge.mode = "500"
    call(thread, actor)
    run_online()
    [evaluation] = Evaluation.objects.all()
    assert evaluation.status == "error" and evaluation.score is None
    assert evaluation.seq == 1  # the call's start, as its card names it
    assert evaluation.error.startswith("The judge failed: The endpoint answered HTTP 500")
    assert not Score.objects.exists()


def test_tool_and_figure_checks_read_the_calls_stored_tools_and_figures(workspace, thread, actor):
    new(workspace, actor, kind="tool_call", name="tools-ok", config={"check": "no_failed"})
    new(workspace, actor, kind="cost_limit", name="cheap", config={"max_cost": 0.5})
    new(workspace, actor, kind="latency_limit", name="fast", config={"max_ms": 1000})
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o"}},
        {"type": "ToolCall", "parts": [{"type": "tool_use", "id": "t1", "name": "search",
                                        "input": {"q": "x"}}]},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "cost": 0.9, "latency_ms": 400}},
        {"type": "ToolResult", "data": {"tool_call_id": "t1", "is_error": True}, "content": "quota"},
    ])
    run_online()
    assert dict(Score.objects.values_list("name", "comment")) == {
        "tools-ok": "Failed tools: search.",
        "cheap": "The cost was $0.900000, over the limit of $0.500000.",
        "fast": "The latency was 400 ms, within the limit of 1000 ms."}


def test_a_worker_that_dies_mid_evaluation_is_replaced_and_the_call_scored_once(
        workspace, thread, actor, monkeypatch):
    new(workspace, actor)
    call(thread, actor)
    evaluations_schedule(now=timezone.now() + LATER)
    [evaluation] = Evaluation.objects.all()

    def crash(*args, **kwargs):
        raise SystemExit("worker killed")

    monkeypatch.setattr(evaluators, "evaluate", crash)
    with pytest.raises(SystemExit):
        evaluation_run(evaluation_id=evaluation.pk)
    monkeypatch.undo()
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and not Score.objects.exists()
    assert evaluation_run(evaluation_id=evaluation.pk) is None  # a second delivery: taken already
    assert evaluations_recover()["resent"] == 0  # not stale yet
    assert evaluations_recover(now=timezone.now() + stale_after() + LATER)["resent"] == 1
    evaluation_run(evaluation_id=evaluation.pk)
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.attempts, Score.objects.count()) == ("done", 2, 1)


def test_an_evaluation_that_raises_keeps_the_error_on_its_row(workspace, thread, actor, monkeypatch):
    new(workspace, actor)
    call(thread, actor)

    def broken(*args, **kwargs):
        raise KeyError("pattern")

    monkeypatch.setattr(evaluators, "evaluate", broken)
    run_online()
    evaluation = Evaluation.objects.get()
    assert (evaluation.status, evaluation.error) == ("error", "The evaluation failed: KeyError: 'pattern'")


def test_a_call_whose_worker_keeps_dying_is_failed_after_the_last_attempt(workspace, thread, actor):
    new(workspace, actor)
    call(thread, actor)
    evaluations_schedule(now=timezone.now() + LATER)
    late = timezone.now() - stale_after() - LATER
    Evaluation.objects.update(status="running", attempts=MAX_ATTEMPTS, started_at=late)
    assert evaluations_recover() == {"resent": 0, "failed": 1}
    evaluation = Evaluation.objects.get()
    assert evaluation.status == "error" and "stopped 3 times" in evaluation.error


def test_a_lost_message_is_sent_again(workspace, thread, actor, request, django_capture_on_commit_callbacks):
    new(workspace, actor)
    call(thread, actor)
    evaluations_schedule(now=timezone.now() + LATER)  # its message went nowhere (no worker ran it)
    request.getfixturevalue("eager_tasks")
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluations_recover(now=timezone.now() + stale_after() + LATER)["resent"] == 1
    assert Evaluation.objects.get().status == "done" and Score.objects.count() == 1


def test_the_beat_task_sends_each_evaluation_to_the_run_task(
        workspace, thread, actor, settings, eager_tasks, django_capture_on_commit_callbacks):
    settings.EVALUATOR_SETTLE_SECONDS = 0
    new(workspace, actor)
    call(thread, actor)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.evaluate_online() == {"queued": 1, "resent": 0, "failed": 0}
    assert Score.objects.get().evaluation.status == "done"
    assert settings.CELERY_BEAT_SCHEDULE["evaluate-online"]["task"] == "contextstore.tasks.evaluate_online"


def test_a_session_is_scored_once_when_it_has_gone_quiet(workspace, session, thread, actor):
    evaluator = new(workspace, actor, name="session-cost", target="session", kind="cost_limit",
                    config={"max_cost": 1.0})
    call(thread, actor, cost=0.4)
    call(thread, actor, cost=0.3)
    assert evaluations_schedule()["queued"] == 0  # not quiet yet
    quiet = timezone.now() + timedelta(seconds=400)
    run_online(now=quiet)
    [score] = Score.objects.all()
    assert (score.session, score.thread, score.seq, score.value) == (session, None, None, 1.0)
    assert score.comment == "The cost was $0.700000, within the limit of $1.000000."
    call(thread, actor, cost=0.5)  # active again: still one evaluation per session
    run_online(now=quiet + timedelta(seconds=400))
    assert Score.objects.count() == 1
    evaluator.refresh_from_db()
    session.refresh_from_db()
    assert (evaluator.through_at, evaluator.through_session) == (session.last_activity_at, session.pk)


def test_a_session_judge_reads_its_first_input_and_last_reply(workspace, thread, actor, judge):
    new(workspace, actor, kind="llm_judge", name="solved", target="session", model="judge-1",
        prompt="{{input}} -> {{output}}", config={"score_type": "boolean"})
    judge.reply = '{"score": true, "reason": "solved"}'
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Find my keys"},
        {"type": "Message", "role": "assistant", "content": "Looking"},
        {"type": "Message", "role": "assistant", "content": "In the drawer"}])
    run_online(now=timezone.now() + timedelta(seconds=400))
    assert judge.requests[0]["body"]["messages"][1]["content"] == "Find my keys -> In the drawer"
    assert Score.objects.get().string_value == "true"


SECRET = "sk-proj-" + "Zx9_Qw8-Er7Ty6Ui5" * 3


def test_the_judges_prompt_answer_and_reason_are_stored_redacted(workspace, thread, actor, judge):
    evaluator = new(workspace, actor, kind="llm_judge", name="helpful", model="judge-1",
                    prompt=f"key {SECRET}: {{{{output}}}}", config={"score_type": "boolean"})
    assert evaluator.latest.prompt == "key [REDACTED:openai_key]: {{output}}"
    judge.reply = f'{{"score": true, "reason": "saw {SECRET}"}}'
    call(thread, actor)
    run_online()
    evaluation = Evaluation.objects.get()
    assert SECRET not in evaluation.raw and "[REDACTED:openai_key]" in evaluation.raw
    assert evaluation.score.comment == "saw [REDACTED:openai_key]"
    assert SECRET not in judge.requests[0]["body"]["messages"][1]["content"]  # it sends what is kept
