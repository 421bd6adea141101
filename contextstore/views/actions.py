"""POST endpoints of the thread page. Each parses its form, calls one service, and answers
with a redirect (a full reload for htmx) or, for blocks, the refreshed side panel."""

import difflib
import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.vary import vary_on_headers

from contextstore.forms import BlockForm, CollapseForm, DiffForm, ForkForm, RangeForm, first_error
from contextstore.models import Collapse, Job, StateRevision, Thread
from contextstore.services import blocks, clientai, collapses, state, threads
from contextstore.views.access import (
    actor_for,
    after_action,
    can_edit,
    error_response,
    get_thread,
    thread_action,
    visible_workspaces,
)
from contextstore.views.threads import panel_context, thread_url


def _invalid(request: HttpRequest, form) -> HttpResponse:
    return error_response(request, first_error(form), 400)


@thread_action
def collapse_range(request: HttpRequest, thread: Thread) -> HttpResponse:
    form = CollapseForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    collapses.collapse_create(
        thread=thread, start_seq=form.cleaned_data["start_seq"], end_seq=form.cleaned_data["end_seq"],
        summary_text=form.cleaned_data["summary"], actor=actor_for(request),
        source=Collapse.Source.PERSON,
    )
    return after_action(request, thread_url(thread))


@thread_action
def collapse_undo(request: HttpRequest, thread: Thread, collapse_id: int) -> HttpResponse:
    collapse = Collapse.objects.filter(thread=thread, pk=collapse_id).first()
    if collapse is None:
        raise Http404("No such collapse.")
    collapses.collapse_undo(collapse=collapse, actor=actor_for(request))
    return after_action(request, thread_url(thread))


@thread_action
def summarize_range(request: HttpRequest, thread: Thread) -> HttpResponse:
    """Queue a summary of the selected range for the worker and show its status until done."""
    from contextstore.services import summaries

    form = RangeForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    job = summaries.summarize_range_request(
        thread=thread, start_seq=form.cleaned_data["start_seq"],
        end_seq=form.cleaned_data["end_seq"], actor=actor_for(request),
    )
    template_name = "contextstore/job_status.html"
    if request.htmx:
        template_name += "#job"
    return render(request, template_name, {"job": job, "thread": thread})


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def job_status(request: HttpRequest, job_id) -> HttpResponse:
    """A summarize job's status; polled by htmx until it is done, then the page reloads."""
    job = Job.objects.select_related("thread").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    thread = get_thread(request, job.thread_id)
    template_name = "contextstore/job_status.html"
    if request.htmx:
        template_name += "#job"
    response = render(request, template_name, {
        "job": job, "thread": thread, "workspace": thread.workspace,
        "workspaces": visible_workspaces(request.user)})
    if request.htmx and job.status == Job.Status.DONE:
        response["HX-Refresh"] = "true"
    return response


@thread_action
def fork_range(request: HttpRequest, thread: Thread) -> HttpResponse:
    form = ForkForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    # The selection is inclusive; thread_fork takes peteos' half-open [start, end).
    child = threads.thread_fork(
        thread=thread, name=form.cleaned_data["name"], actor=actor_for(request),
        start_seq=form.cleaned_data["start_seq"], end_seq=form.cleaned_data["end_seq"] + 1,
    )
    return after_action(request, thread_url(child))


@thread_action
def clear_context(request: HttpRequest, thread: Thread) -> HttpResponse:
    threads.thread_clear_context(thread=thread, actor=actor_for(request))
    return after_action(request, thread_url(thread) + "?cleared=on")


@thread_action
def reset(request: HttpRequest, thread: Thread) -> HttpResponse:
    clientai.thread_reset(thread=thread, actor=actor_for(request))
    return after_action(request, thread_url(thread))


@thread_action
def reset_all(request: HttpRequest, thread: Thread) -> HttpResponse:
    clientai.thread_reset_all(thread=thread, actor=actor_for(request))
    return after_action(request, thread_url(thread))


def _panel(request: HttpRequest, thread: Thread) -> HttpResponse:
    thread.refresh_from_db()
    context = {"thread": thread, "session": thread.session, "can_edit": True,
               **panel_context(request, thread)}
    if request.htmx:
        return render(request, "contextstore/thread_detail.html#context-panel", context)
    return after_action(request, thread_url(thread))


@thread_action
def block_save(request: HttpRequest, thread: Thread) -> HttpResponse:
    form = BlockForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    text = None if data["suppressed"] else data["value"]
    # The one textarea holds either a fixed value or a live expression, as the kind says.
    content = {"expr": text} if data["kind"] == "expr" and text is not None else {"value": text}
    blocks.block_upsert(
        thread=thread, name=data["name"], actor=actor_for(request),
        placement=data["placement"], order=data["order"], **content,
    )
    return _panel(request, thread)


@thread_action
def block_delete(request: HttpRequest, thread: Thread) -> HttpResponse:
    name = request.POST.get("name", "")
    blocks.block_delete(thread=thread, name=name, actor=actor_for(request))
    return _panel(request, thread)


@thread_action
def block_restore(request: HttpRequest, thread: Thread) -> HttpResponse:
    name, version = request.POST.get("name", ""), request.POST.get("version", "")
    if not version.isdigit():
        return error_response(request, "Choose a block version to restore.", 400)
    blocks.block_restore(thread=thread, name=name, version=int(version), actor=actor_for(request))
    return _panel(request, thread)


@thread_action
def state_restore(request: HttpRequest, thread: Thread) -> HttpResponse:
    revision = request.POST.get("revision", "")
    if not revision.isdigit():
        return error_response(request, "Choose a revision to restore.", 400)
    state.state_restore(thread=thread, revision=int(revision), actor=actor_for(request))
    return after_action(request, thread_url(thread))


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def state_diff(request: HttpRequest, pk: int) -> HttpResponse:
    """A unified diff of state and memory between two revisions (pretty JSON, difflib)."""
    thread = get_thread(request, pk)
    form = DiffForm(request.GET)
    if not form.is_valid():
        return error_response(request, first_error(form), 400)
    a, b = form.cleaned_data["a"], form.cleaned_data["b"]
    found = {r.revision: r for r in StateRevision.objects.filter(thread=thread, revision__in=[a, b])}
    missing = [n for n in (a, b) if n not in found]
    if missing:
        return error_response(request, f"No revision {missing[0]} on this thread.", 404)

    def text(r: StateRevision) -> list[str]:
        doc = {"state": r.state, "memory": r.memory}
        return json.dumps(doc, indent=2, ensure_ascii=False).splitlines()

    lines = []
    for line in difflib.unified_diff(text(found[a]), text(found[b]), f"r{a}", f"r{b}", lineterm="", n=3):
        kind = ("hunk" if line.startswith("@@") else "head" if line[:3] in ("---", "+++")
                else "add" if line.startswith("+") else "del" if line.startswith("-") else "same")
        lines.append({"kind": kind, "text": line})
    context = {"thread": thread, "a": found[a], "b": found[b], "lines": lines,
               "can_edit": can_edit(request.user, thread.workspace),
               "session": thread.session, "workspace": thread.workspace,
               "workspaces": visible_workspaces(request.user)}
    template_name = "contextstore/state_diff.html"
    if request.htmx:
        template_name += "#diff"
    return render(request, template_name, context)


def job_url(job: Job) -> str:
    return reverse("contextstore:job", args=[job.pk])
