"""Across sessions: sortable columns (keyset pages in any order) and per-session stats."""

import re

from contextstore.models import Session
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
