"""Text search moves off the insert path (PostgreSQL; SQLite only gets the two empty tables).

The three trigram indexes on contextstore_event (content, data, parts) made COPY into the event
table 1-3 % as fast as into a table with only its (thread, seq) key: every row's text entered a
GIN index as a few hundred trigrams. They go. Each event's searchable text (content, parts and
data, upper-cased, `contextstore_search_text`) lives in contextstore_eventsearch under one
trigram index instead, filled by services/search.py from contextstore_eventsearchpending, which
a statement trigger on the event table fills in the inserting transaction: one row (the lowest
and highest id) per INSERT or COPY, whatever the door. A change of an event's text deletes its
indexed text and queues it again. Searches read the queued events directly, so none is missed
while the worker catches up (docs/architecture.md, "Text search").

Existing events are indexed here, in batches of BACKFILL_BATCH ids, before the index is built
(one bulk build is faster than growing it row by row), when there are at most INLINE_MAX of
them: the migration holds the event table's lock throughout, so appends wait (about 4,000
events a second on two vCPUs). More than that are queued instead, in ranges of BACKFILL_BATCH
ids, for the worker: the migration is quick, and searches read the queued events directly
(slower, never incomplete) until the worker is through.
"""

from django.db import migrations, models

BACKFILL_BATCH = 10_000
INLINE_MAX = 200_000

CREATE = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # What a search matches, as Django's icontains reads each column (UPPER(col) LIKE UPPER(%s)):
    # one text, so one index; a match across two columns' border is weeded out by the search's
    # check against the event itself.
    "CREATE FUNCTION contextstore_search_text(content text, parts text, data text) RETURNS text "
    "LANGUAGE sql STABLE PARALLEL SAFE "
    "AS $$ SELECT upper(content || E'\\n' || coalesce(parts, '') || E'\\n' || coalesce(data, '')) $$",
    "ALTER TABLE contextstore_eventsearch ADD CONSTRAINT eventsearch_event_fk FOREIGN KEY (event_id) "
    "REFERENCES contextstore_event (id) ON DELETE CASCADE",
    "CREATE FUNCTION contextstore_event_search_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "INSERT INTO contextstore_eventsearchpending (low, high) "
    "SELECT low, high FROM (SELECT min(id) AS low, max(id) AS high FROM new_events) AS r "
    "WHERE low IS NOT NULL; "
    "RETURN NULL; "
    "END $$",
    "CREATE TRIGGER event_search_insert AFTER INSERT ON contextstore_event "
    "REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT "
    "EXECUTE FUNCTION contextstore_event_search_enqueue()",
    # A changed text (redaction, an edit): the old one leaves the index with the change.
    "CREATE FUNCTION contextstore_event_search_requeue() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "DELETE FROM contextstore_eventsearch WHERE event_id = NEW.id; "
    "INSERT INTO contextstore_eventsearchpending (low, high) VALUES (NEW.id, NEW.id); "
    "RETURN NULL; "
    "END $$",
    "CREATE TRIGGER event_search_update AFTER UPDATE OF content, parts, data ON contextstore_event "
    "FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.parts IS DISTINCT FROM "
    "NEW.parts OR OLD.data IS DISTINCT FROM NEW.data) "
    "EXECUTE FUNCTION contextstore_event_search_requeue()",
    "DROP INDEX IF EXISTS event_content_trgm",
    "DROP INDEX IF EXISTS event_data_trgm",
    "DROP INDEX IF EXISTS event_parts_trgm",
)
BACKFILL = (
    "INSERT INTO contextstore_eventsearch (event_id, thread_id, text) "
    "SELECT id, thread_id, contextstore_search_text(content, parts, data) FROM contextstore_event "
    "WHERE id BETWEEN %s AND %s"
)
QUEUE = "INSERT INTO contextstore_eventsearchpending (low, high) VALUES (%s, %s)"
# A short pending list, as the old content index had (0009): every search reads it in full.
INDEX = ("CREATE INDEX eventsearch_trgm ON contextstore_eventsearch "
         "USING gin (text gin_trgm_ops) WITH (gin_pending_list_limit = 256)")

DROP = (
    "DROP TRIGGER IF EXISTS event_search_update ON contextstore_event",
    "DROP TRIGGER IF EXISTS event_search_insert ON contextstore_event",
    "DROP FUNCTION IF EXISTS contextstore_event_search_requeue()",
    "DROP FUNCTION IF EXISTS contextstore_event_search_enqueue()",
    "DROP FUNCTION IF EXISTS contextstore_search_text(text, text, text)",
    "DROP INDEX IF EXISTS eventsearch_trgm",
    "ALTER TABLE contextstore_eventsearch DROP CONSTRAINT IF EXISTS eventsearch_event_fk",
    # the indexes as 0002, 0009 and 0013 left them
    "CREATE INDEX IF NOT EXISTS event_content_trgm ON contextstore_event "
    "USING gin (UPPER(content) gin_trgm_ops) WITH (gin_pending_list_limit = 256)",
    "CREATE INDEX IF NOT EXISTS event_data_trgm ON contextstore_event "
    "USING gin (UPPER(data) gin_trgm_ops) WHERE data IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS event_parts_trgm ON contextstore_event "
    "USING gin (UPPER(parts) gin_trgm_ops) WHERE parts IS NOT NULL",
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for sql in CREATE:
        schema_editor.execute(sql)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id), count(*) FROM contextstore_event")
        low, high, count = cursor.fetchone()
        sql = BACKFILL if count <= INLINE_MAX else QUEUE
        if low is not None:
            for start in range(low, high + 1, BACKFILL_BATCH):
                cursor.execute(sql, [start, min(start + BACKFILL_BATCH - 1, high)])
    schema_editor.execute(INDEX)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in DROP:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("contextstore", "0024_read_audit")]

    operations = [
        migrations.CreateModel(
            name="EventSearch",
            fields=[
                ("event", models.OneToOneField(
                    db_constraint=False, on_delete=models.deletion.DO_NOTHING, primary_key=True,
                    related_name="+", serialize=False, to="contextstore.event")),
                ("thread_id", models.BigIntegerField()),
                ("text", models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name="EventSearchPending",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("low", models.BigIntegerField()),
                ("high", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(forwards, backwards),
    ]
