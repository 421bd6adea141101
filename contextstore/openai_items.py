"""OpenAI conversation items as contextstore events, and back (no database).

The same mapping as the OpenAI Agents adapter's (contextstore_client.adapters.openai_agents:
item_event, stored_item), which the server cannot import (the production image has no client):
a user message is a Message, an assistant message an LLMOutput, a function call a ToolCall with
the call in ``data["tool_calls"]``, its output a ToolResult naming the call in
``data["tool_call_id"]`` (the shape renders pair), reasoning a Reasoning, and any other item
type a ResponseItem. The item itself is kept in ``data["item"]``, so it comes back as it was
sent, but for a text the row holds already (a message's string content, a tool's string output,
a call's arguments), stored once and put back on read. tests/api/test_openai_conversations.py
holds the two mappings equal.

An event that holds no item (a person's note, a Summary standing for a collapsed range) reads
as a message item with the id ``msg_cs<seq>``, so the conversation is what the model will read.
"""

import hashlib
import json
import re
import secrets
from typing import Any

TEXT_FIELDS = ("content", "output")  # an item's text fields (a message's, a tool output's)
ITEM_ID_MAX = 200  # an event's client_id
# Prefixes of the ids OpenAI gives items, by item type; other types get "item".
ID_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}
SYNTHETIC_ID = re.compile(r"^msg_cs([1-9][0-9]{0,17})$")
ROLES = ("user", "assistant", "system", "developer")


def new_id(prefix: str, seed: str | None = None) -> str:
    """An id shaped as OpenAI's (`conv_…`, `msg_…`): 48 hex digits, random, or derived from
    `seed` (a request's idempotency key and place), so a retried request names the same ids."""
    digits = secrets.token_hex(24) if seed is None else hashlib.sha256(seed.encode()).hexdigest()[:48]
    return f"{prefix}_{digits}"


def item_type(item: dict[str, Any]) -> str:
    return str(item.get("type") or ("message" if "role" in item else ""))


def _text(content: Any) -> str:
    """The readable text of an item's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return ""


def item_event(item: dict[str, Any]) -> dict[str, Any]:
    """The contextstore event for one conversation item (the item kept whole in data)."""
    kind = item_type(item)
    role = item.get("role") if isinstance(item.get("role"), str) else ""
    event: dict[str, Any] = {"role": role, "content": ""}
    extra: dict[str, Any] = {}  # data beside the item: what renders read
    if kind == "message":
        event.update(type="LLMOutput" if role == "assistant" else "Message",
                     content=_text(item.get("content")))
    elif kind == "function_call":
        call_id = str(item.get("call_id") or "")
        event.update(type="ToolCall", role="assistant", call_id=call_id)
        extra["tool_calls"] = [{"id": call_id, "name": str(item.get("name") or ""),
                                "arguments": item.get("arguments", "")}]
    elif kind == "function_call_output":
        output = item.get("output")
        call_id = str(item.get("call_id") or "")
        event.update(type="ToolResult", role="tool", call_id=call_id,
                     content=output if isinstance(output, str) else json.dumps(output, default=str))
        extra["tool_call_id"] = call_id
    elif kind == "reasoning":
        event.update(type="Reasoning", role="assistant",
                     content="\n".join(str(s.get("text", "")) for s in item.get("summary") or []
                                       if isinstance(s, dict)))
    else:
        # Other item kinds (hosted tool calls, compaction markers …) keep their own name in data.
        event.update(type="ResponseItem", content=json.dumps(item, default=str)[:2000])
    if event["role"] not in ("", "user", "assistant", "system", "developer", "tool"):
        event["role"] = ""
    if "call_id" in event:  # the row's call_id is at most 200 characters; data keeps it whole
        event["call_id"] = event["call_id"][:200]
    kept = dict(item)
    for field in TEXT_FIELDS:
        if isinstance(item.get(field), str) and item[field] and item[field] == event["content"]:
            kept[field] = None
            extra["item_text"] = field
            break
    if extra.get("tool_calls") and isinstance(item.get("arguments"), str):
        kept["arguments"] = None
        extra["item_arguments"] = True
    event["data"] = {"item": kept, **extra}
    return event


def stored_item(content: str, data: Any) -> dict[str, Any] | None:
    """The item an event holds, with what item_event left to the row put back; None when the
    event holds none."""
    if not isinstance(data, dict) or not isinstance(data.get("item"), dict):
        return None
    item = data["item"]
    field = data.get("item_text")
    if field in TEXT_FIELDS:
        item = {**item, field: content}
    if data.get("item_arguments") is True and isinstance(data.get("tool_calls"), list) and data["tool_calls"]:
        item = {**item, "arguments": data["tool_calls"][0].get("arguments")}
    return item


def synthetic_item(*, seq: int, type: str, role: str, content: str) -> dict[str, Any]:
    """A message item for an event that holds none (a person's note, a Summary)."""
    if role not in ROLES:
        role = ("user" if type in ("Message", "Input", "Task")
                else "system" if type == "Summary" else "assistant")
    part = "output_text" if role == "assistant" else "input_text"
    text_part: dict[str, Any] = {"type": part, "text": content}
    if part == "output_text":
        text_part["annotations"] = []
    return {"type": "message", "id": f"msg_cs{seq}", "status": "completed", "role": role,
            "content": [text_part]}


def text_parts(item: dict[str, Any]) -> dict[str, Any]:
    """A message whose content is a string, with that string as one text part, as OpenAI lists
    it (the SDKs' item types hold a list of parts); stored as sent."""
    if item.get("type") != "message" or not isinstance(item.get("content"), str):
        return item
    assistant = item.get("role") == "assistant"
    part: dict[str, Any] = {"type": "output_text" if assistant else "input_text", "text": item["content"]}
    if assistant:
        part["annotations"] = []
    return {**item, "content": [part]}


def event_item(*, seq: int, type: str, role: str, content: str, data: Any) -> dict[str, Any]:
    """The conversation item a stored event reads as."""
    item = stored_item(content, data)
    if item is None:
        return synthetic_item(seq=seq, type=type, role=role, content=content)
    return text_parts(item)
