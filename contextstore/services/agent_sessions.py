"""Framework sessions: what ADK's SessionService, LangGraph's checkpointer and the OpenAI
Agents SDK's Session need, each framework call answered by one request.

A framework session is a contextstore Session identified by (workspace, app, user_id, key),
with one thread per name. Writes here are conditional appends ("commits"): events, a JSON
merge patch of the thread's state, patches of the app- and user-scoped states and blobs,
under an expected revision / last seq, in one transaction; a commit with a batch id is
replay-safe (the first answer is stored and returned again). The commit goes through the one
door of a framework save (services/commits.thread_commit); its writes are here.

Thread state is only touched through services/state.py functions.
"""

import base64
import hashlib
import json
from dataclasses import dataclass, field, replace
from itertools import batched
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from contextstore import documents
from contextstore.db import PreparedGet, insert_sql
from contextstore.errors import Conflict, NotFound
from contextstore.eventspec import EventSpec, event_specs
from contextstore.models import (
    AuditLog,
    Event,
    Run,
    ScopedState,
    ScopedStateRevision,
    Session,
    Thread,
    ThreadBlob,
    Workspace,
)
from contextstore.redaction import redact, redact_events, use_workspace
from contextstore.selectors.agent_sessions import (
    Identity,
    SessionRead,
    check_identity,
    history_events,
    scoped_states,
    session_find,
)
from contextstore.selectors.threads import THREAD_STATE_FIELDS
from contextstore.services import commits, history
from contextstore.services import sessions as session_service
from contextstore.services import state as state_service
from contextstore.services import threads as thread_service
from contextstore.services.commits import Statement
from contextstore.services.common import Actor, audit, audit_row, lock_thread

MAX_BLOB_BYTES = 16 * 1024 * 1024

# A commit's locked read, compiled once per process (db.PreparedGet): building the ORM's SQL on
# every commit cost more CPU than running it. The session's thread by identity, read under the
# thread's row lock as lock_thread(history_only=True) takes it (the session and the workspace
# with it), and in the same statement (one round trip, not three) the record of its batch id
# (commits.replay_annotations) and the revisions of the app's and the user's scoped states.
def _revision(workspace_id: int, app: str, scope: str, user_id: str) -> Subquery:
    return Subquery(ScopedState.objects.filter(workspace_id=workspace_id, app=app, scope=scope,
                                               user_id=user_id).values("revision")[:1])


_LOCKED_THREAD = PreparedGet(lambda workspace_id, app, user_id, key, name, batch_id: (
    Thread.objects.select_for_update(of=("self",), no_key=True).select_related("session", "workspace")
    .defer(*THREAD_STATE_FIELDS)
    .filter(session__workspace_id=workspace_id, session__app=app, session__user_id=user_id,
            session__key=key, name=name)
    .annotate(**commits.replay_annotations(batch_id),
              app_revision=_revision(workspace_id, app, ScopedState.Scope.APP, ""),
              user_revision=_revision(workspace_id, app, ScopedState.Scope.USER, user_id))),
    text=(1, 2, 3, 4, 5))


@dataclass
class BlobIn:
    key: str
    data: bytes
    content_type: str = ""
    meta: Any = None


@dataclass
class CommitIn:
    events: list[Any] = field(default_factory=list)
    state: dict | None = None  # merge patch of the thread's state
    app_state: dict | None = None  # merge patch of the app scope
    user_state: dict | None = None  # merge patch of the user scope
    blobs: list[BlobIn] = field(default_factory=list)
    expected_revision: int | None = None  # the thread state's revision (If-Match)
    expected_last_seq: int | None = None  # the history the writer last saw
    batch_id: str = ""
    create: bool = False  # make the session and thread when missing


# ----------------------------------------------------------------------------- writes

def _patch_scope(
    *, workspace: Workspace, app: str, scope: str, user_id: str, patch: dict, actor: Actor
) -> ScopedState:
    try:
        with transaction.atomic():
            row, _ = ScopedState.objects.get_or_create(
                workspace=workspace, app=app, scope=scope, user_id=user_id)
    except IntegrityError:
        pass
    row = ScopedState.objects.select_for_update().get(
        workspace=workspace, app=app, scope=scope, user_id=user_id)
    patch, _ = redact(use_workspace(workspace), patch)
    row.state = documents.merge_patch(row.state, patch)
    row.revision += 1
    row.save(update_fields=["state", "revision", "updated_at"])
    ScopedStateRevision.objects.create(scoped_state=row, revision=row.revision, state=row.state,
                                       actor=actor.label[:200])
    audit(actor=actor, action="scoped_state.patch", target=row, workspace=workspace,
          app=app, scope=scope, user_id=user_id, revision=row.revision)
    return row


