"""peteos context JSON <-> contextstore export.

Every message becomes an event; the original message dict is kept in the event's data under
"peteos" so that export gives back exactly what was imported. Top-level fields that have no
column (id, content map, anchor points, counters, lineage) are kept in thread.extra["peteos"].
"""

from typing import Any

from contextstore.errors import InvalidInput
from contextstore.models import Event, Thread
from contextstore.tokens import part_text

SLOT_KEYS = ("system_prompt_message", "tool_definitions_message")


def _message_text(message: dict[str, Any]) -> tuple[str, list | None]:
    content = message.get("content")
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        texts = [part_text(p) for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(texts), content
    return "", None


def peteos_to_export(data: dict[str, Any]) -> dict[str, Any]:
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise InvalidInput("Not a contextstore export nor a peteos context: no messages list.")
    events = []
    for seq, message in enumerate(messages, 1):
        if not isinstance(message, dict):
            raise InvalidInput(f"messages[{seq - 1}] must be an object.")
        content, parts = _message_text(message)
        events.append({
            "seq": seq, "position": seq, "type": "Message", "role": str(message.get("role", "")),
            "content": content, "parts": parts, "data": {"peteos": message}, "visible": True,
            "status": Event.Status.ACTIVE,
        })
    slots = {k: data.get(k) for k in SLOT_KEYS}
    system = slots["system_prompt_message"]
    system_text = _message_text(system)[0] if isinstance(system, dict) else ""
    tools = slots["tool_definitions_message"]
    extra = {k: v for k, v in data.items() if k != "messages"}
    return {
        "format": "contextstore",
        "session": {"key": str(data.get("id") or "") or None},
        "thread": {"system_prompt": system_text, "tool_definitions": tools,
                   "extra": {"peteos": extra}},
        "events": events,
    }


def thread_to_peteos(*, thread: Thread) -> dict[str, Any]:
    """The thread's working context as a peteos context dict."""
    stored = dict((thread.extra or {}).get("peteos") or {})
    messages = []
    for event in thread.events.filter(status=Event.Status.ACTIVE).order_by("position").iterator(
        chunk_size=2000
    ):
        original = event.data.get("peteos") if isinstance(event.data, dict) else None
        if isinstance(original, dict):
            messages.append(original)
            continue
        content = event.parts if event.parts else [{"type": "text", "text": event.content}]
        messages.append({"role": event.role or "user", "content": content,
                         "_sequence_number": event.seq})
    result = {**stored, "messages": messages}
    if "system_prompt_message" not in stored:
        result["system_prompt_message"] = (
            {"role": "system", "content": [{"type": "text", "text": thread.system_prompt}]}
            if thread.system_prompt else None
        )
    if "tool_definitions_message" not in stored:
        result["tool_definitions_message"] = thread.tool_definitions
    result.setdefault("id", f"contextstore-{thread.pk}")
    result.setdefault("anchor_points", [["messages", len(messages)]])
    result.setdefault("content_map", {})
    return result
