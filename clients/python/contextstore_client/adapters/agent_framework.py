"""Microsoft Agent Framework: history, context and sessions kept in contextstore.

    from contextstore_client.adapters.agent_framework import (
        ContextStoreHistoryProvider, ContextStoreSessionStore, UserInfoMemory)

    cs = ContextStore(url, token)
    agent = Agent(client=chat_client, instructions="...", context_providers=[
        ContextStoreHistoryProvider(cs, user_id="ann"), UserInfoMemory(cs, chat_client, user_id="ann")])
    sessions = ContextStoreSessionStore(cs, user_id="ann")
    session = await sessions.get("chat-1") or agent.create_session(session_id="chat-1")
    await agent.run("Hello", session=session)
    await sessions.set("chat-1", session)

An Agent Framework session id is a contextstore session key (one thread, ``main`` by default):

- ``ContextStoreHistoryProvider`` (a ``HistoryProvider``, on the sync protocol):
  ``get_messages`` reads the thread's working context (a collapsed range comes back as its
  summary, a person's note as a message), ``save_messages`` appends what is new, de-duplicating
  a replayed transcript as the framework's own providers do, in one atomic save of any size.
- ``ContextStoreContextProvider`` (a ``ContextProvider``): ``before_run`` adds the thread's
  context blocks, its summary and the user's long-term memories as instructions; ``after_run``
  stores the provider's own state as the thread's provider state, and ``before_run`` restores it
  in a process that starts from an empty session.
- ``UserInfoMemory``: the seed document's example, giving the model exactly the seed's
  instructions (its state as provider state; the facts also remembered as memories).
  See docs/frameworks/agent-framework.md.
- ``ContextStoreSessionStore`` (a ``SessionStore``): the serialized ``AgentSession``.
- ``ContextStoreCallLog`` (a ``ChatMiddleware``, ``Agent(..., middleware=[...])``): logs every
  chat client call of a session as LLMCallStart with the exact messages (and instructions)
  handed to the chat client, and LLMComplete with the usage. The framework assembles that
  prompt itself (history, providers' instructions, tools), not from a contextstore render, so
  the calls carry messages, not a render_id.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent_framework import (
    AgentSession,
    ChatContext,
    ChatMiddleware,
    ContextProvider,
    HistoryProvider,
    Message,
    SessionContext,
    SessionStore,
    SupportsAgentRun,
)
from agent_framework._sessions import filter_new_messages
from pydantic import BaseModel

from contextstore_client import ContextStore, SyncItem, ThreadHandle

KEY = "agent_framework"
PART = "agent_framework_part"  # data key of an event showing part of a message another event holds
SESSION_PROVIDER = "agent_framework.session"
TYPES = {"user": "Message", "assistant": "LLMOutput", "system": "Notification", "tool": "ToolResult"}


class _Threads:
    """One thread handle per Agent Framework session id, found or created on first use."""

    def __init__(self, client: ContextStore, *, user_id: str, agent: str, thread: str) -> None:
        self.client, self.user_id, self.agent, self.name = client, user_id, agent, thread
        self._handles: dict[str, ThreadHandle] = {}

    def __call__(self, session_id: str | None) -> ThreadHandle:
        if not session_id:
            raise ValueError("contextstore keeps sessions by id: run the agent with a session.")
        if session_id not in self._handles:
            self._handles[session_id] = self.client.thread(
                session_id, user_id=self.user_id, agent=self.agent, name=self.name)
        return self._handles[session_id]


def _message(item: SyncItem) -> Message | None:
    """A loaded item as an Agent Framework message (None: not part of the conversation, or a
    part of a message another event holds, _events)."""
    event = item.event
    if isinstance(event.data, dict) and PART in event.data:
        return None
    stored = event.data.get(KEY) if isinstance(event.data, dict) else None
    if isinstance(stored, dict):
        return Message.from_dict(stored)
    if not event.visible or not event.content:
        return None
    # A collapsed range stands as its summary; a note from a person or another framework joins
    # as plain text. The id names the event, so a replay that carries it is not stored again.
    role = event.role if event.role in ("user", "assistant", "system") else "system"
    return Message(role=role, contents=[event.content], message_id=item.key)


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


def _events(message: Message, key: str) -> list[tuple[str, dict[str, Any]]]:
    """The (key, event) pairs of one message, in the shape renders pair: text and the function
    calls after it a ToolCall (calls in ``data.tool_calls``: id, name, arguments), each function
    result its own ToolResult naming its call (``data.tool_call_id``), other messages one event
    of their role. The first event keeps the message whole (``data["agent_framework"]``, the
    message's key); the others (keys ``<key>#1``, ``#2`` ...: a tool message answering parallel
    calls) name it in ``data["agent_framework_part"]``."""
    whole = message.to_dict()
    role = str(message.role)
    contents = [c for c in whole.get("contents") or () if isinstance(c, dict)]
    if not any(c.get("type") in ("function_call", "function_result") for c in contents):
        return [(key, {"type": TYPES.get(role, "Message"), "role": role, "content": message.text or "",
                       "data": {KEY: whole}})]
    events: list[dict[str, Any]] = []
    texts: list[str] = []  # of the open text/call event (events[-1])
    for content in contents:
        kind = content.get("type")
        if kind == "function_result":
            call_id = str(content.get("call_id") or "")
            data: dict[str, Any] = {"tool_call_id": call_id}
            if content.get("exception"):
                data["exception"] = content["exception"]
            events.append({"type": "ToolResult", "role": "tool", "call_id": call_id[:200],
                           "content": _result_text(content.get("result")), "data": data})
            continue
        if kind not in ("function_call", "text"):
            continue
        if not events or events[-1]["type"] == "ToolResult":
            events.append({"type": TYPES.get(role, "Message"), "role": role, "content": "", "data": {}})
            texts = []
        current = events[-1]
        if kind == "function_call":
            call_id = str(content.get("call_id") or "")
            current.update(type="ToolCall", role="assistant")
            current.setdefault("call_id", call_id[:200])
            current["data"].setdefault("tool_calls", []).append(
                {"id": call_id, "name": str(content.get("name") or ""),
                 "arguments": content.get("arguments") or {}})
        elif isinstance(content.get("text"), str):
            texts.append(content["text"])
            current["content"] = "".join(texts)  # as Message.text joins its texts
    pairs = []
    for n, event in enumerate(events):
        if n == 0:
            event["data"] = {KEY: whole, **event["data"]}
            pairs.append((key, event))
        else:
            event["data"][PART] = key
            pairs.append((f"{key}#{n}", event))
    return pairs


def _event(message: Message) -> dict[str, Any]:
    """The event that keeps `message` whole (the first of _events)."""
    return _events(message, "")[0][1]


class ContextStoreHistoryProvider(HistoryProvider):
    """Conversation history as the events of the session's thread (the sync protocol).

    ``save_messages`` de-duplicates a replayed transcript exactly as the framework's own
    ``InMemoryHistoryProvider`` does (its ``filter_new_messages`` against what is stored now),
    and sends any number of messages in one atomic save.
    """

    def __init__(self, client: ContextStore, *, user_id: str = "", agent: str = "agent-framework",
                 thread: str = "main", source_id: str = "contextstore_history", **options: Any):
        super().__init__(source_id, **options)
        self.threads = _Threads(client, user_id=user_id, agent=agent, thread=thread)

    async def get_messages(self, session_id: str | None, *, state: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[Message]:
        loaded = self.threads(session_id).sync_load(KEY)
        return [m for m in (_message(item) for item in loaded.items) if m is not None]

    async def save_messages(self, session_id: str | None, messages: Sequence[Message], *,
                            state: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not messages:
            return
        new = filter_new_messages(await self.get_messages(session_id), messages)
        if not new:
            return
        # A history only grows: appends need no base revision (two processes' turns interleave
        # as in the framework's service-side stores); the key is the message id when it has one.
        self.threads(session_id).sync_save(KEY, items=[
            {"key": key, "event": event} for m in new
            for key, event in _events(m, m.message_id or uuid.uuid4().hex)])


class ContextStoreContextProvider(ContextProvider):
    """Adds the thread's blocks, summary and the user's memories; persists its own state."""

    def __init__(self, client: ContextStore, *, user_id: str = "", agent: str = "agent-framework",
                 thread: str = "main", source_id: str = "contextstore_context",
                 max_memories: int = 20) -> None:
        super().__init__(source_id)
        self.client, self.user_id, self.max_memories = client, user_id, max_memories
        self.threads = _Threads(client, user_id=user_id, agent=agent, thread=thread)

    async def before_run(self, *, agent: SupportsAgentRun, session: AgentSession,
                         context: SessionContext, state: dict[str, Any]) -> None:
        thread = self.threads(context.session_id or session.session_id)
        if not state:  # a fresh process: pick up what the last run stored
            saved = thread.provider_state(self.source_id)
            if saved is not None and isinstance(saved.state, dict):
                state.update(saved.state)
        # The render evaluates live blocks; with the smallest budget it reads almost no history,
        # and only its block and summary sections are used here. Not recorded: it is not what
        # the model is sent (ContextStoreCallLog logs that).
        rendered = thread.context(max_tokens=1, record=False).messages
        parts = [m["content"] for m in rendered if m.get("section") in ("prefix", "summary", "suffix")]
        memories = self.client.recall(user_id=self.user_id, limit=self.max_memories)
        if memories:
            parts.append("What you know about the user:\n" + "\n".join(
                f"- {m.content}" for m in reversed(memories)))
        parts += self.instructions(state)
        if parts:
            context.extend_instructions(self.source_id, parts)

    async def after_run(self, *, agent: SupportsAgentRun, session: AgentSession,
                        context: SessionContext, state: dict[str, Any]) -> None:
        await self.extract(context, state)
        self.threads(context.session_id or session.session_id).put_provider_state(
            self.source_id, dict(state))

    def instructions(self, state: dict[str, Any]) -> list[str]:
        """Extra instructions from the provider's own state (override)."""
        return []

    async def extract(self, context: SessionContext, state: dict[str, Any]) -> None:
        """Learn from the finished run before its state is stored (override)."""


