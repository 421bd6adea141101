"""LangGraph: a checkpointer kept in contextstore (langgraph 1.2.22, langgraph-checkpoint 4.3.2);
its long-term store, ContextStoreStore, is in langgraph_store.py (imported here).

    from contextstore_client.adapters.langgraph import ContextStoreSaver

    graph = builder.compile(checkpointer=ContextStoreSaver(ContextStore(url, token)))
    graph.invoke(inputs, {"configurable": {"thread_id": "conversation-42"}})

Each LangGraph thread is a contextstore session (app ``langgraph``, key = thread_id), each
checkpoint namespace one of its threads (``main`` for the root, ``ns:<checkpoint_ns>`` for a
subgraph). A checkpoint is a ``Checkpoint`` event (client_id = checkpoint id, occurred_at =
its ts) whose data is readable: parent id, namespace, metadata, channel versions. The
serialized checkpoint with its metadata after it (one row: ``cp/<id>``, _checkpoint_blob) and
the channel values a put makes new (``ch/<channel>/<version>``; an emptied channel stores none)
are typed binary blobs, and pending writes are last-write-wins blobs
``w/<checkpoint id>/<task id>/<idx>`` with readable meta (task, channel, path). Checkpoints
stored before, their metadata a blob ``md/<id>`` of its own beside "empty" blobs, read the
same (_checkpoint_parts).

Each checkpoint event names its blobs in ``data.blob_refs`` (keys, and the prefix of its
pending writes), so a read asking for ``event_blobs`` gets them with the events.

The conversation reads as one: the LangChain messages of the ``messages`` channel
(``messages_channel``) are recorded as events in the same commit as the checkpoint that first
holds them, before its Checkpoint event (message_event: user and system messages Message, AI
messages LLMOutput, or ToolCall with ``data.tool_calls`` when they call tools, tool messages
ToolResult with ``data.tool_call_id``), so the thread page, search and renders show them. Each
message once per namespace thread, client_id = its id: a put sends only those this saver does
not know to be recorded (it learns them from its own puts and from get_tuple's checkpoint); one
the thread holds already is skipped by the server, or refused (409) when it differs, and then
the recorded ids are read and the rest committed. A branch from an earlier checkpoint (replay, fork,
update_state) adds its new messages where first seen; a message edited under its id, or removed
(RemoveMessage), keeps its first recorded form in the thread (the checkpoints hold LangGraph's
state exactly). A put whose messages the server refuses still stores its checkpoint
(_PutPlan).

Requests: put 1 (one commit: checkpoint and new messages), put_writes 1, get_tuple 1 (the
checkpoint event with its blobs), list of every checkpoint 1 (the events and all the
namespace's blobs), list with a limit, before or filter 1, delete_thread 1, copy_thread 1 (into
a thread id not used yet: an existing target is a Conflict), prune 1 (``keep_latest``;
``delete`` deletes each thread, 1 each), delete_for_runs 1. Checkpoints stored before blob_refs
existed cost one more request per ~10 of them (their blob keys fill a request line). A config
without checkpoint_ns lists the root namespace only. Pruned and run-deleted checkpoints leave
the history (kept for audit, as ``removed``) with their own blobs and pending writes; channel
values stay, as later checkpoints may share them.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from contextstore_client import (
    AsyncContextStore,
    Conflict,
    ContextStore,
    ContextStoreError,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
)
from contextstore_client.adapters.langgraph_store import ContextStoreStore

APP = "langgraph"
# commit_agent_session's (app, user_id, key), as the sync and async methods pass it on
SessionArgs = tuple[str, str, str]
TYPE = "Checkpoint"
# A checkpoint's own blobs, deleted with it (its channel values may be shared with later ones);
# md/ holds the metadata of a checkpoint stored before it went into the checkpoint's blob.
CHECKPOINT_BLOBS = ["cp/{client_id}", "md/{client_id}", "w/{client_id}/"]
# The checkpoint's blob meta naming its metadata's type and where its bytes start in the blob.
METADATA_IN_CHECKPOINT = "metadata"
PRUNE_STRATEGIES = ("keep_latest", "delete")
# Every blob of a thread: what a list of all its checkpoints reads, in one request.
THREAD_BLOB_PREFIXES = ("cp/", "md/", "ch/", "w/")
BLOB_QUERY_BUDGET = 3000  # characters of blob keys in one GET (gunicorn takes a 4,094-byte line)
MAX_KEYS_PER_READ = 500  # the server's limit of keys and prefixes per read

# The event types a message takes (message_event); the read of recorded messages asks for them.
MESSAGE_TYPES = ("Message", "LLMOutput", "ToolCall", "ToolResult")
MESSAGES_CHANNEL = "messages"
# The rest of a long unrecorded history goes with the next puts (the server takes 10 MB a request).
MAX_MESSAGES_PER_PUT = 500
MAX_MESSAGE_CHARS_PER_PUT = 2_000_000
CONTENT_BYTES = 120_000  # a message's text in its event is cut here (the server takes 256 kB)
BLOCK_CHARS = 4096  # a non-text content block (an image …) longer than this as JSON is named only
KNOWN_THREADS = 1024  # namespaces whose recorded message ids a saver remembers
ROLE_TYPES = {"user": "Message", "human": "Message", "system": "Message", "developer": "Message",
              "assistant": "LLMOutput", "ai": "LLMOutput", "tool": "ToolResult", "function": "ToolResult"}
ROLES = {"human": "user", "ai": "assistant", "function": "tool"}

__all__ = ["ContextStoreSaver", "ContextStoreStore", "make_test_saver", "message_event"]


def _thread_name(checkpoint_ns: str) -> str:
    return f"ns:{checkpoint_ns}" if checkpoint_ns else "main"


def _readable(value: Any) -> Any:
    """A JSON copy of metadata for display and filtering (the exact value is a blob)."""
    return json.loads(json.dumps(value, default=str))


def _clean(value: Any) -> Any:
    """A JSON copy of a message's value the server takes: no NaN or infinity (a string then),
    no lone surrogate (replaced); the exact value is in the checkpoint's blobs."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(str(value), ensure_ascii=False)
    return json.loads(text.encode("utf-8", "replace").decode("utf-8"))


