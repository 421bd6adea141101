"""The sync protocol's bookkeeping for framework adapters: what was loaded, what changed."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from contextstore_client._ops import Awaiting, Blocking, Call, Steps, op
from contextstore_client._threads import ThreadOps
from contextstore_client.results import SyncLoad

if TYPE_CHECKING:
    from contextstore_client.async_client import AsyncThreadHandle
    from contextstore_client.client import ThreadHandle

__all__ = ["AsyncSyncTracker", "SyncTracker", "item_digest"]


def item_digest(event: dict[str, Any]) -> str:
    """The digest the server keeps for a synced item (services/sync.py computes the same)."""
    payload = {k: v for k, v in event.items() if k not in ("occurred_at", "run_id", "client_id")}
    return hashlib.sha256(json.dumps(
        payload, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


class _Tracker:
    """What one adapter object knows of one thread: the revision it loaded and the digest of
    every item as it would send it, so a save sends only new and changed items and the keys
    the framework dropped. One per adapter object (per process); a save on a stale load is
    refused with StaleRevision and changes nothing, and the adapter loads again.
    """

    def __init__(self, thread: ThreadOps, namespace: str) -> None:
        self.thread, self.namespace = thread, namespace
        self.revision: int | None = None
        self.digests: dict[str, str] = {}

    @op
    def load(self, *, format: str | None = None) -> Steps[SyncLoad]:
        loaded = yield from ThreadOps.sync_load.steps(self.thread, self.namespace, format=format)
        self.revision = loaded.revision
        self.digests = {i.key: i.digest for i in loaded.items if i.own}
        return loaded

    def seen(self, key: str, event: dict[str, Any]) -> None:
        """The adapter turned a loaded item into the framework's object; this is how it would
        send it back, so sending it unchanged is not a change."""
        self.digests[key] = item_digest(event)

    @op
    def save(self, /, items: list[tuple[str, dict[str, Any]]], *, complete: bool = True,
             **document_parts: Any) -> Steps[dict[str, Any] | None]:
        """Save the framework's transcript `items` ((key, event) in order).

        complete: `items` is the whole transcript, so known keys missing from it were dropped
        by the framework. Returns the server's answer, or None when there was nothing to send.
        """
        changed: list[dict[str, Any]] = [{"key": k, "event": e} for k, e in items
                                         if self.digests.get(k) != item_digest(e)]
        keys = {k for k, _ in items}
        removed = [k for k in self.digests if k not in keys] if complete else []
        if not changed and not removed and not document_parts:
            return None
        result = yield from ThreadOps.sync_save.steps(
            self.thread, self.namespace, items=changed, removed=removed, base_revision=self.revision,
            **document_parts)
        self.revision = result["revision"]
        for k in removed:
            del self.digests[k]
        for item in changed:
            self.digests[item["key"]] = item_digest(item["event"])
        return result


class SyncTracker(_Tracker, Blocking):
    __doc__ = _Tracker.__doc__

    thread: ThreadHandle

    def _send(self, call: Call) -> Any:
        return self.thread._send(call)


class AsyncSyncTracker(_Tracker, Awaiting):
    """SyncTracker on an AsyncThreadHandle: load() and save() are coroutines."""

    thread: AsyncThreadHandle

    async def _send(self, call: Call) -> Any:
        return await self.thread._send(call)
