"""A contextstore thread as the peteos context JSON (``Context.raw_dict``) an agent loads, and
which of its messages peteos' own forks keep (``Context.fork_insert_sequence``: a message with a
``_sequence_number`` in ``[0, _mutation_counter)``), read-only: the export (services.peteos,
services.sync) and the render (strip_thinking, as peteos' ``Context.strip_thinking`` forks)
read the same answer. The import side is services.peteos.
"""

from collections.abc import Sequence
from typing import Any

from contextstore.models import Event, Thread
from contextstore.render_format import EventFields
from contextstore.tokens import peteos_stripped_content

KEY = "peteos"
SLOT_ID_KEYS = ("system_prompt_message_id", "tool_definitions_message_id")


def home_anchor(anchors: list, index: int) -> str:
    """peteos' home anchor of the message at `index`: the first anchor whose end is past it."""
    for name, end in anchors:
        if end > index:
            return str(name)
    return ""


def in_fork_range(message: dict[str, Any], counter: int) -> bool:
    """Whether peteos' ``fork_insert_sequence()`` (so ``strip_thinking``) copies `message`: its
    ``_sequence_number`` set and in ``[0, counter)``, as peteos compares it."""
    number = message.get("_sequence_number")
    return isinstance(number, int | float) and 0 <= number < counter


def _new_id(event: Event) -> str:
    return f"contextstore-{event.thread_id}-{event.seq}"


def _new_message(event: Event, number: int) -> dict[str, Any]:
    """A peteos message for an event that did not come from peteos (appended through the API)."""
    return {
        "role": event.role or "user",
        "content": event.parts if event.parts else [{"type": "text", "text": event.content}],
        "_type": "Message",
        "id": _new_id(event),
        "_hook_ids": [],
        "creation_timestamp": event.occurred_at.isoformat(),
        "_sequence_number": number,
    }


def thread_to_peteos(*, thread: Thread, strip_thinking: bool = False) -> dict[str, Any]:
    """The thread's working context as a peteos ``Context.raw_dict``.

    A thread imported from peteos and not changed since comes back equal to what was imported.
    Events added through contextstore are appended at the last anchor with fresh sequence
    numbers; collapsed and cleared events are left out, a Summary stands where its range stood.
    A context that changed since it was stored (new events, a restored older document beside
    messages saved after it) gets a ``_mutation_counter`` past every message's sequence number,
    as peteos keeps it, so peteos' forks keep them all and its next append numbers afresh.
    With strip_thinking, what peteos' ``Context.strip_thinking`` keeps: the messages its
    ``fork_insert_sequence()`` copies, without their thinking parts, and none left empty (ids and
    counters are kept, not re-forked).
    """
    context, rows = _export(thread)
    messages = [m for m, _ in rows]
    if strip_thinking:
        counter = int(context.get("_mutation_counter") or 0)
        slots = {context.get(k) for k in SLOT_ID_KEYS} - {None, ""}
        stripped = []
        for message in messages:
            if message.get("id") not in slots and not in_fork_range(message, counter):
                continue
            kept = peteos_stripped_content(message)
            if kept is not None:
                stripped.append({**message, "content": kept})
        messages = stripped
    context["messages"] = messages
    return context


def is_peteos(thread: Thread) -> bool:
    """Whether the thread is a peteos context (imported, or saved by the peteos adapter)."""
    return bool((thread.extra or {}).get(KEY)) or thread.provider_states.filter(provider=KEY).exists()


def peteos_view(thread: Thread) -> tuple[dict[int, int], set[int]] | None:
    """How peteos holds the thread's context, for a render: each event's place in peteos'
    display order (the order of ``Context.messages``, which its chatbots send: a message
    appended at an earlier anchor stands before later ones), by seq, and the seqs whose message
    peteos' ``fork_insert_sequence()`` (so its ``strip_thinking`` and rolling windows) leaves
    out: no sequence number, or one outside ``[0, _mutation_counter)``. None for a thread that
    is not a peteos context."""
    if not is_peteos(thread):
        return None
    context, rows = _export(thread)
    counter = int(context.get("_mutation_counter") or 0)
    slots = {context.get(k) for k in SLOT_ID_KEYS} - {None, ""}
    display = {seq: i for i, (_, seq) in enumerate(rows) if seq is not None}
    dropped = {seq for message, seq in rows if seq is not None and message.get("id") not in slots
               and not in_fork_range(message, counter)}
    return display, dropped


def fork_dropped(thread: Thread) -> set[int]:
    """The seqs of the thread's events whose message peteos' ``fork_insert_sequence()`` (so its
    ``strip_thinking``) leaves out of the context the thread exports (peteos_view). Empty for
    a thread that is not a peteos context."""
    view = peteos_view(thread)
    return view[1] if view is not None else set()


