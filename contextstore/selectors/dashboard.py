"""Reads behind the thread page's side panel and its range export; each is capped, none grows
with history (views/threads.py lays them out)."""

import json
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce

from contextstore.db import OctetLength
from contextstore.models import (
    Clear,
    Collapse,
    ContextBlock,
    Event,
    Memory,
    ProviderState,
    Run,
    StateRevision,
    Thread,
)


def recent_runs(*, thread: Thread, limit: int = 20) -> list[Run]:
    """The latest runs, oldest first."""
    return list(Run.objects.filter(thread=thread).order_by("-started_at", "-id")[:limit])[::-1]


def thread_blocks(*, thread: Thread) -> list[ContextBlock]:
    return list(thread.blocks.order_by("placement", "order", "name"))


def recent_revisions(*, thread: Thread, limit: int = 20,
                     before: int | None = None) -> list[StateRevision]:
    """A page of revisions, newest first: the newest `limit`, or those older than `before`
    (keyset, no OFFSET); one more is read to tell whether an older page exists."""
    qs = StateRevision.objects.filter(thread=thread)
    if before is not None:
        qs = qs.filter(revision__lt=before)
    return list(qs.order_by("-revision").only("revision", "reason", "actor", "created_at")[:limit + 1])


def provider_states(*, thread: Thread, limit: int = 20) -> list[ProviderState]:
    return list(ProviderState.objects.filter(thread=thread).order_by("provider")[:limit])


def recent_memories(*, thread: Thread, limit: int = 10) -> list[Memory]:
    """The long-term memories of the thread's user in its workspace, newest first."""
    return list(Memory.objects.filter(workspace_id=thread.workspace_id, user_id=thread.session.user_id)
                .order_by("-updated_at", "-id")[:limit])


def recent_clears(*, thread: Thread, limit: int = 10) -> list[Clear]:
    return list(Clear.objects.filter(thread=thread).order_by("-pk")[:limit])


def collapse_of(*, thread: Thread, collapse_id: int) -> Collapse | None:
    return Collapse.objects.filter(thread=thread, pk=collapse_id).first()


def range_events(*, thread: Thread, start: int, end: int, limit: int = 10_000) -> QuerySet[Event]:
    """Every event (any status) at positions start..end, both ends included, in seq order."""
    return (thread.events.select_related("run").filter(position__gte=start, position__lte=end)
            .order_by("seq")[:limit])


# The indented export's bytes for one event besides its texts: keys, quotes, indentation, ids.
_EVENT_FRAME = len(json.dumps(
    {"seq": 10**6, "position": 10**6, "type": "Message", "role": "assistant", "content": "",
     "parts": None, "data": None, "call_id": "", "step": "", "anchor": "", "client_id": None,
     "visible": True, "status": "active", "run_id": None, "occurred_at": "2026-01-01T00:00:00+00:00",
     "collapse": None, "cleared_by": None}, indent=2).encode()) + 4 * 19 + 2  # 4 spaces a line, ",\n"
TEXT_COLUMNS = ("content", "parts", "data", "call_id", "step", "anchor", "client_id")


@dataclass
class ExportSize:
    events: int
    bytes: int  # an estimate: the stored sizes plus the export's framing


def export_size(*, thread: Thread) -> ExportSize:
    """How many events a whole-thread export holds and about how many bytes it is, from one
    aggregate over the thread's rows (byte sizes of the stored texts, no text read).
    Estimated: JSON escapes and re-indented data/parts make the file somewhat bigger."""
    sums = thread.events.aggregate(
        count=Count("pk"),
        **{c: Coalesce(Sum(OctetLength(c)), 0) for c in TEXT_COLUMNS})
    # The head holds the thread's document (state, memory, summary, prompts...) once.
    document = len(json.dumps(thread.document, cls=DjangoJSONEncoder, ensure_ascii=False,
                              indent=2).encode())
    texts = sum(sums[c] for c in TEXT_COLUMNS)
    return ExportSize(events=sums["count"], bytes=texts + sums["count"] * _EVENT_FRAME + document + 1024)

