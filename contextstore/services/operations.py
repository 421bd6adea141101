"""Long dashboard operations: a clear, un-clear or collapse that moves more than
LONG_OPERATION_EVENTS events is queued as a Job and done by the worker in batches.

Each operation is written once, as a step that moves one batch (`clear_step` and
`unclear_step` in services/threads.py, `collapse_step` in services/collapses.py); smaller ones
run it inline as one batch of everything, in the request's transaction (`thread_clear_context`,
`thread_unclear`, `collapse_create`, which the API always uses), so the rows are the same
either way. A request fixes what the operation covers (a clear: the events up to the
thread's last seq at the click; a collapse: its positions), queues the job through the outbox
the summary jobs use, and holds the thread's one operation slot (common.operation_key): while
it is pending, clear, un-clear, collapse and undo on the thread are refused (409), but appends
go on. Each batch of OPERATION_BATCH events is one transaction under the thread's lock that
moves the events, the thread's counters and the job's progress together, so a job that dies
part way is taken up again where it stopped (by retry or the recovery), never done twice.
The first batch writes the record the undo needs (the Clear, or the Collapse and its summary).
"""

import logging
from collections.abc import Callable
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from contextstore.errors import Conflict, DomainError
from contextstore.models import Clear, Collapse, Event, Job, Thread
from contextstore.outbox import publish_after_commit
from contextstore.redaction import use_workspace
from contextstore.services.collapses import collapse_create, collapse_step, whole_exchanges
from contextstore.services.common import Actor, audit, lock_thread, operation_key
from contextstore.services.threads import clear_step, thread_clear_context, thread_unclear, unclear_step

logger = logging.getLogger(__name__)

OPERATION_TASK = "contextstore.tasks.operation_job"
OPERATION_BATCH = 2000  # events per transaction: the thread's lock is held this long at most
KINDS = (Job.Kind.CLEAR, Job.Kind.UNCLEAR, Job.Kind.COLLAPSE)
PENDING = (Job.Status.QUEUED, Job.Status.RUNNING)


def _long(count: int) -> bool:
    return count > settings.LONG_OPERATION_EVENTS


# --- requests (the dashboard's actions) --------------------------------------------------------

def clear_or_queue(*, thread: Thread, actor: Actor) -> Clear | Job:
    """Clear the thread's working context now, or queue it as a job when it is long."""
    active = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE).count()
    if not _long(active):
        return thread_clear_context(thread=thread, actor=actor)
    return _enqueue(thread=thread, kind=Job.Kind.CLEAR, actor=actor, total=active,
                    params={"upto_seq": Thread.objects.get(pk=thread.pk).last_seq})


def unclear_or_queue(*, clear: Clear, actor: Actor) -> Clear | Job:
    # Rows, hidden ones too, decide (as for a clear); the Clear's count is what the model saw.
    rows = Event.objects.filter(cleared_by=clear, status=Event.Status.CLEARED).count()
    if clear.undone_at is not None or not _long(rows):
        return thread_unclear(clear=clear, actor=actor)
    return _enqueue(thread=clear.thread, kind=Job.Kind.UNCLEAR, actor=actor,
                    total=rows, params={"clear": clear.pk})


def collapse_or_queue(*, thread: Thread, start_position: int, end_position: int,
                      summary_text: str, actor: Actor, widen: bool = False) -> Collapse | Job:
    start_position, end_position = whole_exchanges(thread, start_position, end_position, widen)
    count = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, position__gte=start_position,
                                 position__lte=end_position).count()
    if not _long(count):
        return collapse_create(thread=thread, start_position=start_position,
                               end_position=end_position, summary_text=summary_text,
                               actor=actor, source=Collapse.Source.PERSON)
    return _enqueue(thread=thread, kind=Job.Kind.COLLAPSE, actor=actor, total=count, params={
        "start_position": start_position, "end_position": end_position, "summary": summary_text})


def _enqueue(*, thread: Thread, kind: str, actor: Actor, total: int, params: dict) -> Job:
    params = {**params, "requested_by": actor.label, "actor_type": actor.type,
              "user": actor.user.pk if actor.user else None}
    try:
        with transaction.atomic():
            job = Job.objects.create(workspace_id=thread.workspace_id, thread=thread, kind=kind,
                                     params=params, pending_key=operation_key(thread.pk),
                                     progress={"done": 0, "total": total})
            audit(actor=actor, action="operation.request", target=job, workspace=thread.workspace,
                  thread=thread.pk, kind=kind, events=total)
    except IntegrityError:
        raise Conflict("A long operation is already in progress on this thread; wait for it.",
                       code="operation_pending") from None
    transaction.on_commit(lambda: publish_after_commit(send_operation, job.pk))
    return job


