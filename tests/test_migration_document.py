"""Migration 0003 carries a database made by the previous version over to the document."""

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from contextstore.documents import DOCUMENT_FIELDS, dumps
from contextstore.models import Thread as LiveThread
from contextstore.selectors.document import revision_diff
from contextstore.services.common import Actor
from contextstore.services.state import state_restore, state_write

BEFORE = [("contextstore", "0002_event_text_search")]
AFTER = [("contextstore", "0003_thread_document")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_each_threads_columns_its_document_and_keeps_its_revisions():
    old = migrate(BEFORE)
    Workspace, Session, Thread, StateRevision = (
        old.get_model("contextstore", name) for name in ("Workspace", "Session", "Thread", "StateRevision"))
    workspace = Workspace.objects.create(slug="w", name="w")
    session = Session.objects.create(workspace=workspace, key="s")
    columns = {
        "state": {"zeta": 1, "alpha": {"b": None, "a": [1, None]}}, "memory": [{"m": "é"}],
        "last_results": {"step2": 2, "step1": 1}, "conversation_history": [{"input": "q"}],
        "current_input": {"q": None}, "original_input": "q", "iteration": 3,
        "max_history_size": 4, "summary": "S", "system_prompt": "Be brief.",
        "tool_definitions": [{"name": "search"}], "extra": {"peteos": {"context": {"id": "c"}}},
    }
    busy = Thread.objects.create(workspace=workspace, session=session, name="busy", revision=2,
                                 **columns)
    StateRevision.objects.create(thread=busy, revision=1, state={"old": True}, memory=[],
                                 reason="first")
    StateRevision.objects.create(thread=busy, revision=2, state=columns["state"],
                                 memory=columns["memory"], reason="second")
    fresh = Thread.objects.create(workspace=workspace, session=session, name="fresh")
    unrecorded = Thread.objects.create(workspace=workspace, session=session, name="unrecorded",
                                       revision=5, summary="kept")

    new = migrate(AFTER)
    Thread, StateRevision = (new.get_model("contextstore", name) for name in ("Thread", "StateRevision"))
    busy_doc = Thread.objects.get(pk=busy.pk).document
    assert list(busy_doc) == list(DOCUMENT_FIELDS)
    assert dumps(busy_doc) == dumps({name: columns[name] for name in DOCUMENT_FIELDS})
    rows = {r.revision: r for r in StateRevision.objects.filter(thread_id=busy.pk)}
    assert sorted(rows) == [1, 2] and all(r.base == r.revision and r.patch is None for r in rows.values())
    assert rows[2].document == dumps(busy_doc)
    first = json.loads(rows[1].document)
    # the old row held state and memory; the rest is the thread's current values
    assert (first["state"], first["memory"], first["summary"]) == ({"old": True}, [], "S")
    assert Thread.objects.get(pk=fresh.pk).document["state"] == {}
    assert not StateRevision.objects.filter(thread_id=fresh.pk).exists()
    assert Thread.objects.get(pk=unrecorded.pk).document["summary"] == "kept"
    assert StateRevision.objects.get(thread_id=unrecorded.pk, revision=5).base == 5

    # and the services work on what the migration made: restore r1, then the current one again
    migrate_to_latest()
    thread = LiveThread.objects.get(pk=busy.pk)
    # a carried-over snapshot has no stored patch: its diff is computed from the two documents
    assert {op["path"].split("/")[1] for op in revision_diff(thread=thread, revision=2)} == {
        "state", "memory"}
    state_write(thread=thread, state={"after": 1}, merge=True, actor=Actor.system())
    state_restore(thread=thread, revision=1, actor=Actor.system())
    thread.refresh_from_db()
    assert thread.state == {"old": True} and thread.summary == "S" and thread.revision == 4
    state_restore(thread=thread, revision=2, actor=Actor.system())
    thread.refresh_from_db()
    assert dumps(thread.document) == dumps(busy_doc)


def migrate_to_latest():
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture(autouse=True)
def back_to_latest():
    yield
    migrate_to_latest()
