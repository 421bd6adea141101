"""0005 carries existing data over: each block's current content becomes its first version."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("contextstore", "0004_ranges_and_clears")]
AFTER = [("contextstore", "0005_render_records")]


@pytest.mark.django_db(transaction=True)
def test_existing_blocks_get_their_current_version_kept():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    workspace = apps.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = apps.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k")
    thread = apps.get_model("contextstore", "Thread").objects.create(workspace=workspace, session=session)
    from django.utils import timezone
    apps.get_model("contextstore", "Event").objects.create(
        thread=thread, seq=1, position=1, type="ToolCall", content="", token_count=0,
        data={"name": "search", "arguments": {"q": "paris"}}, occurred_at=timezone.now())
    apps.get_model("contextstore", "ContextBlock").objects.create(
        thread=thread, name="goal", value="ship", placement="prefix", order=2, version=4, token_count=1)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    kept = apps.get_model("contextstore", "ContextBlockVersion").objects.get()
    assert (kept.thread_id, kept.name, kept.version, kept.value, kept.placement, kept.order,
            kept.deleted) == (thread.pk, "goal", 4, "ship", "prefix", 2, False)
    from contextstore.tokens import count_tokens
    tokens = count_tokens('search({"q":"paris"})')
    assert apps.get_model("contextstore", "Event").objects.get().token_count == tokens
    migrated = apps.get_model("contextstore", "Thread").objects.get()
    assert (migrated.token_total, migrated.active_tokens) == (tokens, tokens)
    assert apps.get_model("contextstore", "Session").objects.get().token_total == tokens
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
