"""Reads for the replay page: the replays kept of a call. What the call answered in the thread
is selectors/calls.py's llm_call_reply."""

from django.db.models import QuerySet

from contextstore.models import CallReplay, Thread
from contextstore.selectors.calls import LLMCall


def call_replays(*, thread: Thread, call: LLMCall) -> QuerySet[CallReplay]:
    return CallReplay.objects.filter(thread=thread, call_seq=call.seq).order_by("-created_at", "-id")
