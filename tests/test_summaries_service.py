"""Summarization services: settings, triggers, and the worker side run in-process."""

import time
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import AuditLog, Collapse, Event, Job, Thread
from contextstore.selectors import rendering
from contextstore.services import summaries
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.runs import run_finish, run_start
from contextstore.services.summaries import worker as summary_worker
from contextstore.services.threads import thread_clear_context
from contextstore.summarizers import SummarizerError
from contextstore.summarizers import extractive as extractive_backend
from contextstore.summarizers import openai as openai_backend
from tests.conftest import messages
from tests.test_summarizers import serving_a_trickle

BUDGET = {"token_budget": {"max_tokens": 2000, "preserve_recent": 4}}


def run_pending() -> list[Job]:
    """What a worker does: run queued jobs (and the follow-ups they queue) until none is left."""
    done = []
    while job := Job.objects.filter(status=Job.Status.QUEUED).order_by("created_at").first():
        done.append(summaries.summary_job_run(job_id=job.pk))
    return done


def fresh(thread: Thread) -> Thread:
    return Thread.objects.get(pk=thread.pk)


@pytest.fixture
def budgeted(thread, actor):
    return summaries.summarizer_configure(thread=thread, config=BUDGET, actor=actor)


def test_configure_stores_a_normalised_setting_and_audits_it(thread, actor):
    summaries.summarizer_configure(thread=thread, config={
        "token_budget": {"max_tokens": 8000, "preserve_recent": 10}, "per_run": {"min_events": 3},
    }, actor=actor)
    assert fresh(thread).summarizer == {
        "token_budget": {"max_tokens": 8000, "preserve_recent": 10, "summary_max_tokens": 1000},
        "per_run": {"min_events": 3},
    }
    log = AuditLog.objects.get(action="thread.summarizer")
    assert log.details["after"]["token_budget"]["max_tokens"] == 8000
    summaries.summarizer_configure(thread=thread, config=None, actor=actor)
    assert fresh(thread).summarizer is None


@pytest.mark.parametrize("config, field", [
    ({"token_budget": {"max_tokens": 10}}, "token_budget.max_tokens"),
    ({"token_budget": {"max_tokens": "8000"}}, "token_budget.max_tokens"),
    ({"token_budget": {"max_tokens": 8000, "preserve_recent": -1}}, "token_budget.preserve_recent"),
    ({"token_budget": {"max_tokens": 8000, "keep": 3}}, "token_budget.keep"),
    ({"per_run": {"min_events": 0}}, "per_run.min_events"),
    ({"per_run": [3]}, "per_run"),
    ({"backend": "gpt"}, "backend"),
    ({"budget": 1}, "budget"),
])
def test_configure_refuses_bad_settings_and_changes_nothing(thread, actor, config, field):
    with pytest.raises(InvalidInput) as exc:
        summaries.summarizer_configure(thread=thread, config=config, actor=actor)
    assert field in exc.value.details
    assert fresh(thread).summarizer is None
    assert not AuditLog.objects.filter(action="thread.summarizer").exists()


def test_a_thread_without_a_setting_is_never_summarized(thread, actor):
    event_append(thread=thread, events=messages(80), actor=actor)
    assert fresh(thread).active_tokens > 2000
    assert not Job.objects.exists()


def test_fast_appends_past_the_budget_queue_one_job(budgeted, actor):
    for i in range(10):
        event_append(thread=budgeted, events=messages(10, start=i * 10), actor=actor)
    job = Job.objects.get()
    assert (job.kind, job.status, job.pending_key) == ("token_budget", "queued",
                                                       f"token_budget:{budgeted.pk}")


def test_the_worker_collapses_the_oldest_events_and_the_render_fits(budgeted, actor):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    (job,) = run_pending()
    assert job.status == "done" and job.attempts == 1 and job.pending_key is None
    collapse = Collapse.objects.get()
    assert job.result["collapse"] == collapse.pk
    assert (collapse.start_position, collapse.end_position, collapse.source) == (1, 56, "token_budget")
    assert collapse.provenance["backend"] == "extractive"
    assert collapse.provenance["tokens_before"] == collapse.tokens_before
    assert collapse.provenance["tokens_after"] == collapse.tokens_after < 500
    assert {"duration_ms", "start_position", "end_position", "events", "job"} <= set(collapse.provenance)
    thread = fresh(budgeted)
    assert thread.active_tokens <= 2000
    out = rendering.context_render(thread=thread, max_tokens=2000)
    assert out["stats"]["fits"] and out["stats"]["sections"]["history"]["events_omitted"] == 0
    assert [m["type"] for m in out["messages"]] == ["Summary"] + ["Message"] * 4
    assert Event.objects.filter(thread=thread, status="collapsed").count() == 56
    assert Event.objects.filter(thread=thread).count() == 61


