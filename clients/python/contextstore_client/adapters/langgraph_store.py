"""LangGraph's long-term store kept in contextstore (langgraph-checkpoint 4.3.2's BaseStore).

    from contextstore_client.adapters.langgraph import ContextStoreStore

    store = ContextStoreStore(ContextStore(url, token), index={"dims": 1536, "embed": embeddings})
    graph = builder.compile(store=store)

Every `batch`/`abatch` is ONE `store_batch` request (one transaction): GetOp, PutOp, SearchOp
and ListNamespacesOp map onto its get, put, search and list_namespaces ops. Items live in the
workspace's long-term store, where a person reads, edits and undoes them on the dashboard.

Recall by meaning (`index`), as LangGraph's own stores:
- `index={"dims": ..., "embed": ..., "fields": [...]}`: embedded here, as InMemoryStore and
  PostgresStore do (LangGraph's `get_text_at_path` for each field, "$" the whole value; one
  vector per text), sent as the put's `vectors`; a search's `query` is embedded and sent as its
  `query_vector`; the server scores by cosine.
- `index={"fields": [...]}` without `embed`: the server's embedder (STORE_EMBEDDINGS_URL) embeds
  the fields, and the query; without one, the server recalls by words.
- `index=None`: as LangGraph's stores without an index, a search's `query` is not used (newest
  first).

`index["distance_type"]` is PostgresStore's: "cosine" (the default), "inner_product" or "l2"
(scores as PostgresStore's: the cosine, the inner product, the negated Euclidean distance);
`ann_index_config` is not read (the server keeps float32 vectors and ranks exactly, with pgvector
where its database has it).

`ttl` is LangGraph's TTLConfig (`default_ttl` minutes, `refresh_on_read`, `omit_expired`,
`sweep_interval_minutes`), as PostgresStore reads it: an item past its TTL stays readable (and
a read's refresh revives it) until it is swept into a deleted version (undoable), unless
`omit_expired` is True (then it is invisible from the moment it expires). The server's beat
sweeps every STORE_EXPIRE_EVERY seconds (60 by default); `sweep_ttl()` sweeps this store now and
`start_ttl_sweeper()` every `sweep_interval_minutes` (5 by default) from a thread, as
PostgresStore's; `asweep_ttl()`, `astart_ttl_sweeper()` and `astop_ttl_sweeper()` are their
twins for an AsyncContextStore. `namespace` (a string) is a first label every namespace of this
store is kept under (a store of its own within the workspace; a sweep sweeps only it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from contextstore_client import AsyncContextStore, ContextStore

__all__ = ["ContextStoreStore"]

logger = logging.getLogger(__name__)

DISTANCES = ("cosine", "inner_product", "l2")  # PostgresStore's `distance_type`s


class ContextStoreStore(BaseStore):
    """BaseStore over contextstore's long-term store, sync and async."""

    supports_ttl = True

    def __init__(self, client: ContextStore | AsyncContextStore, *, namespace: str = "",
                 index: IndexConfig | dict[str, Any] | None = None,
                 ttl: TTLConfig | None = None) -> None:
        self.client = client
        self._prefix: list[str] = [namespace] if namespace else []
        self.ttl_config = ttl
        self._sweeper: threading.Thread | asyncio.Task[None] | None = None
        self._sweeper_stop = threading.Event()
        self.index_config: dict[str, Any] | None = dict(index) if index else None
        self.embeddings = None
        self._fields: list[str] | None = None
        self._distance = (self.index_config or {}).get("distance_type", "cosine")
        if self._distance not in DISTANCES:
            raise ValueError(f"distance_type must be one of {', '.join(DISTANCES)}, "
                             f"got {self._distance!r}")
        if self.index_config is not None:
            self._fields = list(self.index_config.get("fields") or ["$"])
            if self.index_config.get("embed") is not None:
                self.embeddings = ensure_embeddings(self.index_config["embed"])

    # -- ops to JSON and back

    @property
    def _omit_expired(self) -> bool:
        """TTLConfig's omit_expired, read at each call as PostgresStore reads it (False unless
        set: an item past its TTL is read until swept)."""
        return bool((self.ttl_config or {}).get("omit_expired", False))

    def _ns(self, namespace: tuple[str, ...]) -> list[str]:
        return [*self._prefix, *namespace]

    def _texts(self, value: dict[str, Any], fields: list[str]) -> list[tuple[str, str]]:
        """(vector name, text) for each text at each field path, as LangGraph's stores embed."""
        out: list[tuple[str, str]] = []
        for field in fields:
            texts = get_text_at_path(value, field if field == "$" else tokenize_path(field))
            for i, text in enumerate(texts):
                out.append((field if len(texts) == 1 else f"{field}#{i}", text))
        return out

    def _plan(self, ops: list[Op]) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]],
                                            list[tuple[int, str]]]:
        """The JSON ops, the texts to embed per put (op index, vector name, text) and the queries
        to embed (op index, query)."""
        out: list[dict[str, Any]] = []
        texts: list[tuple[int, str, str]] = []
        queries: list[tuple[int, str]] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                out.append({"op": "get", "namespace": self._ns(op.namespace), "key": op.key,
                            "refresh_ttl": bool(op.refresh_ttl),
                            "omit_expired": self._omit_expired})
            elif isinstance(op, PutOp):
                out.append(self._put(i, op, texts))
            elif isinstance(op, SearchOp):
                search: dict[str, Any] = {
                    "op": "search", "namespace_prefix": self._ns(op.namespace_prefix),
                    "filter": op.filter or None, "limit": op.limit, "offset": op.offset,
                    "refresh_ttl": bool(op.refresh_ttl), "omit_expired": self._omit_expired}
                if op.query and self.index_config is not None:
                    if self._distance != "cosine":
                        search["distance"] = self._distance
                    if self.embeddings is not None:
                        queries.append((i, op.query))
                    else:
                        search["query"] = op.query
                out.append(search)
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list(op))
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return out, texts, queries

    def _put(self, i: int, op: PutOp, texts: list[tuple[int, str, str]]) -> dict[str, Any]:
        put: dict[str, Any] = {"op": "put", "namespace": self._ns(op.namespace), "key": op.key,
                               "value": op.value}
        if op.value is None:
            return put
        ttl = op.ttl
        if ttl is NOT_PROVIDED:
            ttl = (self.ttl_config or {}).get("default_ttl")
        put["ttl"] = ttl
        if op.index is False:
            put["index"] = False
        elif self.index_config is not None:
            fields = list(op.index) if op.index else self._fields
            put["index"] = fields
            if self.embeddings is not None and fields:
                texts.extend((i, name, text) for name, text in self._texts(op.value, fields))
        return put

    def _list(self, op: ListNamespacesOp) -> dict[str, Any]:
        prefix: list[str] | None = None
        suffix: list[str] | None = None
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                prefix = list(condition.path)
            elif condition.match_type == "suffix":
                suffix = list(condition.path)
        if self._prefix:
            prefix = [*self._prefix, *(prefix or [])]
        max_depth = op.max_depth + len(self._prefix) if op.max_depth is not None else None
        return {"op": "list_namespaces", "prefix": prefix, "suffix": suffix, "max_depth": max_depth,
                "limit": op.limit, "offset": op.offset, "omit_expired": self._omit_expired}

    @staticmethod
    def _attach(out: list[dict[str, Any]], texts: list[tuple[int, str, str]],
                vectors: list[list[float]], queries: list[tuple[int, str]],
                query_vectors: list[list[float]]) -> None:
        for (i, name, _), vector in zip(texts, vectors, strict=True):
            out[i].setdefault("vectors", {})[name] = [float(x) for x in vector]
        for (i, _), vector in zip(queries, query_vectors, strict=True):
            out[i]["query_vector"] = [float(x) for x in vector]

    def _item(self, data: dict[str, Any] | None) -> Item | None:
        if data is None:
            return None
        return Item(value=data["value"], key=data["key"],
                    namespace=tuple(data["namespace"][len(self._prefix):]),
                    created_at=datetime.fromisoformat(data["created_at"]),
                    updated_at=datetime.fromisoformat(data["updated_at"]))

    def _results(self, ops: list[Op], answers: list[Any]) -> list[Result]:
        results: list[Result] = []
        for op, answer in zip(ops, answers, strict=True):
            if isinstance(op, GetOp):
                results.append(self._item(answer))
            elif isinstance(op, SearchOp):
                results.append([
                    SearchItem(namespace=tuple(d["namespace"][len(self._prefix):]), key=d["key"],
                               value=d["value"], created_at=datetime.fromisoformat(d["created_at"]),
                               updated_at=datetime.fromisoformat(d["updated_at"]), score=d["score"])
                    for d in answer])
            elif isinstance(op, ListNamespacesOp):
                results.append([tuple(ns[len(self._prefix):]) for ns in answer])
            else:
                results.append(None)
        return results

    # -- BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if not isinstance(self.client, ContextStore):
            raise TypeError("The synchronous methods need a ContextStore client.")
        ops = list(ops)
        out, texts, queries = self._plan(ops)
        vectors = self.embeddings.embed_documents([t for _, _, t in texts]) \
            if texts and self.embeddings is not None else []
        query_vectors = [self.embeddings.embed_query(q) for _, q in queries] \
            if queries and self.embeddings is not None else []
        self._attach(out, texts, vectors, queries, query_vectors)
        return self._results(ops, self.client.store_batch(out) if out else [])

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if isinstance(self.client, ContextStore):
            return await asyncio.to_thread(self.batch, list(ops))
        ops = list(ops)
        out, texts, queries = self._plan(ops)
        vectors = await self.embeddings.aembed_documents([t for _, _, t in texts]) \
            if texts and self.embeddings is not None else []
        query_vectors = [await self.embeddings.aembed_query(q) for _, q in queries] \
            if queries and self.embeddings is not None else []
        self._attach(out, texts, vectors, queries, query_vectors)
        return self._results(ops, await self.client.store_batch(out) if out else [])

    # -- TTL sweeps, as PostgresStore's

    def _sweep_op(self) -> list[dict[str, Any]]:
        return [{"op": "sweep", "namespace_prefix": self._prefix}]

    def _interval(self, minutes: float | None) -> float:
        return float(minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5) * 60

    def sweep_ttl(self) -> int:
        """Sweep this store's items past their TTL into deleted versions now; the count."""
        if not isinstance(self.client, ContextStore):
            raise TypeError("sweep_ttl needs a ContextStore client (asweep_ttl an async one).")
        [count] = self.client.store_batch(self._sweep_op())
        return int(count)

    async def asweep_ttl(self) -> int:
        if isinstance(self.client, ContextStore):
            return await asyncio.to_thread(self.sweep_ttl)
        [count] = await self.client.store_batch(self._sweep_op())
        return int(count)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                          ) -> concurrent.futures.Future[None]:
        """Sweep every `sweep_interval_minutes` (TTLConfig's, else 5) from a daemon thread until
        stop_ttl_sweeper(); without a TTLConfig, nothing (a done future), as PostgresStore."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config or isinstance(self._sweeper, threading.Thread) and self._sweeper.is_alive():
            future.set_result(None)
            return future
        interval, stop = self._interval(sweep_interval_minutes), threading.Event()
        self._sweeper_stop = stop

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    self.sweep_ttl()
                except Exception:  # noqa: BLE001 - the next round tries again, as PostgresStore's
                    logger.exception("store TTL sweep failed")
            future.set_result(None)

        self._sweeper = threading.Thread(target=loop, daemon=True, name="contextstore-ttl-sweeper")
        self._sweeper.start()
        future.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; False if it is still running after `timeout` seconds."""
        if not isinstance(self._sweeper, threading.Thread):
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    async def astart_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                                 ) -> asyncio.Task[None] | None:
        """The sweeper as a task of the running loop (AsyncPostgresStore's)."""
        if not self.ttl_config:
            return None
        if isinstance(self._sweeper, asyncio.Task) and not self._sweeper.done():
            return self._sweeper
        interval = self._interval(sweep_interval_minutes)

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await self.asweep_ttl()
                except Exception:  # noqa: BLE001
                    logger.exception("store TTL sweep failed")

        self._sweeper = asyncio.create_task(loop())
        return self._sweeper

    async def astop_ttl_sweeper(self) -> bool:
        if isinstance(self._sweeper, asyncio.Task):
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
            self._sweeper = None
        return True
