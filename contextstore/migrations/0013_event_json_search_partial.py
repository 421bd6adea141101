"""The trigram indexes of event data and parts cover only rows that have them (PostgreSQL only).

Most events carry neither (a message has content only), yet every row entered both indexes as
a NULL item through GIN's pending list: after a 100k-event bulk load the two held 2.9 MB each,
nothing a search can use (NULL never matches LIKE), and every insert paid for them. The
timeline's search (UPPER(col) LIKE …) implies col IS NOT NULL, so the planner still picks them,
one per arm of its BitmapOr. No data changes.
"""

from django.db import migrations

COLUMNS = ("data", "parts")


def _build(schema_editor, partial: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in COLUMNS:
        where = f" WHERE {column} IS NOT NULL" if partial else ""
        schema_editor.execute(f"DROP INDEX IF EXISTS event_{column}_trgm")
        schema_editor.execute(f"CREATE INDEX event_{column}_trgm ON contextstore_event "
                              f"USING gin (UPPER({column}) gin_trgm_ops){where}")


def forwards(apps, schema_editor):
    _build(schema_editor, partial=True)


def backwards(apps, schema_editor):
    _build(schema_editor, partial=False)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0012_job_progress")]
    operations = [migrations.RunPython(forwards, backwards)]
