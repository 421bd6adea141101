"""Server time of the analytics: the trends page and its query, and the cache pages' totals,
over 30 days of model calls (13.7k by default, the size a team reported 3.6-11 s at).

    DATABASE_URL=postgres://... python manage.py bench_trends            # seed once, then time
    python manage.py bench_trends --calls 13700 --repeat 5 --fresh
    python manage.py bench_trends --force-jit   # as if the planner chose JIT (a big workspace)

The calls live in a workspace `bench-trends` (reused between runs; --fresh rebuilds them): each
session a run of model calls (an LLMCallStart and its LLMComplete with a model, cost and a
provider's usage, now and then an Error), spread evenly over the last 30 days. On PostgreSQL it
also prints whether the planner would compile the trends query with JIT (EXPLAIN's JIT section).
The lines marked "JSON:" time the same reads parsing each call's JSON (from_json, the query
before CallFigure), in the same run.
"""

import random
import statistics
import time
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import OutputWrapper
from django.db import connection
from django.test import Client
from django.utils import timezone

from contextstore.models import Event, Session
from contextstore.selectors import trends
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_delete, session_ensure, thread_ensure
from contextstore.services.workspaces import workspace_ensure

CALLS_PER_SESSION = 100
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "gemini-2.5-pro", "o3-mini", "llama-3.1-70b",
          "mistral-large")
AGENTS = ("support", "research", "coder", "triage")


def _usage(rng: random.Random, model: str) -> dict[str, Any]:
    """A provider's usage, in the shape its SDK reports it."""
    inp, out, read = rng.randint(500, 30_000), rng.randint(20, 2_000), rng.randint(0, 20_000)
    if model.startswith("claude"):
        return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": rng.randint(0, 2_000)}
    if model.startswith("gemini"):
        return {"usage": {"prompt_token_count": inp, "candidates_token_count": out,
                          "cached_content_token_count": min(read, inp)}}
    return {"usage": {"prompt_tokens": inp, "completion_tokens": out,
                      "prompt_tokens_details": {"cached_tokens": min(read, inp)}}}


def session_events(rng: random.Random, first: Any, span: timedelta, calls: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(calls):
        at = first + span * rng.random()
        model = rng.choice(MODELS)
        ms = rng.randint(150, 9_000)
        events.append({"type": "LLMCallStart", "call_id": f"c{i}", "occurred_at": at.isoformat(),
                       "data": {"model": model}})
        if rng.random() < 0.03:
            events.append({"type": "Error", "call_id": f"c{i}", "content": "rate limited",
                           "occurred_at": (at + timedelta(milliseconds=ms // 2)).isoformat()})
        events.append({"type": "LLMComplete", "call_id": f"c{i}",
                       "occurred_at": (at + timedelta(milliseconds=ms)).isoformat(),
                       "data": {"model": model, "cost": round(rng.random() / 20, 6), **_usage(rng, model)}})
    return events


def _summary(samples: list[float]) -> str:
    return f"{statistics.median(samples):7.1f} ms median, {max(samples):7.1f} ms max"


class TrendsBench:
    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, calls: int, repeat: int, fresh: bool, force_jit: bool = False) -> None:
        actor = Actor.system("bench_trends")
        workspace, _ = workspace_ensure(slug="bench-trends")
        if fresh:
            for session in Session.objects.filter(workspace=workspace):
                session_delete(session=session, actor=actor)
        self._seed(workspace, calls, actor)
        stored = Event.objects.filter(thread__workspace=workspace, type="LLMComplete").count()
        self.stdout.write(f"database: {connection.vendor}; {stored} model calls over 30 days; "
                          f"{repeat} runs per figure")
        if connection.vendor == "postgresql" and force_jit:
            # what the planner does on a workspace whose estimates pass jit_above_cost
            with connection.cursor() as cursor:
                cursor.execute("SET jit_above_cost = 0; SET jit_inline_above_cost = 0; "
                               "SET jit_optimize_above_cost = 0")
            self.stdout.write("JIT thresholds at 0 for this connection (--force-jit)")
        if connection.vendor == "postgresql":
            jit = "yes" if trends_uses_jit(workspace) else "no"
            self.stdout.write(f"trends query compiled with JIT: {jit}")
        user, _ = get_user_model().objects.get_or_create(
            username="bench-trends", defaults={"is_superuser": True, "is_staff": True})
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        figures: dict[str, list[float]] = {}

        def timed(name: str, work: Any) -> None:
            start = time.perf_counter()
            work()
            figures.setdefault(name, []).append((time.perf_counter() - start) * 1000)

        def page(path: str) -> None:
            response = client.get(path, secure=True)
            assert response.status_code == 200, (path, response.status_code)

        for _ in range(repeat):
            # before: the same queries parsing each call's JSON (as before CallFigure)
            timed("JSON: workspace_trends(30 days, by model)",
                  lambda: trends.workspace_trends(workspace=workspace, from_json=True))
            timed("JSON: workspace_trends(30 days, by agent)",
                  lambda: trends.workspace_trends(workspace=workspace, group="agent", from_json=True))
            timed("JSON: workspace_trends(90 days, by model)",
                  lambda: trends.workspace_trends(workspace=workspace, days=90, from_json=True))
            timed("JSON: cache_totals(workspace)",
                  lambda: trends.cache_totals(workspace=workspace, from_json=True))
            timed("workspace_trends(30 days, by model)", lambda: trends.workspace_trends(workspace=workspace))
            timed("workspace_trends(30 days, by agent)",
                  lambda: trends.workspace_trends(workspace=workspace, group="agent"))
            timed("workspace_trends(90 days, by model)",
                  lambda: trends.workspace_trends(workspace=workspace, days=90))
            timed("cache_totals(workspace)", lambda: trends.cache_totals(workspace=workspace))
            timed("GET /trends/?days=30", lambda: page(f"/trends/?days=30&ws={workspace.slug}"))
        for name, samples in figures.items():
            self.stdout.write(f"{name:<46} {_summary(samples)}")

    def _seed(self, workspace: Any, calls: int, actor: Actor) -> None:
        sessions = -(-calls // CALLS_PER_SESSION)
        have = Session.objects.filter(workspace=workspace, key__startswith="bench-trends-").count()
        if have >= sessions:
            return
        self.stdout.write(f"seeding {calls} model calls in {sessions} sessions…")
        now = timezone.now()
        first, span = now - timedelta(days=29, hours=now.hour), timedelta(days=29, hours=now.hour)
        for i in range(have, sessions):
            rng = random.Random(i)
            session, _ = session_ensure(workspace=workspace, key=f"bench-trends-{i}",
                                        agent=AGENTS[i % len(AGENTS)], actor=actor)
            thread, _ = thread_ensure(session=session, actor=actor)
            n = min(CALLS_PER_SESSION, calls - i * CALLS_PER_SESSION)
            event_append(thread=thread, actor=actor, events=session_events(rng, first, span, n))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # what autovacuum does after a bulk load
                cursor.execute("ANALYZE contextstore_event")


def trends_uses_jit(workspace: Any) -> bool:
    """Whether PostgreSQL would JIT-compile the trends page's main query, as workspace_trends
    runs it (EXPLAIN ANALYZE inside the same setting)."""
    return any("JIT" in line for line in trends.explain_trends(workspace=workspace))
