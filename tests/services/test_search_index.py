"""Text search through the search index (PostgreSQL; SQLite searches the events themselves):
every door's events are found before and after the worker indexes them, in content, data and
parts, exactly as the plain query finds them; the event table keeps no per-insert text index."""

import pytest
from django.db import connection

from contextstore.models import Event, EventSearch, EventSearchPending, Session
from contextstore.selectors import events as event_reads
from contextstore.selectors.events import event_search
from contextstore.selectors.sessions import sessions_with_text
from contextstore.selectors.timeline import timeline_page
from contextstore.services.events import event_append
from contextstore.services.search import search_index_pending
from tests.conftest import messages

TERM = "FileNotFoundError"
EVENTS = [
    {"type": "Message", "role": "tool", "content": f"Traceback: {TERM}: no such file"},
    {"type": "Error", "content": "the tool failed", "data": {"exception": TERM.upper()}},
    {"type": "Message", "role": "assistant", "content": "answer",
     "parts": [{"type": "text", "text": f"raised {TERM.lower()} here"}]},
    {"type": "ToolCall", "content": "lookup", "data": {"name": "search", "arguments": {"q": "x"}}},
    {"type": "Message", "role": "user", "content": "FileFound fine"},
]
postgresql_only = pytest.mark.skipif("connection.vendor != 'postgresql'")


def found(thread, text: str) -> dict[str, list[int]]:
    """What each search finds: the thread page's (content, data, parts), the API's (content)
    and the session list's (events per session)."""
    page = timeline_page(thread=thread, filters={"q": text, "runtime": True})
    hits = sessions_with_text(sessions=Session.objects.filter(pk=thread.session_id), text=text)
    return {"page": [item.key for item in page.items],
            "api": [e.seq for e in event_search(thread=thread, text=text)],
            "sessions": [hit.events for hit in hits.sessions.values()]}


EXPECTED = {
    TERM: {"page": [1, 2, 3], "api": [1], "sessions": [3]},
    '"arguments": {"q"': {"page": [4], "api": [], "sessions": [1]},  # JSON text, keys and all
    "filefound": {"page": [5], "api": [5], "sessions": [1]},
    "nowhere": {"page": [], "api": [], "sessions": []},
}


@pytest.mark.django_db(transaction=True)  # autocommit: the candidates lookup on a big thread runs too
@pytest.mark.parametrize("big", [False, True])
def test_the_search_finds_content_data_and_parts_before_and_after_indexing(
        thread, actor, monkeypatch, big):
    if big:  # the thread counts as big: its searches ask the index for candidates (seqs)
        monkeypatch.setattr(event_reads, "TEXT_INDEX_FIRST", 1)
    event_append(thread=thread, events=EVENTS, actor=actor)
    thread.refresh_from_db()
    for text, expected in EXPECTED.items():  # queued, not indexed yet (PostgreSQL)
        assert found(thread, text) == expected, text
    if big and connection.vendor == "postgresql":
        assert event_reads.text_candidates(thread, TERM) == [1, 2, 3]  # the seqs holding it
    search_index_pending()
    assert not EventSearchPending.objects.exists()
    for text, expected in EXPECTED.items():
        assert found(thread, text) == expected, text
    if big and connection.vendor == "postgresql":  # now from the index
        assert len(event_reads.text_candidates(thread, TERM) or []) == 3


@postgresql_only
def test_the_worker_indexes_each_events_searchable_text_and_empties_the_queue(thread, actor):
    event_append(thread=thread, events=EVENTS[:2], actor=actor)
    event_append(thread=thread, events=messages(30), actor=actor)  # COPY
    assert EventSearchPending.objects.count() == 2  # one row per insert statement
    assert search_index_pending() == {"batches": 1, "ids": 32}
    texts = dict(EventSearch.objects.values_list("event__seq", "text"))
    assert len(texts) == 32 and not EventSearchPending.objects.exists()
    assert texts[1] == f"TRACEBACK: {TERM.upper()}: NO SUCH FILE\n\n"
    assert texts[2] == f'THE TOOL FAILED\n\n{{"EXCEPTION": "{TERM.upper()}"}}'


