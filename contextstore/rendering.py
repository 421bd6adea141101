"""Reads that build what a model sees: the rendered context and peteos' rolling windows.

Each reads only what it returns: blocks, then events newest-first until the budget is spent.
"""

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from contextstore import selectors
from contextstore.models import ContextBlock, Event, Thread
from contextstore.services.blocks import block_text
from contextstore.tokens import count_tokens, is_thinking

ROLE_BY_TYPE = {
    "Task": "user", "Input": "user", "Feedback": "user", "Message": "user",
    "LLMOutput": "assistant", "Reasoning": "assistant", "ToolCall": "assistant",
    "StepResult": "assistant", "ToolResult": "tool", "PythonOutput": "tool",
    "Summary": "system", "Error": "system", "Notification": "system",
}


def event_role(event: Event) -> str:
    return event.role or ROLE_BY_TYPE.get(event.type, "user")


def event_parts(event: Event, *, strip_thinking: bool) -> list | None:
    if not event.parts:
        return event.parts
    if not strip_thinking:
        return event.parts
    return [p for p in event.parts if not is_thinking(p)]


def event_message(event: Event, *, strip_thinking: bool = False) -> dict[str, Any]:
    tokens = event.token_count - (event.thinking_tokens if strip_thinking else 0)
    message = {
        "role": event_role(event), "content": event.content, "section": "history",
        "seq": event.seq, "position": event.position, "type": event.type, "tokens": tokens,
    }
    parts = event_parts(event, strip_thinking=strip_thinking)
    if parts:
        message["parts"] = parts
    return message


@dataclass
class Section:
    name: str
    text: str
    tokens: int
    blocks: list[dict[str, Any]] = field(default_factory=list)


def _block_section(name: str, blocks: list[ContextBlock], thread: Thread) -> Section:
    texts, listing = [], []
    for block in blocks:
        text = block_text(block, thread)
        listing.append({
            "name": block.name, "suppressed": text is None, "version": block.version,
            "kind": "expr" if block.expr is not None else "value",
            "tokens": count_tokens(text) if text else 0,
        })
        if text is not None:
            texts.append(f"## {block.name}\n{text}")
    joined = "\n\n".join(texts)
    return Section(name, joined, count_tokens(joined), listing)


def context_render(*, thread: Thread, max_tokens: int, strip_thinking: bool = False) -> dict[str, Any]:
    """Prefix blocks, the summary, the newest visible active events that fit, suffix blocks.

    Returns {"messages": [...], "stats": {...}}; stats give tokens per section, events included
    and omitted, and a hash of the prefix so an agent can see its prompt cache invalidated.
    """
    blocks = list(selectors.thread_blocks(thread=thread))
    prefix = _block_section("prefix", [b for b in blocks if b.placement == "prefix"], thread)
    suffix = _block_section("suffix", [b for b in blocks if b.placement == "suffix"], thread)
    summary_tokens = count_tokens(thread.summary)
    fixed = prefix.tokens + summary_tokens + suffix.tokens
    budget = max(max_tokens - fixed, 0)

    history = selectors.working_context_tail(thread=thread, max_tokens=budget,
                                             strip_thinking=strip_thinking)
    used = sum(e.token_count - (e.thinking_tokens if strip_thinking else 0) for e in history)

    messages: list[dict[str, Any]] = []
    if prefix.text:
        messages.append({"role": "system", "section": "prefix", "content": prefix.text,
                         "tokens": prefix.tokens})
    if thread.summary:
        messages.append({"role": "system", "section": "summary", "content": thread.summary,
                         "tokens": summary_tokens})
    messages.extend(event_message(e, strip_thinking=strip_thinking) for e in history)
    if suffix.text:
        messages.append({"role": "system", "section": "suffix", "content": suffix.text,
                         "tokens": suffix.tokens})
    total = fixed + used
    return {
        "messages": messages,
        "stats": {
            "max_tokens": max_tokens,
            "total_tokens": total,
            "fits": total <= max_tokens,
            "prefix_hash": hashlib.sha256(prefix.text.encode()).hexdigest(),
            "sections": {
                "prefix": {"tokens": prefix.tokens, "blocks": prefix.blocks},
                "summary": {"tokens": summary_tokens},
                "history": {
                    "tokens": used,
                    "events_included": len(history),
                    "events_omitted": max(thread.active_event_count - len(history), 0),
                },
                "suffix": {"tokens": suffix.tokens, "blocks": suffix.blocks},
            },
        },
    }


def special_tokens(thread: Thread) -> int:
    """Tokens of peteos' special slots: the system prompt and the tool definitions."""
    # A thread imported from peteos keeps its slot messages and their count as peteos made it.
    counted = (thread.extra or {}).get("peteos", {}).get("special_tokens")
    if isinstance(counted, int):
        return counted
    tools = json.dumps(thread.tool_definitions, ensure_ascii=False) if thread.tool_definitions else ""
    return count_tokens(thread.system_prompt) + count_tokens(tools)


def total_tokens(*, thread: Thread) -> int:
    """peteos total_token_count: the special slots plus the working context."""
    return special_tokens(thread) + thread.active_tokens


def window_by_count(*, thread: Thread, count: int) -> dict[str, Any]:
    """peteos rolling_sequence_window: the last `count` non-special messages.

    covers_all is true when nothing would be dropped (peteos returns None then).
    """
    events = selectors.working_context_tail(thread=thread, count=count)
    return {"events": events, "covers_all": thread.active_event_count <= count}


def window_by_tokens(*, thread: Thread, max_tokens: int) -> dict[str, Any]:
    """peteos rolling_token_window: keep messages from the end while the total, special
    messages included, stays within max_tokens; covers_all when nothing needs dropping."""
    budget = max_tokens - special_tokens(thread)
    events = selectors.working_context_tail(thread=thread, max_tokens=budget)
    return {"events": _without_dangling_tool_results(events),
            "covers_all": total_tokens(thread=thread) <= max_tokens}


def _without_dangling_tool_results(events: list[Event]) -> list[Event]:
    """Drop events holding a tool_result whose tool_use fell out of the window.

    Mirrors peteos' _strip_dangling_tool_results: some model APIs reject a result with no call.
    """
    open_calls: set[str] = set()
    kept: list[Event] = []
    for event in events:
        parts = [p for p in event.parts or () if isinstance(p, dict)]
        dangling = False
        for part in parts:
            if part.get("type") == "tool_use":
                open_calls.add(part.get("call_id"))
            elif part.get("type") == "tool_result" and part.get("call_id") not in open_calls:
                dangling = True
        if dangling:
            continue
        open_calls.difference_update(p.get("call_id") for p in parts if p.get("type") == "tool_result")
        kept.append(event)
    return kept
