"""LLM call cards' views: what a call sent ("as sent") and how it differs from the call before.

Both are pages of their own (links work without JavaScript) and, for htmx, a fragment that
opens inside the call's card. Reads live in contextstore.selectors.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from contextstore.models import ReadAudit, Thread
from contextstore.selectors.cache import llm_call_diff
from contextstore.selectors.calls import (
    SENT_PAGE,
    LLMCall,
    llm_call_at,
    llm_call_previous,
    llm_call_sent,
)
from contextstore.views.access import DashboardRequest, get_thread, note_read, visible_workspaces


def _call(thread: Thread, seq: int) -> LLMCall:
    call = llm_call_at(thread=thread, seq=seq)
    if call is None:
        raise Http404("No LLM call at that seq.")
    return call


def _base(request: DashboardRequest, thread: Thread) -> dict:
    return {"thread": thread, "session": thread.session, "workspace": thread.workspace,
            "workspaces": visible_workspaces(request.user)}


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def call_sent(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """The exact messages a call sent, a page of `SENT_PAGE` messages at a time."""
    thread = get_thread(request, pk)
    call = _call(thread, seq)
    sent = llm_call_sent(thread=thread, call=call)
    raw = request.GET.get("from", "")
    start = int(raw) if raw.isdigit() else 0
    messages = sent["messages"]
    end = start + SENT_PAGE
    context = {**_base(request, thread), "call": call, "sent": sent, "first": start,
               "messages": list(enumerate(messages[start:end], start=start)),
               "total": len(messages), "next": end if end < len(messages) else None}
    template_name = "contextstore/call_sent.html"
    if request.htmx:
        template_name += "#sent"
    note_read(request, ReadAudit.Action.CALL_SENT, thread)
    return render(request, template_name, context)


@login_required
@vary_on_headers("HX-Request")
def call_diff(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """This call against the call logged before it in the thread."""
    thread = get_thread(request, pk)
    call = _call(thread, seq)
    previous = llm_call_previous(thread=thread, call=call)
    diff = llm_call_diff(thread=thread, a=previous, b=call) if previous else None
    context = {**_base(request, thread), "call": call, "previous": previous, "diff": diff}
    template_name = "contextstore/call_diff.html"
    if request.htmx:
        template_name += "#diff"
    return render(request, template_name, context)
