"""Nooa: a ``StorageManager`` that keeps an agent's events and snapshots in contextstore.

    from contextstore.adapters.nooa import ContextStoreStorage

    storage = ContextStoreStorage(ContextStore(url, token).thread("research-7", agent="nooa"))
    agent = MyAgent(llm=llm, storage=storage)
    await agent.research("...")             # every event is appended to the thread
    agent.events.collapse("2", "9", "...")  # becomes a contextstore collapse
    snapshot_id = storage.save_snapshot(agent)
    storage.restore_snapshot(snapshot_id, MyAgent(llm=llm, storage=storage))

Each Nooa event is one contextstore event: its type is the Nooa event type, its JSON and tag are
in ``data["nooa"]``, its method call scope is ``call_id``. ``EventManager.collapse`` (archive a
range, store a Summary in its place) becomes one contextstore collapse of the same events, so the
dashboard shows the summary and the originals as collapsed. The backend keeps a local copy for
reads and writes through; a new process rebuilds it from the thread (collapsed events are
archived, the working context gives the active tags in order).

Nooa's ``update`` and ``remove`` have no contextstore counterpart (history is append-only): the
changed event or the removal is kept in the thread's ``nooa`` provider state and applied on load,
and a removed event stays visible in contextstore's own history. Snapshots (context blocks static
or dynamic, disabled blocks, attributes) are provider states named ``nooa.snapshot.<id>``; their
static blocks are also written as the thread's context blocks (prefix, the cacheable placement)
and disabled blocks as suppressed ones, so people see the agent's prompt blocks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from nooa.context_blocks import DynamicContext, EventBase, EventStatus
from nooa.context_blocks.events import _EVENT_REGISTRY
from nooa.runtime.event_backend import InMemoryBackend
from nooa.storage.json_snapshot import snapshot_from_dict, snapshot_to_dict
from nooa.storage.snapshot import AgentSnapshot
from nooa.storage.sqlite import _CORE_TYPES, _registry_key

from contextstore.client import ThreadHandle

if TYPE_CHECKING:
    from nooa.agent import Agent

KEY = "nooa"
SNAPSHOT_PREFIX = "nooa.snapshot."
TEXT_FIELDS = ("summary_text", "content", "text", "code", "output", "result", "message", "task")


def _text(event: EventBase, dump: dict[str, Any]) -> str:
    """What a person should read for this event in the dashboard."""
    for name in TEXT_FIELDS:
        value = dump.get(name)
        if isinstance(value, str) and value:
            return value
    rest = {k: v for k, v in dump.items() if k not in ("id", "metadata", "event_type", "status")}
    return json.dumps(rest, ensure_ascii=False, default=str)[:4000]


class ContextStoreEventBackend(InMemoryBackend):
    """Nooa's EventBackend over a contextstore thread (a local copy, written through)."""

    def __init__(self, thread: ThreadHandle) -> None:
        super().__init__()
        self.thread = thread
        self._registry: dict[str, type[EventBase]] = dict(_CORE_TYPES)
        self._position: dict[str, int] = {}  # nooa tag -> position in contextstore
        self._extra: dict[str, Any] = {"summaries": {}, "overrides": {}, "removed": []}
        self._load()

    # -- reading the thread back

    def _deserialize(self, raw: dict[str, Any]) -> EventBase:
        cls = self._registry.get(raw.get("event_type", "")) or _EVENT_REGISTRY.get(
            raw.get("event_type", ""))
        if cls is None:
            raise ValueError(f"Unknown Nooa event type {raw.get('event_type')!r}: register it.")
        return cls.model_validate(raw)

    def _load(self) -> None:
        saved = self.thread.provider_state(KEY)
        if saved is not None and isinstance(saved.state, dict):
            self._extra.update(saved.state)
        removed = set(self._extra["removed"])
        working: list[tuple[int, str]] = []
        for event in self.thread.iter_events(status="all"):
            stored = event.data.get(KEY) if isinstance(event.data, dict) else None
            if event.type == "Summary" and str(event.seq) in self._extra["summaries"]:
                stored = self._extra["summaries"][str(event.seq)]
            if not isinstance(stored, dict) or stored["tag"] in removed:
                continue
            tag = stored["tag"]
            raw = self._extra["overrides"].get(tag) or stored["event"]
            nooa_event = self._deserialize(raw)
            active = event.status == "active"
            nooa_event.status = EventStatus.ACTIVE if active else EventStatus.ARCHIVED
            self._events.append(nooa_event)
            self._tag_to_event[tag] = nooa_event
            self._position[tag] = event.position
            if active:
                working.append((event.position, tag))
        # The working context's order is Nooa's active order: a summary stands where its
        # range stood in both.
        self._active_tags = [tag for _, tag in sorted(working)]
        self._next_tag_num = self.max_tag_num() + 1

    def _save_extra(self) -> None:
        self.thread.put_provider_state(KEY, self._extra)

    # -- EventBackend, written through

    def register_event_type(self, cls: type[EventBase]) -> None:
        self._registry[_registry_key(cls)] = cls

    def store(self, tag: str, event: EventBase) -> None:
        super().store(tag, event)
        dump = event.model_dump(mode="json")
        children = getattr(event, "children_tags", None)
        if dump.get("event_type") == "Summary" and children:
            # EventManager.collapse archived the children and now stores their summary.
            positions = [self._position[t] for t in children if t in self._position]
            collapse = self.thread.collapse(min(positions), max(positions),
                                            dump.get("summary_text") or f"Summary of {tag}")
            self._position[tag] = collapse.summary_event.position
            self._extra["summaries"][str(collapse.summary_event.seq)] = {"tag": tag, "event": dump}
            self._save_extra()
            return
        metadata = dump.get("metadata") or {}
        appended = self.thread.append([{
            "type": str(dump.get("event_type") or type(event).__name__)[:32],
            "content": _text(event, dump), "data": {KEY: {"tag": tag, "event": dump}},
            "call_id": str(metadata.get("call_id") or "")[:200],
            "client_id": f"{KEY}:{event.id}",
        }])[0]
        self._position[tag] = appended.seq

    def update(self, tag: str, **fields: Any) -> bool:
        if not super().update(tag, **fields):
            return False
        self._extra["overrides"][tag] = self._tag_to_event[tag].model_dump(mode="json")
        self._save_extra()
        return True

    def remove(self, tag: str) -> bool:
        if not super().remove(tag):
            return False
        self._extra["removed"].append(tag)
        self._save_extra()
        return True

    def clear(self) -> None:
        """Nooa's clear starts over: contextstore clears the thread's context (keeping it all)."""
        super().clear()
        self._position.clear()
        self.thread.clear_context()
        self._extra = {"summaries": {}, "overrides": {}, "removed": []}
        self._save_extra()

    def all_events(self) -> Iterator[EventBase]:
        return iter(list(self._events))