def test_the_budget_summary_takes_a_tool_exchange_across_preserve_recent_whole(budgeted, actor):
    # the 4 newest events start inside the exchange: two results, an Error between them, the answer
    calls = [{"id": f"c{i}", "name": "search", "arguments": {"q": i}} for i in range(2)]
    event_append(thread=budgeted, actor=actor, events=messages(60) + [
        {"type": "ToolCall", "data": {"tool_calls": calls}},
        {"type": "ToolResult", "content": "one", "data": {"tool_call_id": "c0"}},
        {"type": "Error", "content": "rate limited once, retried"},
        {"type": "ToolResult", "content": "two", "data": {"tool_call_id": "c1"}},
        {"type": "LLMOutput", "content": "both found"}])
    (job,) = run_pending()
    collapse = Collapse.objects.get()
    assert job.status == "done"
    assert (collapse.start_position, collapse.end_position) == (1, 64)  # not 1-61: the call's results
    out = rendering.context_render(thread=fresh(budgeted), max_tokens=2000, fmt="openai")
    assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
    assert out["stats"]["skipped"] == []


def test_running_a_job_twice_makes_one_collapse(budgeted, actor):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    job = Job.objects.get()
    summaries.summary_job_run(job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(status="running")  # as if redelivered before the ack
    again = summaries.summary_job_run(job_id=job.pk)
    assert again.status == "done" and Collapse.objects.count() == 1


def test_events_appended_during_a_summary_stay_active(budgeted, actor, monkeypatch):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    real = extractive_backend.summarize

    def slow_summary(items, **kwargs):
        event_append(thread=budgeted, events=messages(3, start=1000), actor=actor)
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", slow_summary)
    run_pending()
    collapse = Collapse.objects.get()
    assert collapse.end_position == 56
    late = Event.objects.filter(thread=budgeted, seq__in=[61, 62, 63])
    assert {e.status for e in late} == {"active"}
    assert [e.content[:9] for e in late.order_by("seq")] == ["turn 1000", "turn 1001", "turn 1002"]


def test_a_range_changed_during_the_summary_is_read_again(budgeted, actor, monkeypatch):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    real = extractive_backend.summarize
    calls = []

    def meddling_summary(items, **kwargs):
        calls.append(len(items))
        if len(calls) == 1:  # a person collapses part of the range meanwhile
            collapse_create(thread=budgeted, start_position=10, end_position=20, summary_text="by hand",
                            actor=actor, source="person")
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", meddling_summary)
    run_pending()
    assert calls[:2] == [56, 46]  # re-read: the manual summary replaced 11 events
    auto = Collapse.objects.get(source="token_budget")
    assert Collapse.objects.get(source="person").summary_event.collapse_id == auto.pk  # nested


def test_a_range_cleared_before_the_commit_is_skipped(thread, actor, monkeypatch):
    event_append(thread=thread, events=messages(20), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=1, end_position=10, actor=actor)
    real = extractive_backend.summarize

    def clearing_summary(items, **kwargs):
        thread_clear_context(thread=thread, actor=actor)
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", clearing_summary)
    job = summaries.summary_job_run(job_id=job.pk)
    assert job.status == "done"
    assert job.result == {"collapse": None, "skipped": "already_collapsed_or_cleared"}
    assert not Collapse.objects.exists()


def test_a_range_request_queues_a_job_and_the_worker_collapses_exactly_it(thread, actor):
    event_append(thread=thread, events=messages(30), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=5, end_position=12, actor=actor)
    assert job.status == "queued" and job.params["start_position"] == 5
    same = summaries.summarize_range_request(thread=thread, start_position=5, end_position=12, actor=actor)
    assert same.pk == job.pk
    (job,) = run_pending()
    collapse = Collapse.objects.get(pk=job.result["collapse"])
    assert (collapse.start_position, collapse.end_position, collapse.event_count) == (5, 12, 8)
    assert collapse.source == "worker" and collapse.actor == "summarizer:extractive for tests"
    assert summaries.summary_job_run(job_id=job.pk).result == job.result  # a late redelivery


def test_a_running_job_shows_its_stage_and_range_while_it_summarizes(thread, actor, monkeypatch):
    event_append(thread=thread, events=messages(20), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=3, end_position=9, actor=actor)
    seen = []
    real = extractive_backend.summarize

    def watched_summary(items, **kwargs):
        seen.append(Job.objects.get(pk=job.pk).progress)
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", watched_summary)
    assert summaries.summary_job_run(job_id=job.pk).status == "done"
    tokens = sum(Event.objects.filter(thread=thread, seq__range=(3, 9)).values_list("token_count", flat=True))
    assert seen == [{"stage": "summarizing", "start_position": 3, "end_position": 9, "events": 7,
                     "tokens": tokens, "backend": "extractive"}]
    assert Job.objects.get(pk=job.pk).progress["stage"] == "committing"


def test_a_job_cancelled_after_its_timeout_while_its_worker_summarizes_commits_nothing(
        thread, actor, monkeypatch, settings):
    settings.SUMMARIZER_JOB_TIMEOUT = 60
    event_append(thread=thread, events=messages(20), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=1, end_position=10, actor=actor)
    real = extractive_backend.summarize

    def stuck_summary(items, **kwargs):
        # the worker hangs past the timeout and someone cancels the job meanwhile
        running = Job.objects.get(pk=job.pk)
        with pytest.raises(Conflict, match="not timed out yet"):
            summaries.summary_job_cancel(job=running, actor=actor)
        Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(seconds=61))
        summaries.summary_job_cancel(job=Job.objects.get(pk=job.pk), actor=actor)
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", stuck_summary)
    done = summaries.summary_job_run(job_id=job.pk)
    assert done.status == "failed" and "after it ran longer than 60 s (timed out)" in done.error
    assert not Collapse.objects.exists()
    assert Event.objects.filter(thread=thread, status="active").count() == 20
    assert AuditLog.objects.filter(action="summary.cancelled").count() == 1
    # a redelivery of the cancelled job leaves it alone too
    assert summaries.summary_job_run(job_id=job.pk).status == "failed" and not Collapse.objects.exists()


