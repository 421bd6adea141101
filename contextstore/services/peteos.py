"""peteos context JSON (``Context.raw_dict``) <-> a contextstore thread, losslessly.

A peteos context keeps every message in one "messages" list: the system prompt and tool
definitions messages sit in the first slots, anchors partition the rest, and a message appended
at an earlier anchor is shown before older ones. contextstore keeps:

- each ordinary message as one event, in peteos' creation order (its ``_sequence_number``), so
  seq and position follow the order peteos' rolling windows select by; the message dict itself
  stays untouched in ``event.data["peteos"]`` and its home anchor in ``event.anchor``;
- the special messages (system prompt, tool definitions) in ``thread.extra["peteos"]``, with their
  text copied to ``thread.system_prompt`` / ``thread.tool_definitions`` for people to read;
- every other top-level key (id, content_map, anchor_points, message_sequence,
  ``_mutation_counter``, children, slot ids, fork lineage) in ``thread.extra["peteos"]["context"]``
  in its original key order, and the display order as a list of message ids.

Token counts are peteos' own (``Message.count_tokens``: ``"<role>: "`` plus the content's JSON,
or the count a message already caches), so totals and windows agree with what peteos computes.
"""

from typing import Any

from contextstore.importspec import PETEOS_SLOT_ID_KEYS
from contextstore.models import Event, Thread
from contextstore.tokens import peteos_message_tokens, peteos_stripped_content, peteos_thinking_tokens

KEY = "peteos"
SLOT_ID_KEYS = PETEOS_SLOT_ID_KEYS


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def _event_type(content: Any) -> str:
    types = ({p.get("type") for p in content if isinstance(p, dict) and isinstance(p.get("type"), str)}
             if isinstance(content, list) else set())
    if "tool_result" in types:
        return "ToolResult"
    if "tool_use" in types:
        return "ToolCall"
    return "Message"


def _home_anchor(anchors: list, index: int) -> str:
    """peteos' home anchor of the message at `index`: the first anchor whose end is past it."""
    for name, end in anchors:
        if end > index:
            return str(name)
    return ""


