"""0025 indexes the events written before it (PostgreSQL), drops the event table's trigram
indexes, and puts them back on the way down; on SQLite it only adds the two empty tables. 0026
gives its index a 2 MB pending list."""

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0024_read_audit")]
AFTER = [("contextstore", "0025_search_index")]


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def trigram_indexes() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%gin_trgm_ops%' "
                       "ORDER BY 1")
        return [name for (name,) in cursor.fetchall()]


def pending_list_kb() -> list[str] | None:
    """The search index's gin_pending_list_limit (kB), as its storage options say."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'eventsearch_trgm'")
        return cursor.fetchone()[0]


def old_events(apps) -> None:
    workspace = apps.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = apps.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k")
    thread = apps.get_model("contextstore", "Thread").objects.create(
        workspace=workspace, session=session, name="t")
    Event = apps.get_model("contextstore", "Event")
    for seq, (content, data) in enumerate([("Quokka seen", None), ("nothing", '{"animal": "quokka"}'),
                                           ("unrelated", None)], start=1):
        Event.objects.create(thread=thread, seq=seq, position=seq, type="Message", content=content,
                             data=data, occurred_at=timezone.now())


@pytest.mark.django_db(transaction=True)
def test_events_written_before_it_are_indexed_and_searchable():
    old_events(migrate(BEFORE))
    apps = migrate(AFTER)
    if connection.vendor != "postgresql":
        assert not apps.get_model("contextstore", "EventSearch").objects.exists()
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
        return
    indexed = apps.get_model("contextstore", "EventSearch").objects.filter(text__contains="QUOKKA")
    assert sorted(indexed.values_list("event__seq", flat=True)) == [1, 2]
    assert not apps.get_model("contextstore", "EventSearchPending").objects.exists()
    assert trigram_indexes() == ["eventsearch_trgm"]
    assert pending_list_kb() == ["gin_pending_list_limit=256"]

    migrate(BEFORE)
    assert trigram_indexes() == ["event_content_trgm", "event_data_trgm", "event_parts_trgm"]
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert pending_list_kb() == ["gin_pending_list_limit=2048"]  # 0026: fewer merges, less WAL


@pytest.mark.django_db(transaction=True)
def test_past_its_inline_limit_it_queues_the_old_events_for_the_worker(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's")
    old_events(migrate(BEFORE))
    monkeypatch.setattr(importlib.import_module("contextstore.migrations.0025_search_index"),
                        "INLINE_MAX", 2)
    migrate(AFTER)
    from contextstore.models import Event, EventSearch, EventSearchPending
    from contextstore.services.search import search_index_pending

    ids = sorted(Event.objects.values_list("pk", flat=True))
    assert list(EventSearchPending.objects.values_list("low", "high")) == [(ids[0], ids[-1])]
    assert not EventSearch.objects.exists()
    search_index_pending()
    assert sorted(EventSearch.objects.filter(text__contains="QUOKKA").values_list(
        "event__seq", flat=True)) == [1, 2]
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
