"""Stored texts belong to a workspace: the table is keyed by (workspace, sha256) instead of the
hash alone, so a hash resolves only within the workspace that stored its text.

Before, one row served every workspace that named its hash, and an LLM-call event could name
any hash (a client-sent `data.message_hashes`): a workspace could read another's text by its
hash, and keep it alive through the other's erasure. Each existing text is copied to every
workspace whose render records, LLM-call events or replays name it (the rows that name texts,
as services/erasure.py finds them), then the old table goes and the new one takes its name."""

from collections import defaultdict
from collections.abc import Iterator
from itertools import batched
from typing import Any

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q

from contextstore.fields import AgentTextField

LLM_CALL_TYPES = ("LLMCallStart", "LLMComplete", "LLMCallEnd")
CHUNK = 500


def _hashes_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from _hashes_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _hashes_in(item)


def copy_texts(apps: Any, schema_editor: Any) -> None:
    Old = apps.get_model("contextstore", "StoredText")
    New = apps.get_model("contextstore", "WorkspaceText")
    if not Old.objects.exists():
        return
    named: dict[int, set[str]] = defaultdict(set)
    for ws, spec in apps.get_model("contextstore", "RenderRecord").objects.values_list(
            "workspace_id", "spec").iterator(chunk_size=1000):
        if isinstance(spec, dict):
            named[ws].update(_hashes_in([spec.get("prefix"), spec.get("suffix"), spec.get("summary")]))
    for ws, data in (apps.get_model("contextstore", "Event").objects
                     .filter(Q(data__contains='"message_hashes"') | Q(data__contains='"tools_hash"'),
                             type__in=LLM_CALL_TYPES)
                     .values_list("thread__workspace_id", "data").iterator(chunk_size=1000)):
        if isinstance(data, dict):
            named[ws].update(_hashes_in([data.get("message_hashes"), data.get("tools_hash")]))
    for ws, digest in apps.get_model("contextstore", "CallReplay").objects.values_list(
            "workspace_id", "request_hash").iterator(chunk_size=1000):
        named[ws].add(digest)
    for ws, hashes in named.items():
        for chunk in batched(sorted(hashes), CHUNK):
            New.objects.bulk_create(
                [New(workspace_id=ws, sha256=h, text=t, created_at=at) for h, t, at in
                 Old.objects.filter(sha256__in=chunk).values_list("sha256", "text", "created_at")],
                ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ("contextstore", "0036_redact_fields"),
    ]

    operations = [
        migrations.CreateModel(
            name="WorkspaceText",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("sha256", models.CharField(max_length=64)),
                ("text", AgentTextField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("workspace", models.ForeignKey(
                    db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                    to="contextstore.workspace")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("workspace", "sha256"),
                                                        name="stored_text_key")],
            },
        ),
        migrations.RunPython(copy_texts, migrations.RunPython.noop),
        migrations.DeleteModel(name="StoredText"),
        migrations.RenameModel(old_name="WorkspaceText", new_name="StoredText"),
    ]
