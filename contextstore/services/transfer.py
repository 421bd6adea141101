"""Export and import of whole threads: contextstore JSON (everything) and peteos context JSON."""

import json
from collections.abc import Iterator, Mapping
from itertools import batched
from typing import Any

from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from contextstore.documents import DOCUMENT_FIELDS, new_document
from contextstore.errors import Conflict, InvalidInput
from contextstore.eventspec import EVENT_FIELDS as EVENT_SPEC_FIELDS
from contextstore.eventspec import LLM_CALL_TYPES, EventSpec, event_spec
from contextstore.importspec import FORMAT, check_import_document, parse_export, stored_datetime
from contextstore.models import Clear, Collapse, Event, Thread
from contextstore.redaction import redact, redact_events, use_workspace
from contextstore.selectors.renders import texts_of
from contextstore.services import history
from contextstore.services.blocks import block_upsert
from contextstore.services.common import Actor, audit
from contextstore.services.document import document_write
from contextstore.services.peteos import peteos_to_export
from contextstore.services.renders import llm_call_texts, texts_keep
from contextstore.services.sessions import session_ensure

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
    """Everything about a thread, every event (collapsed and cleared too), blocks, collapses.
    Builds it all in memory; the dashboard and the API stream it instead (thread_export_parts)."""
    head, events = thread_export_parts(thread=thread)
    return {**head, "events": list(events)}


EXPORT_CHUNK = 2000  # event rows fetched per round trip while an export streams


