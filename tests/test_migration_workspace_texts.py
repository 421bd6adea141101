"""0036 gives stored texts a workspace: each text is copied to every workspace whose render
records, LLM-call events or replays name it, and a text nothing names is not kept."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("contextstore", "0036_redact_fields")]
AFTER = [("contextstore", "0037_trust_workspace_texts")]


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_each_text_goes_to_the_workspaces_that_name_it():
    apps = migrate(BEFORE)
    model = lambda name: apps.get_model("contextstore", name)  # noqa: E731
    texts = {"shared": "a" * 64, "tools": "b" * 64, "block": "c" * 64, "asked": "d" * 64,
             "nobody": "e" * 64}
    for name, digest in texts.items():
        model("StoredText").objects.create(sha256=digest, text=f"text {name}")
    threads = {}
    for slug in ("one", "two"):
        workspace = model("Workspace").objects.create(slug=slug, name=slug)
        session = model("Session").objects.create(workspace=workspace, key="k")
        threads[slug] = model("Thread").objects.create(workspace=workspace, session=session)
    model("Event").objects.create(
        thread=threads["one"], seq=1, position=1, type="LLMCallStart", occurred_at=timezone.now(),
        data={"message_hashes": [texts["shared"]], "tools_hash": texts["tools"]})
    model("RenderRecord").objects.create(
        workspace=threads["two"].workspace, thread=threads["two"], max_tokens=10, prefix_hash="p",
        spec={"prefix": [[1, texts["block"]]], "suffix": [], "summary": texts["shared"], "events": []})
    model("CallReplay").objects.create(
        workspace=threads["two"].workspace, thread=threads["two"], call_seq=1, model="m",
        request_hash=texts["asked"], status="ok")

    apps = migrate(AFTER)
    kept = {(slug, text) for slug, text in apps.get_model("contextstore", "StoredText").objects
            .values_list("workspace__slug", "text")}
    assert kept == {("one", "text shared"), ("one", "text tools"), ("two", "text block"),
                    ("two", "text shared"), ("two", "text asked")}
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
