"""0002_commits_one_replay_store: a sync upload staged when it runs is finished by its last part
(its parts move into the one replay store, with their age); applied uploads' answers are not
moved (no request hash to check a replay against)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0001_initial")]
AFTER = [("contextstore", "0002_commits_one_replay_store")]


@pytest.mark.django_db(transaction=True)
def test_staged_uploads_move_into_the_replay_store():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    workspace = old.get_model("contextstore", "Workspace").objects.create(slug="w", name="W")
    session = old.get_model("contextstore", "Session").objects.create(workspace=workspace, key="k")
    thread = old.get_model("contextstore", "Thread").objects.create(workspace=workspace, session=session)
    SyncUpload = old.get_model("contextstore", "SyncUpload")
    parts = {"0": {"items": [{"key": "a", "event": {"type": "Message", "content": "x"}}], "removed": []}}
    SyncUpload.objects.create(thread=thread, upload_id="staged", parts=parts)
    SyncUpload.objects.create(thread=thread, upload_id="applied", parts={}, result={"status": "applied"})
    made = timezone.now() - timedelta(hours=3)
    SyncUpload.objects.filter(upload_id="staged").update(created_at=made)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    records = list(new.get_model("contextstore", "CommitRecord").objects.values(
        "thread_id", "batch_id", "request_hash", "response", "parts", "created_at"))
    assert records == [{"thread_id": thread.pk, "batch_id": "staged", "request_hash": "",
                        "response": None, "parts": parts, "created_at": made}]

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