class ContextStoreStorage:
    """Nooa StorageManager: events in a contextstore thread, snapshots as its provider states."""

    def __init__(self, thread: ThreadHandle) -> None:
        self.thread = thread
        self._event_backend = ContextStoreEventBackend(thread)

    @property
    def event_backend(self) -> ContextStoreEventBackend:
        return self._event_backend

    def save_snapshot(self, agent: Agent) -> str:
        data = snapshot_to_dict(AgentSnapshot.from_agent(agent))
        snapshot_id = str(uuid.uuid4())
        self.thread.put_provider_state(SNAPSHOT_PREFIX + snapshot_id, data)
        self.thread.put_provider_state(KEY + ".latest_snapshot", snapshot_id)
        self._show_blocks(agent)
        return snapshot_id

    def restore_snapshot(self, snapshot_id: str, agent: Agent) -> None:
        from nooa.errors.storage import SnapshotNotFoundError

        saved = self.thread.provider_state(SNAPSHOT_PREFIX + snapshot_id)
        if saved is None or not isinstance(saved.state, dict):
            raise SnapshotNotFoundError(f"Snapshot '{snapshot_id}' not found")
        snapshot_from_dict(saved.state).restore(agent)

    def get_latest_snapshot_id(self) -> str | None:
        saved = self.thread.provider_state(KEY + ".latest_snapshot")
        return saved.state if saved is not None else None

    def _show_blocks(self, agent: Agent) -> None:
        """Write the agent's own (non-framework) blocks as the thread's context blocks."""
        manager = agent.context_manager
        for key, value in manager._raw_items():
            if key in manager.protected_keys or isinstance(value, DynamicContext):
                continue  # a Python expression cannot be evaluated safely by the server
            text = None if manager.is_disabled(key) or value is None else (
                value if isinstance(value, str) else json.dumps(value, default=str))
            self.thread.put_block(key, value=text, placement="prefix")
