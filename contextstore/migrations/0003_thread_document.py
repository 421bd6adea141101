"""The agent's document: one revisioned JSON object per thread (Thread.document).

Forward, for every thread:
- its twelve agent-facing columns (state, memory, summary, last_results, conversation_history,
  current_input, original_input, iteration, max_history_size, system_prompt,
  tool_definitions, extra) become its document, in that key order, at its current revision;
- each existing StateRevision becomes a snapshot revision (whole document, no patch). Those
  rows only held state and memory: the other fields of each old snapshot are filled from the
  thread's CURRENT values, so restoring a revision made before this migration brings back its
  state and memory as they were and the other fields as they are now;
- when the thread's current revision has no row (revision 0 has none), one is written from
  the current values, so the current document can always be restored.
Then the old columns are dropped.

Backward puts the columns back from each thread's current document and each revision's
state and memory from its rebuilt document.
"""

import json

from django.db import migrations, models

import contextstore.documents
import contextstore.fields
from contextstore.documents import DOCUMENT_FIELDS, apply_ops, dumps


def forwards(apps, schema_editor):
    Thread = apps.get_model("contextstore", "Thread")
    StateRevision = apps.get_model("contextstore", "StateRevision")
    for thread in Thread.objects.order_by("pk").iterator(chunk_size=200):
        current = {name: getattr(thread, name) for name in DOCUMENT_FIELDS}
        Thread.objects.filter(pk=thread.pk).update(document=current)
        rows = list(StateRevision.objects.filter(thread_id=thread.pk).order_by("revision"))
        for row in rows:
            if row.revision == thread.revision:
                document = current  # the thread's own columns are the truth at its revision
            else:
                document = {**current, "state": row.state, "memory": row.memory}
            text = dumps(document)
            row.document, row.patch, row.base = text, None, row.revision
            row.chain_bytes, row.size = 0, len(text.encode())
            row.save(update_fields=["document", "patch", "base", "chain_bytes", "size"])
        if thread.revision and thread.revision not in {r.revision for r in rows}:
            text = dumps(current)
            StateRevision.objects.create(
                thread_id=thread.pk, revision=thread.revision, document=text, base=thread.revision,
                size=len(text.encode()), reason="carried over by migration 0003",
            )
    _settle(schema_editor)


def _settle(schema_editor):
    # PostgreSQL refuses to ALTER a table with deferred foreign-key checks still pending from
    # the rows written above; run them now, before the columns are dropped or added.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def backwards(apps, schema_editor):
    Thread = apps.get_model("contextstore", "Thread")
    StateRevision = apps.get_model("contextstore", "StateRevision")
    for thread in Thread.objects.order_by("pk").iterator(chunk_size=200):
        document = thread.document
        Thread.objects.filter(pk=thread.pk).update(**{name: document[name] for name in DOCUMENT_FIELDS})
        rebuilt = None
        for row in StateRevision.objects.filter(thread_id=thread.pk).order_by("revision"):
            if rebuilt is None or row.patch is None:
                rebuilt = json.loads(row.document)
            else:
                rebuilt = apply_ops(rebuilt, json.loads(row.patch))
            row.state, row.memory = rebuilt["state"], rebuilt["memory"]
            row.save(update_fields=["state", "memory"])
    _settle(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0002_event_text_search")]

    operations = [
        migrations.AddField(
            model_name="thread", name="document",
            field=contextstore.fields.OrderedJSONField(default=contextstore.documents.new_document),
        ),
        migrations.AddField(
            model_name="staterevision", name="document",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="staterevision", name="patch",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="staterevision", name="base",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="staterevision", name="chain_bytes",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="staterevision", name="size",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.RunPython(forwards, backwards),
        *[migrations.RemoveField(model_name="thread", name=name) for name in DOCUMENT_FIELDS],
        migrations.RemoveField(model_name="staterevision", name="state"),
        migrations.RemoveField(model_name="staterevision", name="memory"),
    ]
