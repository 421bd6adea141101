"""Across sessions: sortable columns (keyset pages in any order) and per-session stats."""

import re
from datetime import UTC, datetime, timedelta

from django.db import connection

from contextstore.models import Run, Session
from contextstore.services.events import event_append
from contextstore.services.runs import run_start
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.views.conftest import HTMX


def keys(html: str) -> list[str]:
    return re.findall(r'<div class="sub">(k-\d+)', html)


def test_session_columns_sort_both_ways_and_page_without_gaps(editor_client, workspace, actor):
    for i in range(75):
        s = session_ensure(workspace=workspace, key=f"k-{i:03d}", actor=actor)[0]
        Session.objects.filter(pk=s.pk).update(event_count=(i * 7) % 40, cost_total=i % 5)
    expected = [s.key for s in Session.objects.order_by("-event_count", "-id")]
    html = editor_client.get("/", {"sort": "-events"}).content.decode()
    first = keys(html)
    assert first == expected[:50]
    assert ('<th class="num" aria-sort="descending"><a class="sort" href="?sort=events" '
            'data-sort="events">') in html
    cursor = re.search(r'before=([^"&]+)"', html).group(1)
    rest = keys(editor_client.get(f"/?sort=-events&before={cursor}", **HTMX).content.decode())
    assert first + rest == expected
    ascending = [s.key for s in Session.objects.order_by("cost_total", "id")]
    html = editor_client.get("/", {"sort": "cost"}).content.decode()
    cursor = re.search(r'before=([^"&]+)"', html).group(1)
    rest = keys(editor_client.get(f"/?sort=cost&before={cursor}", **HTMX).content.decode())
    assert keys(html) + rest == ascending
    # a search keeps the order chosen; a bad sort falls back to recent activity
    assert 'name="sort" value="cost"' in html
    assert editor_client.get("/", {"sort": "password"}).status_code == 200


def test_the_session_page_shows_turns_latency_percentiles_and_every_run(editor_client, workspace, actor):
    session = session_ensure(workspace=workspace, key="busy", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    for i in range(60):
        run_start(thread=thread, run_id=f"run-{i:02d}", actor=actor)
    calls = []
    for i, ms in enumerate((100, 200, 300, 400, 5000)):
        calls += [{"type": "LLMCallStart", "call_id": f"c{i}", "occurred_at": f"2026-01-05T10:0{i}:00Z"},
                  {"type": "LLMComplete", "call_id": f"c{i}",
                   "occurred_at": f"2026-01-05T10:0{i}:{ms // 1000:02d}.{ms % 1000:03d}Z"}]
    event_append(thread=thread, actor=actor, events=calls)
    html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
    assert "<b>60</b> turns (runs)" in html
    assert "p50 <b>300 ms</b> · p95 <b>5.0 s</b>" in html and "60 in all" in html
    assert html.count('href="/threads/') >= 50 and "More runs" in html
    cursor = re.search(r'runs_before=([^"&]+)"', html).group(1)
    more = editor_client.get(f"/sessions/{session.pk}/?runs_before={cursor}", **HTMX).content.decode()
    shown = re.findall(r"\?run=(run-\d+)", html) + re.findall(r"\?run=(run-\d+)", more)
    assert sorted(shown) == [f"run-{i:02d}" for i in range(60)] and "More runs" not in more


def test_the_run_lists_read_a_page_along_the_run_recent_index_whatever_the_history(
    editor_client, workspace, actor, django_assert_max_num_queries
):
    """The session page's run list and the thread page's run bars read each thread's newest
    runs along (thread, -started_at, -id), a page at most: the same SQL at 3 and 300 runs."""
    session = session_ensure(workspace=workspace, key="long", actor=actor)[0]
    main = thread_ensure(session=session, actor=actor)[0]
    fork = thread_ensure(session=session, name="fork", actor=actor)[0]
    base = datetime(2026, 1, 5, tzinfo=UTC)

    def add_runs(start: int, n: int) -> None:
        Run.objects.bulk_create(Run(thread=main if i % 3 else fork, run_id=f"r-{i:03d}")
                                for i in range(start, start + n))
        for run in Run.objects.filter(started_at__gt=base + timedelta(days=1)):
            Run.objects.filter(pk=run.pk).update(started_at=base + timedelta(minutes=int(run.run_id[2:])))

    def run_queries() -> list[str]:
        with django_assert_max_num_queries(50) as ctx:
            html = editor_client.get(f"/sessions/{session.pk}/").content.decode()
            assert editor_client.get(f"/threads/{main.pk}/").status_code == 200
        shown.append(re.findall(r"\?run=(r-\d+)", html))
        return [re.sub(r"\b\d+\b", "N", q["sql"]) for q in ctx.captured_queries
                if 'FROM "contextstore_run"' in q["sql"] and "COUNT(" not in q["sql"]]

    shown: list[list[str]] = []
    add_runs(0, 3)
    small = run_queries()
    add_runs(3, 297)
    large = run_queries()
    # the session page: one bounded read per thread, no join on the session; the thread page: one
    assert small == large and len(large) == 3
    assert all("LIMIT N" in q and '"contextstore_run"."thread_id" = N' in q for q in large)
    assert shown[0] == ["r-002", "r-001", "r-000"]
    assert shown[1] == [f"r-{i:03d}" for i in range(299, 249, -1)]  # both threads, newest first
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_sort = off")
        plan = Run.objects.filter(thread=main).order_by("-started_at", "-id")[:20].explain()
        assert "run_recent" in plan and "Sort" not in plan