def test_retry_queues_the_same_summary_again_only_when_failed_or_timed_out(thread, actor, settings):
    settings.SUMMARIZER_JOB_TIMEOUT = 60
    event_append(thread=thread, events=messages(20), actor=actor)
    job = summaries.summarize_range_request(thread=thread, start_position=2, end_position=6, actor=actor)
    with pytest.raises(Conflict, match="not timed out yet"):
        summaries.summary_job_retry(job=job, actor=actor)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(seconds=75))
    assert Job.objects.get(pk=job.pk).is_timed_out(timezone.now())
    again = summaries.summary_job_retry(job=job, actor=actor)
    job.refresh_from_db()
    assert again.pk != job.pk and again.status == "queued" and again.kind == "range"
    assert (again.params["start_position"], again.params["end_position"]) == (2, 6)
    assert job.status == "failed" and job.pending_key is None
    assert job.error == "Timed out after 75 s queued; retried by tests."
    log = AuditLog.objects.get(action="summary.retried")
    assert log.details["previous"] == str(job.pk)
    # the old job is not retried twice into two pending jobs: the range's one pending job returns
    assert summaries.summary_job_retry(job=job, actor=actor).pk == again.pk
    (finished,) = run_pending()
    assert finished.pk == again.pk and finished.status == "done"
    with pytest.raises(Conflict, match="done"):
        summaries.summary_job_retry(job=finished, actor=actor)
    assert Collapse.objects.count() == 1


@pytest.mark.parametrize("start, end, code", [
    (0, 5, "invalid"), (5, 2, "invalid"), ("1", 3, "invalid"), (100, 200, "empty_range"),
])
def test_a_bad_range_request_is_refused_and_queues_nothing(thread, actor, start, end, code):
    event_append(thread=thread, events=messages(10), actor=actor)
    with pytest.raises(InvalidInput) as exc:
        summaries.summarize_range_request(thread=thread, start_position=start, end_position=end, actor=actor)
    assert exc.value.code == code
    assert not Job.objects.exists()


def test_a_completed_run_with_enough_events_is_summarized(thread, actor):
    summaries.summarizer_configure(thread=thread, config={"per_run": {"min_events": 3}}, actor=actor)
    event_append(thread=thread, events=messages(2), actor=actor)
    event_append(thread=thread, events=messages(5, start=2, run_id="r-1"), actor=actor)
    run, _ = run_start(thread=thread, run_id="r-1", actor=actor)
    short, _ = run_start(thread=thread, run_id="r-2", actor=actor)
    event_append(thread=thread, events=messages(2, start=7, run_id="r-2"), actor=actor)
    run_finish(run=run, status="completed", actor=actor)
    run_finish(run=short, status="completed", actor=actor)
    (job,) = run_pending()
    assert job.kind == "per_run" and job.params["run_id"] == "r-1"
    collapse = Collapse.objects.get()
    assert (collapse.start_position, collapse.end_position, collapse.source) == (3, 7, "per_run")