class ContextStoreCallLog(ChatMiddleware):
    """Logs each chat client call of a session to its thread, with the messages it was given."""

    def __init__(self, client: ContextStore, *, user_id: str = "", agent: str = "agent-framework",
                 thread: str = "main") -> None:
        self.threads = _Threads(client, user_id=user_id, agent=agent, thread=thread)

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        session_id = context.session.session_id if context.session is not None else None
        sent = [m.to_dict() for m in context.messages]
        options = dict(context.options or {})
        await call_next()
        if not session_id:  # a call outside a session has no thread to go to
            return
        usage = {} if context.stream else getattr(context.result, "usage_details", None) or {}
        extra = {"instructions": options["instructions"]} if options.get("instructions") else {}
        model = options.get("model_id") or getattr(context.client, "model_id", None) or ""
        self.threads(session_id).log_llm_call(
            str(model), messages=sent, input_tokens=usage.get("input_token_count"),
            output_tokens=usage.get("output_token_count"), **extra)


class UserInfo(BaseModel):
    name: str | None = None
    age: int | None = None


class UserInfoMemory(ContextProvider):
    """The seed document's UserInfoMemory, its state kept in contextstore.

    The model gets exactly the seed's instructions: one string, "Ask the user for their name
    ..." or "The user's name is X.", then the same for the age, joined by one space (the
    seed's Python ``invoking``: ``" ".join(instructions)``). After each run it asks the chat
    client to extract the name and age from the user's messages, as the seed does. The provider
    state (``{"user_info": {...}}``) is the thread's provider state, so a new process resumes
    it; the facts are also remembered as the user's memories (keys ``name`` and ``age``) for
    people and other agents, which adds nothing to this agent's prompt. For blocks, the thread's
    summary and the user's memories in the prompt, add ``ContextStoreContextProvider``.
    """

    def __init__(self, client: ContextStore, chat_client: Any, *, user_id: str = "",
                 agent: str = "agent-framework", thread: str = "main",
                 source_id: str = "user_info_memory") -> None:
        super().__init__(source_id)
        self.client, self.chat_client, self.user_id = client, chat_client, user_id
        self.threads = _Threads(client, user_id=user_id, agent=agent, thread=thread)

    def user_info(self, state: dict[str, Any]) -> UserInfo:
        return UserInfo.model_validate(state.get("user_info") or {})

    async def before_run(self, *, agent: SupportsAgentRun, session: AgentSession,
                         context: SessionContext, state: dict[str, Any]) -> None:
        if not state:  # a fresh process: pick up what the last run stored
            saved = self.threads(context.session_id or session.session_id).provider_state(
                self.source_id)
            if saved is not None and isinstance(saved.state, dict):
                state.update(saved.state)
        info = self.user_info(state)
        lines = (
            "Ask the user for their name and politely decline to answer any questions until "
            "they provide it." if info.name is None else f"The user's name is {info.name}.",
            "Ask the user for their age and politely decline to answer any questions until "
            "they provide it." if info.age is None else f"The user's age is {info.age}.",
        )
        # The seed's Python invoking: Context(instructions=" ".join(instructions)), no newline
        # after the last one (the C# example's AppendLine is not what the Python package runs).
        context.extend_instructions(self.source_id, " ".join(lines))

    async def after_run(self, *, agent: SupportsAgentRun, session: AgentSession,
                        context: SessionContext, state: dict[str, Any]) -> None:
        await self.extract(context, state)
        self.threads(context.session_id or session.session_id).put_provider_state(
            self.source_id, dict(state))

    async def extract(self, context: SessionContext, state: dict[str, Any]) -> None:
        info = self.user_info(state)
        user_messages = [m for m in context.input_messages if str(m.role) == "user"]
        if (info.name is not None and info.age is not None) or not user_messages:
            return
        # As the seed's invoked: the extraction is asked with all the run's request messages
        # (not only the user's), and a failed extraction changes nothing and fails no run.
        try:
            result = await self.chat_client.get_response(list(context.input_messages), options={
                "instructions": "Extract the user's name and age from the message if present. "
                                "If not present return nulls.",
                "response_format": UserInfo,
            })
            found = result.value
        except Exception:
            return
        if not found:
            return
        if info.name is None and found.name:
            info.name = found.name
            self.client.remember(f"The user's name is {info.name}.", user_id=self.user_id,
                                 key="name", data={"name": info.name})
        if info.age is None and found.age:
            info.age = found.age
            self.client.remember(f"The user is {info.age} years old.", user_id=self.user_id,
                                 key="age", data={"age": info.age})
        state["user_info"] = info.model_dump()


class ContextStoreSessionStore(SessionStore):
    """``AgentSession`` snapshots as provider state on the session's thread."""

    def __init__(self, client: ContextStore, *, user_id: str = "", agent: str = "agent-framework",
                 thread: str = "main") -> None:
        super().__init__()
        self.threads = _Threads(client, user_id=user_id, agent=agent, thread=thread)

    async def get(self, session_id: str) -> AgentSession | None:
        self.validate_session_id(session_id)
        saved = self.threads(session_id).provider_state(SESSION_PROVIDER)
        if saved is None or saved.state is None:
            return None
        return AgentSession.from_dict(saved.state)

    async def set(self, session_id: str, session: AgentSession) -> None:
        self.validate_session_id(session_id)
        self.threads(session_id).put_provider_state(SESSION_PROVIDER, session.to_dict())

    async def delete(self, session_id: str) -> None:
        """Forget the snapshot; the conversation's events stay, as everything in contextstore."""
        self.validate_session_id(session_id)
        self.threads(session_id).put_provider_state(SESSION_PROVIDER, None)
