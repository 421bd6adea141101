"""Annotation queues in the dashboard (docs/dashboard.md, "Annotation queues"): the score
configurations page, the queues page, a queue's progress and items, adding to a queue (from the
session page, a call card, or every session of the list's filter), and the review loop: "Start
reviewing" hands the person the next item (services/annotation.py leases it to them), its page
shows it as the thread and call pages do with a form made from the queue's score configs, and
"Complete and next" / "Skip" move on. Writes go through services/annotation.py."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextstore.annotationspec import checked_scores, score_config_fields
from contextstore.errors import DomainError, InvalidInput
from contextstore.forms import SessionFilterForm
from contextstore.models import (
    AnnotationItem,
    AnnotationQueue,
    Event,
    ScoreConfig,
    Session,
    Thread,
    Workspace,
)
from contextstore.selectors.annotation import (
    queue_choices,
    queue_configs_for,
    queue_items,
    queue_progress,
    workspace_queues,
)
from contextstore.selectors.calls import llm_call_at, llm_call_reply
from contextstore.services import annotation as service
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    current_workspace,
    error_response,
    get_session,
    get_thread,
    visible_workspaces,
)
from contextstore.views.calls import sent_context
from contextstore.views.sessions import filtered_sessions

ITEMS_SHOWN = 200
EVENTS_SHOWN = 30


def _editor(request: DashboardRequest, workspace: Workspace) -> None:
    if not can_edit(request.user, workspace):
        raise PermissionDenied("Viewers cannot change anything.")


def _queue(request: DashboardRequest, pk: int) -> AnnotationQueue:
    """A queue of a workspace the person belongs to; another's is a 404."""
    queue = (AnnotationQueue.objects.select_related("workspace")
             .filter(pk=pk, workspace__in=visible_workspaces(request.user)).first())
    if queue is None:
        raise Http404("No such queue.")
    return queue


def _item(queue: AnnotationQueue, item_id: int) -> AnnotationItem:
    item = (AnnotationItem.objects.select_related("session", "thread", "completed_by", "queue")
            .filter(queue=queue, pk=item_id).first())
    if item is None:
        raise Http404("No such item in this queue.")
    return item


@login_required
def score_configs(request: DashboardRequest) -> HttpResponse:
    """The workspace's score configurations; POST makes one (editors)."""
    workspace = current_workspace(request)
    error, status = "", 200
    if request.method == "POST" and workspace is not None:
        _editor(request, workspace)
        post = request.POST
        try:
            fields = score_config_fields(
                name=post.get("name", ""), data_type=post.get("data_type", ""),
                min_value=_number(post.get("min_value", ""), "min_value"),
                max_value=_number(post.get("max_value", ""), "max_value"),
                categories=[c for c in (x.strip() for x in post.get("categories", "").split(",")) if c],
                description=post.get("description", ""))
            service.score_config_create(workspace=workspace, actor=actor_for(request), **fields)
            return redirect(reverse("contextstore:score-configs"))
        except DomainError as exc:
            error, status = exc.message, exc.status
    configs = list(ScoreConfig.objects.filter(workspace=workspace)) if workspace else []
    return render(request, "contextstore/score_configs.html", {
        "workspace": workspace, "configs": configs, "error": error, "form": request.POST,
        "types": ScoreConfig.DataType.choices,
        "can_edit": workspace is not None and can_edit(request.user, workspace)}, status=status)


def _number(raw: str, field: str) -> float | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(f"{field} must be a number.", details={field: "number"}) from None


@login_required
@require_POST
def score_config_archive(request: DashboardRequest, pk: int) -> HttpResponse:
    config = ScoreConfig.objects.filter(pk=pk, workspace__in=visible_workspaces(request.user)).first()
    if config is None:
        raise Http404("No such score configuration.")
    _editor(request, config.workspace)
    service.score_config_archive(config=config, archived=request.POST.get("archived") != "0",
                                 actor=actor_for(request))
    return redirect(reverse("contextstore:score-configs"))


