"""Erasure of a person (GDPR Article 17): everything a workspace holds of one end user, and
what was derived from it, deleted by content; one audit row says what went (counts), by whom,
when, and never the content.

A person is (workspace, user_id): the `user_id` their sessions, memories and user-scope state
carry. What goes, in this order (each step finds its rows afresh, so a run that stopped part
way is finished by the next, and a run that finds nothing answers zeros):
- audit rows about their objects, or naming their user id: `details` replaced by
  {"erased": true} (the action, target, actor and time stay); the admin's change log of
  their objects is deleted;
- OpenTelemetry data: the raw spans, log records, outbox and trace rows of every trace
  derived into their sessions, and of traces not derived (yet) whose spans or records name
  their user id;
- memories: theirs (user_id) and any whose source event is one of their events;
- their user-scope state (ADK `user:`) with its revisions; app scope is shared, not theirs;
- long-term store items whose namespace has their user id as a label, with every version;
- dataset items copied from their sessions (found by the user id they carry, so a copy
  outlives retention's deletion of its session but not the person's erasure); share links
  to their sessions go with the sessions;
- the stored texts (content-addressed within the workspace; render records and logged prompts
  name them by hash) their rows name and no other row of the workspace names;
- every session: events in batches (retention's helper, so the counters stay right between
  batches), then per thread the bulky rows (state revisions, render records, block versions,
  commit records, staged sync uploads, blobs) in batches, then the rest in one short
  transaction (threads, runs, collapses, clears, blocks, jobs, provider states...); the
  comments and scores on their sessions, calls and events go with the session (whoever wrote
  them: they are about the person), their audit rows redacted as the session's.

Batches are RETENTION_BATCH_SIZE rows, each its own transaction. Writes the person's agents
make while the erasure runs, or after it, are new data (erase again).
"""

import hashlib
import json
from collections.abc import Iterator
from itertools import batched
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from contextstore.errors import Conflict
from contextstore.eventspec import LLM_CALL_TYPES
from contextstore.models import (
    AuditLog,
    CallReplay,
    Clear,
    Collapse,
    Comment,
    CommitRecord,
    ContextBlock,
    ContextBlockVersion,
    Dataset,
    DatasetItem,
    Event,
    ExperimentResult,
    Job,
    Memory,
    OtelLog,
    OtelPending,
    OtelSpan,
    OtelTrace,
    ProviderState,
    RenderRecord,
    Run,
    ScopedState,
    ScopedStateRevision,
    Score,
    Session,
    SessionModel,
    ShareLink,
    StateRevision,
    StoredText,
    StoreItem,
    StoreItemVersion,
    StoreVector,
    Thread,
    ThreadBlob,
    Workspace,
)
from contextstore.models.store import SEPARATOR
from contextstore.otel.mapping import USER_KEYS, first_of
from contextstore.ranges import positive_int
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.services.retention import COUNTED, events_delete_locked

# Every kind a receipt counts, in the order it lists them (each present, zero or not).
KINDS = {
    Session: "sessions", Thread: "threads", Event: "events", Run: "runs",
    Collapse: "collapses", Clear: "clears", ContextBlock: "blocks",
    ContextBlockVersion: "block_versions", StateRevision: "state_revisions",
    RenderRecord: "render_records", StoredText: "stored_texts", Job: "jobs",
    ThreadBlob: "blobs", CommitRecord: "commit_records",
    ProviderState: "provider_states", SessionModel: "session_models", Memory: "memories",
    ScopedState: "scoped_states", ScopedStateRevision: "scoped_state_revisions",
    OtelSpan: "otel_spans", OtelLog: "otel_logs", OtelTrace: "otel_traces",
    OtelPending: "otel_pending", Comment: "comments", Score: "scores", CallReplay: "call_replays",
    DatasetItem: "dataset_items", ExperimentResult: "experiment_results", ShareLink: "share_links",
    StoreItem: "store_items", StoreItemVersion: "store_item_versions", StoreVector: "store_vectors",
    LogEntry: "admin_log_entries",
}
AUDIT_REDACTED = "audit_rows_redacted"
REDACTED = {"erased": True}
# A thread's rows that grow with use, deleted in batches before the thread itself.
BULKY: tuple[type[models.Model], ...] = (
    StateRevision, RenderRecord, ContextBlockVersion, CommitRecord, ThreadBlob, CallReplay)
