"""Open event types (up to 64 characters) and no thread left unreadable by an old row.

Before input was checked against what both databases store, PostgreSQL accepted an
`occurred_at` such as 9999-12-31T23:59:59-12:00 and stored it as year 10000 (UTC), which Python
cannot read back: every read of that thread failed. Such values are clamped to the nearest
readable instant (years 1-9999 UTC). SQLite never stored them (Python refused them first).
"""

from django.db import migrations, models

# (table, column) of every date-time a client could choose.
CLIENT_DATETIMES = (("contextstore_event", "occurred_at"), ("contextstore_collapse", "undone_at"))
LATEST = "9999-12-31 23:59:59.999999+00"
EARLIEST = "0001-01-01 00:00:00+00"


def clamp_unreadable_datetimes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column in CLIENT_DATETIMES:
        schema_editor.execute(
            f"UPDATE {table} SET {column} = %s WHERE {column} > %s", [LATEST, LATEST])
        schema_editor.execute(
            f"UPDATE {table} SET {column} = %s WHERE {column} < %s", [EARLIEST, EARLIEST])


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0006_agent_sessions")]

    operations = [
        migrations.AlterField(model_name="event", name="type", field=models.CharField(max_length=64)),
        migrations.RunPython(clamp_unreadable_datetimes, migrations.RunPython.noop),
    ]
