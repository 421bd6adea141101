"""Reads for the replay page: what a call answered in the thread, and the replays kept of it."""

from django.db.models import QuerySet

from contextstore.models import CallReplay, Event, Thread
from contextstore.selectors.calls import CALL_END, CALL_START, LLMCall

OUTPUT_WINDOW = 20  # events looked at after a call for what it produced
OUTPUT_TYPES = ("LLMOutput", "ToolCall", "Reasoning")


def llm_call_output(*, thread: Thread, call: LLMCall) -> list[Event]:
    """The assistant events the call produced: those after its start up to the next call's,
    within OUTPUT_WINDOW events (an agent logs a reply, its tool calls and its reasoning
    right after the call, or between its start and its end)."""
    anchor = (call.start or call.end).seq  # type: ignore[union-attr]
    out = []
    for event in Event.objects.filter(thread=thread, seq__gt=anchor).order_by("seq")[:OUTPUT_WINDOW]:
        if event.type == CALL_START or (event.type == CALL_END and call.end is not None
                                        and event.seq > call.end.seq):
            break
        if event.type in OUTPUT_TYPES:
            out.append(event)
    return out


def call_replays(*, thread: Thread, call: LLMCall) -> QuerySet[CallReplay]:
    return CallReplay.objects.filter(thread=thread, call_seq=call.seq).order_by("-created_at", "-id")