def peteos_to_export(data: dict[str, Any]) -> dict[str, Any]:
    """A peteos ``Context.raw_dict`` as a contextstore export (see ``services.transfer``).

    Events carry their peteos token counts under token_count / thinking_tokens; the importer
    takes them only from this converter, never from a client's contextstore JSON.
    """
    messages, anchors = data["messages"], data.get("anchor_points") or []  # importspec.check_peteos
    slot_ids = {data.get(k) for k in SLOT_ID_KEYS} - {None, ""}
    specials: list[list] = []
    ordinary: list[tuple[int, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        if message.get("id") in slot_ids:
            specials.append([index, message])
        else:
            ordinary.append((index, message))

    def creation_order(item: tuple[int, dict[str, Any]]) -> tuple[int, int]:
        number = item[1].get("_sequence_number")
        # Messages without a sequence number (hand-built dicts) keep their display place.
        return (number if isinstance(number, int) else -1, item[0])

    ids = [m.get("id") for _, m in ordinary]
    ids_unique = all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
    events = []
    for seq, (index, message) in enumerate(sorted(ordinary, key=creation_order), 1):
        content = message.get("content")
        events.append({
            "seq": seq, "position": seq, "type": _event_type(content),
            "role": str(message.get("role", ""))[:32], "content": _text(content),
            "parts": content if isinstance(content, list) else None,
            "data": {KEY: message}, "anchor": _home_anchor(anchors, index)[:200],
            "client_id": f"peteos:{message['id']}"[:200] if ids_unique else None,
            "visible": True, "status": Event.Status.ACTIVE,
            "token_count": peteos_message_tokens(message), "thinking_tokens": peteos_thinking_tokens(message),
        })

    system = next((m for _, m in specials if m.get("id") == data.get(SLOT_ID_KEYS[0])), None)
    tools = next((m for _, m in specials if m.get("id") == data.get(SLOT_ID_KEYS[1])), None)
    # The top level in its own key order; "messages" is rebuilt from the events on export.
    context = {k: (None if k == "messages" else v) for k, v in data.items()}
    return {
        "format": "contextstore",
        "session": {"key": str(data.get("id") or "")[:255] or None, "agent": "peteos"},
        "thread": {
            "system_prompt": _text(system.get("content")) if system else "",
            "tool_definitions": tools.get("content") if tools else None,
            "extra": {KEY: {
                "context": context,
                "special_messages": specials,
                "special_tokens": sum(peteos_message_tokens(m) for _, m in specials),
                "order": [m.get("id") for _, m in ordinary] if ids_unique else None,
            }},
        },
        "events": events,
    }


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
    With strip_thinking, thinking parts are removed and messages left empty are dropped, as
    peteos' ``Context.strip_thinking`` does (ids and counters are kept, not re-forked).
    """
    stored = dict((thread.extra or {}).get(KEY) or {})
    # The incremental adapter (contextstore_client.adapters.peteos.save_context) keeps the context's
    # current top level, display order and messages peteos changed in place as provider state.
    saved = thread.provider_states.filter(provider=KEY).values_list("state", flat=True).first()
    # The sync adapter keeps it in the thread document instead ("sync": True): newer than any
    # provider state an earlier adapter version left.
    if isinstance(saved, dict) and not stored.get("sync"):
        stored.update(saved)
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

    placed: list[tuple[float, dict[str, Any], str]] = []
    all_events = list(thread.events.order_by("position", "seq").iterator(chunk_size=2000))
    seq_place: dict[int, float] = {}  # where each peteos message stood, collapsed ones too
    originals: dict[int, dict[str, Any]] = {}
    for event in all_events:
        original = event.data.get(KEY) if isinstance(event.data, dict) else None
        if isinstance(original, dict):
            originals[event.seq] = revised.get(original.get("id")) or original
            if original.get("id") in display:
                seq_place[event.seq] = float(display[original["id"]])
    added = 0
    for event in all_events:
        if event.status != Event.Status.ACTIVE:
            continue
        original = originals.get(event.seq)
        if event.seq in seq_place:
            placed.append((seq_place[event.seq], originals[event.seq], event.anchor or last_anchor))
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
        placed.append((place, message, event.anchor or last_anchor))
    placed.sort(key=lambda item: item[0])

    rows = [(m, a) for _, m, a in placed]
    for index, message in stored.get("special_messages") or []:
        home = _home_anchor(anchors, index) or (anchors[0][0] if anchors else "")
        rows.insert(min(index, len(rows)), (message, home))
    messages = [m for m, _ in rows]

    unchanged = added == 0 and [m.get("id") for m in messages if m.get("id") in display] == list(
        stored.get("order") or []
    ) and len(messages) == len(display) + len(stored.get("special_messages") or [])
    if not unchanged and anchors:
        # Rebuild each anchor's end index from the messages' home anchors (peteos invariant 3).
        rank = {name: i for i, (name, _) in enumerate(anchors)}
        rows.sort(key=lambda row: rank.get(row[1], len(anchors)))
        messages = [m for m, _ in rows]
        homes = [rank.get(a, len(anchors) - 1) for _, a in rows]
        anchors = [[name, sum(1 for h in homes if h <= i)] for i, (name, _) in enumerate(anchors)]
        context["anchor_points"] = anchors
        context["message_sequence"] = int(context.get("message_sequence") or 0) + added
        context["_mutation_counter"] = counter

    if strip_thinking:
        stripped = []
        for message in messages:
            kept = peteos_stripped_content(message)
            if kept is not None:
                stripped.append({**message, "content": kept})
        messages = stripped

    if not context:
        context = {"messages": None, "id": f"contextstore-{thread.pk}", "content_map": {},
                   "anchor_points": [["messages", len(messages)]],
                   "message_sequence": len(messages), "_mutation_counter": counter, "children": []}
    context["messages"] = messages
    return context