# Objects of a person audit rows and the admin's log name as their target.
TARGETS: tuple[type[models.Model], ...] = (
    Session, Thread, Run, Collapse, Clear, ContextBlock, Job, ProviderState, Memory, ScopedState,
    Comment, Score, CallReplay)
CHUNK = 500  # ids per IN (...) list: well under SQLite's bound on parameters


def subject_digest(user_id: str) -> str:
    """How the erasure's audit row names the person: a digest, so the row can confirm that a
    given user id was erased without keeping the id."""
    return hashlib.sha256(user_id.encode()).hexdigest()


def _add(counts: dict[str, int], deleted: dict[str, int]) -> None:
    """Add a QuerySet.delete() answer ({"app.Model": n}) to the receipt's counts."""
    for model, kind in KINDS.items():
        counts[kind] += deleted.get(model._meta.label, 0)


def user_erase(*, workspace: Workspace, user_id: str, actor: Actor,
               batch_size: int | None = None) -> dict[str, Any]:
    """Erase one person of one workspace; returns the receipt (what went, counted by kind).
    `user_id` holds more than whitespace (sessionspec.check_user_id: the API's serializer and
    erase_user check it)."""
    batch_size = batch_size or settings.RETENTION_BATCH_SIZE
    counts = dict.fromkeys([*KINDS.values(), AUDIT_REDACTED], 0)
    sessions = Session.objects.filter(workspace=workspace, user_id=user_id)
    held = list(sessions.filter(legal_hold=True).order_by("pk").values_list("pk", flat=True))
    if held:
        # A hold keeps data for a legal claim (Article 17(3)(e)): lifting it is a decision of
        # its own, so nothing is erased until it is made.
        raise Conflict(f"{len(held)} of this person's sessions are under a legal hold; lift the "
                       "hold to erase them.", details={"legal_hold_sessions": held[:100]},
                       code="legal_hold")
    threads = Thread.objects.filter(session__in=sessions)
    _audit_redact(workspace=workspace, user_id=user_id, threads=threads, sessions=sessions,
                  counts=counts)
    _otel_erase(workspace=workspace, user_id=user_id, threads=threads, counts=counts)
    _memories_erase(workspace=workspace, user_id=user_id, threads=threads, batch_size=batch_size,
                    counts=counts)
    _scopes_erase(workspace=workspace, user_id=user_id, batch_size=batch_size, counts=counts)
    _dataset_items_erase(workspace=workspace, user_id=user_id, batch_size=batch_size, counts=counts)
    _batches_delete(_store_items(workspace, user_id), batch_size, counts)
    _texts_erase(workspace=workspace, threads=threads, counts=counts)
    # Found afresh each time: a session the person's agent opened meanwhile goes too.
    while session := sessions.order_by("pk").first():
        _session_erase(session=session, batch_size=batch_size, counts=counts)
    erased_at = timezone.now()
    audit(actor=actor, action="person.erase", target=workspace, workspace=workspace,
          subject_sha256=subject_digest(user_id), counts=counts)
    return {"user_id": user_id, "workspace": workspace.slug, "counts": counts,
            "erased_at": erased_at.isoformat().replace("+00:00", "Z"), "by": actor.label}


# --- audit rows and the admin's log ---------------------------------------------------------