def _cut(text: str) -> tuple[str, int]:
    """`text` as an event's content: cut at CONTENT_BYTES of UTF-8 (and the whole length, or 0)."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= CONTENT_BYTES:
        return raw.decode("utf-8"), 0
    return raw[:CONTENT_BYTES].decode("utf-8", "ignore"), len(text)


def _name(value: str) -> str:
    """An id as an event's call_id: at most 200 characters, no NUL (data keeps it exact)."""
    return value.replace("\x00", "")[:200]


def _content_text(content: Any) -> str:
    """The text of a message's content: the string, or its text blocks joined as LangChain's
    ``message.text`` joins them."""
    if isinstance(content, str):
        return content
    texts = []
    for block in content or ():
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
    return "".join(texts)


def _thinking_parts(message: BaseMessage) -> list[dict[str, Any]]:
    """A message's reasoning as thinking parts (Anthropic's blocks as they are, with their
    signature; LangChain's and OpenAI's reasoning blocks and reasoning_content as text)."""
    parts: list[dict[str, Any]] = []
    for block in message.content if isinstance(message.content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("thinking", "redacted_thinking"):
            parts.append(_clean(block))
        elif block.get("type") == "reasoning":
            text = block.get("reasoning")
            if not isinstance(text, str):
                text = "".join(s["text"] for s in block.get("summary") or ()
                               if isinstance(s, dict) and isinstance(s.get("text"), str))
            if text:
                parts.append({"type": "thinking", "thinking": text})
    reasoning = message.additional_kwargs.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append({"type": "thinking", "thinking": reasoning})
    return parts


# Content blocks the event holds elsewhere: its text, thinking parts and tool calls.
SHOWN_BLOCKS = ("text", "thinking", "redacted_thinking", "reasoning", "tool_use", "tool_call",
                "tool_call_chunk", "function_call")


def _other_blocks(content: Any) -> list[Any]:
    """The content blocks the event shows nowhere else (images, files, ...), for data; one
    longer than BLOCK_CHARS as JSON is named by its type and size only."""
    blocks = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") in SHOWN_BLOCKS):
            continue
        clean = _clean(block)
        size = len(json.dumps(clean))
        blocks.append(clean if size <= BLOCK_CHARS else {
            "type": clean.get("type") if isinstance(clean, dict) else None, "omitted_chars": size})
    return blocks


def _kind(message: BaseMessage) -> tuple[str, str]:
    """(event type, role) of a message."""
    if isinstance(message, AIMessage):
        return ("ToolCall" if message.tool_calls else "LLMOutput"), "assistant"
    if isinstance(message, ToolMessage | FunctionMessage):
        return "ToolResult", "tool"
    if isinstance(message, SystemMessage):
        return "Message", "system"
    if isinstance(message, HumanMessage):
        return "Message", "user"
    role = message.role if isinstance(message, ChatMessage) else message.type
    role = ROLES.get(role, role)
    return ROLE_TYPES.get(role, "Message"), role if role in ("user", "assistant", "system", "tool",
                                                              "developer") else ""


def message_event(message: BaseMessage) -> dict[str, Any] | None:
    """The contextstore event for one LangChain message (None for a RemoveMessage): a user or
    system message a Message, an AI message an LLMOutput, or a ToolCall when it calls tools
    (its text the content, its calls in data.tool_calls: id, name, arguments), a tool message
    a ToolResult naming its call (data.tool_call_id). Reasoning goes in thinking parts; other
    content blocks and the model, usage and name in data. A pure function of the message, so
    sending it again is idempotent; the client_id is set by the caller (_message_client_id)."""
    if message.type == "remove":
        return None
    etype, role = _kind(message)
    content, whole = _cut(_content_text(message.content))
    data: dict[str, Any] = {"message_type": message.type}
    event: dict[str, Any] = {"type": etype, "role": role, "content": content}
    if isinstance(message, AIMessage):
        calls = [{"id": c.get("id") or "", "name": c["name"], "arguments": _clean(c.get("args") or {})}
                 for c in message.tool_calls]
        if calls:
            data["tool_calls"] = calls
            event["call_id"] = _name(calls[0]["id"])
        if message.invalid_tool_calls:
            data["invalid_tool_calls"] = _clean(message.invalid_tool_calls)
        model = message.response_metadata.get("model_name") or message.response_metadata.get("model")
        if isinstance(model, str) and model:
            data["model"] = model
        if message.usage_metadata:
            data["usage"] = _clean(dict(message.usage_metadata))
    elif isinstance(message, ToolMessage):
        event["call_id"] = _name(message.tool_call_id)
        data.update(tool_call_id=message.tool_call_id, status=message.status)
    if message.name:
        data["name"] = _clean(message.name)
    blocks = _other_blocks(message.content)
    if blocks:
        data["blocks"] = blocks
    if whole:
        data["content_chars"] = whole  # the text was cut; the checkpoint keeps it whole
    parts = _thinking_parts(message)
    if parts:
        event["parts"] = parts
    event["data"] = data
    return event


def _message_client_id(message: BaseMessage, event: dict[str, Any] | None, index: int) -> str:
    """A message's client_id: its id (add_messages gives every message one), hashed when longer
    than a client_id; without an id, its place in the list and its event's hash."""
    if isinstance(message.id, str) and message.id:
        mid = message.id
        return mid if len(mid) <= 200 else "id:" + hashlib.sha256(mid.encode()).hexdigest()
    digest = hashlib.sha256(json.dumps(event, sort_keys=True).encode()).hexdigest()[:32]
    return f"noid:{index}:{digest}"


@dataclass
class _PutPlan:
    """One put's commit, and what to do when the server refuses its message events: the
    checkpoint is never lost to them. A message stored already under its id with other content
    (edited by update_state, or recorded by a checkpoint this process did not see) is a 409:
    the thread's recorded ids are read and the others sent again; any other refusal of a
    message event (or a second 409) commits the checkpoint alone, its data saying so."""

    args: SessionArgs
    kwargs: dict[str, Any]
    known_key: tuple[str, str]
    ids: list[str]  # the channel's messages, in order: all recorded once this commits
    messages: list[dict[str, Any]]  # the events of those not known to be recorded
    complete: bool = True  # False: some were left out (too many for one put, or refused)
    read_stored: bool = False
    stored: list[str] = field(default_factory=list)  # ids the thread was read to hold
    given_up: list[str] = field(default_factory=list)  # refused: not sent again by this saver

    def commit_kwargs(self) -> dict[str, Any]:
        checkpoint = self.kwargs["events"][-1]
        if self.ids:  # what get_tuple reads to know the checkpoint's messages are all recorded
            checkpoint["data"]["messages_recorded"] = self.complete
        return {**self.kwargs, "events": [*self.messages, checkpoint]}

    def refused(self, error: ContextStoreError) -> str:
        """What to do about a refused commit: "read" the stored ids (stored_ids) and commit
        again, "retry" without the messages, or "" (not about them: raise it)."""
        if not self.messages or not isinstance(error, Conflict | InvalidInput | PayloadTooLarge):
            return ""
        named = [int(key[7:key.index("]")]) for key in error.details
                 if key.startswith("events[") and key[7:key.find("]")].isdigit()]
        whole_body = not named and isinstance(error, PayloadTooLarge)  # too large, no event named
        if not whole_body and not any(i < len(self.messages) for i in named):
            return ""
        if isinstance(error, Conflict) and error.code == "idempotency_conflict" and not self.read_stored:
            self.read_stored = True
            return "read"
        self.given_up = [e["client_id"] for e in self.messages]
        self.messages, self.complete = [], False
        return "retry"

    def stored_ids(self, read: dict[str, Any] | None) -> None:
        self.stored = [e["client_id"] for e in (read or {}).get("events", ())]
        stored = set(self.stored)
        self.messages = [e for e in self.messages if e["client_id"] not in stored]

    def read_kwargs(self) -> dict[str, Any]:
        return {"thread": self.kwargs["thread"], "types": list(MESSAGE_TYPES), "fields": ["client_id"]}


def _whole(filter: dict[str, Any] | None, before: RunnableConfig | None, limit: int | None) -> bool:
    """Whether a list reads every checkpoint of its namespace (and so wants all its blobs)."""
    return not filter and before is None and limit is None


def _blob_keys(data: dict[str, Any], *, metadata_apart: bool = True) -> list[str]:
    """The blob keys of a checkpoint: its own, its metadata's where it is a blob of its own (as
    puts stored it before METADATA_IN_CHECKPOINT), its channel values'."""
    cid = data["checkpoint_id"]
    return [f"cp/{cid}", *([f"md/{cid}"] if metadata_apart else ()),
            *(f"ch/{k}/{v}" for k, v in (data.get("channel_versions") or {}).items())]


def _blob_refs(data: dict[str, Any]) -> dict[str, list[str]]:
    """What a checkpoint event names for the server's event_blobs read: its own blob (its
    metadata inside), its channel values and the prefix of its pending writes."""
    return {"keys": _blob_keys(data, metadata_apart=False), "prefixes": [f"w/{data['checkpoint_id']}/"]}


def _checkpoint_blob(cid: str, checkpoint: tuple[str, bytes], metadata: tuple[str, bytes]) -> dict[str, Any]:
    """The checkpoint's blob, its metadata after it: one row, not two (the metadata's type and
    where it starts in meta[METADATA_IN_CHECKPOINT]); each part the serializer's exact bytes."""
    return {"key": f"cp/{cid}", "data": checkpoint[1] + metadata[1], "content_type": checkpoint[0],
            "meta": {"checkpoint_id": cid, METADATA_IN_CHECKPOINT: [metadata[0], len(checkpoint[1])]}}


def _checkpoint_parts(blobs: dict[str, Any], cid: str) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    """The typed bytes of a checkpoint and of its metadata, from its blob (_checkpoint_blob) or,
    as puts stored them before, from two."""
    blob = blobs[f"cp/{cid}"]
    folded = (blob.get("meta") or {}).get(METADATA_IN_CHECKPOINT)
    if folded is None:
        metadata = blobs[f"md/{cid}"]
        return (blob["content_type"], blob["data"]), (metadata["content_type"], metadata["data"])
    kind, start = folded
    return (blob["content_type"], blob["data"][:start]), (kind, blob["data"][start:])


class _Writes:
    """The pending writes' blobs (w/<checkpoint id>/<task id>/<idx>) of a read, found by
    checkpoint in a sorted list of their keys (a list of 2,000 checkpoints scanned every blob
    once per checkpoint)."""

    def __init__(self, blobs: dict[str, Any]) -> None:
        self.blobs = blobs
        self.keys = sorted(k for k in blobs if k.startswith("w/"))

    def of(self, cid: str) -> list[dict[str, Any]]:
        prefix = f"w/{cid}/"
        found = []
        for key in self.keys[bisect.bisect_left(self.keys, prefix):]:
            if not key.startswith(prefix):
                break
            found.append(self.blobs[key])
        return found


class ContextStoreSaver(BaseCheckpointSaver[str]):
    """BaseCheckpointSaver over contextstore, sync and async."""

    def __init__(self, client: ContextStore | AsyncContextStore, *, namespace: str = "",
                 serde: SerializerProtocol | None = None, messages_channel: str | None = MESSAGES_CHANNEL):
        """`messages_channel`: the state key whose LangChain messages are recorded as events
        (None records none)."""
        super().__init__(serde=serde)
        if "/" in namespace:
            raise ValueError("namespace must not contain '/'")
        self.client = client
        self.app = f"{namespace}/{APP}" if namespace else APP
        self.messages_channel = messages_channel
        self._owned = False
        # (thread_id, checkpoint_ns) -> client ids of the messages known to be recorded there,
        # so a put sends only new messages; the newest KNOWN_THREADS namespaces.
        self._known: OrderedDict[tuple[str, str], set[str]] = OrderedDict()
        self._known_lock = threading.Lock()

    # -- the messages channel as events (one event per message, once per namespace thread)

    def _known_ids(self, key: tuple[str, str]) -> set[str] | frozenset[str]:
        """The ids known for `key` (only read: _remember adds under the lock)."""
        return self._known.get(key) or frozenset()

    def _remember(self, key: tuple[str, str], ids: Sequence[str]) -> None:
        with self._known_lock:
            known = self._known.setdefault(key, set())
            known.update(ids)
            self._known.move_to_end(key)
            while len(self._known) > KNOWN_THREADS:
                self._known.popitem(last=False)

    def _forget(self, thread_id: str, ns: str | None = None) -> None:
        with self._known_lock:
            for key in [k for k in self._known if k[0] == thread_id and (ns is None or k[1] == ns)]:
                del self._known[key]

    def _channel_messages(self, values: dict[str, Any]) -> list[BaseMessage]:
        value = values.get(self.messages_channel) if self.messages_channel else None
        if not isinstance(value, list):
            return []
        return [m for m in value if isinstance(m, BaseMessage) and m.type != "remove"]

    def _message_events(self, key: tuple[str, str], values: dict[str, Any],
                        run_id: str) -> tuple[list[str], list[dict[str, Any]], bool]:
        """The client ids of the channel's messages, the events of those not known to be
        recorded (in the channel's order, at most MAX_MESSAGES_PER_PUT), and whether that is
        all of them."""
        known = self._known_ids(key)
        ids: list[str] = []
        events: list[dict[str, Any]] = []
        sent: set[str] = set()  # a message listed twice is sent once
        complete, chars = True, 0
        for index, message in enumerate(self._channel_messages(values)):
            cid = _message_client_id(message, None, index) if message.id else None
            if cid is not None and cid in known:
                ids.append(cid)
                continue
            event = message_event(message)
            if event is None:
                continue
            cid = cid or _message_client_id(message, event, index)
            ids.append(cid)
            if cid in known or cid in sent:
                continue
            chars += len(event["content"]) + len(json.dumps(event["data"])) + 200
            if len(events) == MAX_MESSAGES_PER_PUT or (events and chars > MAX_MESSAGE_CHARS_PER_PUT):
                complete = False
                continue
            sent.add(cid)
            events.append({**event, "client_id": cid, "run_id": run_id})
        return ids, events, complete

    def _seed(self, tuple_: CheckpointTuple, data: dict[str, Any]) -> None:
        """A checkpoint read back whose messages were all recorded with it: its ids are known."""
        if data.get("messages_recorded") is True:
            conf = tuple_.config["configurable"]
            messages = self._channel_messages(tuple_.checkpoint["channel_values"])
            self._remember((conf["thread_id"], conf["checkpoint_ns"]), [
                _message_client_id(m, None if m.id else message_event(m), i) for i, m in enumerate(messages)])

    def _after_read(self, config: RunnableConfig, read: dict[str, Any] | None,
                    found: list[CheckpointTuple], limit: int | None) -> None:
        """get_tuple's read: the ids its checkpoint's messages were recorded under are known;
        a namespace without checkpoints (new, or deleted by someone else) has none recorded."""
        if limit != 1:
            return
        conf = config["configurable"]
        if found and read:
            self._seed(found[0], read["events"][-1]["data"])
        elif not get_checkpoint_id(config):
            self._forget(conf["thread_id"], conf.get("checkpoint_ns") or "")

    # -- building requests and answers (shared by the sync and async methods)

    def _put_commit(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                    new_versions: ChannelVersions) -> tuple[_PutPlan, RunnableConfig]:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        cid, parent = checkpoint["id"], conf.get("checkpoint_id")
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")
        blobs = []
        # A new version of a channel without a value (emptied) stores nothing: a version
        # without its blob reads as no value, as PostgresSaver's "empty" row does.
        for channel, version in new_versions.items():
            if channel in values:
                kind, data = self.serde.dumps_typed(values[channel])
                blobs.append({"key": f"ch/{channel}/{version}", "data": data, "content_type": kind,
                              "meta": {"channel": channel, "version": version}})
        full_metadata = get_checkpoint_metadata(config, metadata)
        blobs.append(_checkpoint_blob(cid, self.serde.dumps_typed(c), self.serde.dumps_typed(full_metadata)))
        step, source = full_metadata.get("step"), full_metadata.get("source")
        event = {
            "type": TYPE, "client_id": cid, "visible": False, "occurred_at": checkpoint["ts"],
            "run_id": str(full_metadata.get("run_id") or "")[:200],
            "content": f"checkpoint step {step} ({source})" + (f" in {ns}" if ns else ""),
            "data": {"checkpoint_id": cid, "parent_checkpoint_id": parent, "checkpoint_ns": ns,
                     "metadata": _readable(full_metadata),
                     "channel_versions": _readable(c.get("channel_versions") or {})},
        }
        event["data"]["blob_refs"] = _blob_refs(event["data"])
        args = (self.app, "", thread_id)
        kwargs = {"thread": _thread_name(ns), "events": [event], "blobs": blobs, "create": True}
        saved = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}
        key = (thread_id, ns)
        ids, messages, complete = self._message_events(key, values, event["run_id"])
        return _PutPlan(args, kwargs, key, ids, messages, complete=complete), saved

    def _put_done(self, plan: _PutPlan) -> None:
        self._remember(plan.known_key, [*(e["client_id"] for e in plan.messages), *plan.stored,
                                        *plan.given_up, *(plan.ids if plan.complete else ())])

    def _writes_commit(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                       task_path: str) -> tuple[SessionArgs, dict[str, Any]]:
        conf = config["configurable"]
        thread_id, ns, cid = conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        blobs = []
        for i, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, i)
            kind, data = self.serde.dumps_typed(value)
            blobs.append({"key": f"w/{cid}/{task_id}/{idx}", "data": data, "content_type": kind,
                          "meta": {"task_id": task_id, "channel": channel, "idx": idx,
                                   "task_path": task_path}})
        return (self.app, "", thread_id), {"thread": _thread_name(ns), "blobs": blobs, "create": True}

    def _tuple(self, thread_id: str, data: dict[str, Any], blobs: dict[str, Any],
               pending: _Writes) -> CheckpointTuple:
        """The checkpoint `data` names, from `blobs` (by key) and `pending` (their writes)."""
        cid, ns = data["checkpoint_id"], data["checkpoint_ns"]

        typed_checkpoint, typed_metadata = _checkpoint_parts(blobs, cid)
        checkpoint = self.serde.loads_typed(typed_checkpoint)
        values = {}
        for channel, version in (checkpoint.get("channel_versions") or {}).items():
            blob = blobs.get(f"ch/{channel}/{version}")
            if blob is not None and blob["content_type"] != "empty":  # "empty": stored before
                values[channel] = self.serde.loads_typed((blob["content_type"], blob["data"]))
        writes = pending.of(cid)
        writes.sort(key=lambda b: writes_sort_key(b["meta"]["task_path"], b["meta"]["task_id"],
                                                  b["meta"]["idx"]))
        parent = data.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(typed_metadata),
            parent_config=({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                                             "checkpoint_id": parent}} if parent else None),
            pending_writes=[(b["meta"]["task_id"], b["meta"]["channel"],
                             self.serde.loads_typed((b["content_type"], b["data"]))) for b in writes],
        )

    def _list_read(self, config: RunnableConfig, filter: dict[str, Any] | None,
                   before: RunnableConfig | None, limit: int | None) -> tuple[SessionArgs, dict[str, Any]]:
        """The one read of a list: the checkpoint events with, for a list of the namespace's
        every checkpoint, all its blobs, else the blobs the events name (blob_refs)."""
        conf = config["configurable"]
        whole = _whole(filter, before, limit)
        kwargs: dict[str, Any] = {
            "thread": _thread_name(conf.get("checkpoint_ns") or ""), "types": [TYPE], "limit": limit,
            "client_id": get_checkpoint_id(config),
            "before_client_id": get_checkpoint_id(before) if before else None,
            "data_contains": {"metadata": _readable(filter)} if filter else None,
            "blob_prefixes": list(THREAD_BLOB_PREFIXES) if whole else None, "event_blobs": not whole,
            "fields": ["data"],  # all a checkpoint's event holds for it
        }
        return (self.app, "", conf["thread_id"]), kwargs

    @staticmethod
    def _unread(read: dict[str, Any]) -> list[dict[str, Any]]:
        """The events (newest first) whose blobs the read did not bring: those stored before
        checkpoints named them (no blob_refs), or all from a server without event_blobs."""
        blobs = read["blobs"]
        return [e for e in reversed(read["events"]) if f"cp/{e['data']['checkpoint_id']}" not in blobs]

    def _tuples(self, thread_id: str, read: dict[str, Any], blobs: dict[str, Any]) -> list[CheckpointTuple]:
        """The read's checkpoints, newest first, from its blobs and `blobs` (read apart)."""
        blobs = {**read["blobs"], **blobs}
        pending = _Writes(blobs)
        return [self._tuple(thread_id, event["data"], blobs, pending) for event in reversed(read["events"])]

    @staticmethod
    def _blob_requests(events: list[dict[str, Any]], whole: bool) -> Iterator[tuple[list[str], list[str]]]:
        """The blob reads for these checkpoints, each (keys, prefixes): with `whole` (the
        thread's every checkpoint) all its blobs in one read, else as many checkpoints per read
        as fit a request line of BLOB_QUERY_BUDGET characters (proxies and gunicorn refuse
        longer ones) and MAX_KEYS_PER_READ keys."""
        if whole and len(events) > 1:
            yield [], list(THREAD_BLOB_PREFIXES)
            return
        chunk: list[dict[str, Any]] = []
        keys: list[str] = []
        prefixes: list[str] = []
        used = 0
        for event in events:
            mine = _blob_keys(event["data"])
            prefix = f"w/{event['data']['checkpoint_id']}/"
            cost = sum(len(quote(k)) + 6 for k in mine) + len(quote(prefix)) + 8
            full = used + cost > BLOB_QUERY_BUDGET or len(keys) + len(mine) + len(chunk) >= MAX_KEYS_PER_READ
            if chunk and full:
                yield keys, prefixes
                chunk, keys, prefixes, used = [], [], [], 0
            chunk.append(event)
            keys.extend(mine)
            prefixes.append(prefix)
            used += cost
        if chunk:
            yield keys, prefixes

    # -- sync

    def _sync(self) -> ContextStore:
        if not isinstance(self.client, ContextStore):
            raise TypeError("The synchronous methods need a ContextStore client.")
        return self.client

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return next(self.list(config, limit=1), None)

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        for thread_config in self._thread_configs(config):
            args, kwargs = self._list_read(thread_config, filter, before, limit)
            read = self._sync().read_agent_session(*args, **kwargs)
            if read is None:
                self._after_read(thread_config, None, [], limit)
                continue
            blobs: dict[str, Any] = {}
            for keys, prefixes in self._blob_requests(self._unread(read), _whole(filter, before, limit)):
                blobs.update(self._sync().agent_blobs(self.app, "", args[2], keys, prefixes=prefixes,
                                                      thread=kwargs["thread"]))
            found = self._tuples(args[2], read, blobs)
            self._after_read(thread_config, read, found, limit)
            yield from found

    def _thread_configs(self, config: RunnableConfig | None) -> Iterator[RunnableConfig]:
        """The configs to list: the given one, or (config None) the root of every thread."""
        if config is not None:
            yield config
            return
        cursor = None
        while True:
            page = self._sync().list_agent_sessions(self.app, user_id="", cursor=cursor, limit=100)
            for session in page["results"]:
                yield {"configurable": {"thread_id": session["key"], "checkpoint_ns": ""}}
            cursor = page["next_cursor"]
            if not cursor:
                return

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        plan, saved = self._put_commit(config, checkpoint, metadata, new_versions)
        while True:
            try:
                self._sync().commit_agent_session(*plan.args, **plan.commit_kwargs())
                break
            except ContextStoreError as error:
                step = plan.refused(error)
                if not step:
                    raise
                if step == "read":
                    plan.stored_ids(self._sync().read_agent_session(*plan.args, **plan.read_kwargs()))
        self._put_done(plan)
        return saved

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if not writes:
            return
        args, kwargs = self._writes_commit(config, writes, task_id, task_path)
        self._sync().commit_agent_session(*args, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
        self._forget(thread_id)
        self._sync().delete_agent_session(self.app, "", thread_id)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Every namespace's checkpoints, in order, with their writes and channel values."""
        try:
            self._sync().copy_agent_session(self.app, "", source_thread_id, target_thread_id)
        except NotFound:
            pass  # a thread never written has nothing to copy

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """keep_latest: each namespace keeps its newest checkpoint; delete: delete_thread."""
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy {strategy!r}: keep_latest or delete.")
        if strategy == "delete":
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
        elif thread_ids:
            self._sync().remove_agent_events(self.app, "", keys=list(thread_ids), types=[TYPE],
                                             keep_latest=True, blob_prefixes=CHECKPOINT_BLOBS)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """The checkpoints of these runs (metadata run_id), in every thread and namespace."""
        if run_ids:
            self._sync().remove_agent_events(self.app, "", run_ids=list(run_ids), types=[TYPE],
                                             blob_prefixes=CHECKPOINT_BLOBS)

    # -- async: awaited on an AsyncContextStore, in a worker thread on a ContextStore

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        async for found in self.alist(config, limit=1):
            return found
        return None

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        if not isinstance(self.client, AsyncContextStore) or config is None:
            found = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before,
                                                                   limit=limit)))
            for item in found:
                yield item
            return
        args, kwargs = self._list_read(config, filter, before, limit)
        read = await self.client.read_agent_session(*args, **kwargs)
        if read is None:
            self._after_read(config, None, [], limit)
            return
        blobs: dict[str, Any] = {}
        for keys, prefixes in self._blob_requests(self._unread(read), _whole(filter, before, limit)):
            blobs.update(await self.client.agent_blobs(self.app, "", args[2], keys, prefixes=prefixes,
                                                       thread=kwargs["thread"]))
        tuples = self._tuples(args[2], read, blobs)
        self._after_read(config, read, tuples, limit)
        for found in tuples:
            yield found

    async def _acommit(self, args: SessionArgs, kwargs: dict[str, Any]) -> None:
        if isinstance(self.client, AsyncContextStore):
            await self.client.commit_agent_session(*args, **kwargs)
        else:
            await asyncio.to_thread(self.client.commit_agent_session, *args, **kwargs)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        plan, saved = self._put_commit(config, checkpoint, metadata, new_versions)
        while True:
            try:
                await self._acommit(plan.args, plan.commit_kwargs())
                break
            except ContextStoreError as error:
                step = plan.refused(error)
                if not step:
                    raise
                if step == "read":
                    plan.stored_ids(await self._aread(plan.args, plan.read_kwargs()))
        self._put_done(plan)
        return saved

    async def _aread(self, args: SessionArgs, kwargs: dict[str, Any]) -> Any:
        if isinstance(self.client, AsyncContextStore):
            return await self.client.read_agent_session(*args, **kwargs)
        return await asyncio.to_thread(lambda: self._sync().read_agent_session(*args, **kwargs))

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        if writes:
            await self._acommit(*self._writes_commit(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        self._forget(thread_id)
        if isinstance(self.client, AsyncContextStore):
            await self.client.delete_agent_session(self.app, "", thread_id)
        else:
            await asyncio.to_thread(self.client.delete_agent_session, self.app, "", thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        if not isinstance(self.client, AsyncContextStore):
            return await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)
        try:
            await self.client.copy_agent_session(self.app, "", source_thread_id, target_thread_id)
        except NotFound:
            pass

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if not isinstance(self.client, AsyncContextStore):
            return await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy {strategy!r}: keep_latest or delete.")
        if strategy == "delete":
            for thread_id in thread_ids:
                await self.adelete_thread(thread_id)
        elif thread_ids:
            await self.client.remove_agent_events(self.app, "", keys=list(thread_ids), types=[TYPE],
                                                  keep_latest=True, blob_prefixes=CHECKPOINT_BLOBS)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        if not isinstance(self.client, AsyncContextStore):
            return await asyncio.to_thread(self.delete_for_runs, run_ids)
        if run_ids:
            await self.client.remove_agent_events(self.app, "", run_ids=list(run_ids), types=[TYPE],
                                                  blob_prefixes=CHECKPOINT_BLOBS)

    def close(self) -> None:
        """Close the client when this saver made it (the test factory)."""
        if self._owned and isinstance(self.client, ContextStore):
            self.client.close()


def make_test_saver(*, namespace: str | None = None) -> ContextStoreSaver:
    """A saver on the server named by CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN over a fresh random
    namespace (unless given); close() closes the client it made."""
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    saver = ContextStoreSaver(client, namespace=namespace or uuid.uuid4().hex)
    saver._owned = True
    return saver
