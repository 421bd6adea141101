"""LLM call cards' views: what a call sent ("as sent", as a chat, and as each provider's
request body), how it differs from the call before, and its replays.

"As sent" and the diff are pages of their own (links work without JavaScript) and, for htmx,
a fragment that opens inside the call's card. Reads live in contextstore.selectors, the
replay's write and HTTP call in services/replays.py. A replay is a worker's job: the POST only
queues it, and the page follows it by polling its card (`call_replay_status`).
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from contextstore import provider_request
from contextstore.errors import DomainError
from contextstore.llm_models import call_cost
from contextstore.models import ReadAudit, Thread
from contextstore.selectors.cache import llm_call_diff
from contextstore.selectors.calls import (
    SENT_PAGE,
    LLMCall,
    llm_call_at,
    llm_call_previous,
    llm_call_reply,
    llm_call_sent,
)
from contextstore.selectors.replays import call_replays
from contextstore.services import replays
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    error_response,
    get_thread,
    note_read,
    query_int,
)

EDIT_TURNS = 50  # the newest messages a replay form offers to edit (the rest go as recorded)


def _call(thread: Thread, seq: int) -> LLMCall:
    call = llm_call_at(thread=thread, seq=seq)
    if call is None:
        raise Http404("No LLM call at that seq.")
    return call


def _base(request: DashboardRequest, thread: Thread) -> dict:
    return {"thread": thread, "session": thread.session, "workspace": thread.workspace}


def sent_context(request: DashboardRequest, thread: Thread, call: LLMCall) -> dict:
    """What call_sent.html's `sent` partial shows (the call page, a review of the call)."""
    sent = llm_call_sent(thread=thread, call=call)
    turns = provider_request.chat(system=sent["system"], messages=sent["messages"])
    total = len(turns)
    newest = max(total - SENT_PAGE, 0)
    asked = query_int(request.GET.get("from"))
    start = newest if asked is None else min(max(asked, 0), newest)
    end = start + SENT_PAGE
    return {"call": call, "sent": sent, "first": start,
            "turns": list(enumerate(turns[start:end], start=start)),
            "total": total, "next": end if end < total else None,
            "previous": max(start - SENT_PAGE, 0) if start else None, "newest": newest,
            "tools": provider_request.tools_of(sent["tools"]), "params": sent["params"],
            "curl_provider": _provider(sent["format"], call.model),
            "can_replay": can_edit(request.user, thread.workspace),
            "replay_count": call_replays(thread=thread, call=call).count()}


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def call_sent(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """The exact messages a call sent, a page of `SENT_PAGE` messages at a time. It opens at the
    newest (what the model read last, where a long request's question is), with links to the
    earlier page and to the start; `?from=` opens the page starting there."""
    thread = get_thread(request, pk)
    call = _call(thread, seq)
    context = {**_base(request, thread), **sent_context(request, thread, call)}
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


def _provider(fmt: str | None, model: str) -> str:
    """Whose API the curl command calls: Anthropic's for an anthropic render or a Claude model."""
    return "anthropic" if fmt == "anthropic" or model.startswith("claude") else "openai"


def _bodies(thread: Thread, call: LLMCall) -> dict[str, str]:
    """The call's request as the OpenAI and Anthropic APIs take it, and as a curl command (to
    the API of the call's own format: Anthropic's for an anthropic render, else OpenAI's)."""
    sent = llm_call_sent(thread=thread, call=call)
    turns = provider_request.chat(system=sent["system"], messages=sent["messages"])
    model = call.model or str(sent["params"].get("model") or "")
    args = {"model": model, "turns": turns, "tools": sent["tools"], "params": sent["params"]}
    bodies = {"openai": provider_request.openai_body(**args),
              "anthropic": provider_request.anthropic_body(**args)}
    provider = _provider(sent["format"], model)
    return {"openai": provider_request.dumps(bodies["openai"]),
            "anthropic": provider_request.dumps(bodies["anthropic"]),
            "curl": provider_request.curl(provider, bodies[provider])}


@login_required
def call_request(request: DashboardRequest, pk: int, seq: int, as_: str) -> HttpResponse:
    """The call's request body for one provider (openai, anthropic) or as curl, as plain
    text: what the Copy buttons copy, and what their links open without JavaScript."""
    thread = get_thread(request, pk)
    call = _call(thread, seq)
    if as_ not in ("openai", "anthropic", "curl"):
        raise Http404("Unknown request format.")
    note_read(request, ReadAudit.Action.CALL_SENT, thread)
    return HttpResponse(_bodies(thread, call)[as_], content_type="text/plain; charset=utf-8")


def _message_index(raw: str) -> int:
    """The message a replay's `text-<n>` field edits; a field naming no number is a 400."""
    index = query_int(raw)
    if index is None:
        raise BadRequest("text- fields name a message by its number.")
    return index


@login_required
@require_http_methods(["GET", "POST"])
def call_replay(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """The replay page (the original answer beside the replays) and, on POST, a new replay."""
    thread = get_thread(request, pk)
    call = _call(thread, seq)
    editable = can_edit(request.user, thread.workspace)
    if request.method == "POST":
        if not editable:
            raise PermissionDenied("Viewers cannot replay calls.")
        edits = {_message_index(k[5:]): str(v).replace("\r\n", "\n")
                 for k, v in request.POST.items() if k.startswith("text-")}
        try:
            replay = replays.replay_request(thread=thread, call=call, actor=actor_for(request),
                                            model=request.POST.get("model", ""), edits=edits)
        except DomainError as exc:
            return error_response(request, exc.message, exc.status)
        url = reverse("contextstore:call-replay", args=[thread.pk, call.seq]) + f"#replay-{replay.pk}"
        return redirect(url)
    try:
        turns, _ = replays.replay_turns(thread=thread, call=call)
    except DomainError:
        turns = []
    first_edit = max(0, len(turns) - EDIT_TURNS)
    tokens_in, tokens_out = call.tokens
    context = {**_base(request, thread), "call": call, "reply": llm_call_reply(thread=thread, call=call),
               # what the agent reported, else the list price of its usage (as the replay's)
               "original_cost": call.cost or call_cost(call.model, {"input_tokens": tokens_in,
                                                                    "output_tokens": tokens_out}),
               "replays": list(call_replays(thread=thread, call=call)[:20]),
               "can_replay": editable, "configured": replays.playground_configured(thread.workspace),
               "recorded": bool(turns), "first_edit": first_edit,
               "edit_turns": [(i, t) for i, t in enumerate(turns) if i >= first_edit or t.role == "system"]}
    note_read(request, ReadAudit.Action.CALL_SENT, thread)
    return render(request, "contextstore/call_replay.html", context)


@login_required
def call_replay_status(request: DashboardRequest, pk: int, seq: int, replay_pk: int) -> HttpResponse:
    """One replay's card: what the replay page polls while the worker has it."""
    thread = get_thread(request, pk)
    replays.replays_fail_stale()  # a replay no worker took in time ends here, not spinning on
    replay = call_replays(thread=thread, call=_call(thread, seq)).filter(pk=replay_pk).first()
    if replay is None:
        raise Http404("No such replay of this call.")
    return render(request, "contextstore/_replay.html", {"r": replay, "thread": thread})
