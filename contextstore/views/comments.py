"""Comments (on a session, on an event or LLM call) and scores (on a session) in the dashboard.

Each list is a page of its own (links work without JavaScript) and, for htmx, the fragment the
session page, a call card or an event swaps in; adding, editing and deleting answer the same
fragment. Writes go through services/comments.py and services/scores.py."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextstore.annotationspec import check_score, comment_text
from contextstore.errors import DomainError
from contextstore.forms import CommentForm, ScoreForm
from contextstore.models import Comment, Event, Membership, Session, Thread
from contextstore.selectors.annotation import score_config_named
from contextstore.selectors.scores import comments_on, session_scores
from contextstore.services import comments as service
from contextstore.services import scores
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    get_session,
    get_thread,
)


def comments_context(request: DashboardRequest, session: Session, thread: Thread | None = None,
                     seq: int | None = None) -> dict:
    """What the comments fragment shows: the list, who may change which, where to post."""
    found = comments_on(session=session, thread=thread, seq=seq)
    user = request.user
    admin = user.is_superuser or Membership.objects.filter(
        workspace_id=session.workspace_id, user=user, role=Membership.Role.ADMIN).exists()
    editor = can_edit(user, session.workspace)  # an author demoted to viewer changes nothing
    return {
        "comments": found,
        "changeable": {c.pk for c in found if admin or (editor and c.author_id == user.pk)},
        "can_comment": editor, "comment_session": session,
        "comment_thread": thread, "comment_seq": seq,
        "box_id": f"comments-e{seq}" if thread is not None else "comments-session",
        "post_url": (reverse("contextstore:event-comments", args=[thread.pk, seq])
                     if thread is not None else reverse("contextstore:session-comments",
                                                        args=[session.pk])),
    }


def _answer(request: DashboardRequest, session: Session, thread: Thread | None, seq: int | None,
            error: str = "", status: int = 200) -> HttpResponse:
    context = {**comments_context(request, session, thread, seq), "error": error,
               "session": session, "thread": thread, "workspace": session.workspace}
    template_name = "contextstore/comments.html"
    if request.htmx:
        template_name += "#comments"
    return render(request, template_name, context, status=status)


def _add(request: DashboardRequest, session: Session, thread: Thread | None,
         seq: int | None) -> HttpResponse:
    if not can_edit(request.user, session.workspace):
        raise PermissionDenied("Viewers cannot change anything.")
    form = CommentForm(request.POST)
    try:
        if not form.is_valid():
            return _answer(request, session, thread, seq, "The comment is empty or too long.", 400)
        service.comment_add(session=session, thread=thread, seq=seq, actor=actor_for(request),
                            text=comment_text(form.cleaned_data["text"]))
    except DomainError as exc:
        return _answer(request, session, thread, seq, exc.message, exc.status)
    if not request.htmx:  # post/redirect/get
        return redirect(request.path)
    return _answer(request, session, thread, seq)


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_comments(request: DashboardRequest, pk: int) -> HttpResponse:
    session = get_session(request, pk)
    if request.method == "POST":
        return _add(request, session, None, None)
    return _answer(request, session, None, None)


@login_required
@vary_on_headers("HX-Request")
def event_comments(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """An event's comments (an LLM call's: its card names the call by its start's seq)."""
    thread = get_thread(request, pk)
    if request.method == "POST":
        return _add(request, thread.session, thread, seq)
    if not Event.objects.filter(thread=thread, seq=seq).exists():
        raise Http404("No such event.")
    return _answer(request, thread.session, thread, seq)


@login_required
@require_POST
def comment_change(request: DashboardRequest, comment_id: int, op: str) -> HttpResponse:
    """Edit (`op` "edit", the new text in `text`) or delete a comment: its author or an admin."""
    comment = Comment.objects.select_related("thread", "session__workspace").filter(pk=comment_id).first()
    if comment is None:
        raise Http404("No such comment.")
    session = get_session(request, comment.session_id)  # 404 to anyone outside the workspace
    error, status = "", 200
    try:
        if op == "delete":
            service.comment_delete(comment=comment, actor=actor_for(request))
        else:
            service.comment_edit(comment=comment, text=comment_text(request.POST.get("text", "")),
                                 actor=actor_for(request))
    except DomainError as exc:
        error, status = exc.message, exc.status
    if not request.htmx and not error:
        if comment.thread is not None:
            return redirect(reverse("contextstore:event-comments", args=[comment.thread_id, comment.seq]))
        return redirect(reverse("contextstore:session", args=[session.pk]))
    return _answer(request, session, comment.thread, comment.seq, error, status)


def scores_context(session: Session) -> dict:
    return {"scores": session_scores(session=session), "score_form": ScoreForm(),
            "score_session": session}


@login_required
@vary_on_headers("HX-Request")
def session_scores_view(request: DashboardRequest, pk: int) -> HttpResponse:
    """The session's scores (its own and its calls'); POST adds one to the session."""
    session = get_session(request, pk)
    error, status = "", 200
    form = None
    if request.method == "POST":
        if not can_edit(request.user, session.workspace):
            raise PermissionDenied("Viewers cannot change anything.")
        form = ScoreForm(request.POST)
        try:
            if not form.is_valid():
                error, status = "Give the score a name, a type and a value.", 400
            else:
                check_score(name=form.cleaned_data["name"], data_type=form.cleaned_data["data_type"],
                            value=form.typed_value(), comment=form.cleaned_data["comment"],
                            config=score_config_named(workspace_id=session.workspace_id,
                                                      name=form.cleaned_data["name"]))
                scores.score_add(session=session, name=form.cleaned_data["name"],
                                 data_type=form.cleaned_data["data_type"], value=form.typed_value(),
                                 comment=form.cleaned_data["comment"], actor=actor_for(request))
                form = None
        except DomainError as exc:
            error, status = exc.message, exc.status
        if not request.htmx and not error:
            return redirect(reverse("contextstore:session", args=[session.pk]))
    context = {**scores_context(session), "score_error": error, "session": session,
               "workspace": session.workspace, "can_edit": can_edit(request.user, session.workspace)}
    if form is not None:
        context["score_form"] = form
    template_name = "contextstore/scores.html"
    if request.htmx:
        template_name += "#scores"
    return render(request, template_name, context, status=status)
