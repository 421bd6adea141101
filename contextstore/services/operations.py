"""Long dashboard operations: a clear, un-clear or collapse that moves more than
LONG_OPERATION_EVENTS events is queued as a Job and done by the worker in batches.

Smaller ones stay synchronous (services/threads.py, services/collapses.py); the result is the
same rows either way. A request fixes what the operation covers (a clear: the events up to the
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
from django.db.models import Count, F, Max, Min
from django.utils import timezone

from contextstore.errors import Conflict, DomainError, InvalidInput
from contextstore.models import Clear, Collapse, Event, Job, Thread
from contextstore.outbox import publish_after_commit
from contextstore.redaction import use_workspace
from contextstore.services import history
from contextstore.services.collapses import collapse_check, collapse_create, summary_event, whole_exchanges
from contextstore.services.common import Actor, audit, lock_thread, operation_key
from contextstore.services.document import document_write
from contextstore.services.threads import thread_clear_context, thread_unclear

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
    if clear.undone_at is not None or not _long(clear.event_count):
        return thread_unclear(clear=clear, actor=actor)
    return _enqueue(thread=clear.thread, kind=Job.Kind.UNCLEAR, actor=actor,
                    total=clear.event_count, params={"clear": clear.pk})


def collapse_or_queue(*, thread: Thread, start_position: int, end_position: int,
                      summary_text: str, actor: Actor, widen: bool = False) -> Collapse | Job:
    collapse_check(start_position, end_position, summary_text, Collapse.Source.PERSON)
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


def _batch(events) -> tuple[list[int], history.Moved]:
    rows = list(events.order_by("seq").values_list("pk", "visible", "token_count")[:OPERATION_BATCH])
    visible = [tokens for _, shown, tokens in rows if shown]
    return [pk for pk, _, _ in rows], history.Moved(len(visible), sum(visible))


def _clear_step(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    """One batch of a clear; the first also writes the Clear and empties the summary, as the
    synchronous clear does, so an undo finds them whatever happens next."""
    if "clear" not in progress:
        clear = Clear.objects.create(thread=thread, actor=actor.label[:200], summary=thread.summary,
                                     event_count=0, tokens=0)
        document_write(thread=thread, actor=actor, reason="clear_context", values={"summary": ""})
        progress["clear"] = clear.pk
    clear = Clear.objects.get(pk=progress["clear"])
    if clear.undone_at is not None:
        raise Conflict("The clear was undone while it was being done; nothing more to clear.")
    ids, left = _batch(Event.objects.filter(thread=thread, status=Event.Status.ACTIVE,
                                            seq__lte=job.params["upto_seq"]))
    Event.objects.filter(pk__in=ids).update(status=Event.Status.CLEARED, cleared_by=clear)
    Clear.objects.filter(pk=clear.pk).update(event_count=F("event_count") + len(ids),
                                             tokens=F("tokens") + left.tokens)
    history.working_context_changed(thread=thread, now=timezone.now(), left=left)
    progress["done"] = progress.get("done", 0) + len(ids)
    if len(ids) == OPERATION_BATCH:
        return False
    clear.refresh_from_db()
    progress["total"] = clear.event_count
    audit(actor=actor, action="thread.clear_context", target=thread, workspace=thread.workspace,
          clear=clear.pk, cleared=clear.event_count, summary_chars=len(clear.summary), job=str(job.pk))
    return True


def _unclear_step(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    """One batch of an un-clear; the first marks the Clear undone and writes its summary back
    (only when the thread's summary is still empty), as the synchronous un-clear does."""
    clear = Clear.objects.filter(pk=job.params["clear"], thread=thread).first()
    if clear is None:
        raise InvalidInput("The clear is gone.")
    if "summary_restored" not in progress:
        if clear.undone_at is not None:
            raise Conflict("This clear was already undone.", code="already_undone")
        Clear.objects.filter(pk=clear.pk).update(undone_at=timezone.now())
        progress["summary_restored"] = bool(clear.summary) and thread.summary == ""
        if progress["summary_restored"]:
            document_write(thread=thread, actor=actor, reason=f"unclear {clear.pk}",
                           values={"summary": clear.summary})
        progress["clear"] = clear.pk
    ids, entered = _batch(Event.objects.filter(cleared_by=clear, status=Event.Status.CLEARED))
    Event.objects.filter(pk__in=ids).update(status=Event.Status.ACTIVE, cleared_by=None)
    history.working_context_changed(thread=thread, now=timezone.now(), entered=entered)
    progress["done"] = progress.get("done", 0) + len(ids)
    if len(ids) == OPERATION_BATCH:
        return False
    progress["total"] = progress["done"]
    audit(actor=actor, action="thread.unclear", target=thread, workspace=thread.workspace,
          clear=clear.pk, restored=progress["done"], summary_restored=progress["summary_restored"],
          job=str(job.pk))
    return True


def _collapse_step(job: Job, thread: Thread, progress: dict, actor: Actor) -> bool:
    """One batch of a collapse; the first writes the Summary event (at the range's first
    position) and the Collapse, so its undo brings back whatever was moved."""
    if "collapse" not in progress:
        start, end = job.params["start_position"], job.params["end_position"]
        span = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE,
                                    position__gte=start, position__lte=end).aggregate(
            first=Min("position"), last=Max("position"), count=Count("pk"))
        if not span["count"]:
            raise InvalidInput(f"No active events between positions {start} and {end}.",
                               code="empty_range")
        now = timezone.now()
        summary = summary_event(thread, job.params["summary"], span["first"], span["last"],
                                span["count"], now)
        collapse = Collapse.objects.create(
            thread=thread, start_position=span["first"], end_position=span["last"],
            summary_event=summary, source=Collapse.Source.PERSON, actor=actor.label[:200],
            event_count=0, tokens_before=0, tokens_after=summary.token_count, job=job)
        progress.update(collapse=collapse.pk, summary=summary.pk, total=span["count"])
    collapse = Collapse.objects.get(pk=progress["collapse"])
    if collapse.undone_at is not None:
        raise Conflict("The collapse was undone while it was being done.")
    ids, left = _batch(Event.objects.filter(
        thread=thread, status=Event.Status.ACTIVE, position__gte=collapse.start_position,
        position__lte=collapse.end_position).exclude(pk=progress["summary"]))
    Event.objects.filter(pk__in=ids).update(status=Event.Status.COLLAPSED, collapse=collapse)
    Collapse.objects.filter(pk=collapse.pk).update(event_count=F("event_count") + len(ids),
                                                   tokens_before=F("tokens_before") + left.tokens)
    history.working_context_changed(thread=thread, now=timezone.now(), left=left)
    progress["done"] = progress.get("done", 0) + len(ids)
    if len(ids) == OPERATION_BATCH:
        return False
    collapse.refresh_from_db()
    audit(actor=actor, action="collapse.create", target=collapse, workspace=thread.workspace,
          thread=thread.pk, start_position=collapse.start_position,
          end_position=collapse.end_position, events=collapse.event_count,
          tokens_before=collapse.tokens_before, tokens_after=collapse.tokens_after,
          source=collapse.source, job=str(job.pk))
    return True


STEPS: dict[str, Callable[[Job, Thread, dict, Actor], bool]] = {
    Job.Kind.CLEAR: _clear_step, Job.Kind.UNCLEAR: _unclear_step, Job.Kind.COLLAPSE: _collapse_step,
}
