"""0018 flags the rows written before it by toolcalls.event_failed and recounts the threads' and
sessions' error counters from the flags (sessions counted Error rows only); backwards, sessions
count Error rows again."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0017_otel_spans")]
AFTER = [("contextstore", "0018_event_is_error")]


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_old_failed_tool_results_become_errors_and_the_counters_follow():
    apps = migrate(BEFORE)
    workspace = apps.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = apps.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k",
                                                                        error_count=1)
    Thread = apps.get_model("contextstore", "Thread")
    threads = [Thread.objects.create(workspace=workspace, session=session, name=n) for n in ("a", "b")]
    rows = [  # (thread, type, role, content, data)
        (0, "Message", "user", "Error: the user quoted it", None),
        (0, "Error", "system", "boom", None),
        (0, "ToolResult", "tool", "Traceback (most recent call last):\n  x", None),
        (0, "ToolResult", "tool", "fine", {"is_error": False}),
        (1, "ToolResult", "", "denied", {"isError": True}),
        (1, "ToolResult", "tool", "ok", None),
    ]
    Event = apps.get_model("contextstore", "Event")
    for seq, (t, kind, role, content, data) in enumerate(rows, start=1):
        Event.objects.create(thread=threads[t], seq=seq, position=seq, type=kind, role=role,
                             content=content, data=data, occurred_at=timezone.now())

    apps = migrate(AFTER)
    Event = apps.get_model("contextstore", "Event")
    flagged = Event.objects.filter(is_error=True).order_by("seq")
    assert list(flagged.values_list("seq", flat=True)) == [2, 3, 5]
    counts = dict(apps.get_model("contextstore", "Thread").objects.values_list("name", "error_count"))
    assert counts == {"a": 2, "b": 1}
    assert apps.get_model("contextstore", "Session").objects.get().error_count == 3

    apps = migrate(BEFORE)
    assert apps.get_model("contextstore", "Session").objects.get().error_count == 1
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
