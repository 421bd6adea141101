"""Summarization: per-thread settings, the triggers that queue jobs, and the worker side that
turns a job into exactly one collapse.

Nooa's TokenBudgetSummarizer (collapse the oldest events, keeping the last `preserve_recent`,
when the visible history passes `max_tokens`) and MethodSummarizer (collapse a completed run's
events when it has at least `min_events`) run here as Celery jobs instead of in-process.

How the guarantees hold:
- at most one pending job per (thread, kind): `Job.pending_key` is unique while pending, so a
  fast appender queues one job, not one per append;
- the range is decided when the job reads its events; the commit re-reads that range under the
  thread lock and collapses only if it still holds exactly the events that were summarized —
  events appended meanwhile sit after the range and stay active; a range collapsed or cleared
  meanwhile is skipped;
- collapse and job completion commit in one transaction, and `collapse_create(job=...)` returns
  the existing collapse for a job, so a retried or redelivered task produces one collapse.
"""

import functools
import json
import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.llm_models import thread_model_settings
from contextstore.models import Collapse, Event, Job, Run, Thread
from contextstore.outbox import publish_after_commit
from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.summarizers import BACKENDS, Item, SummarizerError, Summary, extractive
from contextstore.summarizers import openai as openai_backend
from contextstore.tokens import count_tokens, is_thinking, part_text

logger = logging.getLogger(__name__)

PENDING = (Job.Status.QUEUED, Job.Status.RUNNING)
SOURCE_BY_KIND = {
    Job.Kind.TOKEN_BUDGET: Collapse.Source.TOKEN_BUDGET,
    Job.Kind.PER_RUN: Collapse.Source.PER_RUN,
    Job.Kind.RANGE: Collapse.Source.WORKER,
}
COMMIT_ATTEMPTS = 3  # re-reads when the range changed between reading and committing


# --- settings ---------------------------------------------------------------------------------

