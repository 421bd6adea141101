"""The worker side: run one job (read its range, summarize it outside any lock, commit exactly
one collapse), and beat's periodic recovery and expiry of jobs."""

import json
import logging
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from contextstore.collapsespec import check_summary_text
from contextstore.errors import Conflict
from contextstore.models import Collapse, Event, Job, Thread
from contextstore.redaction import use_workspace
from contextstore.services.collapses import collapse_create, whole_exchanges
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.operations import KINDS as OPERATION_KINDS
from contextstore.services.operations import send_operation
from contextstore.services.summaries.config import budget_tokens, clean_default, thread_summarizer_config
from contextstore.services.summaries.requests import PENDING, range_events, send_job, summarization_check
from contextstore.summarizers import Item, SummarizerError, Summary, extractive
from contextstore.summarizers import openai as openai_backend
from contextstore.tokens import count_tokens, is_thinking, part_text

logger = logging.getLogger(__name__)

SOURCE_BY_KIND: dict[str, str] = {
    Job.Kind.TOKEN_BUDGET: Collapse.Source.TOKEN_BUDGET,
    Job.Kind.PER_RUN: Collapse.Source.PER_RUN,
    Job.Kind.RANGE: Collapse.Source.WORKER,
}
COMMIT_ATTEMPTS = 3  # re-reads when the range changed between reading and committing


def summary_job_run(*, job_id: Any) -> Job | None:
    """Do one job: read its range, summarize it outside any lock, commit exactly one collapse.

    Safe to run twice, concurrently or after a crash. A backend failure fails the job visibly
    (unless SUMMARIZER_FALLBACK_EXTRACTIVE); database errors propagate so the task retries.
    """
    job = Job.objects.select_related("thread__workspace").filter(pk=job_id).first()
    if job is None or job.status in (Job.Status.DONE, Job.Status.FAILED):
        return job  # its thread was deleted, or a redelivery of a finished job
    use_workspace(job.thread.workspace)  # what the job stores, under the workspace's rules
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
        try:
            outcome = _commit(job, thread, start, end, members, summary, provenance)
        except Conflict as exc:
            if exc.code != "operation_pending":
                raise
            # A long clear, un-clear or collapse holds the thread: queued again, the recovery
            # sends this job again once it is stale (SUMMARIZER_STALE_AFTER).
            Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
                status=Job.Status.QUEUED, progress={"stage": "waiting for an operation"})
            job.refresh_from_db()
            return job
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
        start, end = members[0].position, members[-1].position
        # A range never splits a tool call from its results: grown to the whole exchange.
        wide = whole_exchanges(thread, start, end, True)
        if wide == (start, end):
            return start, end, members, cap
        start, end = wide
        members = list(range_events(thread, start, end).order_by("position")[: limit + 1])
        return (start, end, members, cap) if len(members) <= limit else "range_too_large"
    if job.kind == Job.Kind.PER_RUN:
        run_events = active.filter(run_id=job.params.get("run")).order_by("position")
        first = run_events.values_list("position", flat=True).first()
        last = run_events.order_by("-position").values_list("position", flat=True).first()
        if first is None or last is None:  # (last too: the run may be collapsed between the reads)
            return "already_collapsed_or_cleared"
        per_run = config.get("per_run") or {}
        if run_events.count() < per_run.get("min_events", 1):
            return "fewer_than_min_events"
        start, end = whole_exchanges(thread, first, last, True)  # its calls' results too
    else:
        start = job.params.get("start_position")
        end = job.params.get("end_position")
    # Interleaved events of other runs inside a run's span are summarized with it, not lost.
    members = list(range_events(thread, start, end).order_by("position")[: limit + 1])
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
    return Item(seq=event.seq, type=event.type, text="\n".join(texts), role=event.role,
                name=name, is_error=event.is_error)


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
            current = set(range_events(locked, start, end).values_list("pk", flat=True))
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
            check_summary_text(summary.text)  # a summarizer's text, refused as a person's would be
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
        elif job.kind in OPERATION_KINDS:  # a long clear, un-clear or collapse
            send_operation(job.pk)
            resent += 1
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
    defaults = [clean_default(json.dumps(c, sort_keys=True)) for c in raw_defaults if c is not None]
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
