"""Session reads: the workspace's session list and its filters, a session's threads, runs
and call-latency figures."""

import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, F, Max, Q, QuerySet

from contextstore.db import time_limit
from contextstore.models import Event, ReadAudit, Run, Session, SessionModel, ShareLink, Thread, Workspace
from contextstore.selectors.calls import CALL_END, CALL_START
from contextstore.selectors.events import text_search
from contextstore.selectors.scores import ScoreFilter, sessions_scored

SESSION_SORTS = {"activity": "last_activity_at", "events": "event_count", "tokens": "token_total",
                 "cost": "cost_total", "errors": "error_count", "threads": "thread_count"}
LATENCY_THREADS = 20  # the session's most recent threads looked at for call latency
LATENCY_CALLS = 1000  # LLM-call events read per thread, newest first
TEXT_THREADS_CAP = 1000  # threads the search through events finds at most


@dataclass
class TextHit:
    """How a session matched the search through events: how many of its events hold the
    text, and one thread (the lowest id) holding some, for a link to that thread's search."""

    events: int
    thread_id: int


@dataclass
class TextHits:
    sessions: dict[int, TextHit]  # by session id
    complete: bool  # False: the search hit its time limit or found more than the cap


def sessions_with_text(*, sessions: QuerySet[Session], text: str) -> TextHits:
    """Which of `sessions` (already filtered, so every filter combines) have events whose
    content, data or parts contain `text`, case-insensitively, under the search time limit
    (statement timeout, or SQLite's progress handler). Events of any status count: a cleared
    or replaced event still holds what the agent saw.

    One grouped query over the events, by thread: `thread_id + 0` keeps the planner off the
    (thread, seq) index, which it otherwise walks thread by thread (every event of every
    session read and filtered), so on PostgreSQL the search index's candidates drive it; then
    the found threads' sessions, at most TEXT_THREADS_CAP threads."""
    threads = Thread.objects.filter(session__in=sessions.order_by().values("pk")).values("pk")
    rows = (Event.objects.filter(text_search(text)).annotate(tid=F("thread_id") + 0)
            .filter(tid__in=threads).values("tid").annotate(n=Count("id")).order_by()
            [: TEXT_THREADS_CAP + 1])
    try:
        with time_limit(int(settings.CONTEXTSTORE["REGEX_TIMEOUT_MS"])):
            if connection.vendor == "postgresql":  # as for a thread's search (selectors.events)
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL jit = off")
            found = {row["tid"]: row["n"] for row in rows}
    except DatabaseError:  # the time limit: a text too common to look for everywhere
        return TextHits({}, complete=False)
    complete = len(found) <= TEXT_THREADS_CAP
    hits: dict[int, TextHit] = {}
    for tid, session_id in (Thread.objects.filter(pk__in=sorted(found)[:TEXT_THREADS_CAP])
                            .order_by("pk").values_list("pk", "session_id")):
        if session_id in hits:
            hits[session_id].events += found[tid]
        else:
            hits[session_id] = TextHit(found[tid], tid)
    return TextHits(hits, complete)


def workspace_sessions(
    *, workspace: Workspace, q: str | None = None, user_id: str | None = None,
    agent: str | None = None, archived: bool | None = None, model: str | None = None,
    errors: bool = False, cost: tuple[Decimal | None, Decimal | None] = (None, None),
    tokens: tuple[int | None, int | None] = (None, None),
    active: tuple[datetime | None, datetime | None] = (None, None),
    text_hits: Collection[int] = (), score: ScoreFilter | None = None,
) -> QuerySet[Session]:
    """The workspace's sessions, filtered on their columns and counters only (cost, tokens,
    errors, last activity; the model through SessionModel's (model, session) index), so a
    filter costs the same however long the sessions' histories are. Ranges include both
    ends; the activity range is [from, to). `q` matches the key, user, agent or title, or
    a session among `text_hits` (ids sessions_with_text found by their events). `score` keeps
    the sessions holding a matching score (selectors/scores.py)."""
    qs = Session.objects.filter(workspace=workspace)
    if q:
        match = Q(key__icontains=q) | Q(user_id__icontains=q) | Q(agent__icontains=q) | Q(title__icontains=q)
        if text_hits:
            match |= Q(pk__in=list(text_hits))
        qs = qs.filter(match)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if agent:
        qs = qs.filter(agent=agent)
    if archived is not None:
        qs = qs.filter(archived=archived)
    if model:
        qs = qs.filter(pk__in=SessionModel.objects.filter(model=model).values("session_id"))
    if errors:
        qs = qs.filter(error_count__gt=0)
    for field, (low, high) in (("cost_total", cost), ("token_total", tokens)):
        if low is not None:
            qs = qs.filter(**{f"{field}__gte": low})
        if high is not None:
            qs = qs.filter(**{f"{field}__lte": high})
    if active[0] is not None:
        qs = qs.filter(last_activity_at__gte=active[0])
    if active[1] is not None:
        qs = qs.filter(last_activity_at__lt=active[1])
    if score is not None:
        qs = sessions_scored(qs, workspace_id=workspace.pk, score=score)
    return qs.order_by("-last_activity_at", "-id")


