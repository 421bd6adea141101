"""Share links: made and revoked on the session page by its workspace's editors; opened by
anyone holding one, without logging in, as a read-only page of its target only
(services/sharing.py)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextstore import provider_request
from contextstore.errors import DomainError, InvalidInput
from contextstore.models import Event, ShareLink, Thread
from contextstore.selectors.calls import llm_call_at, llm_call_reply, llm_call_sent
from contextstore.selectors.sessions import session_threads
from contextstore.services.common import Actor
from contextstore.services.sharing import EXPIRIES, share_link_create, share_link_open, share_link_revoke
from contextstore.views.access import DashboardRequest, actor_for, can_edit, get_session, query_int

NEW_LINK = "contextstore.new_share_link"  # the link just made, shown once on the session page
AROUND = 10  # events shown either side of a shared event
PAGE = 20  # events a page of a shared session's thread
SENT_MAX = 200  # newest messages of a shared call's request shown (after its system sections)


_int = query_int  # a number from the query string or form, or a 400


def check_share_request(*, kind: str, expires_in: str, thread: Thread | None, seq: int | None) -> None:
    """What the share form sends, refused before services.sharing makes a link."""
    if kind not in ShareLink.Kind.values:
        raise InvalidInput(f"Unknown target {kind!r}; share a session, an event or a call.")
    if expires_in not in EXPIRIES:
        raise InvalidInput(f"Unknown expiry {expires_in!r}; choose one of {', '.join(EXPIRIES)}.")
    if kind != ShareLink.Kind.SESSION:
        if thread is None:  # looked up within this session
            raise InvalidInput("Choose a thread of this session.")
        if seq is None:
            raise InvalidInput("Give the event's number (seq).")


@login_required
@require_POST
def share_create(request: DashboardRequest, pk: int) -> HttpResponse:
    session = get_session(request, pk)
    if not can_edit(request.user, session.workspace):
        raise PermissionDenied("Viewers cannot share links.")
    thread = None
    thread_pk = _int(request.POST.get("thread"))
    if thread_pk is not None:
        thread = Thread.objects.filter(pk=thread_pk, session=session).first()
    back = reverse("contextstore:session", args=[session.pk]) + "#share-links"
    kind, expires_in = request.POST.get("kind", ""), request.POST.get("expires", "")
    seq = _int(request.POST.get("seq"))
    try:
        check_share_request(kind=kind, expires_in=expires_in, thread=thread, seq=seq)
        link, raw = share_link_create(session=session, kind=kind, thread=thread, seq=seq,
                                      expires_in=expires_in, actor=actor_for(request))
    except DomainError as exc:
        request.session[NEW_LINK] = {"error": exc.message}
        return redirect(back)
    url = request.build_absolute_uri(reverse("contextstore:shared", args=[raw]))
    request.session[NEW_LINK] = {"url": url, "id": link.pk}
    return redirect(back)


@login_required
@require_POST
def share_revoke(request: DashboardRequest, pk: int, link_id: int) -> HttpResponse:
    session = get_session(request, pk)
    if not can_edit(request.user, session.workspace):
        raise PermissionDenied("Viewers cannot revoke links.")
    link = ShareLink.objects.filter(pk=link_id, session=session).first()
    if link is None:
        raise Http404("No such share link.")
    share_link_revoke(link=link, actor=actor_for(request))
    return redirect(reverse("contextstore:session", args=[session.pk]) + "#share-links")


def shared(request: HttpRequest, token: str) -> HttpResponse:
    """What a link shows, read-only: its session (and a page of one of its threads' events), its
    event with the events around it, or its LLM call as sent with its answer."""
    user = getattr(request, "user", None)
    actor = (Actor.for_user(user, request.META.get("REMOTE_ADDR"))
             if user is not None and user.is_authenticated else None)
    try:
        link = share_link_open(raw=token, actor=actor, ip=request.META.get("REMOTE_ADDR"))
    except DomainError as exc:
        response = render(request, "contextstore/shared.html", {"error": exc.message}, status=exc.status)
        return _private(response)
    try:
        chosen, before = _int(request.GET.get("thread")), _int(request.GET.get("before"))
    except BadRequest as exc:  # a crafted number: the error page, private as every answer here
        return _private(render(request, "contextstore/shared.html", {"error": str(exc)}, status=400))
    session = link.session
    context: dict = {"link": link, "session": session, "token": token}
    if link.kind == ShareLink.Kind.SESSION:
        threads = list(session_threads(session=session)[:200])
        context["threads"] = threads
        thread = next((t for t in threads if t.pk == chosen), None)
        if thread is not None:
            events = Event.objects.filter(thread=thread).select_related("run")
            if before is not None:
                events = events.filter(seq__lt=before)
            page = list(events.order_by("-seq")[: PAGE + 1])
            context.update({"thread": thread, "events": page[:PAGE][::-1],
                            "older": page[PAGE - 1].seq if len(page) > PAGE else None})
    elif link.kind == ShareLink.Kind.EVENT:
        assert link.thread is not None and link.seq is not None  # noqa: S101 - the service checks
        context.update({"thread": link.thread, "target": link.seq, "events": list(
            Event.objects.filter(thread=link.thread, seq__gte=link.seq - AROUND,
                                 seq__lte=link.seq + AROUND).select_related("run").order_by("seq"))})
    else:
        assert link.thread is not None and link.seq is not None  # noqa: S101
        call = llm_call_at(thread=link.thread, seq=link.seq)
        if call is None:  # deleted since (retention)
            response = render(request, "contextstore/shared.html",
                              {"error": "The shared call no longer exists."}, status=410)
            return _private(response)
        sent = llm_call_sent(thread=link.thread, call=call)
        # As a chat, like "as sent": the system sections, then the newest messages (the turn
        # that made the call is at the end of a long request, not its start).
        turns = list(enumerate(provider_request.chat(system=sent["system"], messages=sent["messages"])))
        lead = next((i for i, t in turns if t.history), len(turns))
        cut = max(lead, len(turns) - SENT_MAX)
        context.update({"thread": link.thread, "call": call, "sent": sent, "total": len(turns),
                        "turns": turns[:lead] + turns[cut:], "cut": cut, "older_messages": cut - lead,
                        "reply": llm_call_reply(thread=link.thread, call=call)})
    return _private(render(request, "contextstore/shared.html", context))


def _private(response: HttpResponse) -> HttpResponse:
    """The token is in the URL: no referrer carries it away, no cache or search engine keeps
    the page."""
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store, private"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response
