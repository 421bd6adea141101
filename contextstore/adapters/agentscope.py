"""AgentScope: an ``AgentState`` store addressed by (user_id, session_id, thread).

    from contextstore.adapters.agentscope import ContextStoreStateStore

    store = ContextStoreStateStore(ContextStore(url, token))
    state = store.load("alice", "session-001")            # before the call
    agent = Agent(name="helper", system_prompt=..., model=model, state=state)
    await agent.reply(UserMsg("alice", "hi"))
    store.save(agent.state, "alice", "session-001")       # after; StaleRevision if someone saved first
    store.clear_context("alice", "session-001")           # AgentScope clearContext

The conversation (``AgentState.context``) is kept as events, one per message (the message's JSON
in ``data["agentscope"]``, its reply id as the run), so it reads as a conversation in the
dashboard and a person's collapse or clear-context there is what the agent loads next. Everything
else (summary, reply, permission, tool, task and middleware sub-state) is the thread's state,
written with the revision it was loaded at: a stale save raises ``StaleRevision`` and writes
nothing. Messages AgentScope dropped when it compressed its context are collapsed under the new
summary, so they leave the working context but are never deleted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from agentscope.state import AgentState

from contextstore.client import ContextStore, StaleRevision, ThreadHandle

KEY = "agentscope"
ROLE_TYPES = {"user": "Message", "assistant": "LLMOutput", "system": "Notification"}

__all__ = ["ContextStoreStateStore", "StaleRevision"]


def _digest(message: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict)
                     and b.get("type") in ("text", "thinking") and isinstance(b.get("text"), str))


@dataclass
class _Slot:
    """What one process last read or wrote for one (user, session, thread)."""

    thread: ThreadHandle
    revision: int = 0
    stored: list[tuple[str, str, int]] = field(default_factory=list)  # (msg id, digest, seq)


class ContextStoreStateStore:
    """Loads an AgentState before a call and saves it after, with compare-and-swap."""

    def __init__(self, client: ContextStore, *, agent: str = "agentscope") -> None:
        self.client = client
        self.agent = agent
        self._slots: dict[tuple[str, str, str], _Slot] = {}

    def thread(self, user_id: str, session_id: str, thread: str = "main") -> ThreadHandle:
        return self.client.thread(session_id, user_id=user_id, agent=self.agent, name=thread)

    def load(self, user_id: str, session_id: str, thread: str = "main") -> AgentState:
        """The slot's AgentState (a fresh one for a new slot, with session_id set)."""
        handle = self.thread(user_id, session_id, thread)
        state = handle.state()
        slot = _Slot(handle, state.revision)
        latest: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for event in handle.iter_events(status="active"):
            message = event.data.get(KEY) if isinstance(event.data, dict) else None
            if not isinstance(message, dict) or not event.visible:
                continue
            if message["id"] not in latest:
                order.append(message["id"])
            latest[message["id"]] = message  # a message saved again later is its newer version
            slot.stored.append((message["id"], _digest(message), event.seq))
        self._slots[(user_id, session_id, thread)] = slot
        data = dict(state.state)
        data.setdefault("session_id", session_id)
        data["context"] = [latest[i] for i in order]
        return AgentState.model_validate(data)

    def save(self, state: AgentState, user_id: str, session_id: str, thread: str = "main") -> int:
        """Write `state` based on the revision it was loaded at; return the new revision.

        Raises StaleRevision (and writes nothing) when another process saved the slot since.
        """
        slot = self._slot(user_id, session_id, thread)
        dump = state.model_dump(mode="json")
        messages: list[dict[str, Any]] = dump.pop("context")
        written = slot.thread.put_state(dump, reason="agentscope save", if_match=slot.revision)
        slot.revision = written.revision
        self._sync_messages(slot, messages, run_id=state.reply_id, summary=dump.get("summary"))
        return slot.revision

    def clear_context(self, user_id: str, session_id: str, thread: str = "main") -> AgentState:
        """AgentScope clearContext: context and summary go, every other sub-state stays.

        The cleared messages remain in contextstore (status cleared), as AgentScope keeps full
        history; the returned state is what the next call should use.
        """
        state = self.load(user_id, session_id, thread)
        state.context = []
        state.summary = ""
        slot = self._slots[(user_id, session_id, thread)]
        dump = state.model_dump(mode="json")
        dump.pop("context")
        written = slot.thread.put_state(dump, reason="agentscope clear_context",
                                        if_match=slot.revision)
        slot.thread.clear_context()
        # clear-context records exactly one revision; were another writer in between, the next
        # save would be refused as stale, which is the safe way round.
        slot.revision = written.revision + 1
        slot.stored = []
        return state

    def _slot(self, user_id: str, session_id: str, thread: str) -> _Slot:
        key = (user_id, session_id, thread)
        if key not in self._slots:
            # Saving a state this process never loaded: it may only create the slot's first state.
            self._slots[key] = _Slot(self.thread(user_id, session_id, thread))
        return self._slots[key]

    def _sync_messages(self, slot: _Slot, messages: list[dict[str, Any]], *, run_id: str,
                       summary: Any) -> None:
        """Append new or changed messages; collapse stored ones the context no longer holds."""
        current = {m["id"]: _digest(m) for m in messages}
        known = {(mid, digest) for mid, digest, _ in slot.stored}
        gone = [seq for mid, digest, seq in slot.stored if current.get(mid) != digest]
        new = [m for m in messages if (m["id"], current[m["id"]]) not in known]
        appended = slot.thread.append([{
            "type": ROLE_TYPES.get(m.get("role"), "Message"), "role": m.get("role", ""),
            "content": _text(m), "data": {KEY: m}, "run_id": run_id,
            "client_id": f"{KEY}:{m['id']}:{current[m['id']][:16]}",
        } for m in new]) if new else []
        summary_text = summary if isinstance(summary, str) else json.dumps(summary)
        for start, end in _runs(sorted(gone)):
            slot.thread.collapse(start, end, summary_text or "(replaced by a newer version)")
        kept = [(mid, digest, seq) for mid, digest, seq in slot.stored if current.get(mid) == digest]
        slot.stored = kept + [(m["id"], current[m["id"]], a.seq) for m, a in zip(new, appended,
                                                                                  strict=True)]


def _runs(seqs: list[int]) -> list[tuple[int, int]]:
    """Consecutive seqs grouped into inclusive ranges: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for seq in seqs:
        if runs and runs[-1][1] == seq - 1:
            runs[-1] = (runs[-1][0], seq)
        else:
            runs.append((seq, seq))
    return runs