def test_a_failing_llm_fails_the_job_visibly(budgeted, actor, monkeypatch, settings):
    settings.SUMMARIZER_BACKEND = "openai"

    def down(items, **kwargs):
        raise SummarizerError("gpt at http://llm: HTTP 500: overloaded")

    monkeypatch.setattr(openai_backend, "summarize", down)
    event_append(thread=budgeted, events=messages(60), actor=actor)
    (job,) = run_pending()
    assert job.status == "failed" and "HTTP 500" in job.error and job.pending_key is None
    assert not Collapse.objects.exists()
    assert AuditLog.objects.filter(action="summary.failed", target_id=str(job.pk)).exists()
    event_append(thread=budgeted, events=messages(1), actor=actor)
    assert Job.objects.count() == 1  # no job storm while the backend is down


def test_the_extractive_fallback_is_used_when_enabled(budgeted, actor, monkeypatch, settings):
    settings.SUMMARIZER_BACKEND = "openai"
    settings.SUMMARIZER_FALLBACK_EXTRACTIVE = True

    def down(items, **kwargs):
        raise SummarizerError("timed out after 60s")

    monkeypatch.setattr(openai_backend, "summarize", down)
    event_append(thread=budgeted, events=messages(60), actor=actor)
    (job,) = run_pending()
    provenance = Collapse.objects.get().provenance
    assert job.status == "done" and provenance["backend"] == "extractive"
    assert provenance["fallback_from"] == {"backend": "openai", "error": "timed out after 60s"}


def test_a_workspace_default_applies_to_threads_without_a_setting(thread, actor, settings):
    settings.SUMMARIZER_WORKSPACE_DEFAULTS = {thread.workspace.slug: BUDGET}
    event_append(thread=thread, events=messages(60), actor=actor)
    assert Job.objects.get().kind == "token_budget"
    summaries.summarizer_configure(thread=thread, config={}, actor=actor)  # opt out
    Job.objects.all().delete()
    event_append(thread=thread, events=messages(5), actor=actor)
    assert not Job.objects.exists()


def test_a_long_backlog_is_brought_under_budget_in_bounded_chunks(budgeted, actor, settings):
    settings.SUMMARIZER_MAX_EVENTS_PER_JOB = 100
    for i in range(5):
        event_append(thread=budgeted, events=messages(100, start=i * 100), actor=actor)
    jobs = run_pending()
    assert len(jobs) >= 5 and all(j.status == "done" for j in jobs)
    thread = fresh(budgeted)
    assert thread.active_tokens <= 2000
    assert Event.objects.filter(thread=thread, type="Message", status="collapsed").count() == 496


def test_recovery_resends_lost_jobs_and_gives_up_on_crashing_ones(budgeted, actor, monkeypatch):
    sent = []
    monkeypatch.setattr(summary_worker, "send_job", lambda pk: sent.append(pk))
    event_append(thread=budgeted, events=messages(60), actor=actor)
    lost = Job.objects.get()
    old = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=lost.pk).update(created_at=old)
    assert summaries.summary_jobs_recover(stale_after=600) == {"resent": 1, "given_up": 0, "queued": 0}
    assert sent == [lost.pk]
    Job.objects.filter(pk=lost.pk).update(status="running", started_at=old, attempts=5)
    assert summaries.summary_jobs_recover(stale_after=600) == {"resent": 0, "given_up": 1, "queued": 0}
    assert Job.objects.get(pk=lost.pk).status == "failed"


def test_recovery_queues_threads_left_over_budget(budgeted, actor, settings):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    Job.objects.all().delete()  # the job was lost before it was even recorded as failed
    assert summaries.summary_jobs_recover(stale_after=600)["queued"] == 1
    assert Job.objects.get().thread_id == budgeted.pk


def test_expiry_deletes_old_finished_jobs_and_keeps_their_collapses(budgeted, actor):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    (job,) = run_pending()
    assert summaries.summary_jobs_expire(older_than_days=7) == 0
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(days=8))
    assert summaries.summary_jobs_expire(older_than_days=7) == 1
    assert Collapse.objects.get().job is None


