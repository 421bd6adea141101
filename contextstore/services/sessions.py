from typing import Any

from django.db import IntegrityError, transaction

from contextstore.models import AuditLog, Collapse, Session, Thread, Workspace
from contextstore.redaction import redact, use_workspace
from contextstore.services import history
from contextstore.services.common import UNSET, Actor, audit, audit_row


def session_ensure(
    *, workspace: Workspace, key: str, user_id: str = "", agent: str = "", title: str = "",
    metadata: dict[str, Any] | None = None, actor: Actor,
) -> tuple[Session, bool]:
    """Upsert a session by (workspace, user_id, key); agent/title/metadata update when given.

    These are the app-less sessions; framework sessions (with an app) are made by
    services/agent_sessions.py. The names are sessionspec.check_session_names's (the doors':
    the API's serializers, importspec, OpenTelemetry's derivation).
    """
    # An agent's title and metadata are its text too: secrets go before they are stored.
    (title, metadata), _ = redact(use_workspace(workspace), [title, metadata])
    defaults = {"agent": agent, "title": title, "metadata": metadata or {}}
    try:
        with transaction.atomic():
            session, created = Session.objects.get_or_create(
                workspace=workspace, app="", user_id=user_id, key=key, defaults=defaults
            )
            if created:
                audit(actor=actor, action="session.create", target=session, workspace=workspace,
                      key=key, user_id=user_id)
    except IntegrityError:
        session, created = Session.objects.get(workspace=workspace, app="", user_id=user_id, key=key), False
    if not created:
        changes: dict[str, Any] = {
            k: v for k, v in (("agent", agent), ("title", title)) if v and getattr(session, k) != v}
        if metadata is not None and metadata != session.metadata:
            changes["metadata"] = metadata
        if changes:
            session = session_update(session=session, actor=actor, **changes)
    return session, created


def session_update(
    *, session: Session, actor: Actor, title: str = UNSET, agent: str = UNSET,
    metadata: dict = UNSET, archived: bool = UNSET,
) -> Session:
    changes: dict[str, Any] = {
        k: v for k, v in
        (("title", title), ("agent", agent), ("metadata", metadata), ("archived", archived))
        if v is not UNSET
    }
    texts = {k: v for k, v in changes.items() if k in ("title", "metadata")}
    if texts:
        redacted, _ = redact(use_workspace(session.workspace), texts)
        changes.update(redacted)
    if not changes:
        return session
    with transaction.atomic():
        for field, value in changes.items():
            setattr(session, field, value)
        session.save(update_fields=[*changes, "updated_at"])
        audit(actor=actor, action="session.update", target=session, workspace=session.workspace,
              fields=sorted(changes))
    return session


def session_archive(*, session: Session, actor: Actor, archived: bool = True) -> Session:
    return session_update(session=session, actor=actor, archived=archived)


def session_delete(*, session: Session, actor: Actor) -> None:
    """Hard delete: the session, its threads and all their history. Audited, not undoable."""
    with transaction.atomic():
        # Threads before the session row: the order appends take them in, so no deadlock.
        list(Thread.objects.select_for_update().filter(session=session).order_by("pk")
             .values_list("pk", flat=True))
        session = Session.objects.select_for_update().get(pk=session.pk)
        audit(actor=actor, action="session.delete", target=session, workspace=session.workspace,
              key=session.key, user_id=session.user_id, events=session.event_count)
        # Collapses protect their summary events; drop them first so the cascade can run.
        Collapse.objects.filter(thread__session=session).delete()
        session.delete()


def thread_ensure(*, session: Session, name: str = "main", actor: Actor) -> tuple[Thread, bool]:
    """The session's thread of `name` (1 to 200 characters, no NUL: the doors'), made when
    missing."""
    try:
        with transaction.atomic():
            thread, created = Thread.objects.get_or_create(
                session=session, name=name, defaults={"workspace_id": session.workspace_id}
            )
            if created:
                history.session_thread_added(session_id=session.pk)
                audit(actor=actor, action="thread.create", target=thread, workspace=session.workspace,
                      session=session.key, name=name)
    except IntegrityError:
        thread, created = Thread.objects.get(session=session, name=name), False
    return thread, created


def sessions_create_many(*, workspace: Workspace, new: list[tuple[str, str, str, dict[str, Any]]],
                         actor: Actor) -> dict[tuple[str, str], Thread]:
    """Sessions that do not exist yet, (key, user_id, agent, metadata) each, with their "main"
    thread: what session_ensure and thread_ensure do for one, in three statements for all (OTLP
    derivation makes many new conversations a pass). Returns the threads by (key, user_id);
    empty, having written nothing, when one of the sessions exists meanwhile (the caller then
    ensures them one by one)."""
    rules = use_workspace(workspace)
    sessions = []
    for key, user_id, agent, metadata in new:  # (names checked by the caller: sessionspec)
        (metadata,), _ = redact(rules, [metadata])
        sessions.append(Session(workspace=workspace, app="", key=key, user_id=user_id, agent=agent,
                                metadata=metadata, thread_count=1))
    if not sessions:
        return {}
    try:
        with transaction.atomic():
            Session.objects.bulk_create(sessions)
            threads = Thread.objects.bulk_create([Thread(session=s, name="main", workspace_id=workspace.pk)
                                                  for s in sessions])
            AuditLog.objects.bulk_create(
                [audit_row(actor=actor, action="session.create", target=s, workspace=workspace,
                           key=s.key, user_id=s.user_id) for s in sessions]
                + [audit_row(actor=actor, action="thread.create", target=t, workspace=workspace,
                             session=s.key, name="main") for s, t in zip(sessions, threads, strict=True)])
    except IntegrityError:
        return {}
    return {(s.key, s.user_id): t for s, t in zip(sessions, threads, strict=True)}


def thread_ensure_by_key(
    *, workspace: Workspace, session_key: str, user_id: str = "", agent: str = "",
    name: str = "main", actor: Actor,
) -> tuple[Thread, bool]:
    session, _ = session_ensure(workspace=workspace, key=session_key, user_id=user_id, agent=agent,
                                actor=actor)
    return thread_ensure(session=session, name=name, actor=actor)