def _target_ids(model: type[models.Model], *, user_id: str, workspace: Workspace,
                threads: Any, sessions: Any) -> Iterator[str]:
    """The ids (as audit rows write them) of the person's objects of one kind."""
    if model is Session:
        rows = sessions
    elif model is Thread:
        rows = threads
    elif model is Memory:
        rows = _memories(workspace, user_id, threads)
    elif model in (Comment, Score):  # on their sessions or their sessions' events
        rows = model._default_manager.filter(session__in=sessions)
    elif model is ScopedState:
        rows = ScopedState.objects.filter(workspace=workspace, scope=ScopedState.Scope.USER,
                                          user_id=user_id)
    else:
        rows = model._default_manager.filter(thread__in=threads)
    return (str(pk) for pk in rows.values_list("pk", flat=True).iterator())


def _audit_redact(*, workspace: Workspace, user_id: str, threads: Any, sessions: Any,
                  counts: dict[str, int]) -> None:
    """Audit rows keep what happened, to what and by whom; their details can hold a person's
    names (session keys, memory keys, state fields, an error's text), so those of the person's
    objects, and any that name their user id, lose their details. The admin's change log of
    those objects (its `object_repr` is a title or a memory's text) is deleted."""
    for model in TARGETS:
        name = model._meta.model_name
        content_type = ContentType.objects.get_for_model(model)
        for ids in batched(_target_ids(model, user_id=user_id, workspace=workspace,
                                       threads=threads, sessions=sessions), CHUNK):
            counts[AUDIT_REDACTED] += (
                AuditLog.objects.filter(workspace=workspace, target_type=name, target_id__in=ids)
                .exclude(details=REDACTED).update(details=REDACTED))
            _add(counts, LogEntry.objects.filter(content_type=content_type, object_id__in=ids)
                 .delete()[1])
    # Rows that outlived their object (a session deleted before) but still name the person,
    # and the rows naming those sessions' keys (a thread's creation, an import, a copy).
    named = _rows_naming(workspace, "user_id", user_id)
    keys = set(sessions.values_list("key", flat=True))
    keys.update(d["key"] for _, _, _, d in named if isinstance(d.get("key"), str))
    stale = {pk for pk, _, _, _ in named}
    for key in keys:
        for pk, kind, target, _ in _rows_naming(workspace, ("session", "key", "source"), key):
            if kind in ("session", "thread") and not _someone_elses(kind, target, user_id):
                stale.add(pk)
    for chunk in batched(sorted(stale), CHUNK):
        counts[AUDIT_REDACTED] += AuditLog.objects.filter(pk__in=chunk).update(details=REDACTED)


