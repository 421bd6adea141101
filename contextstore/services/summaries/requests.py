"""What callers ask of summarization: set a thread's summarizer, the checks that queue a job
after an append or a run, a range summary, cancelling and retrying a job; and handing a job to
the broker after commit."""

import logging
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import Event, Job, Run, Thread
from contextstore.outbox import publish_after_commit
from contextstore.ranges import check_range
from contextstore.services.collapses import whole_exchanges
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.summaries.config import (
    budget_tokens,
    summarizer_config_clean,
    thread_summarizer_config,
)

logger = logging.getLogger(__name__)

PENDING = (Job.Status.QUEUED, Job.Status.RUNNING)
SUMMARIZE_TASK = "contextstore.tasks.summarize_job"  # registered by apps.ready


def summarizer_configure(*, thread: Thread, config: dict | None, actor: Actor) -> Thread:
    """Set (or with None remove) a thread's summarizer; `{}` turns summarization off for this
    thread even when a workspace default exists. Audited; may queue a summary at once."""
    clean = None if config is None else summarizer_config_clean(config)
    with transaction.atomic():
        thread = lock_thread(thread)
        previous = thread.summarizer
        thread.summarizer = clean
        thread.save(update_fields=["summarizer", "updated_at"])
        audit(actor=actor, action="thread.summarizer", target=thread, workspace=thread.workspace,
              before=previous, after=clean)
    summarization_check(thread=thread)
    return thread


def summarization_check(*, thread: Thread) -> Job | None:
    """Called after an append commits (and after each summary): queue a token-budget summary
    when the thread's visible active history is over its budget. Costs two indexed reads at
    most, whatever the history length; threads without a setting are never summarized."""
    config = thread_summarizer_config(thread)
    budget = (config or {}).get("token_budget")
    if not budget:
        return None
    if thread.active_tokens <= budget_tokens(thread, budget):
        return None
    if thread.active_event_count <= budget.get("preserve_recent", 10):
        return None  # everything left is protected; collapsing cannot help
    backoff = timezone.now() - timedelta(seconds=settings.SUMMARIZER_FAILURE_BACKOFF)
    if Job.objects.filter(thread=thread, kind=Job.Kind.TOKEN_BUDGET, status=Job.Status.FAILED,
                          finished_at__gt=backoff).exists():
        return None  # the backend just failed; the periodic re-check tries again later
    return _enqueue(thread=thread, kind=Job.Kind.TOKEN_BUDGET, key=f"token_budget:{thread.pk}")


def run_completed_check(*, run: Run) -> Job | None:
    """Called when a run completes: queue a per-run summary when the thread asks for one."""
    config = thread_summarizer_config(run.thread)
    per_run = (config or {}).get("per_run")
    if not per_run or run.event_count < per_run.get("min_events", 3):
        return None
    return _enqueue(thread=run.thread, kind=Job.Kind.PER_RUN, key=f"per_run:{run.pk}",
                    params={"run": run.pk, "run_id": run.run_id})


def summarize_range_request(
    *, thread: Thread, start_position: Any, end_position: Any, actor: Actor, widen: bool = False,
) -> Job:
    """Queue a summary of the working-context positions [start_position, end_position] (both
    inclusive). The same range asked again while pending returns the same job. A range that
    would split a tool call from its results is refused, or with `widen` grown to the whole
    exchange (selectors/exchanges.py): the job collapses what it summarized."""
    start, end = check_range(start_position, end_position)
    start, end = whole_exchanges(thread, start, end, widen)
    cap = settings.SUMMARIZER_MAX_EVENTS_PER_JOB
    count = range_events(thread, start, end)[: cap + 1].count()
    if count == 0:
        raise InvalidInput(f"No active events between positions {start} and {end}.",
                           code="empty_range", details={"start_position": start, "end_position": end})
    if count > cap:
        raise InvalidInput(f"At most {cap} events per summary; narrow the range.",
                           code="range_too_large",
                           details={"start_position": start, "end_position": end})
    with transaction.atomic():
        job = _enqueue(thread=thread, kind=Job.Kind.RANGE, key=f"range:{thread.pk}:{start}-{end}",
                       params={"start_position": start, "end_position": end,
                               "requested_by": actor.label})
        audit(actor=actor, action="summary.request", target=job, workspace=thread.workspace,
              thread=thread.pk, start_position=start, end_position=end)
    return job