def send_operation(job_id: Any) -> None:
    """Hand the job to the broker; on failure the row stays queued and beat's recovery
    (summaries.summary_jobs_recover) sends it again."""
    try:
        current_app.tasks[OPERATION_TASK].delay(str(job_id))
    except Exception:  # noqa: BLE001 - any broker failure; logged and recovered by beat
        logger.exception("could not send operation job %s to the broker", job_id)


def operation_job_retry(*, job: Job, actor: Actor) -> Job:
    """Queue a failed (or timed-out) operation again: the same job goes on from its progress."""
    now = timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("thread__workspace").get(pk=job.pk)
        if job.status == Job.Status.DONE:
            raise Conflict("The job is done; there is nothing to retry.")
        if job.status in PENDING and not job.is_timed_out(now):
            raise Conflict("The job is still pending and not timed out yet.")
        try:
            with transaction.atomic():
                Job.objects.filter(pk=job.pk).update(
                    status=Job.Status.QUEUED, error="", finished_at=None, created_at=now,
                    attempts=0, pending_key=operation_key(job.thread_id))
        except IntegrityError:
            raise Conflict("Another long operation is in progress on this thread; wait for it.",
                           code="operation_pending") from None
        audit(actor=actor, action="operation.retried", target=job, workspace=job.thread.workspace,
              thread=job.thread_id, kind=job.kind)
        transaction.on_commit(lambda: publish_after_commit(send_operation, job.pk))
    job.refresh_from_db()
    return job


# --- the worker's side ---------------------------------------------------------------------------

def operation_job_run(*, job_id: Any) -> Job | None:
    """Do a queued operation, batch by batch; safe to run again after a crash or a failure."""
    job = Job.objects.select_related("thread__workspace").filter(pk=job_id).first()
    if job is None or job.kind not in KINDS or job.status not in PENDING:
        return job
    use_workspace(job.thread.workspace)  # what the job stores, under the workspace's rules
    if job.attempts >= settings.SUMMARIZER_MAX_ATTEMPTS:
        return _fail(job, f"Gave up after {job.attempts} attempts (the worker kept dying).")
    claimed = Job.objects.filter(pk=job.pk, status__in=PENDING).update(
        status=Job.Status.RUNNING, attempts=F("attempts") + 1, started_at=timezone.now())
    if not claimed:
        job.refresh_from_db()
        return job
    step = STEPS[job.kind]
    try:
        while True:
            with transaction.atomic():
                thread = lock_thread(job.thread)
                job = Job.objects.select_for_update(of=("self",)).select_related(
                    "thread__workspace").get(pk=job.pk)
                if job.status != Job.Status.RUNNING:  # cancelled meanwhile
                    return job
                progress = dict(job.progress or {})
                finished = step(job, thread, progress, _actor(job))
                Job.objects.filter(pk=job.pk).update(progress=progress)
                if finished:
                    Job.objects.filter(pk=job.pk).update(
                        status=Job.Status.DONE, result=progress, pending_key=None,
                        finished_at=timezone.now())
                    job.refresh_from_db()
                    return job
    except DomainError as exc:
        return _fail(job, exc.message)


def _actor(job: Job) -> Actor:
    user = User.objects.filter(pk=job.params.get("user")).first() if job.params.get("user") else None
    return Actor(job.params.get("actor_type", "worker"), job.params.get("requested_by", "worker"),
                 user=user)


def _fail(job: Job, error: str) -> Job:
    with transaction.atomic():
        Job.objects.filter(pk=job.pk, status__in=PENDING).update(
            status=Job.Status.FAILED, error=error[:2000], pending_key=None,
            finished_at=timezone.now())
        audit(actor=Actor.worker("operations"), action="operation.failed", target=job,
              workspace=job.thread.workspace, thread=job.thread_id, kind=job.kind, error=error[:500])
    job.refresh_from_db()
    logger.warning("operation job %s failed: %s", job.pk, error)
    return job


def _clear(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    return clear_step(thread=thread, actor=actor, progress=progress,
                      upto_seq=job.params["upto_seq"], limit=OPERATION_BATCH, job=job)


def _unclear(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    return unclear_step(thread=thread, actor=actor, progress=progress,
                        clear_id=job.params["clear"], limit=OPERATION_BATCH, job=job)


def _collapse(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    return collapse_step(thread=thread, actor=actor, progress=progress,
                         start_position=job.params["start_position"],
                         end_position=job.params["end_position"],
                         summary_text=job.params["summary"], limit=OPERATION_BATCH, job=job)


STEPS: dict[str, Callable[[Job, Thread, dict, Actor], bool]] = {
    Job.Kind.CLEAR: _clear, Job.Kind.UNCLEAR: _unclear, Job.Kind.COLLAPSE: _collapse,
}
