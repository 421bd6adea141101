"""The OpenAI Conversations API's writes (/openai/v1/conversations; reads in
selectors/conversations.py).

A conversation is a framework session of the app `openai-conversations` keyed by its id
(`conv_…`), its metadata the session's; its items are events of the session's thread `main`
(contextstore/openai_items.py maps them), added through the one door of a framework save
(agent_sessions.session_commit: redaction, the thread's lock, replay by the request's
idempotency key). Deleting an item retracts its event (kept for audit, as pop_item's);
deleting a conversation archives its session, as OpenAI keeps a deleted conversation's items:
the API answers 404 for it from then on and a person can reopen it in the dashboard.
"""

from typing import Any

from django.db import transaction
from django.utils import timezone

from contextstore.errors import InvalidInput, NotFound
from contextstore.eventspec import event_specs
from contextstore.models import CommitRecord, Event, Session, Workspace
from contextstore.openai_items import ID_PREFIXES, ITEM_ID_MAX, item_event, item_type, new_id
from contextstore.selectors.agent_sessions import Identity
from contextstore.selectors.conversations import APP, THREAD, conversation_get, item_row, items_by_ids
from contextstore.services import agent_sessions, history
from contextstore.services import sessions as session_service
from contextstore.services.agent_sessions import CommitIn
from contextstore.services.common import Actor, audit, lock_thread

USER_KEY = "user_id"  # the metadata key naming the conversation's end user (the session's user_id)


