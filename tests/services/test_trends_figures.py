"""Trends read from CallFigure, the numbers history stores when a call or an error is written,
give exactly the figures the JSON way gave (workspace_trends(from_json=True), the query before
them) on a generated set with every usage shape and errors per model; the migration's backfill
stores the same rows; the rows go with their events."""

import importlib
import random
from datetime import date, timedelta

from django.db import connection, transaction

from contextstore.models import CallFigure, Event, Thread
from contextstore.selectors.trends import cache_totals, workspace_trends
from contextstore.services.events import event_append
from contextstore.services.retention import COUNTED, events_delete_locked
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.test_usage import GEMINI_REST, GEMINI_SDK, _anthropic, _openai_chat, _openai_responses

TODAY = date(2026, 3, 10)
SHAPES = [
    {"usage": _openai_chat()}, {"usage": _openai_responses()}, {"usage": _anthropic()},
    {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 600,
     "cache_creation_input_tokens": 20},
    {"usageMetadata": GEMINI_REST}, {"usage_metadata": GEMINI_SDK},
    {"gen_ai.usage.input_tokens": 900, "gen_ai.usage.output_tokens": 30,
     "gen_ai.usage.cache_read.input_tokens": 800},
    {"gen_ai.usage.prompt_tokens": 70, "gen_ai.usage.completion_tokens": 8},
    {"prompt_tokens": "12", "completion_tokens": None},  # not numbers: absent
    {},
]
MODELS = ["gpt-4o", "claude-sonnet-4", "gemini-2.5-pro", "o3", "llama", "mistral", "qwen", None, 7]


def _generated(workspace, actor, seed: int = 5) -> None:
    rng = random.Random(seed)
    for s in range(6):
        session = session_ensure(workspace=workspace, key=f"s-gen-{s}", agent=f"agent-{s % 3}",
                                 actor=actor)[0]
        thread = thread_ensure(session=session, actor=actor)[0]
        events = []
        for i in range(25):
            day = TODAY - timedelta(days=rng.randrange(0, 95))
            at = f"{day.isoformat()}T{10 + i % 12:02d}:{i:02d}:00"
            model = rng.choice(MODELS)
            data = {**rng.choice(SHAPES), "model": model}
            if rng.random() < 0.5:
                data["cost"] = round(rng.random(), 4)
            if rng.random() < 0.3:
                data["latency_ms"] = rng.randrange(1, 5000)
            if rng.random() < 0.15:
                failure = rng.choice(["error", "failed", "ok", {"message": "x"}])
                data[rng.choice(["status", "error"])] = failure
            call_id = rng.choice([f"c{s}-{i}", ""])
            if rng.random() < 0.7:
                events.append({"type": "LLMCallStart", "call_id": call_id,
                               "occurred_at": at + ".000000+00:00", "data": {"model": model}})
            if rng.random() < 0.2:
                events.append({"type": "Error", "call_id": rng.choice([call_id, ""]), "content": "boom",
                               "occurred_at": at + ".100000+00:00",
                               "data": {"model": "named-by-error"} if rng.random() < 0.3 else {}})
            events.append({"type": "LLMComplete", "call_id": call_id,
                           "occurred_at": f"{at}.{rng.randrange(1, 999):03d}000+00:00", "data": data})
        event_append(thread=thread, actor=actor, events=events)


def _figures(workspace, from_json: bool) -> list:
    out = []
    for days in (7, 30, 90):
        for group in ("model", "agent"):
            t = workspace_trends(workspace=workspace, days=days, group=group, today=TODAY,
                                 from_json=from_json)
            out.append((t.keys, {k: vars(c) for k, c in t.cells.items()},
                        {k: vars(c) for k, c in t.totals.items()}))
    out.append(cache_totals(workspace=workspace, from_json=from_json))
    return out


def test_the_figures_are_the_json_ways_exactly(workspace, actor):
    _generated(workspace, actor)
    assert CallFigure.objects.filter(event__thread__workspace=workspace).count() == Event.objects.filter(
        thread__workspace=workspace, type__in=("LLMCallStart", "LLMComplete", "Error")).count()
    new, old = _figures(workspace, False), _figures(workspace, True)
    assert new == old
    keys, _, totals = new[4]  # 90 days by model: errors counted against models, series folded
    assert len(keys) == 6 and sum(1 for k in keys if totals[k]["errors"]) >= 3, totals


def test_the_migrations_backfill_stores_the_same_rows(workspace, actor):
    _generated(workspace, actor, seed=9)
    stored = {f.pk: f for f in CallFigure.objects.all()}
    CallFigure.objects.all().delete()
    migration = importlib.import_module("contextstore.migrations.0005_call_figures")

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection  # type: ignore[attr-defined]
    migration.backfill(None, editor)
    again = {f.pk: f for f in CallFigure.objects.all()}
    assert stored.keys() == again.keys() and len(stored) > 100
    fields = [f.attname for f in CallFigure._meta.concrete_fields]
    assert all([getattr(stored[k], n) for n in fields] == [getattr(again[k], n) for n in fields]
               for k in stored)


def test_the_figures_go_with_their_events(workspace, actor):
    _generated(workspace, actor, seed=3)
    thread = Event.objects.filter(thread__workspace=workspace).first().thread
    with transaction.atomic():
        locked = Thread.objects.select_for_update().get(pk=thread.pk)
        events = list(Event.objects.filter(thread=locked).order_by("seq").only(*COUNTED))
        gone = [e.pk for e in events]
        events_delete_locked(thread=locked, events=events, now=locked.created_at)
    assert not CallFigure.objects.filter(event_id__in=gone).exists()
    assert CallFigure.objects.exists()  # the other threads' stay
    thread.session.delete()
    assert not CallFigure.objects.filter(event__thread=thread).exists()