@postgresql_only
def test_a_big_insert_is_indexed_batch_by_batch(thread, actor, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "SEARCH_INDEX_BATCH": 7}
    event_append(thread=thread, events=messages(30), actor=actor)
    event_append(thread=thread, events=messages(2, start=30), actor=actor)
    assert search_index_pending() == {"batches": 5, "ids": 32}
    assert EventSearch.objects.count() == 32 and not EventSearchPending.objects.exists()
    assert search_index_pending() == {"batches": 0, "ids": 0}


@postgresql_only
def test_a_changed_text_leaves_the_index_at_once_and_the_new_one_is_found(thread, actor):
    event_append(thread=thread, events=EVENTS, actor=actor)
    search_index_pending()
    first = Event.objects.get(thread=thread, seq=1)
    Event.objects.filter(pk=first.pk).update(content="redacted")
    assert not EventSearch.objects.filter(event_id=first.pk).exists()
    assert list(EventSearchPending.objects.values_list("low", "high")) == [(first.pk, first.pk)]
    Event.objects.filter(pk=first.pk).update(status="cleared")  # no text changed: nothing queued
    assert EventSearchPending.objects.count() == 1
    assert found(thread, "redacted")["page"] == [] and found(thread, "redacted")["api"] == []
    Event.objects.filter(pk=first.pk).update(status="active")
    assert found(thread, "redacted")["api"] == [1]
    search_index_pending()
    assert EventSearch.objects.get(event_id=first.pk).text == "REDACTED\n\n"


@postgresql_only
def test_deleting_events_deletes_their_indexed_text(thread, actor):
    event_append(thread=thread, events=EVENTS, actor=actor)
    search_index_pending()
    assert EventSearch.objects.filter(thread_id=thread.pk).count() == 5
    thread.delete()
    assert not EventSearch.objects.exists()


@postgresql_only
def test_the_event_table_keeps_no_text_index_and_the_search_table_one(db):
    """Every index on the event table is a b-tree (a trigram index there cost COPY 97 % of its
    speed); the text index is the search table's, with a 2 MB pending list (0026)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename IN "
                       "('contextstore_event', 'contextstore_eventsearch') ORDER BY 1, 2")
        rows = cursor.fetchall()
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'eventsearch_trgm'")
        options = cursor.fetchone()[0]
    event = {name for table, name, _ in rows if table == "contextstore_event"}
    assert event == {
        "contextstore_event_pkey", "event_cleared_by", "event_collapse", "event_error",
        "event_replaced_by", "event_run", "event_type", "event_unique_client_id",
        "event_unique_item_key", "event_unique_seq", "event_working_context"}
    assert all(" USING btree " in definition for table, _, definition in rows
               if table == "contextstore_event")
    assert [(name, definition.split(" USING ")[1]) for table, name, definition in rows
            if table == "contextstore_eventsearch"] == [
        ("contextstore_eventsearch_pkey", "btree (event_id)"),
        ("eventsearch_trgm", "gin (text gin_trgm_ops) WITH (gin_pending_list_limit='2048')")]
    assert options == ["gin_pending_list_limit=2048"]


def test_on_sqlite_nothing_is_queued_and_the_worker_has_nothing_to_do(thread, actor):
    if connection.vendor == "postgresql":
        pytest.skip("SQLite's")
    event_append(thread=thread, events=EVENTS, actor=actor)
    assert not EventSearchPending.objects.exists()
    assert search_index_pending() == {"batches": 0, "ids": 0}
    assert found(thread, TERM) == EXPECTED[TERM]


def test_beat_runs_the_indexing_through_its_task(thread, actor, settings):
    from contextstore import tasks

    assert settings.CELERY_BEAT_SCHEDULE["index-search"]["task"] == "contextstore.tasks.index_search"
    event_append(thread=thread, events=EVENTS, actor=actor)
    postgresql = connection.vendor == "postgresql"
    assert tasks.index_search() == {"batches": int(postgresql), "ids": 5 * int(postgresql)}
    assert EventSearch.objects.count() == 5 * int(postgresql)
