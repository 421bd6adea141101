"""A thread cannot be poisoned: a row stored before input was checked, with a date-time
PostgreSQL keeps but Python cannot read (year 10000 in UTC), is repaired by migration 0007 so
every read of the thread works again."""

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import DataError, connection

from contextstore.models import Event
from contextstore.selectors import rendering
from contextstore.services.events import event_append
from contextstore.services.transfer import thread_export
from tests.conftest import messages

migration = importlib.import_module("contextstore.migrations.0007_hostile_input")


def run_repair() -> None:
    """The migration's data step, as `migrate` runs it (a schema editor's connection and
    execute), inside the test's transaction."""
    with connection.cursor() as cursor:
        editor = SimpleNamespace(connection=connection, execute=cursor.execute)
        migration.clamp_unreadable_datetimes(apps, editor)


@pytest.mark.postgres
def test_a_row_stored_before_the_fix_is_repaired_and_the_thread_reads_again(thread, actor):
    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL could store such a row")
    event_append(thread=thread, events=messages(3, words=5), actor=actor)
    with connection.cursor() as cursor:  # what the old code let in
        cursor.execute("UPDATE contextstore_event SET occurred_at = %s::timestamptz "
                       "WHERE thread_id = %s AND seq IN (2, 3)",
                       ["9999-12-31T23:59:59-12:00", thread.pk])
        cursor.execute("UPDATE contextstore_event SET occurred_at = '0001-01-01 00:00:00+01' "
                       "WHERE thread_id = %s AND seq = 1", [thread.pk])
    with pytest.raises((ValueError, OverflowError, DataError)):
        list(Event.objects.filter(thread=thread))  # poisoned: no read of its events works

    run_repair()

    stamps = [e.occurred_at.isoformat() for e in Event.objects.filter(thread=thread).order_by("seq")]
    assert stamps == ["0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00",
                      "9999-12-31T23:59:59.999999+00:00"]
    assert rendering.context_render(thread=thread, max_tokens=8000)["messages"]
    assert len(thread_export(thread=thread)["events"]) == 3


def test_the_repair_leaves_readable_rows_alone(thread, actor):
    event_append(thread=thread, events=messages(2, words=5), actor=actor)
    before = list(Event.objects.filter(thread=thread).values_list("occurred_at", flat=True))
    run_repair()
    assert list(Event.objects.filter(thread=thread).values_list("occurred_at", flat=True)) == before
