"""0004 carries existing data over: fork ends become inclusive positions, collapse ranges keep
their values under the new names, and earlier cleared events get a Clear to un-clear them."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0003_thread_document")]
AFTER = [("contextstore", "0004_ranges_and_clears")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_forks_collapses_and_clears_over():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Workspace, Session, Thread = (old.get_model("contextstore", m)
                                  for m in ("Workspace", "Session", "Thread"))
    Event, Collapse = old.get_model("contextstore", "Event"), old.get_model("contextstore", "Collapse")
    ws = Workspace.objects.create(slug="m", name="m")
    session = Session.objects.create(workspace=ws, key="k")
    parent = Thread.objects.create(workspace=ws, session=session, name="main")
    fork = Thread.objects.create(workspace=ws, session=session, name="f", parent=parent,
                                 fork_start_seq=2, fork_end_seq=5)
    now = timezone.now()
    for seq, status in enumerate(["cleared", "cleared", "collapsed", "active"], 1):
        Event.objects.create(thread=parent, seq=seq, position=seq, type="Message", content=str(seq),
                             status=status, token_count=3, occurred_at=now)
    summary = Event.objects.create(thread=parent, seq=5, position=3, type="Summary", content="s",
                                   status="active", occurred_at=now)
    Collapse.objects.create(thread=parent, start_seq=3, end_seq=3, summary_event=summary)

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    NewThread, Clear = new.get_model("contextstore", "Thread"), new.get_model("contextstore", "Clear")
    NewEvent, NewCollapse = new.get_model("contextstore", "Event"), new.get_model("contextstore", "Collapse")
    moved = NewThread.objects.get(pk=fork.pk)
    assert (moved.fork_start_position, moved.fork_end_position) == (2, 4)
    assert NewCollapse.objects.values_list("start_position", "end_position").get() == (3, 3)
    clear = Clear.objects.get(thread_id=parent.pk)
    assert (clear.event_count, clear.tokens) == (2, 6)
    assert sorted(NewEvent.objects.filter(cleared_by=clear).values_list("seq", flat=True)) == [1, 2]

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