def scoped_state_patch(
    *, workspace: Workspace, app: str, scope: str, user_id: str = "", patch: dict, actor: Actor
) -> ScopedState:
    """Merge-patch the app scope (user_id "") or a user's scope of an app (a scope of
    ScopedState.Scope, a patch object: the door's, api.agent_sessions.ScopePatchSerializer)."""
    with transaction.atomic():
        return _patch_scope(workspace=workspace, app=app, scope=scope,
                            user_id=user_id if scope == "user" else "", patch=patch, actor=actor)


def _ensure(workspace: Workspace, identity: Identity, actor: Actor, *, create: bool,
            agent: str = "", title: str = "", metadata: dict | None = None) -> tuple[Session, Thread, bool]:
    """The session and its thread, made when `create`."""
    session = Session.objects.filter(
        workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key).first()
    created = False
    if session is None:
        if not create:
            raise NotFound("No such session.", details={"key": identity.key})
        try:
            with transaction.atomic():
                session = Session.objects.create(
                    workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key,
                    agent=agent or identity.app, title=title, metadata=metadata or {})
                created = True
                audit(actor=actor, action="session.create", target=session, workspace=workspace,
                      app=identity.app, key=identity.key, user_id=identity.user_id)
        except IntegrityError:
            session = Session.objects.get(
                workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key)
    # a session made just now has no thread yet
    thread = None if created else Thread.objects.filter(session=session, name=identity.thread).first()
    if thread is None:
        if not create:
            raise NotFound(f"The session has no thread {identity.thread!r}.",
                           details={"thread": identity.thread})
        thread, _ = session_service.thread_ensure(session=session, name=identity.thread, actor=actor)
    return session, thread, created


def _create_new(workspace: Workspace, identity: Identity, actor: Actor, *, agent: str, title: str,
                metadata: dict | None) -> tuple[Session, Thread] | None:
    """A session that does not exist yet, with its thread and the audit rows of both, in
    three statements: what _ensure and sessions.thread_ensure do for a new one, without their
    looks and savepoints. An existing session is skipped by its insert (ON CONFLICT DO
    NOTHING): None, and nothing is written."""
    session = Session(workspace=workspace, app=identity.app, user_id=identity.user_id,
                      key=identity.key, agent=agent or identity.app, title=title,
                      metadata=metadata or {}, thread_count=1)
    with connection.cursor() as cursor:
        cursor.execute(*insert_sql(Session, [session], returning=("id",), ignore_conflicts=True))
        inserted = cursor.fetchall()
    if not inserted:
        return None
    session.pk, session._state.adding = inserted[0][0], False
    thread = Thread.objects.create(session=session, name=identity.thread, workspace_id=workspace.pk)
    AuditLog.objects.bulk_create([
        audit_row(actor=actor, action="session.create", target=session, workspace=workspace,
                  app=identity.app, key=identity.key, user_id=identity.user_id),
        audit_row(actor=actor, action="thread.create", target=thread, workspace=workspace,
                  session=identity.key, name=identity.thread)])
    return session, thread


def session_create(
    *, workspace: Workspace, identity: Identity, actor: Actor, state: dict | None = None,
    app_state: dict | None = None, user_state: dict | None = None, agent: str = "",
    title: str = "", metadata: dict | None = None,
) -> SessionRead:
    """Create-only: the session, its first thread with an initial state, and scoped state
    patches, in one transaction. An existing session is a 409 and nothing changes. The states
    and metadata are objects, the thread's name a name (api.agent_sessions.CreateSerializer)."""
    check_identity(identity)
    (title, metadata), _ = redact(use_workspace(workspace), [title, metadata])
    with transaction.atomic():
        made = _create_new(workspace, identity, actor, agent=agent, title=title, metadata=metadata)
        if made is None:
            raise Conflict("A session with this app, user_id and key already exists.",
                           code="session_exists", details={"key": identity.key})
        session, thread = made
        if state:
            thread = state_service.state_write(thread=thread, actor=actor, state=state,
                                               reason="session create")
        _patch_scopes(workspace, identity, app_state, user_state, actor)
    return SessionRead(session=session, thread=thread,
                       scopes=scoped_states(workspace=workspace, app=identity.app, user_id=identity.user_id),
                       events=[], blobs=[])