@login_required
def queue_list(request: DashboardRequest) -> HttpResponse:
    """The workspace's queues with their progress; POST makes one (editors)."""
    workspace = current_workspace(request)
    error, status = "", 200
    if request.method == "POST" and workspace is not None:
        _editor(request, workspace)
        name = request.POST.get("name", "").strip()
        try:
            if not name or len(name) > 200 or "\x00" in name:
                raise InvalidInput("Name the queue (at most 200 characters).")
            ids = [int(i) for i in request.POST.getlist("score_configs") if i.isdigit()]
            if not ids:
                raise InvalidInput("Choose the score configurations the queue asks for.")
            description = request.POST.get("description", "")
            if len(description) > 10_000 or "\x00" in description:
                raise InvalidInput("The description is at most 10,000 characters.")
            assignees = list(workspace.memberships.filter(
                user_id__in=[int(i) for i in request.POST.getlist("assignees") if i.isdigit()])
                .select_related("user"))
            queue = service.queue_create(
                workspace=workspace, actor=actor_for(request), name=name,
                configs=queue_configs_for(workspace_id=workspace.pk, ids=ids),
                description=description.strip(), assignees=[m.user for m in assignees])
            return redirect(reverse("contextstore:queue", args=[queue.pk]))
        except DomainError as exc:
            error, status = exc.message, exc.status
    queues = list(workspace_queues(workspace_id=workspace.pk)) if workspace else []
    configs = list(ScoreConfig.objects.filter(workspace=workspace, archived=False)) if workspace else []
    members = (list(workspace.memberships.select_related("user")
                    .order_by("user__username")[:200]) if workspace else [])
    return render(request, "contextstore/queues.html", {
        "workspace": workspace, "queues": queues, "configs": configs, "members": members,
        "error": error, "form": request.POST,
        "can_edit": workspace is not None and can_edit(request.user, workspace)}, status=status)


@login_required
def queue_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    queue = _queue(request, pk)
    status = request.GET.get("status") or None
    if status not in (None, *AnnotationItem.Status.values):
        status = None
    items = list(queue_items(queue=queue, status=status)[: ITEMS_SHOWN + 1])
    return render(request, "contextstore/queue_detail.html", {
        "queue": queue, "workspace": queue.workspace, "progress": queue_progress(queue=queue),
        "items": items[:ITEMS_SHOWN], "more": len(items) > ITEMS_SHOWN, "status": status,
        "configs": list(queue.score_configs.all()), "assignees": list(queue.assignees.all()),
        "can_edit": can_edit(request.user, queue.workspace)})


@login_required
def queue_add(request: DashboardRequest) -> HttpResponse:
    """Add to a queue: a session (`session`), a thread (`thread`), an LLM call (`thread` and
    `seq`), or every session the session list's filters keep (`from_list`, with the filters;
    GET: the form that asks which queue, from the session list's link)."""
    if request.method != "POST":
        if request.GET.get("thread"):
            workspace: Workspace | None = get_thread(request, _int(request.GET.get("thread"))).workspace
        elif request.GET.get("session"):
            workspace = get_session(request, _int(request.GET.get("session"))).workspace
        else:
            workspace = current_workspace(request)
        return render(request, "contextstore/queue_add.html", {
            "workspace": workspace, "query": request.GET,
            "queues": queue_choices(workspace_id=workspace.pk) if workspace else []})
    queue = _queue(request, _int(request.POST.get("queue")))
    _editor(request, queue.workspace)
    actor = actor_for(request)
    try:
        if request.POST.get("from_list"):
            form = SessionFilterForm(request.POST)
            if not form.is_valid():
                raise InvalidInput("These filters cannot be applied; fix them on the session list first.")
            sessions, _ = filtered_sessions(queue.workspace, form)
            added = service.queue_add_sessions(queue=queue, sessions=sessions.order_by("-id"),
                                               actor=actor)
        else:
            target = _target(request)
            if target[0].workspace_id != queue.workspace_id:
                raise Http404("No such session in the queue's workspace.")
            added = service.queue_add_items(queue=queue, targets=[target], actor=actor)
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    messages.success(request, f"Added {added} item{'s' if added != 1 else ''} to {queue.name}"
                              f"{'' if added else ' (already in it)'}.")
    return redirect(reverse("contextstore:queue", args=[queue.pk]))


def _int(raw: str | None) -> int:
    raw = (raw or "").strip()
    if not raw.isdigit() or len(raw) > 18:
        raise Http404("No such queue.")
    return int(raw)


def _target(request: DashboardRequest) -> tuple[Session, Thread | None, int | None]:
    if request.POST.get("thread"):
        thread = get_thread(request, _int(request.POST.get("thread")))
        if not request.POST.get("seq"):
            return thread.session, thread, None
        call = llm_call_at(thread=thread, seq=_int(request.POST.get("seq")))
        if call is None:
            raise Http404("No LLM call at that seq.")
        return thread.session, thread, call.seq
    return get_session(request, _int(request.POST.get("session"))), None, None


