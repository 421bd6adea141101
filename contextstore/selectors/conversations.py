"""Reads behind the OpenAI Conversations API (/openai/v1/conversations): a conversation is a
framework session of the app `openai-conversations` (services/conversations.py writes it), its
items the working context of its thread `main`, in order."""

import json
from dataclasses import dataclass
from typing import Any

from contextstore.errors import InvalidInput, NotFound
from contextstore.models import Event, Session, Thread, Workspace
from contextstore.openai_items import SYNTHETIC_ID, event_item

APP = "openai-conversations"
THREAD = "main"
ITEM_FIELDS = ("seq", "position", "type", "role", "content", "data")


def conversation_not_found(conversation_id: str) -> NotFound:
    return NotFound(f"Conversation with id '{conversation_id}' not found.",
                    details={"conversation_id": conversation_id})


def conversation_get(*, workspace: Workspace, conversation_id: str) -> tuple[Session, Thread]:
    """The conversation's session and thread, in the workspace; NotFound for a deleted one
    (archived) or another workspace's, as for one that never was."""
    # [:1], not first(): no ORDER BY on a lookup that finds at most one row by its unique key
    found = list(Thread.objects.select_related("session")
                 .filter(session__workspace=workspace, session__app=APP, session__key=conversation_id,
                         session__archived=False, name=THREAD)[:1])
    thread = found[0] if found else None
    if thread is None:
        raise conversation_not_found(conversation_id)
    return thread.session, thread


def conversation_object(session: Session) -> dict[str, Any]:
    return {"id": session.key, "object": "conversation", "created_at": int(session.created_at.timestamp()),
            "metadata": session.metadata or {}}


def _items(thread: Thread) -> Any:
    """The conversation's items: the thread's working context (active, visible events)."""
    return Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True)


def _row_item(row: dict[str, Any]) -> dict[str, Any]:
    data = row["data"]
    if isinstance(data, str):  # stored JSON text, as read by values()
        data = json.loads(data)
    return event_item(seq=row["seq"], type=row["type"], role=row["role"], content=row["content"], data=data)


def item_row(*, thread: Thread, item_id: str) -> dict[str, Any] | None:
    """The event an item id names among the conversation's items, as ITEM_FIELDS (and pk)."""
    # By the thread's unique (client_id) or (seq) index, at most one row: no ORDER BY.
    rows = _items(thread).values("pk", *ITEM_FIELDS)
    found = list(rows.filter(client_id=item_id)[:1])
    synthetic = SYNTHETIC_ID.match(item_id)
    if not found and synthetic:
        found = list(rows.filter(seq=int(synthetic[1]), client_id__isnull=True)[:1])
    return found[0] if found else None


def item_get(*, workspace: Workspace, conversation_id: str, item_id: str) -> dict[str, Any]:
    _, thread = conversation_get(workspace=workspace, conversation_id=conversation_id)
    row = item_row(thread=thread, item_id=item_id)
    if row is None:
        raise NotFound(f"Item with id '{item_id}' not found.", details={"item_id": item_id})
    return _row_item(row)


def items_by_ids(*, thread: Thread, item_ids: list[str]) -> list[dict[str, Any]]:
    """The items these ids name, in the given order (those just added)."""
    rows = {r["client_id"]: r for r in Event.objects.filter(thread=thread, client_id__in=item_ids)
            .values("client_id", *ITEM_FIELDS)}
    return [_row_item(rows[i]) for i in item_ids if i in rows]


@dataclass
class ItemPage:
    data: list[dict[str, Any]]
    has_more: bool

    def answer(self) -> dict[str, Any]:
        """OpenAI's list shape."""
        return {"object": "list", "data": self.data,
                "first_id": self.data[0]["id"] if self.data else None,
                "last_id": self.data[-1]["id"] if self.data else None, "has_more": self.has_more}


def items_page(*, workspace: Workspace, conversation_id: str, order: str = "desc", limit: int = 20,
               after: str | None = None) -> ItemPage:
    """A page of the conversation's items in working-context order (`asc`, oldest first) or its
    reverse (`desc`), after the item `after` names. Cost follows `limit`."""
    if order not in ("asc", "desc"):
        raise InvalidInput("Invalid value for 'order': expected 'asc' or 'desc'.", details={"order": order})
    if not 1 <= limit <= 100:
        raise InvalidInput("Invalid 'limit': expected an integer between 1 and 100.",
                           details={"limit": limit})
    _, thread = conversation_get(workspace=workspace, conversation_id=conversation_id)
    rows = _items(thread)
    if after:
        bound = item_row(thread=thread, item_id=after)
        if bound is None:
            raise NotFound(f"Item with id '{after}' not found.", details={"after": after})
        # Positions are unique in the working context (a summary stands at a collapsed one's,
        # a rewritten sync item at its retired version's): the (thread, position) index walks
        # from the bound and stops at the page's end.
        position = bound["position"]
        rows = rows.filter(position__gt=position) if order == "asc" else rows.filter(position__lt=position)
    ordering = "position" if order == "asc" else "-position"
    found = list(rows.order_by(ordering).values(*ITEM_FIELDS)[:limit + 1])
    return ItemPage(data=[_row_item(r) for r in found[:limit]], has_more=len(found) > limit)
