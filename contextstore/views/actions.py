"""POST endpoints of the thread page. Each parses its form, calls one service, and answers
with a redirect (a full reload for htmx) or, for blocks, the refreshed side panel."""

import difflib
import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.vary import vary_on_headers

from contextstore import documents
from contextstore.blockspec import check_block
from contextstore.forms import BlockForm, CollapseForm, DiffForm, ForkForm, RangeForm, first_error
from contextstore.models import Clear, Collapse, ContextBlock, Event, Job, StateRevision, Thread
from contextstore.ranges import positive_int, widened
from contextstore.selectors import document as document_reads
from contextstore.selectors.exchanges import exchanges_across
from contextstore.selectors.workspaces import actor_names
from contextstore.services import blocks, clientai, collapses, operations, state, summaries, threads
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    after_action,
    can_edit,
    error_response,
    get_thread,
    thread_action,
)
from contextstore.views.threads import job_context, panel_context, thread_url
from contextstore.views.undo import offer_undo, take_undo


def _invalid(request: DashboardRequest, form) -> HttpResponse:
    return error_response(request, first_error(form), 400)


def _split_exchanges(request: DashboardRequest, thread: Thread, form: CollapseForm | ForkForm,
                     operation: str) -> HttpResponse | None:
    """The confirm step of a collapse or fork whose range would split a tool call from its
    results: nothing is done as selected; the person sees the exchanges and the whole range
    and confirms that (widen), or picks another. None when the range splits nothing or the
    widened range was confirmed."""
    data = form.cleaned_data
    if data["widen"]:
        return None
    start, end = data["start_position"], data["end_position"]
    found = exchanges_across(thread_id=thread.pk, start_position=start, end_position=end)
    if not found:
        return None
    wide = widened(start, end, found)
    context = {"thread": thread, "operation": operation, "start": start, "end": end,
               "exchanges": found, "wide_start": wide[0], "wide_end": wide[1],
               "fields": {k: v for k, v in data.items() if k != "widen"},
               "action": reverse(f"contextstore:{'collapse-range' if operation == 'collapse' else 'fork'}",
                                 args=[thread.pk])}
    template_name = "contextstore/range_confirm.html" + ("#confirm" if request.htmx else "")
    return render(request, template_name, context)


@thread_action
def collapse_range(request: DashboardRequest, thread: Thread) -> HttpResponse:
    form = CollapseForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    confirm = _split_exchanges(request, thread, form, "collapse")
    if confirm is not None:
        return confirm
    done = operations.collapse_or_queue(
        thread=thread, start_position=form.cleaned_data["start_position"],
        end_position=form.cleaned_data["end_position"],
        summary_text=form.cleaned_data["summary"], actor=actor_for(request),
        widen=form.cleaned_data["widen"],
    )
    if isinstance(done, Job):
        return _operation_queued(request, thread, done)
    _offer_collapse_undo(request, thread, done)
    return after_action(request, thread_url(thread))


def _offer_collapse_undo(request: DashboardRequest, thread: Thread, collapse: Collapse) -> None:
    offer_undo(request, thread=thread,
               text=f"Collapsed {collapse.event_count} event{pluralize(collapse.event_count)} "
                    f"(positions {collapse.start_position}–{collapse.end_position}) into a summary.",
               url=reverse("contextstore:collapse-undo", args=[thread.pk, collapse.pk]))


def _offer_operation_done(request: DashboardRequest, thread: Thread, job: Job) -> None:
    """A long clear, un-clear or collapse finished: the same confirmation (and Undo) as when it
    is done during the request."""
    result = job.result or {}
    collapse = Collapse.objects.filter(pk=result.get("collapse", 0), thread=thread).first()
    clear = Clear.objects.filter(pk=result.get("clear", 0), thread=thread).first()
    if job.kind == Job.Kind.COLLAPSE and collapse is not None:
        _offer_collapse_undo(request, thread, collapse)
    elif job.kind == Job.Kind.CLEAR and clear is not None:
        _offer_unclear(request, thread, clear)
    elif job.kind == Job.Kind.UNCLEAR and clear is not None:
        clear.restored = result.get("restored", result["done"])
        clear.summary_restored = result["summary_restored"]
        _offer_after_unclear(request, thread, clear)
    else:  # its record was deleted since (retention, a deleted fork)
        offer_undo(request, thread=thread, text="Done.")


