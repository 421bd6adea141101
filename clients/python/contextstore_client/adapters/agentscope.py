"""AgentScope: an ``AgentState`` store addressed by (user_id, session_id, thread).

    from contextstore_client.adapters.agentscope import ContextStoreStateStore

    store = ContextStoreStateStore(ContextStore(url, token))
    state = store.load("alice", "session-001")            # before the call
    agent = Agent(name="helper", system_prompt=prompt, model=model, state=state)
    await agent.reply(UserMsg("alice", "hi"))
    store.save(agent.state, "alice", "session-001",       # after; StaleRevision if someone saved first
               system_prompt=prompt)
    store.clear_context("alice", "session-001")           # AgentScope clearContext

Built on the sync protocol (``/threads/{id}/sync/``): the conversation (``AgentState.context``)
is kept as events, one per message (key: the message id; the message's JSON in
``data["agentscope"]``; its reply id as the run), so it reads as a conversation in the dashboard.
``summary`` (the compression summary) is a user Message event (value in
``data["agentscope_summary"]``) right before the kept messages, where AgentScope's formatters send
it (so renders send it there too, and a clear made in the dashboard clears it, as AgentScope's
clearContext does); every other sub-state (reply, permission, tool, task, middleware) is the
thread's state. The agent's system prompt, which AgentScope keeps outside its state and sends
first on every call, is the thread's ``system_prompt`` prefix block when ``save`` is given it, so
renders send it first too, as AgentScope's formatters do (the text alone, no ``## name`` line).
One save is one transaction on the revision the state was loaded at: a stale
save raises ``StaleRevision`` and writes nothing, neither state nor messages; any number of
messages is sent in parts applied together.

- A message AgentScope rewrites in place (its image limit, a metadata edit) is rewritten in
  place in contextstore: same position, the old version kept as history.
- Messages AgentScope drops (its compression keeps a suffix and a new summary) are retired
  (status ``removed``, kept in history); the new summary is written in place of the last one
  dropped (so it stands before the kept suffix), the earlier summary retired.
- What people and workers add comes back as messages at their place in the context: a note as a
  message of its role, the summary of a collapse made in contextstore as a user message holding
  the summary (the form AgentScope gives its own summary) in place of the collapsed range. Their
  ids are ``cs:<seq>``, so they are never sent back as new.

``store.log_llm_calls(model, user_id, session_id)`` logs every call of a chat model to the
slot's thread: LLMCallStart with the messages as the model's own formatter puts them on the wire
(OpenAI or Anthropic shape), and LLMComplete with the usage. AgentScope formats its prompt
itself from ``AgentState.context``, not from a contextstore render, so the calls carry
messages, not a render_id.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentscope.state import AgentState

from contextstore_client import ContextStore, Event, StaleRevision, SyncTracker, ThreadHandle

KEY = "agentscope"
PART = "agentscope_part"  # data key of an event showing part of a message another event holds
ROLE_TYPES = {"user": "Message", "assistant": "LLMOutput", "system": "Notification"}
SUMMARY = "agentscope_summary"  # data key of the event holding AgentScope's compression summary
NEW_SUMMARY_KEY = "agentscope:summary"  # its key when no dropped message's place is free for it
# The prefix block holding the agent's system prompt: renders send a block of this name first
# (order), as its text alone (contextstore.render_format.SYSTEM_PROMPT_BLOCK), as AgentScope does.
SYSTEM_PROMPT_BLOCK = "system_prompt"

if TYPE_CHECKING:
    from agentscope.message import Msg

__all__ = ["ContextStoreStateStore", "StaleRevision"]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict)
                     and b.get("type") in ("text", "thinking") and isinstance(b.get("text"), str))


def _event(message: dict[str, Any], run_id: str = "") -> dict[str, Any]:
    return {"type": ROLE_TYPES.get(message.get("role", ""), "Message"),
            "role": message.get("role", ""), "content": _text(message),
            "data": {KEY: message}, "run_id": run_id}


def _result_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "\n".join(b["text"] for b in output or () if isinstance(b, dict)
                     and b.get("type") == "text" and isinstance(b.get("text"), str))


def _events(message: dict[str, Any], run_id: str = "") -> list[tuple[str, dict[str, Any]]]:
    """The (key, event) pairs of one message. AgentScope keeps a whole reply in one message
    (text, tool_call and tool_result blocks in turn), so a message with tool blocks is split
    where renders pair them: text and the calls after it a ToolCall (calls in
    ``data.tool_calls``), each result a ToolResult (``data.tool_call_id``), text after results
    an LLMOutput, a hint block (AgentScope's system reminders, which its formatters send as a
    user message where the block stands) a user Message. The first event keeps the message
    whole (``data["agentscope"]``, key = its id); the others (keys ``<id>#1``, ``#2`` ...)
    name it in ``data["agentscope_part"]``."""
    blocks = message.get("content")
    if not isinstance(blocks, list) or not any(
            isinstance(b, dict) and b.get("type") in ("tool_call", "tool_result", "hint") for b in blocks):
        return [(message["id"], _event(message, run_id))]
    role = message.get("role", "")
    events: list[dict[str, Any]] = []
    texts: list[str] = []  # of the open text/call event (events[-1])
    closed = True  # no open text/call event: the next text or call opens one
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "hint":  # AgentScope's formatters send a hint as a user message in its place
            events.append({"type": "Message", "role": "user", "content": _result_text(block.get("hint")),
                           "data": {}})
            texts, closed = [], True
            continue
        if kind == "tool_result":
            call_id = str(block.get("id") or "")
            events.append({"type": "ToolResult", "role": "tool", "call_id": call_id[:200],
                           "content": _result_text(block.get("output")), "data": {"tool_call_id": call_id}})
            texts, closed = [], True
            continue
        if closed:
            events.append({"type": ROLE_TYPES.get(role, "Message"), "role": role, "content": "", "data": {}})
            texts, closed = [], False
        current = events[-1]
        if kind == "tool_call":
            call_id = str(block.get("id") or "")
            current.update(type="ToolCall", role="assistant")
            current.setdefault("call_id", call_id[:200])
            current["data"].setdefault("tool_calls", []).append(
                {"id": call_id, "name": str(block.get("name") or ""), "arguments": block.get("input", "")})
        elif kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
            current["content"] = "\n".join(texts)
    pairs = []
    for n, event in enumerate(events):
        event["run_id"] = run_id
        if n == 0:
            event["data"][KEY] = message
            pairs.append((message["id"], event))
        else:
            event["data"][PART] = message["id"]
            pairs.append((f"{message['id']}#{n}", event))
    return pairs


def _message(key: str, event: Event) -> dict[str, Any] | None:
    """A loaded event as an AgentScope message dict (None: not part of the conversation, or a
    part of a message another event holds, _events)."""
    if isinstance(event.data, dict) and PART in event.data:
        return None
    stored = event.data.get(KEY) if isinstance(event.data, dict) else None
    if isinstance(stored, dict):
        return {**stored, "id": key}
    if not event.visible or not event.content:
        return None
    role = event.role if event.role in ("user", "assistant") else "user"
    return {"id": key, "name": role, "role": role,
            "content": [{"type": "text", "text": event.content}],
            "metadata": {"contextstore": {"type": event.type, "seq": event.seq}},
            "created_at": event.occurred_at or ""}


def _summary_event(summary: Any) -> dict[str, Any]:
    """AgentScope's compression summary as the user message its formatters send right after the
    system prompt (the state's own value kept in ``data["agentscope_summary"]``)."""
    text = summary if isinstance(summary, str) else "\n".join(
        b.get("text", "") for b in summary if isinstance(b, dict))
    return {"type": "Message", "role": "user", "content": text, "data": {SUMMARY: summary}}


class ContextStoreStateStore:
    """Loads an AgentState before a call and saves it after, with compare-and-swap."""

    def __init__(self, client: ContextStore, *, agent: str = "agentscope") -> None:
        self.client = client
        self.agent = agent
        self._slots: dict[tuple[str, str, str], SyncTracker] = {}
        # Per slot, as loaded: the summary event's key and the context's message ids, in order.
        self._loaded: dict[tuple[str, str, str], tuple[str | None, list[str]]] = {}
        self._system: dict[tuple[str, str, str], str] = {}  # per slot, the system prompt put last

    def thread(self, user_id: str, session_id: str, thread: str = "main") -> ThreadHandle:
        return self.client.thread(session_id, user_id=user_id, agent=self.agent, name=thread)

    def load(self, user_id: str, session_id: str, thread: str = "main") -> AgentState:
        """The slot's AgentState (a fresh one for a new slot, with session_id set)."""
        tracker = SyncTracker(self.thread(user_id, session_id, thread), KEY)
        loaded = tracker.load()
        tracker.digests = {}
        summaries = [i for i in loaded.items if isinstance(i.event.data, dict) and SUMMARY in i.event.data]
        summary_keys = {i.key for i in summaries}
        messages = [m for m in (_message(i.key, i.event) for i in loaded.items
                                if i.key not in summary_keys) if m is not None]
        data = dict(loaded.state)
        data.setdefault("session_id", session_id)
        data["summary"] = self._summary(loaded.summary, loaded.document)
        if summaries:  # saved as an event (older saves kept it as the thread's summary)
            data["summary"] = summaries[-1].event.data[SUMMARY]
        data["context"] = messages
        state = AgentState.model_validate(data)
        # What an unchanged message looks like when saved: not a change.
        for message in state.model_dump(mode="json")["context"]:
            for key, event in _events(message):
                tracker.seen(key, event)
        if summaries:
            tracker.seen(summaries[-1].key, _summary_event(state.model_dump(mode="json")["summary"]))
        self._slots[(user_id, session_id, thread)] = tracker
        self._loaded[(user_id, session_id, thread)] = (
            summaries[-1].key if summaries else None, [m["id"] for m in messages])
        return state

    def save(self, state: AgentState, user_id: str, session_id: str, thread: str = "main", *,
             system_prompt: str | None = None) -> int:
        """Write `state` based on the revision it was loaded at; return the new revision.

        `system_prompt`: the agent's system prompt (the ``system_prompt`` it was built with, or
        with skills, a workspace or middlewares what ``await agent._get_system_prompt()`` gives),
        which AgentScope sends first on every call but keeps outside its state: kept as the
        thread's ``system_prompt`` prefix block (SYSTEM_PROMPT_BLOCK), which renders send first,
        as is. None leaves the kept one. Raises StaleRevision (and writes nothing) when another
        process saved the slot since.
        """
        tracker = self._tracker(user_id, session_id, thread)
        dump = state.model_dump(mode="json")
        messages: list[dict[str, Any]] = dump.pop("context")
        summary = dump.pop("summary")
        items = [pair for m in messages for pair in _events(m, state.reply_id or "")]
        if summary:
            items.insert(0, (self._summary_key(user_id, session_id, thread, messages),
                             _summary_event(summary)))
        result = tracker.save(items, state=dump, summary="")
        slot = (user_id, session_id, thread)
        if system_prompt is not None and self._system.get(slot) != system_prompt:
            # put unchanged, a block keeps its version: only a new prompt is a change
            tracker.thread.put_block(SYSTEM_PROMPT_BLOCK, value=system_prompt, placement="prefix",
                                     order=-(2**31))
            self._system[slot] = system_prompt
        return result["revision"] if result else tracker.revision or 0

    def log_llm_calls(self, model: Any, user_id: str, session_id: str, thread: str = "main") -> Any:
        """Log every call of the chat `model` (an AgentScope ChatModelBase) to the slot's thread;
        returns the model."""
        handle = self.thread(user_id, session_id, thread)
        call_api = model._call_api

        async def logged(model_name: str, messages: list[Msg], **kwargs: Any) -> Any:
            result = await call_api(model_name, messages=messages, **kwargs)
            formatter = getattr(model, "formatter", None)
            sent = (await formatter.format(messages) if formatter is not None
                    else [m.model_dump(mode="json") for m in messages])
            usage = getattr(result, "usage", None)
            handle.log_llm_call(str(model_name), messages=json.loads(json.dumps(sent, default=str)),
                                input_tokens=getattr(usage, "input_tokens", None),
                                output_tokens=getattr(usage, "output_tokens", None))
            return result

        model._call_api = logged
        return model

    def clear_context(self, user_id: str, session_id: str, thread: str = "main") -> AgentState:
        """AgentScope clearContext: context and summary go, every other sub-state stays.

        The cleared messages remain in contextstore (status cleared), as AgentScope keeps full
        history; the returned state is what the next call should use.
        """
        self.thread(user_id, session_id, thread).clear_context()
        return self.load(user_id, session_id, thread)

    @staticmethod
    def _summary(text: str, document: Any) -> Any:
        """The summary as AgentScope had it: blocks are kept in the namespace document, and
        only while the thread still has a summary (a clear empties it)."""
        blocks = document.get("summary") if isinstance(document, dict) else None
        return blocks if text and isinstance(blocks, list) else text

    def _summary_key(self, user_id: str, session_id: str, thread: str,
                     messages: list[dict[str, Any]]) -> str:
        """Where the summary event goes: in place of the last message a compression dropped (it
        stood right before the kept ones, where AgentScope puts the summary), else where the
        summary was, else a new key (first in the save, so before the messages it sends)."""
        summary_key, loaded_ids = self._loaded.get((user_id, session_id, thread), (None, []))
        kept = {m["id"] for m in messages}
        dropped = [i for i in loaded_ids if i not in kept]
        if dropped and not dropped[-1].startswith("cs:"):
            return dropped[-1]
        return summary_key or NEW_SUMMARY_KEY

    def _tracker(self, user_id: str, session_id: str, thread: str) -> SyncTracker:
        key = (user_id, session_id, thread)
        if key not in self._slots:
            # Saving a state this process never loaded: it may only create the slot's first state.
            tracker = SyncTracker(self.thread(user_id, session_id, thread), KEY)
            tracker.revision = 0
            self._slots[key] = tracker
        return self._slots[key]