def _rows_naming(workspace: Workspace, fields: str | tuple[str, ...],
                 value: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    """Audit rows whose details give `value` as one of `fields`: found by the text of their
    details (JSON kept as text; strings written as json.dumps writes them, without ASCII
    escapes), then read to be sure."""
    fields = (fields,) if isinstance(fields, str) else fields
    rows = (AuditLog.objects.filter(workspace=workspace,
                                    details__contains=json.dumps(value, ensure_ascii=False))
            .exclude(details=REDACTED).values_list("pk", "target_type", "target_id", "details"))
    return [row for row in rows.iterator()
            if isinstance(row[3], dict) and any(row[3].get(f) == value for f in fields)]


def _someone_elses(target_type: str, target_id: str, user_id: str) -> bool:
    """Whether an audit row's session or thread still stands and is not the person's (another
    person's session may have the same key)."""
    if positive_int(target_id) is None:
        return False
    if target_type == "session":
        return Session.objects.filter(pk=target_id).exclude(user_id=user_id).exists()
    return Thread.objects.filter(pk=target_id).exclude(session__user_id=user_id).exists()


# --- OpenTelemetry -----------------------------------------------------------------------------

def _names_user(attributes: Any, user_id: str) -> bool:
    return isinstance(attributes, dict) and first_of(attributes, USER_KEYS)[:255] == user_id


def _otel_traces(workspace: Workspace, user_id: str, threads: Any) -> set[str]:
    """The person's traces: those derived into their sessions, and those not derived (yet, or
    any more: their session was deleted) whose spans or log records name their user id."""
    found = set(OtelTrace.objects.filter(workspace=workspace, thread__in=threads)
                .values_list("trace_id", flat=True))
    derived = OtelTrace.objects.filter(workspace=workspace, thread__isnull=False).values("trace_id")
    for span in (OtelSpan.objects.filter(workspace=workspace).exclude(trace_id__in=derived)
                 .values_list("trace_id", "attributes", "resource").iterator()):
        if span[0] not in found and (_names_user(span[1], user_id) or _names_user(span[2], user_id)):
            found.add(span[0])
    for log in (OtelLog.objects.filter(workspace=workspace).exclude(trace_id__in=derived)
                .values_list("trace_id", "attributes").iterator()):
        if log[0] not in found and _names_user(log[1], user_id):
            found.add(log[0])
    return found


def _otel_erase(*, workspace: Workspace, user_id: str, threads: Any, counts: dict[str, int]) -> None:
    for ids in batched(sorted(_otel_traces(workspace, user_id, threads)), CHUNK):
        with transaction.atomic():  # the trace rows last: until then a re-run finds the trace
            for model in (OtelSpan, OtelLog, OtelPending, OtelTrace):
                _add(counts, model._default_manager.filter(workspace=workspace, trace_id__in=ids)
                     .delete()[1])


# --- memories and user-scope state ------------------------------------------------------------

def _memories(workspace: Workspace, user_id: str, threads: Any) -> Any:
    return Memory.objects.filter(
        Q(workspace=workspace, user_id=user_id)
        | Q(workspace=workspace, source_event__thread__in=threads))


def _store_items(workspace: Workspace, user_id: str) -> Any:
    """Long-term store items with the user id as a label of their namespace (the adapters' own
    namespaces name the user: ["memories", user_id], ["adk_memory", app, user_id]), versions
    and vectors with them."""
    label = SEPARATOR + user_id + SEPARATOR
    # contains is case-insensitive on SQLite: the exact test is made here
    pks = [pk for pk, path in StoreItem.objects.filter(workspace=workspace, path__contains=label)
           .values_list("pk", "path") if label in path]
    return StoreItem.objects.filter(pk__in=pks)


def _batches_delete(rows: Any, batch_size: int, counts: dict[str, int]) -> None:
    """Delete `rows` (a queryset) batch by batch, each its own transaction."""
    while True:
        with transaction.atomic():
            pks = list(rows.order_by("pk").values_list("pk", flat=True)[:batch_size])
            if not pks:
                return
            _add(counts, rows.model._default_manager.filter(pk__in=pks).delete()[1])


def _memories_erase(*, workspace: Workspace, user_id: str, threads: Any, batch_size: int,
                    counts: dict[str, int]) -> None:
    _batches_delete(_memories(workspace, user_id, threads), batch_size, counts)


def _dataset_items_erase(*, workspace: Workspace, user_id: str, batch_size: int,
                         counts: dict[str, int]) -> None:
    items = DatasetItem.objects.filter(workspace=workspace, user_id=user_id)
    datasets = set(items.values_list("dataset_id", flat=True).distinct())
    _batches_delete(items, batch_size, counts)
    for dataset_id in sorted(datasets):
        Dataset.objects.filter(pk=dataset_id).update(
            item_count=DatasetItem.objects.filter(dataset_id=dataset_id).count())


def _scopes_erase(*, workspace: Workspace, user_id: str, batch_size: int,
                  counts: dict[str, int]) -> None:
    scopes = ScopedState.objects.filter(workspace=workspace, scope=ScopedState.Scope.USER,
                                        user_id=user_id)
    _batches_delete(ScopedStateRevision.objects.filter(scoped_state__in=scopes), batch_size, counts)
    _batches_delete(scopes, batch_size, counts)


# --- stored texts ------------------------------------------------------------------------------

def _hashes_in(value: Any) -> Iterator[str]:
    """The text hashes a record's spec or an event's data names: any sha256 hex string in it
    (a block entry [version id, hash], the summary's hash, `message_hashes`)."""
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from _hashes_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _hashes_in(item)


def _texts_named(records: Any, events: Any, replays: Any) -> set[str]:
    """The texts render records name (their blocks' [version id, hash] entries and the summary's
    hash: selectors/renders reads no others), LLM-call events logged (`message_hashes`,
    `tools_hash`) and replays of those calls sent (`request_hash`)."""
    found: set[str] = set(replays.values_list("request_hash", flat=True).iterator(chunk_size=1000))
    for spec in records.values_list("spec", flat=True).iterator(chunk_size=1000):
        if isinstance(spec, dict):
            found.update(_hashes_in([spec.get("prefix"), spec.get("suffix"), spec.get("summary")]))
    for data in (events.filter(Q(data__contains='"message_hashes"') | Q(data__contains='"tools_hash"'),
                               type__in=LLM_CALL_TYPES)
                 .values_list("data", flat=True).iterator(chunk_size=1000)):
        if isinstance(data, dict):
            found.update(_hashes_in([data.get("message_hashes"), data.get("tools_hash")]))
    return found


def _texts_erase(*, workspace: Workspace, threads: Any, counts: dict[str, int]) -> None:
    """A stored text belongs to its workspace and is shared by every row of that workspace
    naming the same content: it goes unless a row of the workspace outside the person's threads
    names it (one pass over the workspace's other render records, LLM-call events and replays,
    the only rows that name texts). Rows of other workspaces have texts of their own: what they
    name never keeps this workspace's."""
    theirs = _texts_named(RenderRecord.objects.filter(thread__in=threads),
                          Event.objects.filter(thread__in=threads),
                          CallReplay.objects.filter(thread__in=threads))
    texts = StoredText.objects.filter(workspace=workspace)
    kept: set[str] = set()
    for hashes in batched(sorted(theirs), CHUNK):
        kept.update(texts.filter(sha256__in=hashes).values_list("sha256", flat=True))
    if not kept:
        return
    others = Thread.objects.filter(workspace=workspace).exclude(pk__in=threads.values("pk"))
    kept -= _texts_named(RenderRecord.objects.filter(thread__in=others),
                         Event.objects.filter(thread__in=others),
                         CallReplay.objects.filter(thread__in=others))
    for hashes in batched(sorted(kept), CHUNK):
        _add(counts, texts.filter(sha256__in=hashes).delete()[1])


# --- sessions ----------------------------------------------------------------------------------

def _events_batch(*, thread_pk: int, workspace_id: int, batch_size: int,
                  counts: dict[str, int]) -> bool:
    """Delete up to batch_size of the thread's events (retention's helper keeps every counter
    right, and deletes the collapses whose summary goes); False when none was left."""
    with transaction.atomic():
        try:
            thread = lock_thread(Thread(pk=thread_pk, workspace_id=workspace_id), history_only=True)
        except Thread.DoesNotExist:
            return False
        batch = list(Event.objects.filter(thread=thread).order_by("seq").only(*COUNTED)[:batch_size])
        if not batch:
            return False
        settled = events_delete_locked(thread=thread, events=batch, now=timezone.now())
        counts["events"] += len(batch)
        counts["collapses"] += settled["collapses_deleted"]
        return True


def _session_erase(*, session: Session, batch_size: int, counts: dict[str, int]) -> None:
    for thread_pk in Thread.objects.filter(session=session).order_by("pk").values_list("pk", flat=True):
        while _events_batch(thread_pk=thread_pk, workspace_id=session.workspace_id,
                            batch_size=batch_size, counts=counts):
            pass
        for model in BULKY:
            _batches_delete(model._default_manager.filter(thread_id=thread_pk), batch_size, counts)
    with transaction.atomic():
        # Threads before the session row: the order appends take them in, so no deadlock.
        list(Thread.objects.select_for_update().filter(session=session).order_by("pk")
             .values_list("pk", flat=True))
        fresh = Session.objects.select_for_update().filter(pk=session.pk).first()
        if fresh is None:
            return
        # What was written meanwhile goes with the session: collapses protect their summary
        # events, so they go first; the rest cascades.
        _add(counts, Collapse.objects.filter(thread__session=fresh).delete()[1])
        _add(counts, fresh.delete()[1])
