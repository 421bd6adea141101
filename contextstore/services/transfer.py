"""Export and import of whole threads: contextstore JSON (everything) and peteos context JSON."""

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import Collapse, ContextBlock, Event, Session, Thread
from contextstore.services.common import Actor, audit, record_revision
from contextstore.services.sessions import session_ensure
from contextstore.tokens import event_tokens

FORMAT = "contextstore"
VERSION = 1
THREAD_FIELDS = (
    "name", "state", "memory", "last_results", "conversation_history", "current_input",
    "original_input", "iteration", "max_history_size", "summary", "summarizer", "system_prompt",
    "tool_definitions", "extra",
)
EVENT_FIELDS = (
    "seq", "position", "type", "role", "content", "parts", "data", "call_id", "step", "anchor",
    "client_id", "visible", "status",
)


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def thread_export(*, thread: Thread) -> dict[str, Any]:
    """Everything about a thread, every event (collapsed and cleared too), blocks, collapses."""
    session = thread.session
    events = []
    for e in thread.events.select_related("run").order_by("seq").iterator(chunk_size=2000):
        item = {f: getattr(e, f) for f in EVENT_FIELDS}
        item["run_id"] = e.run.run_id if e.run else None
        item["occurred_at"] = _iso(e.occurred_at)
        item["collapse"] = e.collapse_id
        events.append(item)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now().isoformat(),
        "session": {"key": session.key, "user_id": session.user_id, "agent": session.agent,
                    "title": session.title, "metadata": session.metadata},
        "thread": {f: getattr(thread, f) for f in THREAD_FIELDS},
        "blocks": [
            {"name": b.name, "value": b.value, "expr": b.expr, "placement": b.placement,
             "order": b.order}
            for b in thread.blocks.order_by("placement", "order", "name")
        ],
        "collapses": [
            {"id": c.pk, "start_seq": c.start_seq, "end_seq": c.end_seq,
             "summary_seq": c.summary_event.seq, "source": c.source, "actor": c.actor,
             "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
             "provenance": c.provenance, "undone_at": _iso(c.undone_at)}
            for c in thread.collapses.select_related("summary_event").order_by("pk")
        ],
        "events": events,
    }


def _event_from(item: dict[str, Any], thread: Thread, now, *, counted: bool = False) -> Event:
    content = item.get("content") or ""
    parts = item.get("parts")
    if not isinstance(content, str) or (parts is not None and not isinstance(parts, list)):
        raise InvalidInput("Each event needs string content and list parts.")
    # Only the peteos converter (server-side) may supply counts: peteos counts its own way.
    if counted:
        total, thinking = item["token_count"], item["thinking_tokens"]
    else:
        total, thinking = event_tokens(content, parts)
    occurred = parse_datetime(item["occurred_at"]) if item.get("occurred_at") else None
    return Event(
        thread=thread, seq=item["seq"], position=item.get("position", item["seq"]),
        type=item.get("type") or "Message", role=item.get("role") or "", content=content,
        parts=parts, data=item.get("data"), call_id=item.get("call_id") or "",
        step=item.get("step") or "", anchor=item.get("anchor") or "",
        client_id=item.get("client_id"), visible=item.get("visible", True),
        status=item.get("status") or Event.Status.ACTIVE, token_count=total,
        thinking_tokens=thinking, occurred_at=occurred or now,
    )


def thread_import(
    *, workspace, data: dict[str, Any], actor: Actor, session_key: str | None = None,
    user_id: str | None = None, name: str | None = None,
) -> Thread:
    """Create a thread from an export (contextstore JSON, or peteos context JSON)."""
    if not isinstance(data, dict):
        raise InvalidInput("The import must be a JSON object.")
    counted = data.get("format") != FORMAT
    if counted:
        from contextstore.services.peteos import peteos_to_export

        data = peteos_to_export(data)
    source_session = data.get("session") or {}
    thread_data = data.get("thread") or {}
    key = session_key or source_session.get("key") or f"import-{timezone.now():%Y%m%d%H%M%S}"
    session, _ = session_ensure(
        workspace=workspace, key=key, user_id=user_id if user_id is not None else
        source_session.get("user_id", ""), agent=source_session.get("agent", ""),
        title=source_session.get("title", ""), actor=actor,
    )
    now = timezone.now()
    try:
        with transaction.atomic():
            thread = Thread.objects.create(
                workspace=workspace, session=session, name=name or thread_data.get("name") or "main",
                **{f: thread_data[f] for f in THREAD_FIELDS if f != "name" and f in thread_data},
            )
            raw_events = data.get("events") or []
            if not isinstance(raw_events, list):
                raise InvalidInput("events must be a list.")
            events = [_event_from(item, thread, now, counted=counted) for item in raw_events]
            seqs = [e.seq for e in events]
            if seqs != list(range(1, len(seqs) + 1)):
                raise InvalidInput("Event seqs must run 1, 2, 3… without gaps.")
            Event.objects.bulk_create(events, batch_size=1000)
            by_seq = {e.seq: e for e in events}
            old_collapse_ids = {}
            for c in data.get("collapses") or []:
                collapse = Collapse.objects.create(
                    thread=thread, start_seq=c["start_seq"], end_seq=c["end_seq"],
                    summary_event=by_seq[c["summary_seq"]], source=c.get("source", "agent"),
                    actor=c.get("actor", ""), tokens_before=c.get("tokens_before", 0),
                    tokens_after=c.get("tokens_after", 0), provenance=c.get("provenance") or {},
                    undone_at=parse_datetime(c["undone_at"]) if c.get("undone_at") else None,
                )
                old_collapse_ids[c["id"]] = collapse
            for item, event in zip(raw_events, events, strict=True):
                if item.get("collapse") in old_collapse_ids:
                    event.collapse = old_collapse_ids[item["collapse"]]
            Event.objects.bulk_update([e for e in events if e.collapse_id], ["collapse"], batch_size=1000)
            for b in data.get("blocks") or []:
                ContextBlock.objects.create(
                    thread=thread, name=b["name"], value=b.get("value"), expr=b.get("expr"),
                    placement=b.get("placement", "suffix"), order=b.get("order", 0),
                )
            working = [e for e in events if e.status == Event.Status.ACTIVE and e.visible]
            thread.last_seq = len(events)
            thread.event_count = len(events)
            thread.token_total = sum(e.token_count for e in events)
            thread.active_event_count = len(working)
            thread.active_tokens = sum(e.token_count for e in working)
            thread.last_event_at = now if events else None
            thread.save()
            record_revision(thread=thread, reason="import", actor=actor, fields=[])
            Session.objects.filter(pk=session.pk).update(
                thread_count=F("thread_count") + 1, event_count=F("event_count") + len(events),
                token_total=F("token_total") + thread.token_total, last_activity_at=now,
            )
            audit(actor=actor, action="thread.import", target=thread, workspace=workspace,
                  events=len(events), session=session.key)
    except IntegrityError as exc:
        raise Conflict("A thread with this name already exists in the session.",
                       code="name_taken", details={"name": name or thread_data.get("name")}) from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"The import is malformed: {exc!r}") from exc
    return thread