def workspace_models(*, workspace: Workspace, limit: int = 100) -> list[str]:
    """Model names the workspace's sessions used, for the model filter's choices."""
    return list(SessionModel.objects.filter(session__workspace=workspace).order_by("model")
                .values_list("model", flat=True).distinct()[:limit])


def session_threads(*, session: Session) -> QuerySet[Thread]:
    return Thread.objects.filter(session=session).select_related("parent").order_by("created_at", "id")


RUN_THREADS = 20  # up to this many threads, a session's runs are read thread by thread


def session_runs(*, session: Session, before: tuple[Any, int] | None = None,
                 size: int = 50) -> tuple[list[Run], tuple[Any, int] | None]:
    """A page of the session's runs, newest first, and the cursor of the next page.

    Each thread's newest runs are read along its (thread, -started_at, -id) index, a page at
    most, and merged: the cost is the page's, not the thread's history. A session with more
    threads than RUN_THREADS (many forks) sorts its runs in one query instead."""
    def page(qs: QuerySet[Run]) -> list[Run]:
        if before is not None:
            when, pk = before
            qs = qs.filter(Q(started_at__lt=when) | Q(started_at=when, id__lt=pk))
        return list(qs.order_by("-started_at", "-id")[: size + 1])

    threads = list(Thread.objects.filter(session=session).order_by("pk")[: RUN_THREADS + 1])
    if len(threads) > RUN_THREADS:
        runs = page(Run.objects.filter(thread__session=session).select_related("thread"))
    else:
        runs = []
        for thread in threads:
            for run in page(Run.objects.filter(thread=thread)):
                run.thread = thread
                runs.append(run)
        runs.sort(key=lambda r: (r.started_at, r.pk), reverse=True)
        runs = runs[: size + 1]
    more = len(runs) > size
    runs = runs[:size]
    return runs, ((runs[-1].started_at, runs[-1].pk) if more else None)


def _percentile(values: list[int], p: float) -> int | None:
    if not values:
        return None
    ordered = sorted(values)  # nearest rank: the smallest value with p of them at or below it
    return ordered[min(len(ordered) - 1, max(math.ceil(p * len(ordered)) - 1, 0))]


def session_stats(*, session: Session) -> dict[str, Any]:
    """Turns (runs), and p50/p95 model-call latency over the newest calls of the session's
    newest threads (each read walks a thread's (thread, type, seq) index, bounded)."""
    latencies: list[int] = []
    threads = Thread.objects.filter(session=session).order_by("-last_event_at", "-id")[:LATENCY_THREADS]
    for thread in threads:
        # Rows, not model instances: building 1,000 Events cost more than their query.
        rows = list(Event.objects.filter(thread=thread, type__in=(CALL_START, CALL_END))
                    .order_by("-seq").values_list("type", "call_id", "run_id", "occurred_at")
                    [:LATENCY_CALLS])[::-1]
        open_starts: dict[tuple[str, Any], datetime] = {}
        for kind, call_id, run_id, at in rows:
            key = ("call", call_id) if call_id else ("run", run_id) if run_id else ("thread", None)
            if kind == CALL_START:  # key: calls.call_key's, from the row
                open_starts[key] = at
            elif (started := open_starts.pop(key, None)) is not None:
                latencies.append(int((at - started).total_seconds() * 1000))
    return {"runs": Run.objects.filter(thread__session=session).count(), "calls": len(latencies),
            "p50": _percentile(latencies, 0.50), "p95": _percentile(latencies, 0.95)}


VIEWERS_SHOWN = 50


def session_viewers(*, session: Session, limit: int = VIEWERS_SHOWN) -> list[dict[str, Any]]:
    """Who read the session or its threads (services/access_log), by actor and action: the
    latest hour's first read and the number of hours with reads, most recent first."""
    rows = (ReadAudit.objects.filter(workspace_id=session.workspace_id, session_id=session.pk)
            .values("actor_key", "actor_type", "actor_label", "action")
            .annotate(last_at=Max("first_at"), hours=Count("hour", distinct=True))
            .order_by("-last_at", "actor_key", "action")[:limit])
    labels = dict(ReadAudit.Action.choices)
    return [{**row, "what": labels.get(row["action"], row["action"])} for row in rows]


def session_share_links(*, session: Session) -> list[ShareLink]:
    """The session's share links, newest first (the session page's list)."""
    return list(ShareLink.objects.filter(session=session).select_related("thread", "created_by")
                .order_by("-created_at")[:100])