def peteos_window_view(thread: Thread, events: Sequence[EventFields]
                       ) -> tuple[dict[int, int], set[int]] | None:
    """peteos_view for the events a render shows (visible, in the working context), read from
    them and the thread's stored context alone, not from the rest of the thread, so a render's
    cost does not grow with its history: their places in peteos' display order (relative to
    each other) and which of them its forks leave out. Where those depend on the whole thread
    (whether anything changed since the context was stored: it decides the anchor regrouping
    and the _mutation_counter), and the window alone cannot tell, the whole view is read."""
    if not is_peteos(thread):
        return None
    stored = _stored(thread)
    context = stored.get("context") or {}
    if not context or not events:
        return peteos_view(thread)
    revised, sync = stored.get("revised") or {}, bool(stored.get("sync"))
    held = stored.get("foreign") if sync else None
    held = held if isinstance(held, dict) else {}
    anchors = [list(a) for a in context.get("anchor_points") or []]
    last_anchor = anchors[-1][0] if anchors else "messages"
    rank = {name: i for i, (name, _) in enumerate(anchors)}
    counter = int(context.get("_mutation_counter") or 0)
    slots = {context.get(k) for k in SLOT_ID_KEYS} - {None, ""}
    seqs = [e.seq for e in events]
    anchor_of = dict(Event.objects.filter(thread_id=thread.pk, seq__in=seqs).values_list("seq", "anchor"))
    # where a Summary stands: the display place of the first message it replaced
    moved = {e.position for e in events if e.position != e.seq}
    replaced = {seq: _original(data) for seq, data in (
        Event.objects.filter(thread_id=thread.pk, seq__in=moved).values_list("seq", "data") if moved else ())}
    # The display places of just the ids these events can stand at (one pass over the order,
    # no index of every message's id).
    new_ids = [f"contextstore-{thread.pk}-{seq}" for seq in seqs]  # selectors.peteos._new_id
    wanted = {o.get("id") for o in [*(_original(e.data) for e in events), *replaced.values(),
                                     *(held.get(i) for i in new_ids)]
              if isinstance(o, dict)} | set(new_ids)
    order = stored.get("order") or []
    display = {mid: i for i, mid in enumerate(order) if mid in wanted}
    seq_place = {seq: float(display[o["id"]]) for seq, o in replaced.items()
                 if o is not None and o.get("id") in display}
    placed: list[tuple[float, int, int]] = []  # (place, anchor rank, seq), in (position, seq) order
    dropped: set[int] = set()
    for event in sorted(events, key=lambda e: (e.position, e.seq)):
        original = _original(event.data)
        message = (revised.get(original.get("id")) or original) if original is not None \
            else held.get(f"contextstore-{thread.pk}-{event.seq}")
        if original is not None and original.get("id") in display:
            place = float(display[original["id"]])
        else:
            place = seq_place.get(event.position, len(order) + event.position) - 0.5
            if isinstance(message, dict) and message.get("id") in display and sync:
                place = float(display[message["id"]])
        placed.append((place, rank.get(anchor_of.get(event.seq) or last_anchor, len(anchors)), event.seq))
        if not isinstance(message, dict) or message.get("id") in slots:
            continue  # a new message (numbered past every other) or a slot: always kept
        number = message.get("_sequence_number")
        if not isinstance(number, int | float) or number < 0:
            dropped.add(event.seq)
        elif number >= counter:  # kept only if the thread changed since it was stored
            return peteos_view(thread)
    by_place = sorted(placed, key=lambda p: p[0])
    if anchors and sorted(by_place, key=lambda p: p[1]) != by_place:
        return peteos_view(thread)  # regrouped by anchor only if the thread changed
    return {seq: i for i, (_, _, seq) in enumerate(by_place)}, dropped


def _original(data: Any) -> dict[str, Any] | None:
    original = data.get(KEY) if isinstance(data, dict) else None
    return original if isinstance(original, dict) else None


def _stored(thread: Thread) -> dict[str, Any]:
    """What the thread keeps of its peteos context: its top level, display order, messages
    peteos changed in place, and (sync adapter) the messages numbered in the last save."""
    stored = dict((thread.extra or {}).get(KEY) or {})
    # The incremental adapter (contextstore_client.adapters.peteos.save_context) keeps the context's
    # current top level, display order and messages peteos changed in place as provider state.
    saved = thread.provider_states.filter(provider=KEY).values_list("state", flat=True).first()
    # The sync adapter keeps it in the thread document instead ("sync": True): newer than any
    # provider state an earlier adapter version left.
    if isinstance(saved, dict) and not stored.get("sync"):
        stored.update(saved)
    return stored


