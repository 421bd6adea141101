"""Trigram index for text search of event content (PostgreSQL only).

Django's icontains compiles to UPPER(content) LIKE UPPER(%s) on PostgreSQL, so the index is on
that expression. SQLite (the embedded default) searches without it.
"""

from django.db import migrations

CREATE = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS event_content_trgm ON contextstore_event "
    "USING gin (UPPER(content) gin_trgm_ops)",
)
DROP = ("DROP INDEX IF EXISTS event_content_trgm",)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in CREATE:
            schema_editor.execute(sql)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in DROP:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
