"""The session list's search looks through the sessions' events too: content, data and parts,
case-insensitively, combined with every other filter, within the workspace, under a time limit."""

from contextlib import contextmanager

import pytest
from django.db import DatabaseError, connection

from contextstore.db import time_limit
from contextstore.models import Session
from contextstore.selectors import sessions as session_selectors
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.views.conftest import HTMX

TERM = "FileNotFoundError"


def make(workspace, actor, key: str, *events: dict) -> Session:
    session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, events=list(events), actor=actor)
    return session


def keys(client, **params) -> list[str]:
    html = client.get("/", params, **HTMX).content.decode()
    return sorted(part.split("<")[0] for part in html.split('<div class="sub">')[1:])


@pytest.fixture
def fleet(workspace, other_workspace, actor):
    in_content = make(workspace, actor, "in-content",
                      {"type": "Message", "role": "tool", "content": f"Traceback: {TERM}: no such file"},
                      {"type": "Message", "role": "assistant", "content": f"that was a {TERM.lower()}"},
                      {"type": "Message", "role": "user", "content": "unrelated"})
    in_data = make(workspace, actor, "in-data",
                   {"type": "Error", "content": "the tool failed", "data": {"exception": TERM}})
    in_parts = make(workspace, actor, "in-parts",
                    {"type": "Message", "role": "assistant", "content": "answer",
                     "parts": [{"type": "text", "text": f"raised {TERM} <b>here</b>"}]})
    make(workspace, actor, "without", {"type": "Message", "role": "user", "content": "FileFound fine"})
    make(other_workspace, actor, "elsewhere", {"type": "Message", "role": "user", "content": TERM})
    Session.objects.filter(pk=in_data.pk).update(error_count=1)
    return {"content": in_content, "data": in_data, "parts": in_parts}


def test_the_search_finds_the_sessions_whose_events_hold_the_text(editor_client, fleet):
    assert keys(editor_client, q=TERM) == ["in-content", "in-data", "in-parts"]
    assert keys(editor_client, q="filenotfounderror") == ["in-content", "in-data", "in-parts"]


def test_the_session_fields_still_match(editor_client, fleet):
    assert keys(editor_client, q="without") == ["without"]


def test_the_text_combines_with_the_other_filters(editor_client, fleet):
    assert keys(editor_client, q=TERM, errors="on") == ["in-data"]
    assert keys(editor_client, q=TERM, archived="yes") == []


def test_another_workspaces_sessions_never_show(editor_client, outsider_client, fleet):
    assert "elsewhere" not in keys(editor_client, q=TERM)
    assert keys(outsider_client, q=TERM) == ["elsewhere"]


def test_each_found_session_says_how_many_events_match_and_links_to_the_threads_search(
        editor_client, fleet):
    html = editor_client.get("/", {"q": TERM}, **HTMX).content.decode()
    thread = fleet["content"].threads.get()
    assert f'href="/threads/{thread.pk}/?q={TERM}">2 events match</a>' in html
    assert f'href="/threads/{fleet["data"].threads.get().pk}/?q={TERM}">1 event matches</a>' in html


def test_agent_text_and_the_search_are_escaped(editor_client, workspace, actor):
    make(workspace, actor, "x", {"type": "Message", "role": "user", "content": "<script>alert(1)</script>"})
    html = editor_client.get("/", {"q": "<script>alert"}, **HTMX).content.decode()
    assert "<script>alert" not in html
    assert "?q=%3Cscript%3Ealert" in html
    assert keys(editor_client, q="<script>alert") == ["x"]


def test_past_its_time_limit_the_search_says_so_and_shows_the_session_field_matches(
        editor_client, fleet, monkeypatch):
    @contextmanager
    def expired(ms):  # the query cancelled as PostgreSQL's timeout or SQLite's handler does
        yield
        raise DatabaseError("canceling statement due to statement timeout")

    monkeypatch.setattr(session_selectors, "time_limit", expired)
    html = editor_client.get("/", {"q": "in-"}, **HTMX).content.decode()
    assert 'id="text-search-incomplete"' in html
    assert "event match" not in html
    assert keys(editor_client, q="in-") == ["in-content", "in-data", "in-parts"]


def test_the_time_limit_interrupts_a_long_query(db):
    with pytest.raises(DatabaseError), time_limit(1), connection.cursor() as cursor:
        cursor.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
                       "SELECT count(*) FROM n")
        cursor.fetchall()


def test_a_search_through_events_is_not_repeated_by_the_auto_refresh(editor_client, fleet):
    """The list polls every 15 s; with a text search it does not, since the search through
    events can take up to REGEX_TIMEOUT_MS each time."""
    plain = editor_client.get("/").content.decode()
    searched = editor_client.get("/", {"q": TERM}).content.decode()
    assert 'hx-trigger="every 15s"' in plain
    assert 'hx-trigger="every 15s"' not in searched and 'id="results"' in searched
