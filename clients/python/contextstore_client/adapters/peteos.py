"""peteos: keep a ``peteos.conversation.context.Context`` in a contextstore thread.

    from contextstore_client.adapters.peteos import load_context, save_context

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

``log_llm_calls(chatbot, thread)`` logs every model call of a peteos ``ChatBot``: LLMCallStart
with the request's ``messages`` exactly as the chatbot puts them on the wire (its own
``_build_body``; an Anthropic request's ``system`` beside them), or the context's messages for a
chatbot without one, and LLMComplete. peteos builds that request itself from its ``Context``,
not from a contextstore render, so the calls carry messages, not a render_id.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

from peteos.chatbot.chatbot import ChatBot
from peteos.conversation.context import Context

from contextstore_client import ContextStore, SyncTracker, ThreadHandle

PROVIDER = "peteos"
FOREIGN = "cs:"
SLOT_ID_KEYS = ("system_prompt_message_id", "tool_definitions_message_id")


def _home_anchor(anchors: list[tuple[Any, int]], index: int) -> str:
    return next((str(name) for name, end in anchors if end > index), "")


def _event(message: dict[str, Any], anchor: str) -> dict[str, Any]:
    """The event a peteos message is stored as (the same message always gives the same event)."""
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
    }


# One tracker per client object (so per process and token), then per thread id.
_trackers: weakref.WeakKeyDictionary[ContextStore, dict[int, SyncTracker]] = weakref.WeakKeyDictionary()


def _foreign_prefix(thread: ThreadHandle) -> str:
    # services/peteos.py names a message made from a non-peteos event after the event's seq.
    return f"contextstore-{thread.id}-"


def _key(message: dict[str, Any], foreign: str) -> str:
    mid = str(message["id"])
    return FOREIGN + mid[len(foreign):] if mid.startswith(foreign) else mid


def load_context(thread: ThreadHandle) -> Context:
    """The thread's working context as a peteos Context (collapsed ranges as their summaries,
    notes people added as messages), remembered as the base of the next save."""
    tracker = SyncTracker(thread, PROVIDER)
    raw = tracker.load(format="peteos").rendered
    foreign = _foreign_prefix(thread)
    anchors = raw.get("anchor_points") or []
    for index, message in enumerate(raw.get("messages") or []):
        if str(message.get("id", "")).startswith(foreign):
            tracker.seen(_key(message, foreign), _event(message, _home_anchor(anchors, index)))
    _trackers.setdefault(thread.client, {})[thread.id] = tracker
    return Context.load_from_dict(raw)


def save_context(ctx: Context, thread: ThreadHandle) -> None:
    """Store `ctx` in `thread` in one transaction: new messages appended, changed ones rewritten
    in place, and the context's top level in the thread's ``peteos`` document.

    Based on the last load_context of this thread by this client: StaleRevision (nothing
    written) when another process saved since; load again and redo the turn. Safe to repeat.
    """
    raw = json.loads(json.dumps(ctx.raw_dict))  # anchors become lists, as in any saved JSON
    messages = raw.get("messages") or []
    anchors = raw.get("anchor_points") or []
    slot_ids = {raw.get(k) for k in SLOT_ID_KEYS} - {None, ""}
    known = _trackers.setdefault(thread.client, {})
    complete = thread.id in known
    if not complete:
        # Never loaded here: learn what is stored, and drop nothing this process never saw.
        known[thread.id] = SyncTracker(thread, PROVIDER)
        known[thread.id].load()
    tracker = known[thread.id]
    foreign = _foreign_prefix(thread)

    specials, ordinary = [], []
    for index, message in enumerate(messages):
        if message.get("id") in slot_ids:
            specials.append([index, message])
        else:
            ordinary.append((message, _home_anchor(anchors, index)))
    # Creation order, so contextstore's seq follows peteos' _sequence_number.
    ordinary.sort(key=lambda item: item[0].get("_sequence_number", -1))
    tracker.save(
        [(_key(m, foreign), _event(m, a)) for m, a in ordinary], complete=complete,
        document={
            "sync": True,
            "context": {k: (None if k == "messages" else v) for k, v in raw.items()},
            "special_messages": specials,
            "order": [m["id"] for m in messages if m.get("id") not in slot_ids],
            "revised": {},
            # Messages made from others' events (a person's note, a collapse's summary), as
            # this context holds them: they keep their sequence numbers on the next load.
            "foreign": {m["id"]: m for m in messages if str(m.get("id", "")).startswith(foreign)},
        })


def log_llm_calls(chatbot: ChatBot, thread: ThreadHandle) -> ChatBot:
    """Log every call `chatbot` makes to `thread` (see the module docstring); returns it."""
    send = chatbot._send_context

    async def logged(context: Context, generation_config: dict[str, Any] | None = None,
                     streaming: bool | None = None, **kwargs: Any) -> Any:
        response = await send(context, generation_config, streaming, **kwargs)
        build = getattr(chatbot, "_build_body", None)
        body = build(context, generation_config, streaming) if build is not None else {
            "messages": [m.raw_dict for m in context.messages]}
        extra: dict[str, Any] = {"system": body["system"]} if body.get("system") else {}
        thread.log_llm_call(str(chatbot.model or ""), messages=json.loads(json.dumps(
            body.get("messages") or [], default=str)), **extra)
        return response

    chatbot._send_context = logged
    return chatbot