def _export(thread: Thread) -> tuple[dict[str, Any], list[tuple[dict[str, Any], int | None]]]:
    """The exported context's top level (its "messages" not set) and its messages in display
    order, each with the seq of the event it stands for (None: a special slot message)."""
    stored = _stored(thread)
    revised = stored.get("revised") or {}
    held = stored.get("foreign") if stored.get("sync") else None
    if not isinstance(held, dict):
        held = {}
    context = dict(stored.get("context") or {})
    if context and (thread.extra or {}).get("forked_from"):
        # A contextstore fork of a peteos thread inherited the parent's top level: give it the
        # lineage peteos gives a fork (its own id, pointing back at the parent).
        context["origin_context_id"] = context.get("id")
        context["parent_mutation_counter"] = context.get("_mutation_counter", 0)
        context["id"] = f"{context.get('id')}-fork-{thread.pk}"
        context["children"] = []
    anchors = [list(a) for a in context.get("anchor_points") or []]
    counter = int(context.get("_mutation_counter") or 0)
    display = {mid: i for i, mid in enumerate(stored.get("order") or [])}
    last_anchor = anchors[-1][0] if anchors else "messages"

    placed: list[tuple[float, dict[str, Any], str, int | None]] = []
    all_events = list(thread.events.order_by("position", "seq").iterator(chunk_size=2000))
    seq_place: dict[int, float] = {}  # where each peteos message stood, collapsed ones too
    originals: dict[int, dict[str, Any]] = {}
    for event in all_events:
        original = event.data.get(KEY) if isinstance(event.data, dict) else None
        if isinstance(original, dict):
            originals[event.seq] = revised.get(original.get("id")) or original
            if original.get("id") in display:
                seq_place[event.seq] = float(display[original["id"]])
    # New messages are numbered past every number a message of the thread carries (one saved
    # after a restored older document included), as peteos' own appends would number them.
    numbers = [m.get("_sequence_number") for m in [*originals.values(), *held.values()]
               if isinstance(m, dict)]
    counter = max([counter, *(n + 1 for n in numbers if isinstance(n, int))])
    added = 0
    for event in all_events:
        if event.status != Event.Status.ACTIVE:
            continue
        original = originals.get(event.seq)
        if event.seq in seq_place:
            placed.append((seq_place[event.seq], originals[event.seq], event.anchor or last_anchor,
                           event.seq))
            continue
        if isinstance(original, dict):
            message = original
        elif not event.visible:  # runtime events (an LLM call logged) are no message of peteos'
            continue
        elif isinstance(held.get(_new_id(event)), dict):  # numbered in the context last saved
            message = held[_new_id(event)]
        else:
            message, counter, added = _new_message(event, counter), counter + 1, added + 1
        # A Summary sits just before the first message it replaced; new events go last,
        # unless the sync adapter saved the context with them in it: then where peteos had them.
        place = seq_place.get(event.position, len(display) + event.position) - 0.5
        if message.get("id") in display and stored.get("sync"):
            place = float(display[message["id"]])
        placed.append((place, message, event.anchor or last_anchor, event.seq))
    placed.sort(key=lambda item: item[0])

    rows: list[tuple[dict[str, Any], str, int | None]] = [(m, a, s) for _, m, a, s in placed]
    for index, message in stored.get("special_messages") or []:
        home = home_anchor(anchors, index) or (anchors[0][0] if anchors else "")
        rows.insert(min(index, len(rows)), (message, home, None))
    messages = [m for m, _, _ in rows]

    unchanged = added == 0 and [m.get("id") for m in messages if m.get("id") in display] == list(
        stored.get("order") or []
    ) and len(messages) == len(display) + len(stored.get("special_messages") or [])
    if not unchanged and anchors:
        # Rebuild each anchor's end index from the messages' home anchors (peteos invariant 3).
        rank = {name: i for i, (name, _) in enumerate(anchors)}
        rows.sort(key=lambda row: rank.get(row[1], len(anchors)))
        messages = [m for m, _, _ in rows]
        homes = [rank.get(a, len(anchors) - 1) for _, a, _ in rows]
        anchors = [[name, sum(1 for h in homes if h <= i)] for i, (name, _) in enumerate(anchors)]
        context["anchor_points"] = anchors
        context["message_sequence"] = int(context.get("message_sequence") or 0) + added
        context["_mutation_counter"] = counter

    if not context:
        context = {"messages": None, "id": f"contextstore-{thread.pk}", "content_map": {},
                   "anchor_points": [["messages", len(messages)]],
                   "message_sequence": len(messages), "_mutation_counter": counter, "children": []}
    return context, [(m, s) for m, _, s in rows]
