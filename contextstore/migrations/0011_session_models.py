"""The models a session's LLM calls used, one row per (session, model), for the session
list's model filter; backfilled from the LLMCallStart/LLMComplete events already stored
(read through the (thread, type, seq) index, a chunk at a time)."""

import django.db.models.deletion
from django.db import migrations, models

CALL_TYPES = ("LLMCallStart", "LLMComplete")
BATCH = 2000


def model_name(data):
    """As services/history.model_of: a non-empty string `model`, cut to the column's size."""
    value = data.get("model") if isinstance(data, dict) else None
    return value[:200] if isinstance(value, str) and value.strip() else None


def backfill(apps, schema_editor):
    Event = apps.get_model("contextstore", "Event")
    SessionModel = apps.get_model("contextstore", "SessionModel")
    seen = set()
    rows = (Event.objects.filter(type__in=CALL_TYPES)
            .values_list("thread__session_id", "data").iterator(chunk_size=BATCH))
    for session_id, data in rows:
        name = model_name(data)
        if name is not None:
            seen.add((session_id, name))
    pairs = sorted(seen)
    for i in range(0, len(pairs), BATCH):
        SessionModel.objects.bulk_create(
            [SessionModel(session_id=s, model=m) for s, m in pairs[i:i + BATCH]],
            ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0010_event_data_search'),
    ]

    operations = [
        migrations.CreateModel(
            name='SessionModel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(max_length=200)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='models_used', to='contextstore.session')),
            ],
            options={
                'indexes': [models.Index(fields=['model', 'session'], name='session_model_by_name')],
                'constraints': [models.UniqueConstraint(fields=('session', 'model'), name='session_model_unique')],
            },
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
