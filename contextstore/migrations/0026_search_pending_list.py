"""The search index's pending list grows to 2 MB before it is merged into the index (0025 set
256 kB). The worker's WAL per indexed event (`manage.py bench_wal`) was 18 kB: each merge of a
short list rewrites posting pages for the few events it holds. At 2 MB it is 7.7 kB (4 MB, the
server's default: 6.5–7.7 kB; 1 MB: 13.7 kB). A search reads the pending list in full: at 2 MB
(about 250 events of 400 characters) that adds at most ~5 ms (docs/architecture.md)."""

from django.db import migrations


def alter(limit_kb: int):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER INDEX eventsearch_trgm SET (gin_pending_list_limit = {limit_kb})")
    return run


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0025_search_index")]
    operations = [migrations.RunPython(alter(2048), alter(256))]