@login_required
@require_POST
def queue_next(request: DashboardRequest, pk: int) -> HttpResponse:
    """"Start reviewing" / after an item: the person's next item, or the queue page."""
    queue = _queue(request, pk)
    _editor(request, queue.workspace)
    return _to_next(request, queue)


def _to_next(request: DashboardRequest, queue: AnnotationQueue) -> HttpResponse:
    item = service.queue_next_item(queue=queue, user=request.user)
    if item is None:
        progress = queue_progress(queue=queue)
        messages.info(request, "Queue complete: every item is reviewed." if not progress["pending"]
                      else "The items left are being reviewed by others now.")
        return redirect(reverse("contextstore:queue", args=[queue.pk]))
    return redirect(reverse("contextstore:queue-item", args=[queue.pk, item.pk]))


@login_required
def queue_item(request: DashboardRequest, pk: int, item_id: int) -> HttpResponse:
    """One item as its thread and call pages show it, with the queue's score form."""
    queue = _queue(request, pk)
    item = _item(queue, item_id)
    return _item_page(request, queue, item)


def _item_page(request: DashboardRequest, queue: AnnotationQueue, item: AnnotationItem,
               error: str = "", status: int = 200) -> HttpResponse:
    context: dict[str, Any] = {
        "queue": queue, "workspace": queue.workspace, "item": item, "session": item.session,
        "progress": queue_progress(queue=queue), "configs": list(queue.score_configs.all()),
        "error": error, "given": request.POST if request.method == "POST" else {},
        "can_edit": can_edit(request.user, queue.workspace),
        "mine": item.leased_by_id == request.user.pk,
    }
    thread = item.thread
    if item.kind == AnnotationItem.Kind.CALL and thread is not None and item.seq is not None:
        call = llm_call_at(thread=thread, seq=item.seq)
        if call is not None:
            context.update(sent_context(request, thread, call))
            context["reply"] = llm_call_reply(thread=thread, call=call)
        context["thread"] = thread
    else:
        if thread is None:
            context["threads"] = list(item.session.threads.order_by("id")[:50])
            thread = context["threads"][0] if context["threads"] else None
        if thread is not None:
            events = list(Event.objects.filter(thread=thread).select_related("run")
                          .order_by("-seq")[:EVENTS_SHOWN])
            context.update({"thread": thread, "events": events[::-1], "full": False})
    return render(request, "contextstore/queue_item.html", context, status=status)


@login_required
@require_POST
def item_complete(request: DashboardRequest, pk: int, item_id: int) -> HttpResponse:
    """The score form: one field per config (`score-<id>`; blank: not given) and a comment."""
    queue = _queue(request, pk)
    _editor(request, queue.workspace)
    item = _item(queue, item_id)
    configs = list(queue.score_configs.all())
    comment = request.POST.get("comment", "")
    given = []
    for config in configs:
        raw = request.POST.get(f"score-{config.pk}", "").strip()
        if raw:
            given.append({"name": config.name, "value": _typed(config, raw), "comment": comment})
    try:
        if not given:
            raise InvalidInput("Give at least one score, or skip the item.")
        service.queue_complete_item(item=item, scores=checked_scores(configs, given),
                                    actor=actor_for(request))
    except DomainError as exc:
        return _item_page(request, queue, item, exc.message, exc.status)
    return _to_next(request, queue)


def _typed(config: ScoreConfig, raw: str) -> object:
    if config.data_type == ScoreConfig.DataType.NUMERIC:
        try:
            return float(raw)
        except ValueError:
            return raw  # annotationspec says what is wrong with it
    if config.data_type == ScoreConfig.DataType.BOOLEAN:
        return {"true": True, "false": False}.get(raw.lower(), raw)
    return raw


@login_required
@require_POST
def item_skip(request: DashboardRequest, pk: int, item_id: int) -> HttpResponse:
    queue = _queue(request, pk)
    _editor(request, queue.workspace)
    item = _item(queue, item_id)
    try:
        service.queue_skip_item(item=item, actor=actor_for(request))
    except DomainError as exc:
        return _item_page(request, queue, item, exc.message, exc.status)
    return _to_next(request, queue)
