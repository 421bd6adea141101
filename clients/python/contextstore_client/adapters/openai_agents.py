"""OpenAI Agents SDK: a ``Session`` kept in contextstore (openai-agents 0.24.0).

    from agents import Agent, Runner
    from contextstore_client.adapters.openai_agents import ContextStoreSession

    session = ContextStoreSession("conversation-42", AsyncContextStore(url, token))
    await Runner.run(agent, "hi", session=session)

Each input item is one event, readable in the dashboard: user text is a Message, assistant
text an LLMOutput, a function call a ToolCall with the call in ``data["tool_calls"]`` and its
output a ToolResult naming the call in ``data["tool_call_id"]`` (so renders pair them),
reasoning a Reasoning; the item itself is kept in ``data["item"]`` so it comes back exactly,
but for a text the event holds already (a message's string content, a tool's string output, a
call's arguments), which is stored once and put back on read.
Each SDK call is one request: add_items a commit, get_items a read of the newest N,
pop_item a retract (the row stays, retracted, for audit), clear_session a clear.

Sessions live under the app ``openai-agents`` (``openai-agents@<namespace>`` with a
namespace) with the SDK's session id as the key.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from contextstore_client import AsyncContextStore, ContextStore

APP = "openai-agents"
TEXT_FIELDS = ("content", "output")  # an item's text fields (a message's, a tool output's)
READ_FIELDS = ["content", "data"]  # what get_items reads of each event (stored_item)

__all__ = ["ContextStoreSession", "item_event", "make_test_session", "stored_item"]


def _text(content: Any) -> str:
    """The readable text of an item's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)]
        return "\n".join(t for t in texts if t)
    return ""


def item_event(item: dict[str, Any]) -> dict[str, Any]:
    """The contextstore event for one SDK input item (the item kept whole in data).

    A function call is a ToolCall whose call is in ``data["tool_calls"]`` ({id, name, arguments},
    the arguments the model's JSON text) and its output a ToolResult naming it in
    ``data["tool_call_id"]``: the shape renders pair (an openai/anthropic render gives the call
    as a tool call and its output as the call's result)."""
    kind = item.get("type") or ("message" if "role" in item else "")
    role = item.get("role") or ""
    event: dict[str, Any] = {"role": role, "content": ""}
    extra: dict[str, Any] = {}  # data beside the item: what renders read
    if kind == "message":
        event.update(type="LLMOutput" if role == "assistant" else "Message",
                     content=_text(item.get("content")))
    elif kind == "function_call":
        call_id = str(item.get("call_id") or "")
        event.update(type="ToolCall", role="assistant", call_id=call_id)
        extra["tool_calls"] = [{"id": call_id, "name": str(item.get("name") or ""),
                                "arguments": item.get("arguments", "")}]
    elif kind == "function_call_output":
        output = item.get("output")
        call_id = str(item.get("call_id") or "")
        event.update(type="ToolResult", role="tool", call_id=call_id,
                     content=output if isinstance(output, str) else json.dumps(output, default=str))
        extra["tool_call_id"] = call_id
    elif kind == "reasoning":
        event.update(type="Reasoning", role="assistant",
                     content="\n".join(s.get("text", "") for s in item.get("summary") or []
                                       if isinstance(s, dict)))
    else:
        # Other item kinds (hosted tool calls, compaction markers …) keep their SDK name.
        event.update(type="ResponseItem", content=json.dumps(item, default=str)[:2000])
    if event["role"] not in ("", "user", "assistant", "system", "developer", "tool"):
        event["role"] = ""
    if "call_id" in event:  # the row's call_id is at most 200 characters; data keeps it whole
        event["call_id"] = event["call_id"][:200]
    # A text the row holds already is not copied into the item: "item_text" names the item's
    # field that get_items fills back from content, "item_arguments" a call's arguments it
    # fills back from data["tool_calls"]. null keeps the field's place: the item comes back
    # with its keys in order.
    kept = dict(item)
    for field in TEXT_FIELDS:
        if isinstance(item.get(field), str) and item[field] and item[field] == event["content"]:
            kept[field] = None
            extra["item_text"] = field
            break
    if extra.get("tool_calls") and isinstance(item.get("arguments"), str):
        kept["arguments"] = None
        extra["item_arguments"] = True
    event["data"] = {"item": kept, **extra}
    return event


def stored_item(event: dict[str, Any]) -> Any:
    """The SDK item a stored event holds, with what item_event left to the row put back (into
    the event's own item: an event read is parsed for this call alone)."""
    data = event["data"]
    item = data["item"]
    field = data.get("item_text")
    if field in TEXT_FIELDS:
        item[field] = event["content"]  # the key is there (null), so it keeps its place
    if data.get("item_arguments") is True and isinstance(data.get("tool_calls"), list):
        item["arguments"] = data["tool_calls"][0]["arguments"]
    return item


class ContextStoreSession(SessionABC):
    """The SDK's SessionABC over contextstore: one request per call."""

    def __init__(self, session_id: str, client: ContextStore | AsyncContextStore, *, namespace: str = "",
                 session_settings: SessionSettings | dict[str, Any] | None = None):
        self.session_id = session_id
        self.session_settings = (coerce_session_settings(session_settings) if session_settings is not None
                                 else SessionSettings())
        self.client = client
        self.app = f"{APP}@{namespace}" if namespace else APP
        self._owned = False

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.client, name)
        if isinstance(self.client, AsyncContextStore):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and limit == 0:
            return []
        read = await self._call("read_agent_session", self.app, "", self.session_id,
                                limit=limit if limit is not None and limit > 0 else None,
                                fields=READ_FIELDS)
        if read is None:
            return []
        return [stored_item(e) for e in read["events"]
                if isinstance(e.get("data"), dict) and "item" in e["data"]]

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        # Item ids are not unique (the SDK re-sends items, scripted models reuse ids), so
        # each row gets its own client id; the item's id stays in data["item"].
        events = [{**item_event(dict(item)), "client_id": uuid.uuid4().hex} for item in items]
        await self._call("commit_agent_session", self.app, "", self.session_id, events=events, create=True)

    async def pop_item(self) -> dict[str, Any] | None:
        event = await self._call("retract_agent_event", self.app, "", self.session_id)
        if event is None:
            return None
        return stored_item(event) if "item" in (event.get("data") or {}) else None

    async def clear_session(self) -> None:
        await self._call("clear_agent_session", self.app, "", self.session_id)

    def close(self) -> None:
        """Close the client when this session made it (the test factory)."""
        if self._owned:
            if isinstance(self.client, AsyncContextStore):
                try:
                    asyncio.get_running_loop().create_task(self.client.aclose())
                except RuntimeError:
                    asyncio.run(self.client.aclose())
            else:
                self.client.close()


def make_test_session(session_id: str, *, namespace: str | None = None,
                      session_settings: SessionSettings | None = None) -> ContextStoreSession:
    """A session on the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN, in a fresh
    random namespace unless one is given; close() closes the client it made."""
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    session = ContextStoreSession(session_id, client, namespace=namespace or uuid.uuid4().hex,
                                  session_settings=session_settings)
    session._owned = True
    return session