def _patch_scopes(workspace: Workspace, identity: Identity, app_state: dict | None,
                  user_state: dict | None, actor: Actor) -> dict[str, ScopedState]:
    """The patched scopes' rows, by scope."""
    patched = {}
    if app_state:
        patched["app"] = _patch_scope(workspace=workspace, app=identity.app, scope="app", user_id="",
                                      patch=app_state, actor=actor)
    if user_state:
        patched["user"] = _patch_scope(workspace=workspace, app=identity.app, scope="user",
                                       user_id=identity.user_id, patch=user_state, actor=actor)
    return patched


def _request_hash(identity: Identity, commit: CommitIn) -> str:
    payload = {
        "identity": [identity.app, identity.user_id, identity.key, identity.thread],
        "events": commit.events, "state": commit.state, "app_state": commit.app_state,
        "user_state": commit.user_state, "expected_revision": commit.expected_revision,
        "expected_last_seq": commit.expected_last_seq,
        "blobs": [[b.key, hashlib.sha256(b.data).hexdigest(), b.content_type, b.meta] for b in commit.blobs],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def session_commit(*, workspace: Workspace, identity: Identity, commit: CommitIn, actor: Actor) -> dict:
    """The atomic conditional append. Returns the answer (also stored under the batch id):
    appended events, the thread's revision and last seq, and the scoped states' revisions.
    The states are objects, the blobs and the batch id within their limits: the door's
    (api.agent_sessions.CommitSerializer); the events are checked here after redaction."""
    check_identity(identity)
    commit = replace(commit, events=redact_events(use_workspace(workspace), commit.events))
    specs = event_specs(commit.events, allow_empty=True)  # refused before any lock, as an append's
    # What the locked read brought: the session, and the scopes' revisions (None: read them
    # once the scopes are patched).
    found: dict[str, Any] = {}

    def lock(path: str) -> tuple[Thread, bool]:
        # The session and its thread in one read, under the thread's lock (so a replay sent
        # while the first is still running waits for it), with the batch's record and the
        # scopes' revisions; made (or refused) by _ensure when missing, then locked.
        thread = _LOCKED_THREAD.get(workspace.pk, identity.app, identity.user_id, identity.key,
                                    identity.thread, commit.batch_id)
        if thread is not None and path == "fast":
            found.update(session=thread.session, revisions={
                "app": thread.app_revision or 0, "user": thread.user_revision or 0})
            return thread, True
        if thread is None:
            session, thread, _ = _ensure(workspace, identity, actor, create=commit.create)
            try:
                thread = lock_thread(thread, history_only=True)
            except Thread.DoesNotExist:  # deleted since it was found: as a missing one answers
                raise NotFound("No such session.", details={"key": identity.key}) from None
        else:
            session = thread.session
        found.update(session=session, revisions=None)
        return thread, False

    def write(thread: Thread, path: str) -> tuple[dict[str, Any], list[Statement]]:
        return _commit_write(workspace, identity, commit, specs, actor, thread, path,
                             found["session"], found["revisions"])

    return commits.thread_commit(
        lock=lock, write=write, batch_id=commit.batch_id, request_hash=_request_hash(identity, commit),
        expected=commits.Expected(commit.expected_revision, commit.expected_last_seq)).response


def _commit_write(workspace: Workspace, identity: Identity, commit: CommitIn, specs: list[EventSpec],
                  actor: Actor, thread: Thread, path: str, session: Session,
                  revisions: dict[str, int] | None) -> tuple[dict[str, Any], list[Statement]]:
    """A commit's writes, in commits.thread_commit's transaction (no savepoints inside): the
    transcript and the thread's document by the one writer (commits.commit_write), the scoped
    states' patches, the blobs. Returns the answer and the statements to run last.
    path "fast": the append raises history.Skipped where it would have to look (a client_id
    stored already or named twice)."""
    # The writes that follow the transcript and the document, run together at the end.
    writes: list[Statement] = []
    blobs = _blobs_put(thread, commit.blobs) if commit.blobs else None  # refused before any write
    # One audit row per commit: the append's names the blobs too.
    blobs_named = {"blob_keys": [b.key for b in commit.blobs][:50], "blob_count": len(commit.blobs)}
    # Last activity follows the framework's own clock (ADK's last_update_time), set by the
    # append's own update of the session (one update of its row, not two).
    written = commits.commit_write(
        thread=thread, actor=actor, reason="commit", path=path, events=specs,
        state=commit.state or None, audit_details=blobs_named if blobs else None)
    appended, last_seq, stored, revision = (written.events, written.last_seq, written.created,
                                            written.revision)
    patched = _patch_scopes(workspace, identity, commit.app_state, commit.user_state, actor)
    if revisions is None:
        revisions = {scope: row.revision if row else 0 for scope, row in scoped_states(
            workspace=workspace, app=identity.app, user_id=identity.user_id).items()}
    revisions = {**revisions, **{scope: row.revision for scope, row in patched.items()}}
    if blobs:
        writes.append(blobs)
        if not stored:  # no events.append row to name them
            writes.append(insert_sql(AuditLog, [audit_row(
                actor=actor, action="blobs.put", target=thread, workspace=workspace,
                keys=blobs_named["blob_keys"], count=len(commit.blobs))], returning=("id",)))
    response = {
        "session": session.pk, "thread": thread.pk, "revision": revision, "last_seq": last_seq,
        "events": [{"id": e.pk, "seq": e.seq, "client_id": e.client_id,
                    "occurred_at": e.occurred_at.isoformat()} for e in appended],
        "app_revision": revisions["app"], "user_revision": revisions["user"],
    }
    return response, writes


def _blobs_put(thread: Thread, blobs: list[BlobIn]) -> tuple[str, tuple]:
    """The statement that inserts or overwrites the blobs by key (INSERT … ON CONFLICT DO
    UPDATE); of a key given twice the last one wins."""
    rows: dict[str, ThreadBlob] = {}
    for blob in blobs:  # (keys and sizes checked at the door: api.agent_sessions)
        rows[blob.key] = ThreadBlob(thread=thread, key=blob.key, data=blob.data, meta=blob.meta,
                                    content_type=blob.content_type[:100], size=len(blob.data))
    return insert_sql(ThreadBlob, list(rows.values()), returning=("id",), update_conflicts=(
        ("thread", "key"), ("data", "content_type", "meta", "size", "updated_at")))


def retract_newest(*, workspace: Workspace, identity: Identity, actor: Actor) -> Event | None:
    """Take the newest history event out of the working context (OpenAI's pop_item).

    The row stays, with status `retracted`, for audit; it is returned, or None when the
    history is empty."""
    check_identity(identity)
    with transaction.atomic():
        session = Session.objects.filter(
            workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key).first()
        if session is None:
            return None
        thread = Thread.objects.filter(session=session, name=identity.thread).first()
        if thread is None:
            return None
        try:
            thread = lock_thread(thread, history_only=True)
        except Thread.DoesNotExist:  # deleted since it was found: as if there had been none
            return None
        event = history_events(thread=thread).order_by("-seq").first()
        if event is None:
            return None
        event.status = Event.Status.RETRACTED
        event.save(update_fields=["status"])
        history.working_context_changed(thread=thread, now=timezone.now(),
                                        left=history.Moved.of([event]))
        audit(actor=actor, action="event.retract", target=thread, workspace=workspace,
              seq=event.seq, client_id=event.client_id)
    return event


def history_clear(*, workspace: Workspace, identity: Identity, actor: Actor) -> int:
    """OpenAI's clear_session: the history leaves the session (cleared, kept for audit)."""
    check_identity(identity)
    session = Session.objects.filter(
        workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key).first()
    thread = Thread.objects.filter(session=session, name=identity.thread).first() if session else None
    if thread is None:
        return 0
    try:
        return thread_service.thread_clear_context(thread=thread, actor=actor).event_count
    except Thread.DoesNotExist:  # deleted since it was found: as if there had been none
        return 0


def session_remove(*, workspace: Workspace, identity: Identity, actor: Actor) -> bool:
    """Delete the session (all threads); False when there was none."""
    check_identity(identity)
    session = Session.objects.filter(
        workspace=workspace, app=identity.app, user_id=identity.user_id, key=identity.key).first()
    if session is None:
        return False
    session_service.session_delete(session=session, actor=actor)
    return True


def sessions_remove_by_prefix(*, workspace: Workspace, app: str, key_prefix: str, actor: Actor) -> int:
    """Delete every session of an app whose key starts with a prefix (LangGraph delete_thread
    removes a thread_id under every user). The prefix is not empty (DeleteSerializer)."""
    removed = 0
    for session in Session.objects.filter(workspace=workspace, app=app, key__startswith=key_prefix):
        session_service.session_delete(session=session, actor=actor)
        removed += 1
    return removed


def session_copy(*, workspace: Workspace, identity: Identity, target_key: str, actor: Actor) -> int:
    """LangGraph copy_thread: a new session of the same app and user_id under `target_key`
    holding a copy of every thread of the source: its history (in order, with the events'
    client ids, times and run ids), its state and its blobs. The source is untouched; a
    missing source is NotFound and an existing target a Conflict, and then nothing changes.
    Returns how many events were copied."""
    check_identity(identity)
    target = Identity(app=identity.app, user_id=identity.user_id, key=target_key)
    check_identity(target)
    with transaction.atomic():
        source = session_find(workspace=workspace, identity=identity)
        threads = [lock_thread(t, history_only=True)
                   for t in Thread.objects.filter(session=source).order_by("pk")]
        try:
            with transaction.atomic():
                session = Session.objects.create(
                    workspace=workspace, app=identity.app, user_id=identity.user_id, key=target_key,
                    agent=source.agent, title=source.title, metadata=source.metadata)
        except IntegrityError as exc:
            raise Conflict("A session with this app, user_id and key already exists.",
                           code="session_exists", details={"target_key": target_key}) from exc
        now, copied = timezone.now(), 0
        for thread in threads:
            copy, _ = session_service.thread_ensure(session=session, name=thread.name, actor=actor)
            events = list(history_events(thread=thread).order_by("seq"))
            specs = [replace(history.spec_of(e), run_id=e.run.run_id if e.run else "") for e in events]
            history.events_add(thread=copy, specs=specs, now=now)
            copied += len(events)
            if thread.state:
                state_service.state_write(thread=copy, actor=actor, state=thread.state,
                                          reason=f"copy of session {source.pk}")
            for blobs in batched(ThreadBlob.objects.filter(thread=thread).order_by("pk").iterator(100), 100):
                ThreadBlob.objects.bulk_create([
                    ThreadBlob(thread=copy, key=b.key, content_type=b.content_type, data=b.data,
                               meta=b.meta, size=b.size) for b in blobs])
        if copied:
            Session.objects.filter(pk=session.pk).update(last_activity_at=source.last_activity_at)
        audit(actor=actor, action="session.copy", target=session, workspace=workspace,
              app=identity.app, source=identity.key, key=target_key, events=copied)
    return copied


@dataclass
class RemoveIn:
    """Which history events leave an app's sessions (status removed, kept for audit): those
    of the sessions `keys` (all, or all but each thread's newest with `keep_latest`), or those
    of the runs `run_ids` in every session of the app and user; only events of `types` when
    given. `blob_prefixes`: templates naming each removed event's blobs, deleted with it
    ("cp/{client_id}" deletes the blobs whose key starts with cp/ and the event's client id)."""

    keys: list[str] | None = None
    run_ids: list[str] | None = None
    types: list[str] | None = None
    keep_latest: bool = False
    blob_prefixes: list[str] = field(default_factory=list)


CLIENT_ID = "{client_id}"


def history_remove(*, workspace: Workspace, app: str, user_id: str, remove: RemoveIn,
                   actor: Actor) -> int:
    """LangGraph prune(keep_latest) and delete_for_runs: the events `remove` selects leave the
    history (status removed), with the blobs its templates name. One transaction; returns how
    many events left. `remove` names keys or run_ids, keep_latest only with keys, and
    {client_id} once in each blob prefix (the door's: api.agent_sessions.RemoveSerializer)."""
    sessions = Session.objects.filter(workspace=workspace, app=app, user_id=user_id)
    if remove.keys is not None:
        sessions = sessions.filter(key__in=remove.keys)
    threads = Thread.objects.filter(session__in=sessions)
    if remove.run_ids is not None:  # only the threads that ran them
        threads = threads.filter(pk__in=Run.objects.filter(
            thread__session__in=sessions, run_id__in=remove.run_ids).values("thread_id"))
    removed = 0
    with transaction.atomic():
        for thread in threads.order_by("pk"):
            events = history_events(thread=thread)
            if remove.types:
                events = events.filter(type__in=remove.types)
            if remove.run_ids is not None:
                events = events.filter(run__run_id__in=remove.run_ids)
            if not events.exists():
                continue
            thread = lock_thread(thread, history_only=True)
            leaving = list(events.order_by("-seq"))[1 if remove.keep_latest else 0:]
            if not leaving:
                continue
            Event.objects.filter(pk__in=[e.pk for e in leaving]).update(status=Event.Status.REMOVED)
            history.working_context_changed(thread=thread, now=timezone.now(),
                                            left=history.Moved.of(leaving))
            prefixes = [t.replace(CLIENT_ID, e.client_id) for e in leaving if e.client_id
                        for t in remove.blob_prefixes]
            for start in range(0, len(prefixes), 100):
                wanted = Q()
                for prefix in prefixes[start:start + 100]:
                    wanted |= Q(key__startswith=prefix)
                ThreadBlob.objects.filter(wanted, thread=thread).delete()
            audit(actor=actor, action="events.remove", target=thread, workspace=workspace,
                  count=len(leaving), seqs=[e.seq for e in leaving][:50])
            removed += len(leaving)
    return removed


def b64(data: bytes | memoryview) -> str:
    return base64.b64encode(bytes(data)).decode()

