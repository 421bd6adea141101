"""peteos' rolling windows over the working context: the last n events, or the newest events
that fit a token budget with the special slots (system prompt, tool definitions) counted."""

import json
from typing import Any

from contextstore.models import Event, Thread
from contextstore.selectors.peteos import fork_dropped
from contextstore.tokens import count_tokens, peteos_message_tokens


def working_context_tail(
    *, thread: Thread, max_tokens: int | None = None, count: int | None = None,
    strip_thinking: bool = False,
) -> list[Event]:
    """The newest model-visible active events, oldest first: the last `count`, or the longest
    run from the newest whose tokens fit `max_tokens`.

    Walks the partial (thread, position) index backward reading only (position, tokens), then
    loads just the events that fit, so the cost follows the budget, not the history.
    """
    qs = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True)
    if count is not None:
        return list(qs.order_by("-position")[: max(count, 0)])[::-1]
    budget = max(max_tokens or 0, 0)
    average = max(thread.active_tokens // max(thread.active_event_count, 1), 1)
    chunk = min(max(budget // average + 16, 32), 4096)
    used, newest, oldest, before = 0, None, None, None
    while True:
        page_qs = qs if before is None else qs.filter(position__lt=before)
        rows = list(page_qs.order_by("-position").values_list(
            "position", "token_count", "thinking_tokens")[:chunk])
        for position, tokens, thinking in rows:
            cost = tokens - (thinking if strip_thinking else 0)
            if used + cost > budget:
                rows = []  # stop: the window is contiguous from the newest event
                break
            used += cost
            newest = position if newest is None else newest
            oldest = position
        if len(rows) < chunk:
            break
        before = rows[-1][0]
        chunk = min(chunk * 4, 4096)
    if oldest is None:
        return []
    # Bounded above too, so events appended meanwhile cannot push the window over budget.
    return list(qs.filter(position__gte=oldest, position__lte=newest).order_by("position"))


def special_tokens(thread: Thread) -> int:
    """Tokens of peteos' special slots: the system prompt and the tool definitions."""
    # A thread imported from peteos keeps its slot messages and their count as peteos made it;
    # one the peteos adapter saved keeps the slot messages, counted here as peteos counts them.
    stored = (thread.extra or {}).get("peteos")
    if not isinstance(stored, dict):
        stored = {}
    counted = stored.get("special_tokens")
    if isinstance(counted, int):
        return counted
    specials = stored.get("special_messages")
    if isinstance(specials, list) and specials:
        return sum(peteos_message_tokens(m[1]) for m in specials
                   if isinstance(m, list) and len(m) == 2 and isinstance(m[1], dict))
    tools = json.dumps(thread.tool_definitions, ensure_ascii=False) if thread.tool_definitions else ""
    return count_tokens(thread.system_prompt) + count_tokens(tools)


def total_tokens(*, thread: Thread) -> int:
    """peteos total_token_count: the special slots plus the working context."""
    return special_tokens(thread) + thread.active_tokens


def window_by_count(*, thread: Thread, count: int) -> dict[str, Any]:
    """peteos rolling_sequence_window: the last `count` non-special messages.

    covers_all is true when nothing would be dropped (peteos returns None then). A count of 0
    keeps every message, as peteos does: it reads the window's start as ``entries[-0]``, the
    first entry, and forks the whole context.
    """
    if count == 0:
        events = list(Event.objects.filter(
            thread=thread, status=Event.Status.ACTIVE, visible=True).order_by("position"))
    else:
        events = working_context_tail(thread=thread, count=count)
    covers_all = thread.active_event_count <= count
    return {"events": events if covers_all else _in_fork_range(thread, events), "covers_all": covers_all}


def window_by_tokens(*, thread: Thread, max_tokens: int) -> dict[str, Any]:
    """peteos rolling_token_window: keep messages from the end while the total, special
    messages included, stays within max_tokens; covers_all when nothing needs dropping."""
    budget = max_tokens - special_tokens(thread)
    events = working_context_tail(thread=thread, max_tokens=budget)
    covers_all = total_tokens(thread=thread) <= max_tokens
    if not covers_all:
        events = _in_fork_range(thread, events)
    return {"events": _without_dangling_tool_results(events), "covers_all": covers_all}


def _in_fork_range(thread: Thread, events: list[Event]) -> list[Event]:
    """A window's events without the messages peteos' windows leave out of the fork they make:
    it selects only messages numbered below its ``_mutation_counter`` (a context imported with
    a counter lagging its messages' numbers keeps them out of every window), and none without
    a number (selectors.peteos.fork_dropped; nothing for a thread that is not a peteos context)."""
    dropped = fork_dropped(thread)
    return [e for e in events if e.seq not in dropped] if dropped else events


def _without_dangling_tool_results(events: list[Event]) -> list[Event]:
    """Drop events holding a tool_result whose tool_use fell out of the window.

    Mirrors peteos' _strip_dangling_tool_results: some model APIs reject a result with no call.
    """
    open_calls: set[str | None] = set()  # a tool_use without a call_id opens None
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
