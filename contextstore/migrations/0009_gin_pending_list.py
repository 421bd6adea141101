"""A short pending list for the trigram index of event content (PostgreSQL only).

GIN's fast update appends new entries to a pending list that every search reads in full, and
that the insert which overflows it merges into the index. At the default 4 MB a rare-word search
spent 12 ms of its 13 ms reading the list right after a bulk load (0.5 ms once merged); at 256 kB
it reads at most 1/16 of that, and the merges are smaller and more frequent. Searches never miss
a committed event either way: the pending list is part of the index.
"""

from django.db import migrations

PENDING_LIST_KB = 256


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER INDEX IF EXISTS event_content_trgm "
                              f"SET (gin_pending_list_limit = {PENDING_LIST_KB})")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER INDEX IF EXISTS event_content_trgm RESET (gin_pending_list_limit)")


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0008_sync")]
    operations = [migrations.RunPython(forwards, backwards)]
