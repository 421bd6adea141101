"""The thread page: timeline (keyset pages, live tail, filters), summary cards, side panel,
"what the model sees", and the actions on a selected range or the whole thread."""

import json
from datetime import datetime, time
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.serializers.json import DjangoJSONEncoder
from django.http import Http404, HttpResponse, HttpResponseBase, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views.decorators.vary import vary_on_headers

from contextstore.expressions import block_text
from contextstore.forms import EventFilterForm
from contextstore.jsonstream import json_object_chunks
from contextstore.llm_models import thread_model_settings
from contextstore.models import (
    ContextBlock,
    Job,
    ReadAudit,
    Thread,
)
from contextstore.ranges import positive_int
from contextstore.selectors import dashboard, rendering, timeline
from contextstore.selectors.agent_sessions import scoped_states
from contextstore.selectors.cache import model_view_cache
from contextstore.selectors.calls import latest_tools
from contextstore.selectors.events import error_seq, event_seq_at, run_first_seq, thread_events
from contextstore.selectors.threads import block_versions
from contextstore.selectors.workspaces import actor_names
from contextstore.services.transfer import EVENT_FIELDS, thread_export_parts
from contextstore.tokens import FRAME_TOKENS, count_tokens
from contextstore.views.access import (
    DashboardRequest,
    can_edit,
    get_thread,
    note_read,
    query_int,
)
from contextstore.views.undo import offer_undo, take_undo

MAX_BUDGET = 2_000_000
MODEL_VIEW_PAGE = 50  # messages per page of "what the model sees"
# The side panel's sections, shown one at a time as tabs (app.js; without JS they stack).
SIDE_TABS = [("context", "Context"), ("blocks", "Blocks"), ("state", "State"), ("runs", "Runs"),
             ("memory", "Memory")]


def _filters(request: DashboardRequest) -> tuple[EventFilterForm, dict[str, Any]]:
    form = EventFilterForm(request.GET)
    data = dict(form.cleaned_data) if form.is_valid() else {}
    data["narrow"] = form.narrows() if data else False
    return form, data


_int = query_int  # a number from the query string, or a 400


def budget_of(request: DashboardRequest, thread: Thread) -> int:
    """The budget asked for, else the thread's model budget (context window - reserve); never
    more than the model's context window, when the thread has one."""
    model = thread_model_settings(thread)
    budget = _int(request.GET.get("budget")) or model.budget
    return min(max(budget, 1), model.context_window or MAX_BUDGET, MAX_BUDGET)


def gauge(thread: Thread, budget: int) -> dict[str, Any]:
    """Bar segments (in a 1000-unit SVG) for the tools, prefix, summary, history and suffix of
    the request the agent's render gives for the budget, counted as the render, the cache
    analysis and the API count it (tokens.request_tokens), with the tools its newest call
    logged. `over`: the working context has outgrown the budget (events were left out for size).
    """
    stats = rendering.context_render(thread=thread, max_tokens=budget,
                                     tools=latest_tools(thread=thread))["stats"]
    sections = stats["sections"]
    parts = [(name, sections[name]["tokens"]) for name in ("tools", "prefix", "summary", "history", "suffix")]
    total = stats["total_tokens"]
    scale = 1000 / max(total, budget, 1)
    x, segments = 0.0, []
    for name, tokens in parts:
        width = tokens * scale
        segments.append({"name": name, "tokens": tokens, "x": round(x, 1), "width": round(width, 1)})
        x += width
    return {
        "segments": [s for s in segments if s["name"] != "tools" or s["tokens"]], "total": total,
        "budget": budget, "over": total > budget or not stats["fits"],
        "budget_x": round(budget * scale, 1),
        # capped: past 100 the heading says "over budget" rather than 304%
        "percent": min(round(100 * total / budget), 100) if budget else 0,
        "working_tokens": thread.active_tokens, "frame": FRAME_TOKENS,
        "left_out": sections["history"]["events_omitted"],
        "prefix_hash": stats["prefix_hash"][:12],
    }


RUN_CHART = {"width": 320, "height": 132, "left": 46, "right": 268, "top": 10, "bottom": 104}