def _operation_queued(request: DashboardRequest, thread: Thread, job: Job) -> HttpResponse:
    """A long operation was queued: the thread page shows its progress in the job dock (and
    polls it); run eagerly (tests, no broker) it is done already and says so as usual."""
    job.refresh_from_db()
    if job.status == Job.Status.DONE:
        _offer_operation_done(request, thread, job)
    return after_action(request, thread_url(thread))


def _first_original(collapse: Collapse) -> int | None:
    """The seq of a collapse's first original: a page opened around it shows the card."""
    return (Event.objects.filter(collapse=collapse).order_by("position")
            .values_list("seq", flat=True).first())


@thread_action
def collapse_undo(request: DashboardRequest, thread: Thread, collapse_id: int) -> HttpResponse:
    collapse = Collapse.objects.filter(thread=thread, pk=collapse_id).first()
    if collapse is None:
        raise Http404("No such collapse.")
    first = _first_original(collapse)
    collapses.collapse_undo(collapse=collapse, actor=actor_for(request))
    offer_undo(request, thread=thread, text=f"Collapse undone: its {collapse.event_count} "
               "events are back in the working context.")
    # The page reopens at the originals, not at the newest event: app.js puts the first of
    # them where the card was on the screen.
    url = thread_url(thread) + (f"?around={first}" if first else "")
    return after_action(request, url)


@thread_action
def summarize_range(request: DashboardRequest, thread: Thread) -> HttpResponse:
    """Queue a summary of the selected range for the worker and show its status until done."""
    form = RangeForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    job = summaries.summarize_range_request(
        thread=thread, start_position=form.cleaned_data["start_position"],
        end_position=form.cleaned_data["end_position"], actor=actor_for(request),
    )
    template_name = "contextstore/job_status.html"
    if request.htmx:
        template_name += "#job"
    return render(request, template_name, job_context(job, thread, request))


def _job_of(thread: Thread, job_id) -> Job:
    job = Job.objects.select_related("thread__workspace").filter(pk=job_id, thread=thread).first()
    if job is None:
        raise Http404("No such job.")
    return job


@thread_action
def job_cancel(request: DashboardRequest, thread: Thread, job_id) -> HttpResponse:
    """Cancel a queued job (say, when no worker is running to take it)."""
    job = _job_of(thread, job_id)
    job = summaries.summary_job_cancel(job=job, actor=actor_for(request))
    if request.htmx:
        return render(request, "contextstore/job_status.html#job", job_context(job, thread, request))
    if job.kind not in operations.KINDS:
        text = "Summary job cancelled; nothing was changed."
    elif (job.progress or {}).get("done"):
        text = "Job cancelled; the events it moved stay moved (Retry finishes it)."
    else:
        text = "Job cancelled; nothing was changed."
    offer_undo(request, thread=thread, text=text)
    return redirect(thread_url(thread))


@thread_action
def job_retry(request: DashboardRequest, thread: Thread, job_id) -> HttpResponse:
    """Queue a failed, cancelled or timed-out summary again; the new job's status replaces it."""
    job = _job_of(thread, job_id)
    if job.kind in operations.KINDS:
        job = operations.operation_job_retry(job=job, actor=actor_for(request))
    else:
        job = summaries.summary_job_retry(job=job, actor=actor_for(request))
    if request.htmx:
        return render(request, "contextstore/job_status.html#job", job_context(job, thread, request))
    return redirect(job_url(job))


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def job_status(request: DashboardRequest, job_id) -> HttpResponse:
    """A summarize job's status; polled by htmx until it is done, then the page reloads."""
    job = Job.objects.select_related("thread").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    thread = get_thread(request, job.thread_id)
    template_name = "contextstore/job_status.html"
    if request.htmx:
        template_name += "#job"
    response = render(request, template_name, {
        **job_context(job, thread, request)})
    if request.htmx and job.status == Job.Status.DONE:
        # The page reloads with the new summary; the message says so where the reader looks.
        collapse = Collapse.objects.filter(job=job).first()
        if job.kind in operations.KINDS:
            _offer_operation_done(request, thread, job)
        elif collapse is not None:
            offer_undo(request, thread=thread,
                       text=f"Summary ready: #{collapse.start_position}–#{collapse.end_position} "
                            f"({collapse.event_count} event{pluralize(collapse.event_count)}) "
                            f"{pluralize(collapse.event_count, 'is,are')} summarized.",
                       url=reverse("contextstore:collapse-undo", args=[thread.pk, collapse.pk]),
                       link=f"{thread_url(thread)}?around={_first_original(collapse)}#c{collapse.pk}",
                       link_text="Show it")
        else:
            offer_undo(request, thread=thread, text="Summary ready.")
        response["HX-Refresh"] = "true"
    return response


