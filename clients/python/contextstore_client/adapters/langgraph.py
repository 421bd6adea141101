"""LangGraph: a checkpointer kept in contextstore (langgraph 1.2.22, langgraph-checkpoint 4.3.2).

    from contextstore_client.adapters.langgraph import ContextStoreSaver

    graph = builder.compile(checkpointer=ContextStoreSaver(ContextStore(url, token)))
    graph.invoke(inputs, {"configurable": {"thread_id": "conversation-42"}})

Each LangGraph thread is a contextstore session (app ``langgraph``, key = thread_id), each
checkpoint namespace one of its threads (``main`` for the root, ``ns:<checkpoint_ns>`` for a
subgraph). A checkpoint is a ``Checkpoint`` event (client_id = checkpoint id, occurred_at =
its ts) whose data is readable: parent id, namespace, metadata, channel versions. The
serialized checkpoint, its metadata and channel values are typed binary blobs
(``cp/<id>``, ``md/<id>``, ``ch/<channel>/<version>``) and pending writes are last-write-wins
blobs ``w/<checkpoint id>/<task id>/<idx>`` with readable meta (task, channel, path).

Each checkpoint event names its blobs in ``data.blob_refs`` (keys, and the prefix of its
pending writes), so a read asking for ``event_blobs`` gets them with the events.

Requests: put 1 (one commit), put_writes 1, get_tuple 1 (the checkpoint event with its blobs),
list of every checkpoint 1 (the events and all the namespace's blobs), list with a limit,
before or filter 1, delete_thread 1, copy_thread 1 (into a thread id not used yet: an
existing target is a Conflict), prune 1 (``keep_latest``; ``delete`` deletes each thread, 1
each), delete_for_runs 1. Checkpoints stored before blob_refs existed cost one more request
per ~10 of them (their blob keys fill a request line). A config without checkpoint_ns lists
the root namespace only. Pruned and run-deleted checkpoints leave the history (kept for
audit, as ``removed``) with their own blobs and pending writes; channel values stay, as later
checkpoints may share them.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any
from urllib.parse import quote

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

from contextstore_client import AsyncContextStore, ContextStore, NotFound

APP = "langgraph"
# commit_agent_session's (app, user_id, key), as the sync and async methods pass it on
SessionArgs = tuple[str, str, str]
TYPE = "Checkpoint"
# A checkpoint's own blobs, deleted with it (its channel values may be shared with later ones).
CHECKPOINT_BLOBS = ["cp/{client_id}", "md/{client_id}", "w/{client_id}/"]
PRUNE_STRATEGIES = ("keep_latest", "delete")
# Every blob of a thread: what a list of all its checkpoints reads, in one request.
THREAD_BLOB_PREFIXES = ("cp/", "md/", "ch/", "w/")
BLOB_QUERY_BUDGET = 3000  # characters of blob keys in one GET (gunicorn takes a 4,094-byte line)
MAX_KEYS_PER_READ = 500  # the server's limit of keys and prefixes per read

__all__ = ["ContextStoreSaver", "make_test_saver"]


def _thread_name(checkpoint_ns: str) -> str:
    return f"ns:{checkpoint_ns}" if checkpoint_ns else "main"


def _readable(value: Any) -> Any:
    """A JSON copy of metadata for display and filtering (the exact value is a blob)."""
    return json.loads(json.dumps(value, default=str))


def _whole(filter: dict[str, Any] | None, before: RunnableConfig | None, limit: int | None) -> bool:
    """Whether a list reads every checkpoint of its namespace (and so wants all its blobs)."""
    return not filter and before is None and limit is None


def _blob_keys(data: dict[str, Any]) -> list[str]:
    cid = data["checkpoint_id"]
    return [f"cp/{cid}", f"md/{cid}",
            *(f"ch/{k}/{v}" for k, v in (data.get("channel_versions") or {}).items())]


def _blob_refs(data: dict[str, Any]) -> dict[str, list[str]]:
    """What a checkpoint event names for the server's event_blobs read: its own blobs, its
    channel values and the prefix of its pending writes."""
    return {"keys": _blob_keys(data), "prefixes": [f"w/{data['checkpoint_id']}/"]}


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
                 serde: SerializerProtocol | None = None):
        super().__init__(serde=serde)
        if "/" in namespace:
            raise ValueError("namespace must not contain '/'")
        self.client = client
        self.app = f"{namespace}/{APP}" if namespace else APP
        self._owned = False

    # -- building requests and answers (shared by the sync and async methods)

    def _put_commit(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                    new_versions: ChannelVersions) -> tuple[SessionArgs, dict[str, Any], RunnableConfig]:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        cid, parent = checkpoint["id"], conf.get("checkpoint_id")
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")
        blobs = []
        for channel, version in new_versions.items():
            kind, data = self.serde.dumps_typed(values[channel]) if channel in values else ("empty", b"")
            blobs.append({"key": f"ch/{channel}/{version}", "data": data, "content_type": kind,
                          "meta": {"channel": channel, "version": version}})
        full_metadata = get_checkpoint_metadata(config, metadata)
        kind, data = self.serde.dumps_typed(c)
        blobs.append({"key": f"cp/{cid}", "data": data, "content_type": kind, "meta": {"checkpoint_id": cid}})
        kind, data = self.serde.dumps_typed(full_metadata)
        blobs.append({"key": f"md/{cid}", "data": data, "content_type": kind, "meta": {"checkpoint_id": cid}})
        step, source = full_metadata.get("step"), full_metadata.get("source")
        event = {
            "type": TYPE, "client_id": cid, "visible": False, "occurred_at": checkpoint["ts"],
            "run_id": str(full_metadata.get("run_id") or "")[:200],
            "content": f"checkpoint step {step} ({source})" + (f" in {ns}" if ns else ""),
            "data": {"checkpoint_id": cid, "parent_checkpoint_id": parent, "checkpoint_ns": ns,
                     "metadata": _readable(full_metadata),
                     "channel_versions": _readable(c.get("channel_versions") or {}),
                     "new_channels": sorted(new_versions)},
        }
        event["data"]["blob_refs"] = _blob_refs(event["data"])
        args = (self.app, "", thread_id)
        kwargs = {"thread": _thread_name(ns), "events": [event], "blobs": blobs, "create": True}
        saved = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}}
        return args, kwargs, saved

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

        def load(key: str) -> Any:
            blob = blobs[key]
            return self.serde.loads_typed((blob["content_type"], blob["data"]))

        checkpoint = load(f"cp/{cid}")
        values = {}
        for channel, version in (checkpoint.get("channel_versions") or {}).items():
            blob = blobs.get(f"ch/{channel}/{version}")
            if blob is not None and blob["content_type"] != "empty":
                values[channel] = load(f"ch/{channel}/{version}")
        writes = pending.of(cid)
        writes.sort(key=lambda b: writes_sort_key(b["meta"]["task_path"], b["meta"]["task_id"],
                                                  b["meta"]["idx"]))
        parent = data.get("parent_checkpoint_id")
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=load(f"md/{cid}"),
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
                continue
            blobs: dict[str, Any] = {}
            for keys, prefixes in self._blob_requests(self._unread(read), _whole(filter, before, limit)):
                blobs.update(self._sync().agent_blobs(self.app, "", args[2], keys, prefixes=prefixes,
                                                      thread=kwargs["thread"]))
            yield from self._tuples(args[2], read, blobs)

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
        args, kwargs, saved = self._put_commit(config, checkpoint, metadata, new_versions)
        self._sync().commit_agent_session(*args, **kwargs)
        return saved

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        if not writes:
            return
        args, kwargs = self._writes_commit(config, writes, task_id, task_path)
        self._sync().commit_agent_session(*args, **kwargs)

    def delete_thread(self, thread_id: str) -> None:
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
            return
        blobs: dict[str, Any] = {}
        for keys, prefixes in self._blob_requests(self._unread(read), _whole(filter, before, limit)):
            blobs.update(await self.client.agent_blobs(self.app, "", args[2], keys, prefixes=prefixes,
                                                       thread=kwargs["thread"]))
        for found in self._tuples(args[2], read, blobs):
            yield found

    async def _acommit(self, args: SessionArgs, kwargs: dict[str, Any]) -> None:
        if isinstance(self.client, AsyncContextStore):
            await self.client.commit_agent_session(*args, **kwargs)
        else:
            await asyncio.to_thread(self.client.commit_agent_session, *args, **kwargs)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        args, kwargs, saved = self._put_commit(config, checkpoint, metadata, new_versions)
        await self._acommit(args, kwargs)
        return saved

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        if writes:
            await self._acommit(*self._writes_commit(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
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