def run_chart(thread: Thread) -> dict[str, Any]:
    """Tokens and cost of the latest 20 runs as bars in an SVG with both axes: tokens on the
    left, cost on the right, the runs oldest to newest along the bottom (the template labels
    them and draws the legend)."""
    runs = dashboard.recent_runs(thread=thread)
    if not runs:
        return {"bars": []}
    g = RUN_CHART
    left, right, top, bottom = g["left"], g["right"], g["top"], g["bottom"]
    span = bottom - top
    top_tokens = max(r.input_tokens + r.output_tokens for r in runs) or 1
    top_cost = max(r.cost for r in runs) or 1
    step = (right - left) / len(runs)
    bars = []
    for i, r in enumerate(runs):
        tokens = r.input_tokens + r.output_tokens
        height = span * tokens / top_tokens
        cost_height = float(span * r.cost / top_cost)
        bars.append({
            "run": r, "tokens": tokens, "x": round(left + i * step + step * 0.1, 1),
            "width": round(step * 0.4, 1), "y": round(bottom - height, 1), "height": round(height, 1),
            "cx": round(left + i * step + step * 0.5, 1), "cy": round(bottom - cost_height, 1),
            "cheight": round(cost_height, 1),
        })
    middle = (top + bottom) / 2
    return {"bars": bars, "top_tokens": top_tokens, "top_cost": top_cost,
            "half_tokens": top_tokens // 2, "half_cost": top_cost / 2, "middle": middle,
            "center": (left + right) / 2, **g}


def block_history(thread: Thread, live: set[str]) -> tuple[dict[str, list], list]:
    """The latest 60 kept block versions by name, and the deleted blocks among them (each with
    the version its deletion removed, which a restore brings back)."""
    by_name: dict[str, list] = {}
    for v in block_versions(thread=thread)[:60]:
        by_name.setdefault(v.name, []).append(v)
    deleted = [vs[0] for name, vs in sorted(by_name.items()) if name not in live and vs[0].deleted]
    return by_name, deleted


REVISION_PAGE = 20


def revision_page(thread: Thread, before: int | None) -> dict[str, Any]:
    """The state panel's revisions a page at a time (?revs_before=<revision>), with the link to
    the older page when there is one."""
    rows = dashboard.recent_revisions(thread=thread, limit=REVISION_PAGE, before=before)
    page = rows[:REVISION_PAGE]
    return {"revisions": page, "revs_before": before,
            "older_revisions": page[-1].revision if len(rows) > REVISION_PAGE else None}


def panel_context(request: DashboardRequest, thread: Thread) -> dict[str, Any]:
    """Everything the side panel shows; each read is capped, none grows with history."""
    budget = budget_of(request, thread)
    blocks = dashboard.thread_blocks(thread=thread)
    versions, deleted = block_history(thread, {b.name for b in blocks})
    for b in blocks:
        b.kept_versions = versions.get(b.name, [])
        if b.expr is not None:  # what it renders to now, and that text's tokens (not the stored 0)
            b.now = block_text(b, thread)
            b.now_tokens = count_tokens(b.now) if b.now else 0
    return {
        "blocks": blocks,
        "deleted_blocks": deleted,
        "gauge": gauge(thread, budget),
        **revision_page(thread, _int(request.GET.get("revs_before"))),
        "providers": dashboard.provider_states(thread=thread),
        # Framework sessions (ADK app:/user: state) share state across sessions of an app.
        "scopes": (scoped_states(workspace=thread.workspace, app=thread.session.app,
                                 user_id=thread.session.user_id) if thread.session.app else None),
        "memories": dashboard.recent_memories(thread=thread),
        "chart": run_chart(thread),
        "clears": dashboard.recent_clears(thread=thread),
        "budget": budget,
        "model_settings": thread_model_settings(thread),
        "placements": ContextBlock.Placement.choices,
        "actor_names": actor_names(workspace=thread.workspace),
        "side_tabs": SIDE_TABS,
    }


NO_WORKER_AFTER = 15  # seconds a job may wait queued before the page says no worker took it


OPERATION_LABELS: dict[str, str] = {
    Job.Kind.CLEAR: "Clear", Job.Kind.UNCLEAR: "Un-clear", Job.Kind.COLLAPSE: "Collapse"}


def job_context(job: Job, thread: Thread, request: DashboardRequest) -> dict:
    now = timezone.now()
    waited = int((now - job.created_at).total_seconds())
    running = int((now - job.started_at).total_seconds()) if job.started_at else 0
    return {"job": job, "thread": thread, "workspace": thread.workspace, "waited": waited,
            "running_for": running, "timed_out": job.is_timed_out(now),
            "job_range": (job.params.get("start_position"), job.params.get("end_position")),
            "timeout": settings.SUMMARIZER_JOB_TIMEOUT,
            "operation": OPERATION_LABELS.get(job.kind),
            "no_worker": job.status == Job.Status.QUEUED and waited >= NO_WORKER_AFTER,
            "can_edit": can_edit(request.user, thread.workspace)}


PENDING_JOBS_SHOWN = 5