@thread_action
def fork_range(request: DashboardRequest, thread: Thread) -> HttpResponse:
    form = ForkForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    confirm = _split_exchanges(request, thread, form, "fork")
    if confirm is not None:
        return confirm
    child = threads.thread_fork(
        thread=thread, name=form.cleaned_data["name"], actor=actor_for(request),
        start_position=form.cleaned_data["start_position"],
        end_position=form.cleaned_data["end_position"], widen=form.cleaned_data["widen"],
    )
    offer_undo(request, thread=child,
               text=f"Forked {child.event_count} event{pluralize(child.event_count)} of {thread.name} "
                    f"into {child.name}.",
               url=reverse("contextstore:delete-fork", args=[child.pk]), label="Undo (delete fork)")
    return after_action(request, thread_url(child))


@thread_action
def delete_fork(request: DashboardRequest, thread: Thread) -> HttpResponse:
    parent = threads.thread_delete_fork(thread=thread, actor=actor_for(request))
    if parent is None:
        return after_action(request, reverse("contextstore:session", args=[thread.session_id]))
    offer_undo(request, thread=parent, text=f"Deleted the fork {thread.name}; {parent.name} "
               "is unchanged. A deleted fork cannot be brought back.")
    return after_action(request, thread_url(parent))


@thread_action
def clear_context(request: DashboardRequest, thread: Thread) -> HttpResponse:
    done = operations.clear_or_queue(thread=thread, actor=actor_for(request))
    if isinstance(done, Job):
        return _operation_queued(request, thread, done)
    _offer_unclear(request, thread, done)
    return after_action(request, thread_url(thread) + "?cleared=on")


def _offer_unclear(request: DashboardRequest, thread: Thread, clear: Clear) -> None:
    offer_undo(request, thread=thread,
               text=f"Cleared {clear.event_count} event{pluralize(clear.event_count)}"
                    f"{' and the summary' if clear.summary else ''} from the working context.",
               url=reverse("contextstore:unclear", args=[thread.pk, clear.pk]), label="Undo (un-clear)")


@thread_action
def unclear(request: DashboardRequest, thread: Thread, clear_id: int) -> HttpResponse:
    clear = Clear.objects.filter(thread=thread, pk=clear_id).first()
    if clear is None:
        raise Http404("No such clear.")
    done = operations.unclear_or_queue(clear=clear, actor=actor_for(request))
    if isinstance(done, Job):
        return _operation_queued(request, thread, done)
    _offer_after_unclear(request, thread, done)
    return after_action(request, thread_url(thread))


def _offer_after_unclear(request: DashboardRequest, thread: Thread, clear: Clear) -> None:
    text = (f"Un-cleared: {clear.restored} event{pluralize(clear.restored)} "
            f"{'is' if clear.restored == 1 else 'are'} back in the working context")
    if clear.summary_restored:
        text += ", and the summary with them"
    elif clear.summary:
        text += "; the summary written since the clear was kept"
    offer_undo(request, thread=thread, text=text + ".")


def _offer_restore(request: DashboardRequest, thread: Thread, before: int, what: str) -> None:
    offer_undo(request, thread=thread, text=f"{what} (revision {before} → {before + 1}).",
               url=reverse("contextstore:state-restore", args=[thread.pk]),
               fields={"revision": before}, label=f"Undo (restore r{before})")


@thread_action
def reset(request: DashboardRequest, thread: Thread) -> HttpResponse:
    before = thread.revision
    clientai.thread_reset(thread=thread, actor=actor_for(request))
    _offer_restore(request, thread, before, "State reset")
    return after_action(request, thread_url(thread))


@thread_action
def reset_all(request: DashboardRequest, thread: Thread) -> HttpResponse:
    before = thread.revision
    clientai.thread_reset_all(thread=thread, actor=actor_for(request))
    _offer_restore(request, thread, before, "State and conversation history reset")
    return after_action(request, thread_url(thread))


def _panel(request: DashboardRequest, thread: Thread) -> HttpResponse:
    thread.refresh_from_db()
    if request.htmx:
        # The panel is swapped in place: the offer to undo comes with it.
        context = {"thread": thread, "session": thread.session, "can_edit": True,
                   "panel_undo": take_undo(request, thread), **panel_context(request, thread)}
        return render(request, "contextstore/thread_detail.html#context-panel", context)
    return after_action(request, thread_url(thread))


