"""0016 escapes the storage escape's own symbols in rows written before it, so they read back
exactly as before; backwards it unescapes them, and stops at a row holding a NUL."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0015_event_replaced_by_partial")]
AFTER = [("contextstore", "0016_agent_text")]
OLD_TEXT = "a shell's ␀ and ␛ and ␛␀, as written before"


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def raw(table: str, column: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} ORDER BY 1")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_old_rows_read_back_as_before_and_go_back_unchanged():
    apps = migrate(BEFORE)
    workspace = apps.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = apps.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k")
    thread = apps.get_model("contextstore", "Thread").objects.create(workspace=workspace, session=session)
    apps.get_model("contextstore", "Event").objects.create(
        thread=thread, seq=1, position=1, type="Message", content=OLD_TEXT, occurred_at=timezone.now())
    apps.get_model("contextstore", "ContextBlock").objects.create(thread=thread, name="b", value=OLD_TEXT)
    apps.get_model("contextstore", "Memory").objects.create(workspace=workspace, content="plain")
    apps.get_model("contextstore", "StoredText").objects.create(sha256="0" * 64, text=OLD_TEXT)

    apps = migrate(AFTER)  # the models as they stood then: later migrations add columns
    Event, ContextBlock, Memory, StoredText = (
        apps.get_model("contextstore", name) for name in ("Event", "ContextBlock", "Memory", "StoredText"))

    assert Event.objects.get().content == OLD_TEXT
    assert ContextBlock.objects.get().value == OLD_TEXT
    assert StoredText.objects.get().text == OLD_TEXT
    assert Memory.objects.get().content == "plain"
    assert raw("contextstore_event", "content") == ["a shell's ␛␀ and ␛␛ and ␛␛␛␀, as written before"]

    migrate(BEFORE)
    assert raw("contextstore_event", "content") == raw("contextstore_storedtext", "text") == [OLD_TEXT]
    migrate(AFTER)
    Event.objects.update(content="now with a NUL\x00")
    with pytest.raises(RuntimeError, match="contextstore_event.content of id .* holds a NUL"):
        migrate(BEFORE)
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