def pending_jobs(request: DashboardRequest, thread: Thread) -> list[dict]:
    """The thread's queued and running jobs (timed-out ones included), newest first: a page
    opened again shows them in the dock, polling until they finish, as when first queued."""
    jobs = (Job.objects.filter(thread=thread, status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
            .order_by("-created_at")[:PENDING_JOBS_SHOWN])
    return [job_context(job, thread, request) for job in jobs]


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def thread_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    """The page, or for htmx: the timeline (filters), an older page (`before`), the tail (`after`)."""
    thread = get_thread(request, pk)
    form, filters = _filters(request)
    before, after = _int(request.GET.get("before")), _int(request.GET.get("after"))
    around, newer = _int(request.GET.get("around")), _int(request.GET.get("newer"))
    if not request.htmx:
        after = newer = None  # only ever fetched by htmx; a page URL with them is a plain page
    params = request.GET.copy()
    for key in ("before", "after", "budget", "around", "newer", "from", "to"):
        params.pop(key, None)
    context: dict[str, Any] = {
        "thread": thread, "session": thread.session, "workspace": thread.workspace,
        "form": form, "filters": filters, "query": params,
        "can_edit": can_edit(request.user, thread.workspace), "after": after,
        "before": before, "around": around, "range": _typed_range(request),
        "max_rows": timeline.MAX_ROWS,
        "actor_names": actor_names(workspace=thread.workspace),
    }
    template_name = "contextstore/thread_detail.html"
    if request.htmx and after is not None:
        context["page"] = timeline.timeline_tail(thread=thread, filters=filters, after=after)
        if thread.last_seq > after:
            # Something was appended: the header counters and the gauge follow (out of band).
            context["live"] = {"gauge": gauge(thread, budget_of(request, thread))}
        return render(request, template_name + "#tail", context)
    if request.htmx and newer is not None:
        context["page"] = timeline.timeline_newer(thread=thread, filters=filters, after=newer)
        context["newer_fragment"] = True
        return render(request, template_name + "#newer", context)
    if around is not None and before is None:
        context["page"] = timeline.timeline_around(thread=thread, filters=filters, around=around)
    else:
        context["page"] = timeline.timeline_page(thread=thread, filters=filters, before=before)
    if request.htmx and before is not None:
        return render(request, template_name + "#older", context)
    if request.htmx and request.htmx.target == "timeline":
        return render(request, template_name + "#timeline", context)
    note_read(request, ReadAudit.Action.THREAD_VIEW, thread)  # the page, not its fragments
    context.update(panel_context(request, thread))
    context["undo"] = take_undo(request, thread)  # only a full page shows (and uses up) the offer
    context["pending_jobs"] = pending_jobs(request, thread)
    return render(request, template_name, context)


def _typed_range(request: DashboardRequest) -> dict[str, int] | None:
    """A range typed as ?from=&to= (positions): the page opens with it selected."""
    start, end = _int(request.GET.get("from")), _int(request.GET.get("to"))
    if start is None or end is None:
        return None
    return {"start": min(start, end), "end": max(start, end)}


@login_required
def jump(request: DashboardRequest, pk: int) -> HttpResponse:
    """Jump to a seq ("1234" or "#1234"), a time ("2026-01-05 10:00", the server's time zone
    when none is given), a run id, or the next/previous error from seq `from`: redirects to the
    thread page opened around that event."""
    thread = get_thread(request, pk)
    target, what = None, ""
    origin = _int(request.GET.get("from"))
    direction = request.GET.get("error")
    raw = (request.GET.get("to") or "").strip()
    if direction in ("next", "prev"):
        origin = thread.last_seq + 1 if origin is None and direction == "prev" else origin or 0
        target = (error_seq(thread=thread, after=origin) if direction == "next"
                  else error_seq(thread=thread, before=origin))
        what = f"{'later' if direction == 'next' else 'earlier'} error than #{origin}"
    elif (seq := positive_int(raw.lstrip("#"), zero=True)) is not None:
        target = seq if 1 <= seq <= thread.last_seq else None
        what = f"event #{seq}"
    elif raw:
        when = parse_datetime(raw.replace(" ", "T", 1)) or (
            datetime.combine(day, time.min) if (day := parse_date(raw)) else None)
        if when is not None:
            when = when if timezone.is_aware(when) else timezone.make_aware(when)
            target = event_seq_at(thread=thread, when=when)
            what = f"event at or after {raw}"
        else:
            target = run_first_seq(thread=thread, run_id=raw)
            what = f"run {raw}"
    url = thread_url(thread)
    if target is None:
        offer_undo(request, thread=thread, text=f"No {what or 'target: type a seq, a time or a run id'}.")
        return redirect(url)
    return redirect(f"{url}?around={target}#e{target}")


@login_required
def event_detail(request: DashboardRequest, pk: int, seq: int) -> HttpResponse:
    """One event in full ("load the rest" of text and JSON the timeline cut)."""
    thread = get_thread(request, pk)
    event = thread_events(thread=thread, status=None).filter(seq=seq).first()
    if event is None:
        raise Http404("No such event.")
    return render(request, "contextstore/thread_detail.html#event",
                  {"thread": thread, "e": event, "full": True})


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def collapse_detail(request: DashboardRequest, pk: int, collapse_id: int) -> HttpResponse:
    """The originals behind a summary card, a page at a time."""
    thread = get_thread(request, pk)
    collapse = dashboard.collapse_of(thread=thread, collapse_id=collapse_id)
    if collapse is None:
        raise Http404("No such collapse.")
    members, more = timeline.collapse_members(collapse=collapse, after=_int(request.GET.get("after")) or 0)
    context = {"thread": thread, "collapse": collapse, "members": members, "more": more,
               "can_edit": can_edit(request.user, thread.workspace),
               "workspace": thread.workspace}
    template_name = "contextstore/collapse_detail.html"
    if request.htmx:
        template_name += "#members"
    return render(request, template_name, context)


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def model_view(request: DashboardRequest, pk: int) -> HttpResponse:
    """What the model sees for a budget, and what the prompt cache would keep: the render the
    agent would get now with the options of its latest recorded call, against that call."""
    thread = get_thread(request, pk)
    budget = budget_of(request, thread)
    rendered = rendering.context_render(thread=thread, max_tokens=budget, tools=latest_tools(thread=thread))
    skipped = [{**x, "why": rendering.SKIP_REASONS.get(x["reason"], x["reason"])}
               for x in rendered["stats"]["skipped"]]
    # The render is bounded by the budget; its messages are shown a page at a time, while the
    # stats above them stay those of the whole render.
    messages = rendered["messages"]
    pages = max(1, -(-len(messages) // MODEL_VIEW_PAGE))
    page = min(max(_int(request.GET.get("page")) or 1, 1), pages)
    first = (page - 1) * MODEL_VIEW_PAGE
    asked = _int(request.GET.get("budget"))
    window = thread_model_settings(thread).context_window
    context = {
        "thread": thread, "session": thread.session, "workspace": thread.workspace,
        "rendered": rendered, "budget": budget, "skipped": skipped,
        "cache_view": model_view_cache(thread=thread),
        "window": window, "capped_from": asked if asked is not None and asked > budget else None,
        "shown": messages[first:first + MODEL_VIEW_PAGE], "page": page, "pages": pages,
        "first": first + 1, "last": min(first + MODEL_VIEW_PAGE, len(messages)),
        "message_count": len(messages),
    }
    template_name = "contextstore/model_view.html"
    if request.htmx:
        template_name += "#model"
    note_read(request, ReadAudit.Action.CONTEXT_VIEW, thread)
    return render(request, template_name, context)


@login_required
def thread_export_view(request: DashboardRequest, pk: int) -> HttpResponseBase:
    """The whole thread (contextstore JSON), or only the events at a selected range of
    positions (both ends included; every status, so a summary's originals come along).

    The whole thread streams: a few hundred events are serialised at a time, so memory does
    not grow with the thread; the bytes are those `JsonResponse(thread_export(...))` wrote."""
    thread = get_thread(request, pk)
    start = _int(request.GET.get("start_position"))
    end = _int(request.GET.get("end_position"))
    response: HttpResponseBase
    if start is None or end is None:
        head, events = thread_export_parts(thread=thread)
        response = StreamingHttpResponse(
            json_object_chunks(head, "events", events, dumps=_export_dumps, indent=2),
            content_type="application/json")
        response["X-Event-Count"] = str(thread.event_count)
        name = f"thread-{thread.pk}.json"
    else:
        start, end = min(start, end), max(start, end)
        selected = dashboard.range_events(thread=thread, start=start, end=end)
        data = {
            "format": "contextstore-range", "thread": thread.pk, "session": thread.session.key,
            "start_position": start, "end_position": end,
            "events": [
                {**{f: getattr(e, f) for f in EVENT_FIELDS},
                 "run_id": e.run.run_id if e.run else None,
                 "occurred_at": e.occurred_at.isoformat()}
                for e in selected
            ],
        }
        name = f"thread-{thread.pk}-{start}-{end}.json"
        response = JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 2})
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    note_read(request, ReadAudit.Action.EXPORT, thread)
    return response


def _export_dumps(value: Any) -> bytes:
    """As JsonResponse(..., json_dumps_params={"ensure_ascii": False, "indent": 2}) writes."""
    return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, indent=2).encode()


@login_required
def export_size(request: DashboardRequest, pk: int) -> HttpResponse:
    """Before the download: how many events the export holds and about how big it is."""
    thread = get_thread(request, pk)
    context = {"thread": thread, "session": thread.session, "workspace": thread.workspace,
               "size": dashboard.export_size(thread=thread)}
    return render(request, "contextstore/export_size.html", context)


def thread_url(thread: Thread) -> str:
    return reverse("contextstore:thread", args=[thread.pk])
