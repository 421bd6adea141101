"""Event.is_error (an Error event or a failed tool result, toolcalls.event_failed) and
Thread.error_count. Rows written before are flagged by the same rule, and the threads' and
sessions' error counters recounted from the flags (sessions used to count Error rows only)."""

from django.db import migrations, models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from contextstore.toolcalls import event_failed

BATCH = 2000


def flag_errors(apps, schema_editor):
    Event = apps.get_model("contextstore", "Event")
    Thread = apps.get_model("contextstore", "Thread")
    Session = apps.get_model("contextstore", "Session")
    Event.objects.filter(type="Error").update(is_error=True)
    # Only tool results can fail otherwise; the rule reads their fields in Python.
    candidates = (Event.objects.filter(Q(type="ToolResult") | Q(role="tool"))
                  .only("pk", "type", "role", "content", "parts", "data").order_by("pk"))
    failed = [e.pk for e in candidates.iterator(chunk_size=BATCH)
              if event_failed(e.type, e.role, e.content, e.parts, e.data)]
    for start in range(0, len(failed), BATCH):
        Event.objects.filter(pk__in=failed[start:start + BATCH]).update(is_error=True)

    def errors(**outer):
        return Coalesce(Subquery(
            Event.objects.filter(is_error=True, **outer).order_by().values("is_error")
            .annotate(n=Count("pk")).values("n")), 0)

    Thread.objects.update(error_count=errors(thread=OuterRef("pk")))
    Session.objects.update(error_count=errors(thread__session=OuterRef("pk")))


def count_error_rows(apps, schema_editor):
    """Backwards: sessions count Error rows again (the columns go)."""
    Event = apps.get_model("contextstore", "Event")
    Session = apps.get_model("contextstore", "Session")
    Session.objects.update(error_count=Coalesce(Subquery(
        Event.objects.filter(type="Error", thread__session=OuterRef("pk")).order_by()
        .values("type").annotate(n=Count("pk")).values("n")), 0))


class Migration(migrations.Migration):

    dependencies = [
        ("contextstore", "0017_otel_spans"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="is_error",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="thread",
            name="error_count",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(condition=models.Q(("is_error", True)), fields=["thread", "seq"],
                               name="event_error"),
        ),
        migrations.RunPython(flag_errors, count_error_rows),
    ]
