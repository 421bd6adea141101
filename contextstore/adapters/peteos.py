"""peteos: keep a ``peteos.conversation.context.Context`` in a contextstore thread.

    from contextstore.adapters.peteos import load_context, save_context

    thread = ContextStore(url, token).thread("support-42", agent="peteos")
    save_context(ctx, thread)          # after appending messages; only new ones are sent
    ctx = load_context(thread)         # in any process: an equal Context

Each message becomes one event (in peteos' creation order, with the message dict untouched in
``data["peteos"]`` and its home anchor in ``anchor``), so the dashboard shows the conversation and
contextstore's windows select what peteos' rolling windows select. The context's top level
(anchors, counters, content map, slot ids, fork lineage), its display order and messages peteos
changed in place after they were sent (tool approval, cached token counts) are kept as the
thread's ``peteos`` provider state. ``ContextStore.import_thread(ctx.raw_dict)`` is the one-shot
alternative: it stores token counts exactly as peteos computes them.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any

from peteos.conversation.context import Context

from contextstore.client import ContextStore, ThreadHandle

PROVIDER = "peteos"
SLOT_ID_KEYS = ("system_prompt_message_id", "tool_definitions_message_id")


def _digest(message: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


def _home_anchor(anchors: list, index: int) -> str:
    return next((str(name) for name, end in anchors if end > index), "")


def _event(message: dict[str, Any], anchor: str) -> dict[str, Any]:
    content = message.get("content")
    parts = content if isinstance(content, list) else None
    types = {p.get("type") for p in parts or () if isinstance(p, dict)}
    text = "\n".join(p["text"] for p in parts or ()
                     if isinstance(p, dict) and p.get("type") == "text" and "text" in p)
    return {
        "type": "ToolResult" if "tool_result" in types else "ToolCall" if "tool_use" in types
        else "Message",
        "role": str(message.get("role", "")), "content": text if parts is not None else str(content or ""),
        "parts": parts, "data": {PROVIDER: message}, "anchor": anchor,
        "client_id": f"peteos:{message['id']}",
    }


class _Sent:
    """What this process knows the thread holds: message id -> digest, and revised messages."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self.revised: dict[str, dict[str, Any]] = {}


# Per client object (so per server and token), then per thread id.
_known: weakref.WeakKeyDictionary[ContextStore, dict[int, _Sent]] = weakref.WeakKeyDictionary()


def _sent(thread: ThreadHandle) -> _Sent:
    known = _known.setdefault(thread.client, {})
    if thread.id not in known:
        # First contact in this process: learn what earlier processes stored.
        sent = _Sent()
        saved = thread.provider_state(PROVIDER)
        if saved is not None and isinstance(saved.state, dict):
            sent.revised = dict(saved.state.get("revised") or {})
        for event in thread.iter_events(status="all"):
            original = event.data.get(PROVIDER) if isinstance(event.data, dict) else None
            if isinstance(original, dict) and original.get("id"):
                current = sent.revised.get(original["id"], original)
                sent.digests[original["id"]] = _digest(current)
        known[thread.id] = sent
    return known[thread.id]


def save_context(ctx: Context, thread: ThreadHandle) -> None:
    """Store `ctx` in `thread`: new messages are appended, the rest is one provider-state write.

    Safe to repeat: appends are idempotent per message id.
    """
    raw = json.loads(json.dumps(ctx.raw_dict))  # anchors become lists, as in any saved JSON
    messages = raw.get("messages") or []
    anchors = raw.get("anchor_points") or []
    slot_ids = {raw.get(k) for k in SLOT_ID_KEYS} - {None, ""}
    sent = _sent(thread)

    specials, ordinary, new = [], [], []
    for index, message in enumerate(messages):
        if message.get("id") in slot_ids:
            specials.append([index, message])
            continue
        ordinary.append(message)
        known = sent.digests.get(message["id"])
        if known is None:
            new.append((message, _home_anchor(anchors, index)))
        elif known != _digest(message):
            sent.revised[message["id"]] = message
    # Creation order, so contextstore's seq follows peteos' _sequence_number.
    new.sort(key=lambda item: item[0].get("_sequence_number", -1))
    for start in range(0, len(new), 500):
        thread.append([_event(m, a) for m, a in new[start:start + 500]])
    for message in ordinary:
        sent.digests[message["id"]] = _digest(message)

    thread.put_provider_state(PROVIDER, {
        "context": {k: (None if k == "messages" else v) for k, v in raw.items()},
        "special_messages": specials,
        "order": [m["id"] for m in ordinary],
        "revised": sent.revised,
    })


def load_context(thread: ThreadHandle) -> Context:
    """The thread's working context as a peteos Context (collapsed ranges as their summaries)."""
    return Context.load_from_dict(thread.export(format="peteos"))
