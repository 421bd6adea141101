"""Ranges speak positions (both ends inclusive) and each clear-context is recorded.

- Collapse.start_seq/end_seq were already inclusive positions: renamed start_position/end_position.
- Thread.fork_start_seq/fork_end_seq were [start, end) of seqs: renamed fork_start_position /
  fork_end_position, the end made inclusive (end - 1).
- Clear: one row per clear-context; cleared events point to it. Existing cleared events are
  given one Clear per thread (which clear took which event was not recorded before, and the
  emptied summary was not kept), so an un-clear brings them all back.
- Thread.last_event_at is the newest event row's created_at (services/history.py); the
  previous append stamped it just before the insert, so it is recomputed from the rows.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F, OuterRef, Q, Subquery


def forwards(apps, schema_editor):
    Thread = apps.get_model("contextstore", "Thread")
    Event = apps.get_model("contextstore", "Event")
    Clear = apps.get_model("contextstore", "Clear")
    Thread.objects.filter(fork_end_position__isnull=False).update(
        fork_end_position=F("fork_end_position") - 1)
    thread_ids = (Event.objects.filter(status="cleared").values_list("thread_id", flat=True)
                  .distinct().order_by("thread_id"))
    for thread_id in thread_ids:
        cleared = Event.objects.filter(thread_id=thread_id, status="cleared")
        rows = list(cleared.values_list("visible", "token_count"))
        clear = Clear.objects.create(
            thread_id=thread_id, actor="migration 0004 (earlier clears)", summary="",
            event_count=len(rows), tokens=sum(t for visible, t in rows if visible),
        )
        cleared.update(cleared_by=clear)
    newest = Event.objects.filter(thread=OuterRef("pk")).order_by("-created_at").values("created_at")
    Thread.objects.update(last_event_at=Subquery(newest[:1]))


def backwards(apps, schema_editor):
    Thread = apps.get_model("contextstore", "Thread")
    Thread.objects.filter(fork_end_position__isnull=False).update(
        fork_end_position=F("fork_end_position") + 1)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0003_thread_document")]

    operations = [
        migrations.RemoveIndex(model_name="collapse", name="collapse_range"),
        migrations.RenameField(model_name="collapse", old_name="start_seq", new_name="start_position"),
        migrations.RenameField(model_name="collapse", old_name="end_seq", new_name="end_position"),
        migrations.AddIndex(
            model_name="collapse",
            index=models.Index(fields=["thread", "start_position"], name="collapse_range"),
        ),
        migrations.RenameField(model_name="thread", old_name="fork_start_seq",
                               new_name="fork_start_position"),
        migrations.RenameField(model_name="thread", old_name="fork_end_seq",
                               new_name="fork_end_position"),
        migrations.CreateModel(
            name="Clear",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("actor", models.CharField(blank=True, default="", max_length=200)),
                ("summary", models.TextField(blank=True, default="")),
                ("event_count", models.PositiveIntegerField(default=0)),
                ("tokens", models.PositiveBigIntegerField(default=0)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("undone_at", models.DateTimeField(blank=True, null=True)),
                ("thread", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                             related_name="clears", to="contextstore.thread")),
            ],
            options={"ordering": ["-created_at", "-id"]},
        ),
        migrations.AddField(
            model_name="event",
            name="cleared_by",
            field=models.ForeignKey(blank=True, db_index=False, null=True,
                                    on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="members", to="contextstore.clear"),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(condition=Q(cleared_by__isnull=False), fields=["cleared_by"],
                               name="event_cleared_by"),
        ),
        migrations.RunPython(forwards, backwards),
    ]
