"""Trigram indexes for the dashboard search over event data and parts (PostgreSQL only).

The timeline's search matches content OR data OR parts with icontains, which PostgreSQL
compiles to UPPER(col) LIKE UPPER(%s); one index per column lets it combine three bitmap
index scans instead of reading every event. No data changes.
"""

from django.db import migrations

CREATE = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS event_data_trgm ON contextstore_event USING gin (UPPER(data) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS event_parts_trgm ON contextstore_event USING gin (UPPER(parts) gin_trgm_ops)",
)
DROP = ("DROP INDEX IF EXISTS event_data_trgm", "DROP INDEX IF EXISTS event_parts_trgm")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in CREATE:
            schema_editor.execute(sql)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in DROP:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0009_gin_pending_list")]
    operations = [migrations.RunPython(forwards, backwards)]