def _enqueue(*, thread: Thread, kind: str, key: str, params: dict | None = None) -> Job:
    existing = Job.objects.filter(pending_key=key).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            job = Job.objects.create(workspace_id=thread.workspace_id, thread=thread, kind=kind,
                                     params=params or {}, pending_key=key)
    except IntegrityError:  # a concurrent appender queued it first
        return Job.objects.get(pending_key=key)
    # After commit and off the request's thread: a slow or frozen broker never holds up the
    # write that queued the job (the row is the outbox; beat's recovery re-sends).
    transaction.on_commit(lambda: _publish(job.pk))
    return job



def _publish(job_id: Any) -> None:
    publish_after_commit(lambda pk: send_job(pk), job_id)  # send_job looked up when it runs


def send_job(job_id: Any) -> None:
    """Hand a job to the broker, waiting at most the broker's connect/socket timeouts (and one
    retry). A broker outage must not fail the write that queued it: the job row stays queued
    and the periodic recovery sends it again."""
    try:
        # By name through the Celery app: services sit below contextstore.tasks (import-linter).
        current_app.tasks[SUMMARIZE_TASK].delay(str(job_id))
    except Exception:  # noqa: BLE001 - any broker failure; logged and recovered by beat
        logger.exception("could not send summary job %s to the broker", job_id)


def summary_job_cancel(*, job: Job, actor: Actor) -> Job:
    """Cancel a job no worker has taken yet, or one running past SUMMARIZER_JOB_TIMEOUT (its
    worker presumed dead or stuck: if it comes back, `_commit` sees the job is no longer running
    and drops its result). It fails with a message saying who cancelled it. A running job still
    within its time is not cancelled: its worker may be committing the summary already."""
    now = timezone.now()
    timed_out = now - timedelta(seconds=settings.SUMMARIZER_JOB_TIMEOUT)
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(
            status=Job.Status.FAILED, error=f"Cancelled by {actor.label} before a worker took it.",
            pending_key=None, finished_at=now)
        if not cancelled:
            cancelled = Job.objects.filter(
                pk=job.pk, status=Job.Status.RUNNING, started_at__lt=timed_out,
            ).update(status=Job.Status.FAILED, pending_key=None, finished_at=now,
                     error=f"Cancelled by {actor.label} after it ran longer than "
                           f"{settings.SUMMARIZER_JOB_TIMEOUT} s (timed out).")
        if not cancelled:
            job.refresh_from_db()
            if job.status == Job.Status.RUNNING:
                raise Conflict("The summary job is running and not timed out yet; it can be "
                               f"cancelled after {settings.SUMMARIZER_JOB_TIMEOUT} s.")
            raise Conflict(f"The summary job is {job.status}; only a pending job can be cancelled.")
        audit(actor=actor, action="summary.cancelled", target=job, workspace=job.thread.workspace,
              thread=job.thread_id)
    job.refresh_from_db()
    return job


def summary_job_retry(*, job: Job, actor: Actor) -> Job:
    """Queue the same summary again: for a failed or cancelled job, or a pending one past
    SUMMARIZER_JOB_TIMEOUT (which is cancelled first). Returns the new job."""
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("thread__workspace").get(pk=job.pk)
        if job.status == Job.Status.DONE:
            raise Conflict("The summary job is done; there is nothing to retry.")
        if job.status in PENDING:
            if not job.is_timed_out(now):
                raise Conflict("The summary job is still pending and not timed out yet.")
            Job.objects.filter(pk=job.pk).update(
                status=Job.Status.FAILED, pending_key=None, finished_at=now,
                error=f"Timed out after {job.pending_seconds(now)} s {job.status}; "
                      f"retried by {actor.label}.")
        params = dict(job.params)
        if job.kind == Job.Kind.RANGE:
            params["requested_by"] = actor.label
            key = f"range:{job.thread_id}:{params.get('start_position')}-{params.get('end_position')}"
        elif job.kind == Job.Kind.PER_RUN:
            key = f"per_run:{params.get('run')}"
        else:
            key = f"token_budget:{job.thread_id}"
        retried = _enqueue(thread=job.thread, kind=job.kind, key=key, params=params)
        audit(actor=actor, action="summary.retried", target=retried, workspace=job.thread.workspace,
              thread=job.thread_id, previous=str(job.pk))
    return retried


def range_events(thread: Thread, start: int, end: int) -> QuerySet[Event]:
    # Visible active events only: the partial (thread, position) index serves this, and
    # runtime-only events are never shown to a model, so a summary need not read them.
    return Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True,
                                position__gte=start, position__lte=end)