@thread_action
def block_save(request: DashboardRequest, thread: Thread) -> HttpResponse:
    form = BlockForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    text = None if data["suppressed"] else data["value"]
    # The one textarea holds either a fixed value or a live expression, as the kind says. A text
    # holding NUL has no textarea (a browser cannot edit it): without one, the text stays.
    content = {"expr": text} if data["kind"] == "expr" and text is not None else {"value": text}
    if text is not None and "value" not in request.POST:
        content = {}
    check_block(data["name"], {**content, "placement": data["placement"], "order": data["order"]})
    blocks.block_upsert(
        thread=thread, name=data["name"], actor=actor_for(request),
        placement=data["placement"], order=data["order"], **content,
    )
    return _panel(request, thread)


@thread_action
def block_delete(request: DashboardRequest, thread: Thread) -> HttpResponse:
    name = request.POST.get("name", "")
    old = ContextBlock.objects.filter(thread=thread, name=name).first()
    blocks.block_delete(thread=thread, name=name, actor=actor_for(request))
    if old is not None:
        # Undo puts the block back as it was, through the same form that saves blocks.
        kind = "expr" if old.expr is not None else "value"
        text = old.expr if old.expr is not None else old.value
        offer_undo(request, thread=thread, text=f"Deleted the block {old.name}.",
                   url=reverse("contextstore:block-save", args=[thread.pk]), label="Undo",
                   fields={"name": old.name, "kind": kind, "value": text or "",
                           "placement": old.placement, "order": old.order,
                           **({"suppressed": "on"} if old.is_suppressed else {})})
    return _panel(request, thread)


@thread_action
def block_restore(request: DashboardRequest, thread: Thread) -> HttpResponse:
    name, version = request.POST.get("name", ""), positive_int(request.POST.get("version", ""))
    if version is None:
        return error_response(request, "Choose a block version to restore.", 400)
    blocks.block_restore(thread=thread, name=name, version=version, actor=actor_for(request))
    return _panel(request, thread)


@thread_action
def state_restore(request: DashboardRequest, thread: Thread) -> HttpResponse:
    revision = positive_int(request.POST.get("revision", ""))
    if revision is None:
        return error_response(request, "Choose a revision to restore.", 400)
    before = thread.revision
    thread = state.state_restore(thread=thread, revision=revision, actor=actor_for(request))
    offer_undo(request, thread=thread, text=f"Restored revision {revision} as revision "
               f"{thread.revision}.", url=reverse("contextstore:state-restore", args=[thread.pk]),
               fields={"revision": before}, label=f"Undo (restore r{before})")
    return after_action(request, thread_url(thread))


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def state_diff(request: DashboardRequest, pk: int) -> HttpResponse:
    """Every document field that differs between two revisions, each as a unified diff of its
    pretty JSON (difflib)."""
    thread = get_thread(request, pk)
    form = DiffForm(request.GET)
    if not form.is_valid():
        return error_response(request, first_error(form), 400)
    a, b = form.cleaned_data["a"], form.cleaned_data["b"]
    found = {r.revision: r for r in StateRevision.objects.filter(thread=thread, revision__in=[a, b])
             .defer("document", "patch")}
    missing = [n for n in (a, b) if n not in found]
    if missing:
        return error_response(request, f"No revision {missing[0]} on this thread.", 404)
    old, new = (document_reads.revision_document(thread=thread, revision=n) for n in (a, b))

    def text(value: object) -> list[str]:
        return json.dumps(value, indent=2, ensure_ascii=False).splitlines()

    fields = []
    for name in documents.DOCUMENT_FIELDS:
        if documents.dumps(old.get(name)) == documents.dumps(new.get(name)):
            continue
        lines = []
        for line in difflib.unified_diff(text(old.get(name)), text(new.get(name)),
                                         f"r{a} {name}", f"r{b} {name}", lineterm="", n=3):
            kind = ("hunk" if line.startswith("@@") else "head" if line[:3] in ("---", "+++")
                    else "add" if line.startswith("+") else "del" if line.startswith("-")
                    else "same")
            lines.append({"kind": kind, "text": line})
        fields.append({"name": name, "lines": lines,
                       "paths": documents.path_changes(old.get(name), new.get(name), name)})
    context = {"thread": thread, "a": found[a], "b": found[b], "fields": fields,
               "can_edit": can_edit(request.user, thread.workspace),
               "session": thread.session, "workspace": thread.workspace,
               "actor_names": actor_names(workspace=thread.workspace)}
    template_name = "contextstore/state_diff.html"
    if request.htmx:
        template_name += "#diff"
    return render(request, template_name, context)


def job_url(job: Job) -> str:
    return reverse("contextstore:job", args=[job.pk])
