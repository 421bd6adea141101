"""Prompt-cache verdicts computed in the background: every model call compared with the call
before it in its thread (contextstore.selectors.cache.compare), once, and stored
(CallCacheVerdict), so the cache pages and a session's list of cache breaks read rows instead of
rebuilding two requests per call on every view.

Run by the worker (tasks.compare_cache_pending, from beat): bounded batches in the order calls
were stored, from a watermark (the newest call compared), so a run's cost follows what arrived
since and not the history; a second insert of the same call is ignored (the unique call), so two
runs give one row a call. A view still compares a few pairs itself while the worker is behind.
"""

from typing import Any

from django.db import transaction
from django.db.models import Max

from contextstore.models import CallCacheVerdict, Event, Thread
from contextstore.selectors.cache import RECENT_CALLS, call_request, compare
from contextstore.selectors.calls import CALL_START, LLMCall

BATCH = 50  # calls compared by one run, over every workspace


def _previous_call(call: Event) -> LLMCall | None:
    """The thread's call before `call` whose request can be shown (as the aggregates pair them)."""
    for start in (Event.objects.filter(thread_id=call.thread_id, type=CALL_START, seq__lt=call.seq)
                  .order_by("-seq")[:RECENT_CALLS]):
        candidate = LLMCall(start=start, end=None)
        if candidate.can_show_sent:
            return candidate
    return None


def cache_verdict_of(*, call: Event) -> dict[str, Any]:
    """The row's fields for one call start: its verdict against the previous call."""
    thread: Thread = call.thread
    out: dict[str, Any] = {"workspace_id": thread.workspace_id, "session_id": thread.session_id,
                           "thread_id": thread.pk, "call_id": call.pk, "seq": call.seq}
    this = LLMCall(start=call, end=None)
    previous = _previous_call(call) if this.can_show_sent else None
    if previous is None:
        status = CallCacheVerdict.Status.FIRST if this.can_show_sent else CallCacheVerdict.Status.UNKNOWN
        return {**out, "status": status}
    assert previous.start is not None
    out["previous_id"] = previous.start.pk
    before, after = call_request(thread=thread, call=previous), call_request(thread=thread, call=this)
    if before is None or after is None:
        return {**out, "status": CallCacheVerdict.Status.UNKNOWN}
    verdict = compare(thread=thread, before=before, after=after)
    divergence = verdict["divergence"]
    return {**out, "status": verdict["status"], "cause": verdict["cause"],
            "cause_text": verdict["cause_text"], "where": divergence["label"] if divergence else "",
            "lost_tokens": verdict["lost_tokens"],
            "lost_cost": verdict["lost_cost"]}


def _pending() -> Any:
    """The calls after the newest one compared, oldest first: a run reads from the watermark on
    (the primary key's index), so its cost follows what arrived since, not the history."""
    newest = CallCacheVerdict.objects.aggregate(newest=Max("call_id"))["newest"] or 0
    return Event.objects.filter(pk__gt=newest, type=CALL_START).order_by("pk")


def cache_verdicts_compute(*, batch: int = BATCH) -> dict[str, int]:
    """Compares the next `batch` calls not compared yet, in the order they were stored (the
    watermark only moves forward: every call at or below it has its row); returns what it did."""
    calls = list(_pending().select_related("thread")[:batch])
    for call in calls:
        fields = cache_verdict_of(call=call)
        with transaction.atomic():
            CallCacheVerdict.objects.bulk_create([CallCacheVerdict(**fields)], ignore_conflicts=True)
    return {"compared": len(calls), "workspaces": len({call.thread.workspace_id for call in calls})}


def cache_verdicts_compute_all(*, batch: int = BATCH) -> int:
    """Runs batches until every call is compared (tests, a command after an upgrade)."""
    total = 0
    while done := cache_verdicts_compute(batch=batch)["compared"]:
        total += done
    return total