def test_the_append_check_does_not_grow_with_history(budgeted, actor, django_assert_max_num_queries):
    event_append(thread=budgeted, events=messages(200), actor=actor)
    thread = fresh(budgeted)
    with django_assert_max_num_queries(2):
        summaries.summarization_check(thread=thread)


def test_two_copies_of_a_job_running_at_once_make_one_collapse(budgeted, actor, monkeypatch):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    job = Job.objects.get()
    real = extractive_backend.summarize
    twin_ran: list[Job] = []
    started = []

    def summary_while_the_twin_runs(items, **kwargs):
        if not started:  # a redelivered copy runs the same job to the end meanwhile
            started.append(True)
            twin_ran.append(summaries.summary_job_run(job_id=job.pk))
        return real(items, **kwargs)

    monkeypatch.setattr(extractive_backend, "summarize", summary_while_the_twin_runs)
    finished = summaries.summary_job_run(job_id=job.pk)
    collapse = Collapse.objects.get()
    assert twin_ran[0].result["collapse"] == collapse.pk
    assert finished.status == "done" and finished.result["collapse"] == collapse.pk
    assert finished.attempts == 2


def test_a_job_of_a_deleted_thread_is_a_no_op(budgeted, actor):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    job_id = Job.objects.get().pk
    budgeted.delete()
    assert summaries.summary_job_run(job_id=job_id) is None


def test_an_invalid_default_is_ignored_rather_than_breaking_appends(thread, actor, settings):
    settings.SUMMARIZER_DEFAULT = {"token_budget": {"preserve_recent": 3}}  # no max_tokens
    event_append(thread=thread, events=messages(60), actor=actor)
    assert not Job.objects.exists()


def test_a_job_that_keeps_killing_its_worker_is_given_up(budgeted, actor, settings):
    event_append(thread=budgeted, events=messages(60), actor=actor)
    job = Job.objects.get()
    Job.objects.filter(pk=job.pk).update(status="running", attempts=settings.SUMMARIZER_MAX_ATTEMPTS)
    job = summaries.summary_job_run(job_id=job.pk)
    assert job.status == "failed" and "Gave up after 5 attempts" in job.error
    assert not Collapse.objects.exists()


@pytest.fixture
def trickle_server():
    with serving_a_trickle() as server:
        yield server


@pytest.mark.slow
def test_a_trickling_llm_fails_the_job_at_the_timeout_and_leaves_the_thread_as_it_was(
        budgeted, actor, settings, trickle_server, monkeypatch):
    settings.SUMMARIZER_BACKEND = "openai"
    settings.SUMMARIZER_BASE_URL = f"http://127.0.0.1:{trickle_server.server_port}/v1"
    settings.SUMMARIZER_TIMEOUT = 2.0
    settings.SUMMARIZER_RETRIES = 0
    event_append(thread=budgeted, events=messages(60), actor=actor)
    before = fresh(budgeted)
    rows = Event.objects.filter(thread=budgeted).values_list("seq", "status", "position")
    events_before = list(rows)
    calls = []
    original = openai_backend.summarize

    def timed(*args, **kwargs):
        started = time.monotonic()
        try:
            return original(*args, **kwargs)
        finally:
            calls.append(time.monotonic() - started)

    monkeypatch.setattr(openai_backend, "summarize", timed)
    started = time.monotonic()
    (job,) = run_pending()
    elapsed = time.monotonic() - started
    assert job.status == "failed" and "timed out after 2.0s" in job.error
    (call,) = calls
    # SUMMARIZER_TIMEOUT, though bytes kept coming for 250 s: the margin is for a loaded machine
    assert 1.0 <= call <= 5.0, call
    assert elapsed < call + 5  # and the job around it did not wait on anything else
    after = fresh(budgeted)
    assert not Collapse.objects.exists()
    assert list(rows.all()) == events_before
    assert (after.active_tokens, after.active_event_count, after.summary) == (
        before.active_tokens, before.active_event_count, before.summary)


def test_a_blank_summary_from_the_summarizer_collapses_nothing(thread, actor, monkeypatch):
    # collapsespec.check_summary_text at the worker, the door of a summarizer's text
    event_append(thread=thread, events=messages(30), actor=actor)
    real = extractive_backend.summarize
    monkeypatch.setattr(extractive_backend, "summarize",
                        lambda items, **kwargs: replace(real(items, **kwargs), text="  \n "))
    summaries.summarize_range_request(thread=thread, start_position=5, end_position=12, actor=actor)
    with pytest.raises(InvalidInput, match="summary_text is required."):
        run_pending()
    assert not Collapse.objects.exists()
    assert fresh(thread).active_event_count == 30