def _int(value: Any, name: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidInput(f"{name} must be an integer between {lo} and {hi}.", details={name: value})
    return value


def _section(config: dict, name: str, allowed: set[str]) -> dict | None:
    section = config.get(name)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise InvalidInput(f"{name} must be an object or null.", details={name: "object"})
    unknown = set(section) - allowed
    if unknown:
        field = f"{name}.{sorted(unknown)[0]}"
        raise InvalidInput(f"Unknown setting {field}.", details={field: "unknown field"})
    return section


def summarizer_config_clean(config: Any) -> dict[str, Any]:
    """Validate a summarizer setting and return it normalised (defaults filled in)."""
    if not isinstance(config, dict):
        raise InvalidInput("The summarizer setting must be an object or null.",
                           details={"summarizer": "object or null"})
    unknown = set(config) - {"token_budget", "per_run", "backend", "model"}
    if unknown:
        field = sorted(unknown)[0]
        raise InvalidInput(f"Unknown setting {field}.", details={field: "unknown field"})
    clean: dict[str, Any] = {}
    budget = _section(config, "token_budget", {"max_tokens", "preserve_recent", "summary_max_tokens"})
    if budget is not None:
        # Without max_tokens the thread's model budget applies (context window - reserve).
        max_tokens = None
        if budget.get("max_tokens") is not None:
            max_tokens = _int(budget["max_tokens"], "token_budget.max_tokens", 256, 10_000_000)
        ceiling = max_tokens or 10_000_000
        cap = min(settings.SUMMARIZER_MAX_TOKENS, ceiling // 4)
        clean["token_budget"] = {
            "max_tokens": max_tokens,
            "preserve_recent": _int(budget.get("preserve_recent", 10),
                                    "token_budget.preserve_recent", 0, 10_000),
            "summary_max_tokens": _int(budget.get("summary_max_tokens", cap),
                                       "token_budget.summary_max_tokens", 64, ceiling // 2),
        }
    per_run = _section(config, "per_run", {"min_events"})
    if per_run is not None:
        clean["per_run"] = {"min_events": _int(per_run.get("min_events", 3), "per_run.min_events",
                                               1, 1_000_000)}
    backend = config.get("backend")
    if backend is not None:
        if backend not in BACKENDS:
            raise InvalidInput(f"backend must be one of {', '.join(BACKENDS)}.",
                               details={"backend": backend})
        clean["backend"] = backend
    model = config.get("model")
    if model is not None:
        if not isinstance(model, str) or not 0 < len(model) <= 200:
            raise InvalidInput("model must be a string (at most 200 characters).",
                               details={"model": model})
        clean["model"] = model
    return clean


def thread_summarizer_config(thread: Thread) -> dict[str, Any] | None:
    """The thread's own setting, else the workspace-wide default from settings, else None."""
    if thread.summarizer is not None:
        return thread.summarizer or None
    per_workspace = settings.SUMMARIZER_WORKSPACE_DEFAULTS
    default = per_workspace.get(thread.workspace.slug) if per_workspace else None
    if default is None:
        default = settings.SUMMARIZER_DEFAULT
    return None if default is None else _clean_default(json.dumps(default, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _clean_default(raw: str) -> dict[str, Any] | None:
    """A default from the environment, validated once. A bad one is logged and ignored: a
    typo in a setting must not break every append."""
    try:
        return summarizer_config_clean(json.loads(raw)) or None
    except InvalidInput as exc:
        logger.error("ignoring an invalid summarizer default %s: %s", raw, exc.message)
        return None


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


def budget_tokens(thread: Thread, budget: dict) -> int:
    """token_budget.max_tokens, or when it is not set the thread's model budget."""
    if budget.get("max_tokens"):
        return budget["max_tokens"]
    return thread_model_settings(thread).budget


# --- triggers ---------------------------------------------------------------------------------

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
    *, thread: Thread, start_position: Any, end_position: Any, actor: Actor
) -> Job:
    """Queue a summary of the working-context positions [start_position, end_position] (both
    inclusive). The same range asked again while pending returns the same job."""
    start = _int(start_position, "start_position", 1, 2**62)
    end = _int(end_position, "end_position", 1, 2**62)
    if start > end:
        raise InvalidInput("start_position must not be after end_position.",
                           details={"start_position": start, "end_position": end})
    cap = settings.SUMMARIZER_MAX_EVENTS_PER_JOB
    count = _range_events(thread, start, end)[: cap + 1].count()
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


SUMMARIZE_TASK = "contextstore.tasks.summarize_job"  # registered by apps.ready


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


# --- worker side ------------------------------------------------------------------------------

def summary_job_run(*, job_id: Any) -> Job | None:
    """Do one job: read its range, summarize it outside any lock, commit exactly one collapse.

    Safe to run twice, concurrently or after a crash. A backend failure fails the job visibly
    (unless SUMMARIZER_FALLBACK_EXTRACTIVE); database errors propagate so the task retries.
    """
    job = Job.objects.select_related("thread__workspace").filter(pk=job_id).first()
    if job is None or job.status in (Job.Status.DONE, Job.Status.FAILED):
        return job  # its thread was deleted, or a redelivery of a finished job
    existing = Collapse.objects.filter(job=job).first()
    if existing is not None:
        return _finish(job, result=_collapse_result(existing), collapsed=True)
    if job.attempts >= settings.SUMMARIZER_MAX_ATTEMPTS:
        # Every earlier attempt died without finishing (e.g. the worker was OOM-killed):
        # stop the crash loop and say so.
        return _fail(job, f"Gave up after {job.attempts} attempts (the worker kept dying).")
    claimed = Job.objects.filter(pk=job.pk, status__in=PENDING).update(
        status=Job.Status.RUNNING, attempts=F("attempts") + 1, started_at=timezone.now(),
        progress={"stage": "reading"})
    if not claimed:  # a concurrent run (a redelivered copy) finished it meanwhile
        job.refresh_from_db()
        return job
    config = thread_summarizer_config(job.thread) or {}
    for _ in range(COMMIT_ATTEMPTS):
        thread = Thread.objects.get(pk=job.thread_id)
        decided = _decide_range(job, thread, config)
        if isinstance(decided, str):
            return _finish(job, result={"collapse": None, "skipped": decided})
        start, end, members, cap = decided
        # A summary should be shorter than what it replaces, even for a short run or range.
        cap = min(cap, max(64, sum(m.token_count for m in members) // 2))
        _progress(job, stage="summarizing", start_position=start, end_position=end,
                  events=len(members), tokens=sum(m.token_count for m in members),
                  backend=config.get("backend") or settings.SUMMARIZER_BACKEND)
        try:
            summary, provenance = _summarize(members, cap, config)
        except SummarizerError as exc:
            return _fail(job, str(exc))
        provenance.update(job=str(job.pk), kind=job.kind)
        _progress(job, stage="committing", start_position=start, end_position=end,
                  events=len(members))
        outcome = _commit(job, thread, start, end, members, summary, provenance)
        if outcome == "changed":
            continue
        job.refresh_from_db()
        if isinstance(outcome, Collapse) and outcome.tokens_after < outcome.tokens_before:
            # Still over budget (a long backlog is done in bounded chunks)? Queue the next one.
            summarization_check(thread=Thread.objects.select_related("workspace").get(pk=thread.pk))
        return job
    return _fail(job, "The range kept changing while it was being summarized; try again.")


def _progress(job: Job, **progress: Any) -> None:
    """Say where a running job is, for its page (a cancelled job is left as it is)."""
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(progress=progress)


def _range_events(thread: Thread, start: int, end: int):
    # Visible active events only: the partial (thread, position) index serves this, and
    # runtime-only events are never shown to a model, so a summary need not read them.
    return Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True,
                                position__gte=start, position__lte=end)


def _decide_range(job: Job, thread: Thread, config: dict) -> tuple[int, int, list[Event], int] | str:
    """(start, end, members, summary cap) for the job, or why there is nothing to do."""
    cap = settings.SUMMARIZER_MAX_TOKENS
    limit = settings.SUMMARIZER_MAX_EVENTS_PER_JOB
    active = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True)
    if job.kind == Job.Kind.TOKEN_BUDGET:
        budget = config.get("token_budget")
        if not budget:
            return "no_token_budget_setting"
        limit_tokens = budget_tokens(thread, budget)
        if thread.active_tokens <= limit_tokens:
            return "fits"
        cap = budget.get("summary_max_tokens", min(cap, limit_tokens // 4))
        keep = budget.get("preserve_recent", 10)
        head = active.order_by("position")
        if keep:
            boundary = list(active.order_by("-position").values_list("position", flat=True)[keep - 1:keep])
            if not boundary:
                return "nothing_outside_preserve_recent"
            head = head.filter(position__lt=boundary[0])
        members = list(head[:limit])
        if not members:
            return "nothing_outside_preserve_recent"
        if len(members) == 1 and members[0].type == "Summary":
            return "only_a_summary_left"  # re-summarizing one summary would loop, not shrink
        return members[0].position, members[-1].position, members, cap
    if job.kind == Job.Kind.PER_RUN:
        run_events = active.filter(run_id=job.params.get("run")).order_by("position")
        first = run_events.values_list("position", flat=True).first()
        last = run_events.order_by("-position").values_list("position", flat=True).first()
        if first is None:
            return "already_collapsed_or_cleared"
        per_run = config.get("per_run") or {}
        if run_events.count() < per_run.get("min_events", 1):
            return "fewer_than_min_events"
        start, end = first, last
    else:
        # Jobs queued before positions were named carry start_seq/end_seq (the same positions).
        start = job.params.get("start_position", job.params.get("start_seq"))
        end = job.params.get("end_position", job.params.get("end_seq"))
    # Interleaved events of other runs inside a run's span are summarized with it, not lost.
    members = list(_range_events(thread, start, end).order_by("position")[: limit + 1])
    if not members:
        return "already_collapsed_or_cleared"
    if len(members) > limit:
        return "range_too_large"
    return start, end, members, cap


def event_item(event: Event) -> Item:
    """What a summarizer sees of an event: its text and visible parts, a name, an error flag."""
    texts = [event.content] if event.content else []
    texts += [part_text(p) for p in event.parts or () if not is_thinking(p)]
    data = event.data if isinstance(event.data, dict) else {}
    name = event.step or next((str(data[k])[:100] for k in ("name", "tool", "tool_name")
                               if isinstance(data.get(k), str)), "")
    failed = bool(data.get("is_error") or data.get("error")) or data.get("status") in ("error", "failed")
    return Item(seq=event.seq, type=event.type, text="\n".join(texts), role=event.role,
                name=name, is_error=event.type == "Error" or (event.type != "Summary" and failed))


def endpoint(config: dict) -> openai_backend.Endpoint:
    return openai_backend.Endpoint(
        base_url=settings.SUMMARIZER_BASE_URL, api_key=settings.SUMMARIZER_API_KEY,
        model=config.get("model") or settings.SUMMARIZER_MODEL,
        timeout=settings.SUMMARIZER_TIMEOUT, retries=settings.SUMMARIZER_RETRIES,
        backoff=settings.SUMMARIZER_BACKOFF, max_input_tokens=settings.SUMMARIZER_MAX_INPUT_TOKENS,
        price_input_per_mtok=settings.SUMMARIZER_PRICE_INPUT_PER_MTOK,
        price_output_per_mtok=settings.SUMMARIZER_PRICE_OUTPUT_PER_MTOK,
    )


def _summarize(members: list[Event], cap: int, config: dict) -> tuple[Summary, dict[str, Any]]:
    items = [event_item(e) for e in members]
    backend = config.get("backend") or settings.SUMMARIZER_BACKEND
    started = time.monotonic()
    fallback = ""
    if backend == "openai":
        try:
            summary = openai_backend.summarize(items, max_tokens=cap, endpoint=endpoint(config))
        except SummarizerError as exc:
            if not settings.SUMMARIZER_FALLBACK_EXTRACTIVE:
                raise
            fallback = str(exc)
            summary = extractive.summarize(items, max_tokens=cap)
    else:
        summary = extractive.summarize(items, max_tokens=cap)
    provenance: dict[str, Any] = {
        "backend": summary.backend, "model": summary.model,
        "duration_ms": int((time.monotonic() - started) * 1000), "max_tokens": cap,
    }
    if fallback:
        provenance["fallback_from"] = {"backend": backend, "error": fallback[:500]}
    if summary.usage:
        provenance["usage"] = summary.usage
    if summary.cost is not None:
        provenance["cost"] = summary.cost
    return summary, provenance


def _commit(
    job: Job, thread: Thread, start: int, end: int, members: list[Event], summary: Summary,
    provenance: dict[str, Any],
) -> Collapse | str:
    """Collapse [start, end] and finish the job in one transaction, if the range still holds
    exactly `members`. Returns the collapse, "changed", or a skip reason already recorded."""
    actor = Actor.worker(f"summarizer:{provenance['backend']}"
                         + (f" for {job.params['requested_by']}" if job.params.get("requested_by") else ""))
    with transaction.atomic():
        locked = lock_thread(thread)
        existing = Collapse.objects.filter(job=job).first()
        if existing is None:
            # Cancelled (timed out) while this worker was summarizing: drop the result. The
            # job row is locked so a cancel cannot slip in between this check and the commit.
            status = (Job.objects.select_for_update().filter(pk=job.pk)
                      .values_list("status", flat=True).first())
            if status != Job.Status.RUNNING:
                return "cancelled"
            current = set(_range_events(locked, start, end).values_list("pk", flat=True))
            if not current:
                _finish(job, result={"collapse": None, "skipped": "already_collapsed_or_cleared"})
                return "already_collapsed_or_cleared"
            if current != {m.pk for m in members}:
                return "changed"
            tokens_before = sum(m.token_count for m in members)
            if job.kind == Job.Kind.TOKEN_BUDGET and count_tokens(summary.text) >= tokens_before:
                # A summary no smaller than what it replaces would only churn (and could loop).
                _finish(job, result={"collapse": None, "skipped": "no_gain"})
                return "no_gain"
            provenance.update(start_position=start, end_position=end, events=len(members),
                              tokens_before=tokens_before)
            existing = collapse_create(
                thread=locked, start_position=start, end_position=end, summary_text=summary.text,
                actor=actor, source=SOURCE_BY_KIND[job.kind], provenance=provenance, job=job,
            )
            Collapse.objects.filter(pk=existing.pk).update(
                provenance={**provenance, "tokens_after": existing.tokens_after}
            )
        _finish(job, result=_collapse_result(existing), collapsed=True)
    return existing


def _collapse_result(collapse: Collapse) -> dict[str, Any]:
    return {"collapse": collapse.pk, "start_position": collapse.start_position,
            "end_position": collapse.end_position,
            "events": collapse.event_count, "tokens_before": collapse.tokens_before,
            "tokens_after": collapse.tokens_after}


def _finish(job: Job, *, result: dict[str, Any], collapsed: bool = False) -> Job:
    # Only a pending job: a concurrent copy that already finished keeps its result. A job whose
    # collapse exists is done whatever else happened (e.g. recovery gave up on it meanwhile).
    jobs = Job.objects.filter(pk=job.pk)
    if not collapsed:
        jobs = jobs.filter(status__in=PENDING)
    jobs.update(
        status=Job.Status.DONE, result=result, error="", pending_key=None,
        finished_at=timezone.now())
    job.refresh_from_db()
    return job


def _fail(job: Job, error: str) -> Job:
    with transaction.atomic():
        Job.objects.filter(pk=job.pk, status__in=PENDING).update(
            status=Job.Status.FAILED, error=error[:2000], pending_key=None,
            finished_at=timezone.now())
        audit(actor=Actor.worker("summarizer"), action="summary.failed", target=job,
              workspace=job.thread.workspace, thread=job.thread_id, error=error[:500])
    job.refresh_from_db()
    logger.warning("summary job %s failed: %s", job.pk, error)
    return job


# --- periodic work ----------------------------------------------------------------------------

def summary_jobs_recover(*, stale_after: int, limit: int = 500) -> dict[str, int]:
    """Beat: send again jobs whose message was lost (queued or running for too long), give up on
    jobs that keep crashing their worker, and queue threads left over budget with no job."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale_after)
    stale = Job.objects.filter(
        Q(status=Job.Status.QUEUED, created_at__lt=cutoff)
        | Q(status=Job.Status.RUNNING, started_at__lt=cutoff)
    ).order_by("created_at")[:limit]
    resent = given_up = 0
    for job in stale:
        if job.attempts >= settings.SUMMARIZER_MAX_ATTEMPTS:
            _fail(job, f"Gave up after {job.attempts} attempts (the worker kept dying).")
            given_up += 1
        else:
            send_job(job.pk)
            resent += 1
    queued = 0
    for thread in _threads_over_budget(limit):
        if summarization_check(thread=thread) is not None:
            queued += 1
    return {"resent": resent, "given_up": given_up, "queued": queued}


def _threads_over_budget(limit: int) -> Iterator[Thread]:
    """Threads with a token budget (their own or a default) that have no pending job; the
    budget itself is compared in Python (settings are stored as ordered JSON text)."""
    has_pending = Job.objects.filter(kind=Job.Kind.TOKEN_BUDGET, status__in=PENDING)
    raw_defaults = [settings.SUMMARIZER_DEFAULT, *settings.SUMMARIZER_WORKSPACE_DEFAULTS.values()]
    defaults = [_clean_default(json.dumps(c, sort_keys=True)) for c in raw_defaults if c is not None]
    smallest = min((c["token_budget"]["max_tokens"] or 256 for c in defaults
                    if c and c.get("token_budget")), default=None)
    scope = Q(summarizer__contains='"token_budget"', active_tokens__gt=256)
    if smallest is not None:
        scope |= Q(summarizer__isnull=True, active_tokens__gt=smallest)
    candidates = (
        Thread.objects.filter(scope).exclude(pk__in=has_pending.values("thread_id"))
        .select_related("workspace")
        .only("pk", "workspace_id", "workspace__slug", "summarizer", "active_tokens",
              "active_event_count")
    )
    found = 0
    for thread in candidates.iterator(chunk_size=1000):
        budget = (thread_summarizer_config(thread) or {}).get("token_budget")
        if budget and thread.active_tokens > budget_tokens(thread, budget):
            yield thread
            found += 1
            if found >= limit:
                return


def summary_jobs_expire(*, older_than_days: int) -> int:
    """Beat: delete finished job records; their collapses stay (Collapse.job is SET_NULL)."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    deleted, _ = Job.objects.filter(status__in=[Job.Status.DONE, Job.Status.FAILED],
                                    finished_at__lt=cutoff).delete()
    return deleted
