"""0006_agent_sessions carries existing sessions over: they keep their rows and get the empty
app, and the app becomes part of a session's identity."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("contextstore", "0005_render_records")]
AFTER = [("contextstore", "0006_agent_sessions")]


@pytest.mark.django_db(transaction=True)
def test_existing_sessions_are_kept_with_an_empty_app():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    workspace = old.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = old.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k",
                                                                      user_id="u")
    old.get_model("contextstore", "Thread").objects.create(workspace=workspace, session=session,
                                                           document={"state": {"a": 1}})

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Session = new.get_model("contextstore", "Session")
    kept = Session.objects.get(pk=session.pk)
    assert (kept.key, kept.user_id, kept.app) == ("k", "u", "")
    assert new.get_model("contextstore", "Thread").objects.get(session=kept).document == {"state": {"a": 1}}
    Session.objects.create(workspace_id=workspace.pk, key="k", user_id="u", app="adk-app")
    assert Session.objects.filter(key="k").count() == 2

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
