"""PostgreSQL: blob keys compare byte for byte (collation "C"), so the (thread, key) index
serves a key prefix as a range: a LangGraph read of a checkpoint's pending writes
(w/<checkpoint>/) scanned every blob of the thread (8 ms at 34,000 blobs). SQLite compares
text byte for byte already (BINARY)."""

from django.db import migrations


def collate(collation: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f'ALTER TABLE contextstore_threadblob ALTER COLUMN "key" '
                                  f'TYPE varchar(500) COLLATE "{collation}"')
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('contextstore', '0031_run_recent_index'),
    ]

    operations = [
        migrations.RunPython(collate("C"), collate("default")),
    ]
