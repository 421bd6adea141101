"""Nooa: a ``StorageManager`` that keeps an agent's events and snapshots in contextstore.

    from contextstore_client.adapters.nooa import ContextStoreStorage

    storage = ContextStoreStorage(ContextStore(url, token).thread("research-7", agent="nooa"))
    agent = MyAgent(llm=llm, storage=storage)
    await agent.research("...")             # every event is appended to the thread
    agent.events.collapse("2", "9", "...")  # becomes a contextstore collapse
    snapshot_id = storage.save_snapshot(agent)
    storage.restore_snapshot(snapshot_id, MyAgent(llm=llm, storage=storage))

Each Nooa event is one contextstore event, saved through the sync protocol (key: the Nooa event id):
its type is the Nooa event type (``NooaEvent`` when the server takes no such name), its JSON and tag
are in ``data["nooa"]``, its method call scope is ``call_id``, its timestamp ``occurred_at``.
``EventManager.collapse`` (archive a range, store a Summary in its place) becomes one contextstore
collapse of the same events, so the dashboard shows the summary and the originals as collapsed.
``update`` rewrites the event in place (the old version kept as history; a new process still reads
it where Nooa inserted it, so ``all_events`` and the queries Nooa's agent and model make over it
keep SQLite's insertion order), ``remove`` retires it, ``clear`` clears the thread's context. The
backend keeps a local copy for reads and writes through; a new process rebuilds it from the thread
(collapsed events are archived, the working context gives the active tags in order; notes and
collapses people made come back as Nooa ``Message`` and ``Summary`` events, see
docs/frameworks/nooa.md).

``log_llm_calls(agent, thread)`` logs every model call (Nooa's ``llm_call`` middleware, registered
innermost so it sees the messages as they go to ``acall``): LLMCallStart with those exact
messages and LLMComplete with the usage. Nooa renders its prompt itself from its blocks and its
own event list, not from a contextstore render, so the calls carry messages, not a render_id.

Snapshots (context blocks static or dynamic, disabled blocks, attributes) are provider states
named ``nooa.snapshot.<id>``; their static blocks are also written as the thread's context
blocks (prefix, the cacheable placement) and disabled blocks as suppressed ones, so people see
the agent's prompt blocks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from nooa.context_blocks import DynamicContext, EventBase, EventStatus
from nooa.context_blocks.events import _EVENT_REGISTRY
from nooa.runtime.event_backend import InMemoryBackend
from nooa.storage.json_snapshot import snapshot_from_dict, snapshot_to_dict
from nooa.storage.snapshot import AgentSnapshot
from nooa.storage.sqlite import _CORE_TYPES, _registry_key

from contextstore_client import ContextStoreError, Event, ThreadHandle

if TYPE_CHECKING:
    from nooa.agent import Agent

KEY = "nooa"
SNAPSHOT_PREFIX = "nooa.snapshot."
FOREIGN = "cs:"
TYPE_MAX_LENGTH = 64  # the server's event type rule (contextstore/eventspec.py)
BLOCK_MAX_CHARS = 20_000  # the server's default BLOCK_MAX_CHARS
TEXT_FIELDS = ("summary_text", "content", "text", "code", "output", "result", "message", "task")


def _text(event: EventBase, dump: dict[str, Any]) -> str:
    """What a person should read for this event in the dashboard."""
    for name in TEXT_FIELDS:
        value = dump.get(name)
        if isinstance(value, str) and value:
            return value
    rest = {k: v for k, v in dump.items() if k not in ("id", "metadata", "event_type", "status")}
    return json.dumps(rest, ensure_ascii=False, default=str)[:4000]


def _event_type(name: str) -> str:
    """The contextstore type for a Nooa event type: the name itself when the server takes it
    (its type rule: 1-64 printable characters, no whitespace), else a generic one; the real
    name is always in the data."""
    fits = 0 < len(name) <= TYPE_MAX_LENGTH and name.isprintable() and name.split() == [name]
    return name if fits else "NooaEvent"


def _occurred_at(event: EventBase) -> str | None:
    """When the agent stamped the event, with its offset (a naive time is the agent's local)."""
    stamp = getattr(event, "timestamp", None)
    if not isinstance(stamp, datetime):
        return None
    return (stamp if stamp.tzinfo else stamp.astimezone()).isoformat()


def _tag_span(tag: str) -> tuple[int, int]:
    first, _, last = tag.partition("..")
    try:
        return int(first), int(last or first)
    except ValueError:
        return 0, 0



def _inserted(event: Event) -> int:
    """Where `event` stands in Nooa's insertion order: the seq of its first version (an update
    in place rewrites the event as a new version, and says the first one's seq), else its own."""
    stored = event.data.get(KEY) if isinstance(event.data, dict) else None
    first = stored.get("seq") if isinstance(stored, dict) else None
    return first if isinstance(first, int) and not isinstance(first, bool) else event.seq


def _summary_range(data: dict[str, Any], position: int) -> tuple[int, int]:
    """The positions a contextstore Summary replaced."""
    return data.get("start_position", position), data.get("end_position", position)

class ContextStoreEventBackend(InMemoryBackend):
    """Nooa's EventBackend over a contextstore thread (a local copy, written through the sync
    protocol: one event is one item keyed by the Nooa event id)."""

    _next_tag_num: int  # InMemoryBackend's next tag number

    def __init__(self, thread: ThreadHandle) -> None:
        super().__init__()
        self.thread = thread
        self._registry: dict[str, type[EventBase]] = dict(_CORE_TYPES)
        self._position: dict[str, int] = {}  # nooa tag -> position in contextstore
        self._keys: dict[str, str] = {}  # nooa tag -> sync key
        self._ranges: dict[str, tuple[int, int]] = {}  # a summary's tag -> the positions it holds
        # nooa tag -> the seq of the event's first version: Nooa's insertion order (all_events,
        # so its queries), which an update in place keeps (SQLite's insertion_order)
        self._inserted: dict[str, int] = {}
        # The namespace document: Nooa's own collapse summaries by contextstore seq, the tags
        # given to events people added, so they keep their tag in every process, and the ranges
        # of removed summaries, whose children Nooa keeps archived.
        self._doc: dict[str, Any] = {"summaries": {}, "tags": {}, "archived": []}
        self._load()

    # -- reading the thread back

    def _deserialize(self, raw: dict[str, Any]) -> EventBase:
        cls = self._registry.get(raw.get("event_type", "")) or _EVENT_REGISTRY.get(
            raw.get("event_type", ""))
        if cls is None:
            raise ValueError(f"Unknown Nooa event type {raw.get('event_type')!r}: register it.")
        return cls.model_validate(raw)

    def _load(self) -> None:
        """The thread as Nooa's backend: active events in working-context order, collapsed ones
        archived; cleared, removed and replaced ones are not Nooa's any more."""
        loaded = self.thread.sync_load(KEY)
        doc = loaded.document if isinstance(loaded.document, dict) else {}
        self._doc = {"summaries": dict(doc.get("summaries") or {}), "tags": dict(doc.get("tags") or {}),
                     "archived": [tuple(r) for r in doc.get("archived") or ()]}
        rows = [(item.event, True) for item in loaded.items]
        # Collapsed events are the archived children of a summary still in the context, or of
        # one Nooa removed (its children stay archived); those under a cleared summary went
        # with it (Nooa's clear drops everything).
        ranges = [_summary_range(e.data, e.position)
                  for e, _ in rows if e.type == "Summary" and isinstance(e.data, dict)]
        ranges += self._doc["archived"]
        if ranges:
            rows += [(event, False) for event in self.thread.iter_events(status="collapsed")
                     if any(low <= event.position <= high for low, high in ranges)]
        rows.sort(key=lambda row: _inserted(row[0]))
        working: list[tuple[int, int, str]] = []
        foreign: list[tuple[Event, bool]] = []
        for event, active in rows:
            stored = event.data.get(KEY) if isinstance(event.data, dict) else None
            if event.type == "Summary" and str(event.seq) in self._doc["summaries"]:
                stored = self._doc["summaries"][str(event.seq)]
            if not isinstance(stored, dict):
                foreign.append((event, active))
                continue
            nooa_event = self._deserialize(stored["event"])
            key = f"{FOREIGN}{event.seq}" if event.type == "Summary" and not event.data.get(
                KEY) else nooa_event.id
            self._add(stored["tag"], nooa_event, event, active, key, working)
        assigned = False
        for event, active in foreign:
            if not event.visible:
                continue
            tag = self._doc["tags"].get(str(event.seq))
            if event.type == "Summary":
                nooa_event, tag = self._summary_of(event)
            else:
                nooa_event = _CORE_TYPES["Message"](content=event.content,
                                                    metadata={"contextstore_seq": event.seq})
                if tag is None:
                    tag = str(max(self.max_tag_num(), self._next_tag_num - 1) + 1)
            if self._doc["tags"].get(str(event.seq)) != tag:
                self._doc["tags"][str(event.seq)] = tag
                assigned = True
            nooa_event.tag = tag
            self._add(tag, nooa_event, event, active, f"{FOREIGN}{event.seq}", working)
        # The working context's order is Nooa's active order: a summary stands where its
        # range stood in both.
        self._active_tags = [tag for _, _, tag in sorted(working)]
        self._next_tag_num = self.max_tag_num() + 1
        if assigned:
            self._save_doc()

    def _add(self, tag: str, nooa_event: EventBase, event: Event, active: bool, key: str,
             working: list[tuple[int, int, str]]) -> None:
        nooa_event.status = EventStatus.ACTIVE if active else EventStatus.ARCHIVED
        self._events.append(nooa_event)
        self._tag_to_event[tag] = nooa_event
        self._position[tag] = event.position
        self._inserted[tag] = _inserted(event)
        self._keys[tag] = key
        if event.type == "Summary" and isinstance(event.data, dict):
            self._ranges[tag] = _summary_range(event.data, event.position)
        self._next_tag_num = max(self._next_tag_num, self.max_tag_num() + 1)
        if active:
            working.append((event.position, event.seq, tag))

    def _summary_of(self, event: Event) -> tuple[EventBase, str]:
        """A collapse made in contextstore as the Summary Nooa's own collapse would have made."""
        data = event.data if isinstance(event.data, dict) else {}
        low, high = _summary_range(data, event.position)
        children = [tag for tag, position in self._position.items()
                    if low <= position <= high and tag in self._tag_to_event
                    and self._tag_to_event[tag].status == EventStatus.ARCHIVED]
        children.sort(key=lambda t: (_tag_span(t)[0], self._position[t]))
        spans = [_tag_span(t) for t in children] or [(0, 0)]
        start, end = min(a for a, _ in spans), max(b for _, b in spans)
        tag = f"{start}..{end}"
        summary = _CORE_TYPES["Summary"](
            summary_tag=tag, replaced_range=(start, end), children_tags=children,
            summary_text=event.content,
            doc=f'To access collapsed events, call self.events["{tag}"].children_tags')
        return summary, tag

    def _save_doc(self) -> None:
        self.thread.sync_save(KEY, document=self._doc)

    def _item(self, tag: str, event: EventBase) -> dict[str, Any]:
        dump = event.model_dump(mode="json")
        metadata = dump.get("metadata") or {}
        item = {
            "type": _event_type(str(dump.get("event_type") or type(event).__name__)),
            "content": _text(event, dump), "data": {KEY: {"tag": tag, "event": dump}},
            "call_id": str(metadata.get("call_id") or "")[:200],
        }
        occurred_at = _occurred_at(event)
        if occurred_at:
            item["occurred_at"] = occurred_at
        return item

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
            self._keys[tag] = f"{FOREIGN}{collapse.summary_event.seq}"
            self._ranges[tag] = (collapse.start_position, collapse.end_position)
            self._doc["summaries"][str(collapse.summary_event.seq)] = {"tag": tag, "event": dump}
            self._save_doc()
            return
        # Unconditional: a Nooa agent writes through as it runs, and a key is never stored twice.
        result = self.thread.sync_save(KEY, items=[{"key": event.id,
                                                     "event": self._item(tag, event)}])
        self._keys[tag] = event.id
        for stored in result.get("stored") or ():
            self._position[tag] = stored["position"]
            self._inserted[tag] = stored["seq"]

    def update(self, tag: str, **fields: Any) -> bool:
        if not super().update(tag, **fields):
            return False
        event = self._tag_to_event[tag]
        key = self._keys.get(tag, event.id)
        seq = key[len(FOREIGN):] if key.startswith(FOREIGN) else None
        if seq is not None and seq in self._doc["summaries"]:
            self._doc["summaries"][seq] = {"tag": tag, "event": event.model_dump(mode="json")}
            self._save_doc()
        else:  # rewritten in place: same position, the earlier version kept as history
            item = self._item(tag, event)
            if tag in self._inserted:  # and the same place in Nooa's insertion order
                item["data"][KEY]["seq"] = self._inserted[tag]
            self.thread.sync_save(KEY, items=[{"key": key, "event": item}])
        return True

    def remove(self, tag: str) -> bool:
        event = self._tag_to_event.get(tag)
        if event is None or not super().remove(tag):
            return False
        removed = [self._keys.pop(tag, event.id)]
        self._position.pop(tag, None)
        held = self._ranges.pop(tag, None)
        if held is None:
            self.thread.sync_save(KEY, removed=removed)
        else:  # a summary: Nooa keeps its children, archived, without it
            self._doc["archived"].append(held)
            self.thread.sync_save(KEY, removed=removed, document=self._doc)
        return True

    def clear(self) -> None:
        """Nooa's clear starts over: contextstore clears the thread's context (keeping it all),
        so a new process rebuilds an empty backend, as Nooa's own stores do."""
        super().clear()
        self._position.clear()
        self._keys.clear()
        self._ranges.clear()
        self._inserted.clear()
        self.thread.clear_context()
        self._doc = {"summaries": {}, "tags": {}, "archived": []}
        self._save_doc()

    def all_events(self) -> Iterator[EventBase]:
        return iter(list(self._events))


def log_llm_calls(agent: Agent, thread: ThreadHandle) -> Any:
    """Log each model call of a Nooa `agent` to `thread`; returns the unsubscribe callable."""

    async def logged(ctx: Any, call_next: Any) -> Any:
        # A copy as it is now: what acall receives (the client may change the list later).
        sent = json.loads(json.dumps(ctx.messages, ensure_ascii=False, default=str))
        ctx = await call_next(ctx)
        usage = (ctx.response.usage if ctx.response is not None else None) or {}
        thread.log_llm_call(str(getattr(agent.llm, "model", "") or ""), messages=sent,
                            input_tokens=usage.get("prompt_tokens"),
                            output_tokens=usage.get("completion_tokens"))
        return ctx

    return agent.event_manager.intercept("llm_call", logged)


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
        """Show the agent's own (non-framework) blocks as the thread's context blocks.

        A copy for people: the snapshot (already saved) is what restores the agent, so a block
        the server cannot show as it is never fails the save. A name with "/" is shown with "∕"
        (a path cannot carry a slash), a value over the block limit is shown cut, with a note.
        """
        manager = agent.context_manager
        for key, value in manager._raw_items():
            if key in manager.protected_keys or isinstance(value, DynamicContext):
                continue  # a Python expression cannot be evaluated safely by the server
            text = None if manager.is_disabled(key) or value is None else (
                value if isinstance(value, str) else json.dumps(value, default=str))
            if text is not None and len(text) > BLOCK_MAX_CHARS:
                note = "\n[… cut here; the whole block is in the Nooa snapshot]"
                text = text[:BLOCK_MAX_CHARS - len(note)] + note
            try:
                self.thread.put_block(str(key).replace("/", "∕"), value=text, placement="prefix")
            except ContextStoreError:
                continue