def _prepared(items: list[dict[str, Any]], *, conversation_id: str,
              seed: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The items' events (each item with its id, made when absent, and a type when it has only a
    role) and their ids, in order; the items checked by conversationspec.check_items. `seed`
    (the request's idempotency key) makes the new ids the same when the request is retried."""
    events, ids = [], []
    for place, item in enumerate(items):
        kind = item_type(item)
        item_id = item.get("id")
        if item_id is None:
            prefix = ID_PREFIXES.get(kind, "item")
            item_id = new_id(prefix, f"{seed}|{conversation_id}|{place}" if seed else None)
            item = {"id": item_id, **item}
        if "type" not in item:
            item = {"type": kind, **item}
        ids.append(item_id)
        events.append({**item_event(item), "client_id": item_id})
    event_specs(events, allow_empty=True)  # a bad event is refused before anything is written
    return events, ids


def _retired_ids(thread_id: int, ids: list[str]) -> list[dict[str, Any]]:
    """Refuse ids the conversation holds; the rows of items with these ids deleted or cleared
    since (the caller frees their ids, so an item popped can be added again)."""
    taken = [dict(row) for row in Event.objects.filter(thread_id=thread_id, client_id__in=ids)
             .values("pk", "client_id", "status", "seq")]
    for row in taken:
        if row["status"] in (Event.Status.ACTIVE, Event.Status.COLLAPSED):
            raise InvalidInput(f"Duplicate item found with id {row['client_id']}. Remove duplicate items "
                               "from your input and try again.", details={"items": row["client_id"]})
    return taken


def _add(workspace: Workspace, session: Session, events: list[dict[str, Any]], actor: Actor,
         batch_id: str) -> None:
    agent_sessions.session_commit(
        workspace=workspace,
        identity=Identity(app=APP, user_id=session.user_id, key=session.key, thread=THREAD),
        commit=CommitIn(events=events, batch_id=batch_id[:200]), actor=actor)


def conversation_create(*, workspace: Workspace, items: list[dict[str, Any]] | None = None,
                        metadata: dict[str, str] | None = None, actor: Actor,
                        idempotency_key: str = "") -> tuple[Session, list[dict[str, Any]]]:
    """A new conversation with its first items and metadata (checked by conversationspec), in
    one transaction. Returns the session and the items as stored."""
    metadata = metadata or {}
    conversation_id = new_id("conv", f"{idempotency_key}|{workspace.pk}" if idempotency_key else None)
    events, ids = _prepared(items if items is not None else [], conversation_id=conversation_id,
                            seed=f"create|{idempotency_key}" if idempotency_key else "")
    # The end user a conversation is about, when its metadata names one: erasure finds it by that person.
    user_id = metadata.get(USER_KEY, "")
    identity = Identity(app=APP, user_id=user_id, key=conversation_id, thread=THREAD)
    with transaction.atomic():
        existing = Session.objects.filter(workspace=workspace, app=APP, key=conversation_id).first()
        if existing is not None:  # a retried create: the first answer's conversation
            session, thread = conversation_get(workspace=workspace, conversation_id=conversation_id)
            return session, items_by_ids(thread=thread, item_ids=ids)
        read = agent_sessions.session_create(workspace=workspace, identity=identity, actor=actor,
                                             agent=APP, metadata=metadata)
        if events:
            _add(workspace, read.session, events, actor, "")
        return read.session, items_by_ids(thread=read.thread, item_ids=ids)


def conversation_update(*, workspace: Workspace, conversation_id: str, metadata: dict[str, str],
                        actor: Actor) -> Session:
    """Replace the conversation's metadata (the session's; checked by conversationspec)."""
    session, _ = conversation_get(workspace=workspace, conversation_id=conversation_id)
    return session_service.session_update(session=session, actor=actor, metadata=metadata)


def conversation_delete(*, workspace: Workspace, conversation_id: str, actor: Actor) -> Session:
    """Archive the conversation's session: gone from the API, kept whole (reopened in the
    dashboard, it is back)."""
    session, _ = conversation_get(workspace=workspace, conversation_id=conversation_id)
    with transaction.atomic():
        session = session_service.session_archive(session=session, actor=actor, archived=True)
        audit(actor=actor, action="conversation.delete", target=session, workspace=workspace,
              key=conversation_id)
    return session


def items_add(*, workspace: Workspace, conversation_id: str, items: list[dict[str, Any]], actor: Actor,
              idempotency_key: str = "") -> list[dict[str, Any]]:
    """Append items (checked by conversationspec: at most 20) to the conversation in one
    transaction, replay-safe by the request's idempotency key. Returns them as stored
    (redacted, with their ids)."""
    session, thread = conversation_get(workspace=workspace, conversation_id=conversation_id)
    events, ids = _prepared(items, conversation_id=conversation_id,
                            seed=f"items|{idempotency_key}" if idempotency_key else "")
    if not events:
        return []
    # A retry of a request that was applied: session_commit answers it from its record.
    replay = bool(idempotency_key) and CommitRecord.objects.filter(
        thread=thread, batch_id=idempotency_key[:200]).exists()
    retired = [] if replay else _retired_ids(thread.pk, ids)
    if not retired:  # the usual case: the commit is the request's one transaction
        _add(workspace, session, events, actor, idempotency_key)
    else:
        with transaction.atomic():  # their rows stay, their client ids renamed
            for row in retired:
                Event.objects.filter(pk=row["pk"]).update(
                    client_id=f"{row['client_id']}#{row['seq']}"[-ITEM_ID_MAX:])
            _add(workspace, session, events, actor, idempotency_key)
    return items_by_ids(thread=thread, item_ids=ids)


def item_delete(*, workspace: Workspace, conversation_id: str, item_id: str, actor: Actor) -> Session:
    """Take the item out of the conversation: its event is retracted (kept for audit, undone
    like a pop). Returns the conversation's session."""
    session, thread = conversation_get(workspace=workspace, conversation_id=conversation_id)
    with transaction.atomic():
        thread = lock_thread(thread, history_only=True)
        row = item_row(thread=thread, item_id=item_id)
        if row is None:
            raise NotFound(f"Item with id '{item_id}' not found.", details={"item_id": item_id})
        event = Event.objects.get(pk=row["pk"])
        event.status = Event.Status.RETRACTED
        event.save(update_fields=["status"])
        history.working_context_changed(thread=thread, now=timezone.now(), left=history.Moved.of([event]))
        audit(actor=actor, action="event.retract", target=thread, workspace=workspace,
              seq=event.seq, client_id=event.client_id)
    return session
