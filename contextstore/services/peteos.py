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

from contextstore.models import Event
from contextstore.selectors.peteos import KEY, SLOT_ID_KEYS, home_anchor
from contextstore.tokens import peteos_message_tokens, peteos_thinking_tokens


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
            "data": {KEY: message}, "anchor": home_anchor(anchors, index)[:200],
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