def thread_export_parts(*, thread: Thread) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The export as its head (every member but "events", in order) and an iterator of its
    events, read a chunk at a time: `{**head, "events": list(events)}` is thread_export.

    The events are those up to the newest seq when the head was read, so an append while the
    export streams is not half in it; `thread.last_seq` and `thread.event_count` are read
    afresh with it, so `thread.event_count` is how many events the iterator yields."""
    session = thread.session
    fresh: Mapping[str, Any] = (
        Thread.objects.filter(pk=thread.pk).values("last_seq", "event_count").first() or {})
    thread.last_seq = fresh.get("last_seq", thread.last_seq)
    thread.event_count = fresh.get("event_count", thread.event_count)
    head = {
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
            {"id": c.pk, "start_position": c.start_position, "end_position": c.end_position,
             "summary_seq": c.summary_event.seq, "source": c.source, "actor": c.actor,
             "event_count": c.event_count, "tokens_before": c.tokens_before,
             "tokens_after": c.tokens_after, "provenance": c.provenance,
             "undone_at": _iso(c.undone_at), "expired_count": c.expired_count}
            for c in thread.collapses.select_related("summary_event").order_by("pk")
        ],
        "clears": [
            {"id": c.pk, "actor": c.actor, "summary": c.summary, "event_count": c.event_count,
             "tokens": c.tokens, "created_at": _iso(c.created_at), "undone_at": _iso(c.undone_at)}
            for c in thread.clears.order_by("pk")
        ],
    }
    return head, _export_events(thread, thread.last_seq)


def _export_events(thread: Thread, last_seq: int) -> Iterator[dict[str, Any]]:
    rows = (thread.events.filter(seq__lte=last_seq).select_related("run").order_by("seq")
            .iterator(chunk_size=EXPORT_CHUNK))
    for chunk in batched(rows, EXPORT_CHUNK):
        texts = _logged_texts(thread.workspace_id, chunk)
        for e in chunk:
            item = {f: getattr(e, f) for f in EVENT_FIELDS}
            if e.type in LLM_CALL_TYPES and isinstance(e.data, dict):
                item["data"] = _with_texts(e.data, texts)
            item["run_id"] = e.run.run_id if e.run else None
            item["occurred_at"] = _iso(e.occurred_at)
            item["collapse"] = e.collapse_id
            item["cleared_by"] = e.cleared_by_id
            yield item


def _logged_texts(workspace_id: int, events: tuple[Event, ...]) -> dict[str, str]:
    """The texts the LLM-call events of a chunk name (one query)."""
    hashes: set[str] = set()
    for e in events:
        if e.type in LLM_CALL_TYPES and isinstance(e.data, dict):
            logged = e.data.get("message_hashes")
            hashes.update(h for h in (logged if isinstance(logged, list) else []) if isinstance(h, str))
            if isinstance(e.data.get("tools_hash"), str):
                hashes.add(e.data["tools_hash"])
    return texts_of(workspace_id=workspace_id, hashes=hashes) if hashes else {}


def _with_texts(data: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """An LLM call's data as an export carries it: the messages and tools it logged themselves,
    not their hashes (a hash names a text of this workspace only: an import elsewhere keeps the
    texts anew); a text that is gone is left out."""
    out = dict(data)
    hashes = out.get("message_hashes")
    if isinstance(hashes, list):
        del out["message_hashes"]
        out["messages"] = [json.loads(texts[h]) for h in hashes if isinstance(h, str) and h in texts]
    tools_hash = out.get("tools_hash")
    if isinstance(tools_hash, str):
        del out["tools_hash"]
        if tools_hash in texts:
            out["tools"] = json.loads(texts[tools_hash])
    return out


# An event of an export also carries what was stored with it (seq, position, status, its
# collapse, ...); the fields an event is sent with are checked as an append checks them, but
# its run_id: an import makes no runs (runs stay with the thread that ran them, as in a fork).
EVENT_INPUT_FIELDS = EVENT_SPEC_FIELDS - {"run_id"}


def _event_spec(item: dict[str, Any], index: int, *, counted: bool) -> EventSpec:
    """An event of an import, checked like an append (eventspec.event_spec); its place was
    checked with the whole import (importspec.event_place)."""
    spec = event_spec({k: item[k] for k in EVENT_INPUT_FIELDS if k in item}, f"events[{index}]")
    if counted:  # only the peteos converter (server-side) supplies counts: peteos counts its own way
        spec.token_count, spec.thinking_tokens = item["token_count"], item["thinking_tokens"]
    return spec


def thread_import(
    *, workspace, data: dict[str, Any], actor: Actor, session_key: str | None = None,
    user_id: str | None = None, name: str | None = None,
) -> Thread:
    """Create a thread from an export (contextstore JSON, or peteos context JSON).

    Everything is checked before anything is written, and written in one transaction: a
    refused import leaves no session, thread or event behind.
    """
    counted = check_import_document(data)
    if counted:
        data = peteos_to_export(data)
    export = parse_export(data, thread_fields_named=THREAD_FIELDS, name=name,
                          session_key=session_key, user_id=user_id)
    source_session, fields, thread_name = export.session, export.fields, export.thread_name
    raw_events = export.events
    # Secrets out of the events and the document before anything is stored (the blocks'
    # values are redacted by block_upsert).
    rules = use_workspace(workspace)
    raw_events = redact_events(rules, raw_events)
    document_fields, _ = redact(rules, {f: v for f, v in fields.items() if f in DOCUMENT_FIELDS})
    key = source_session["key"] or f"import-{timezone.now():%Y%m%d%H%M%S}"
    now = timezone.now()
    try:
        with transaction.atomic():
            session, _ = session_ensure(
                workspace=workspace, key=key, actor=actor,
                user_id=source_session["user_id"], agent=source_session["agent"],
                title=source_session["title"],
            )
            if Thread.objects.filter(session=session, name=thread_name).exists():
                raise Conflict("A thread with this name already exists in the session.",
                               code="name_taken", details={"name": thread_name})
            summarizer = fields.pop("summarizer", None)
            thread = Thread.objects.create(
                workspace=workspace, session=session, name=thread_name, summarizer=summarizer,
                document=new_document(**document_fields),
            )
            history.session_thread_added(session_id=session.pk)
            checked = [_event_spec(item, i, counted=counted) for i, item in enumerate(raw_events)]
            # A thread whose oldest events expired (services/retention) starts after 1.
            first, places = export.first_seq, export.places
            # an LLM call's messages and tools kept as an append keeps them (hashes it sends
            # itself must name this workspace's own texts)
            specs, texts = llm_call_texts(workspace_id=workspace.pk, specs=checked)
            texts_keep(workspace_id=workspace.pk, texts=texts)
            if first > 1:
                history.seqs_expired_before(thread=thread, seq=first)
            # The new thread's seqs run on from there: each event keeps the seq it was exported with.
            events = history.events_add(thread=thread, specs=specs, now=now, places=places)
            by_seq: dict[Any, Event] = {e.seq: e for e in events}  # looked up by what an import says
            old_collapse_ids = {}
            for c in export.collapses:
                summary = by_seq[c["summary_seq"]]
                collapse = Collapse.objects.create(
                    thread=thread, start_position=c.get("start_position"),
                    end_position=c.get("end_position"),
                    summary_event=summary, source=c.get("source", "agent"),
                    actor=c.get("actor", ""), event_count=c.get("event_count", 0),
                    tokens_before=c.get("tokens_before", 0),
                    tokens_after=c.get("tokens_after", 0), provenance=c.get("provenance") or {},
                    expired_count=c.get("expired_count", 0),
                    undone_at=stored_datetime(c["undone_at"], "collapses[].undone_at")
                    if c.get("undone_at") else None,
                )
                old_collapse_ids[c.get("id")] = collapse
            old_clear_ids = {}
            for c in export.clears:
                old_clear_ids[c.get("id")] = Clear.objects.create(
                    thread=thread, actor=str(c.get("actor", ""))[:200], summary=c.get("summary", ""),
                    event_count=c.get("event_count", 0), tokens=c.get("tokens", 0),
                    undone_at=stored_datetime(c["undone_at"], "clears[].undone_at")
                    if c.get("undone_at") else None,
                )
            for item, event in zip(raw_events, events, strict=True):
                # An event without a collapse (or clear) is in none, even beside one without an id.
                if item.get("collapse") is not None and item["collapse"] in old_collapse_ids:
                    event.collapse = old_collapse_ids[item["collapse"]]
                if item.get("cleared_by") is not None and item["cleared_by"] in old_clear_ids:
                    event.cleared_by = old_clear_ids[item["cleared_by"]]
            Event.objects.bulk_update([e for e in events if e.collapse_id or e.cleared_by_id],
                                      ["collapse", "cleared_by"], batch_size=1000)
            for b in export.blocks:
                block_upsert(thread=thread, name=b.get("name", ""), actor=actor, value=b.get("value"),
                             expr=b.get("expr"), placement=b.get("placement", "suffix"),
                             order=b.get("order", 0))
            document_write(thread=thread, actor=actor, reason="import")
            audit(actor=actor, action="thread.import", target=thread, workspace=workspace,
                  events=len(events), session=session.key)
    except IntegrityError as exc:
        raise InvalidInput(f"The import conflicts with itself: {exc}") from exc
    except DataError as exc:
        raise InvalidInput(f"The import holds a value the database refuses: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"The import is malformed: {exc!r}") from exc
    return thread
