"""The whole schema in one migration, squashed from 0001_initial … 0039_serve_worker_heartbeat.

`replaces` names 0002 … 0039 (0001 is this file's own name): a database migrated to 0039 by an
earlier version counts this migration as applied and changes nothing; a fresh database runs it
alone. A database between 0001 and 0038 upgrades through the version that still has those files
first (docs/operations.md, "Upgrades").

The models' tables come from Django's operations below. PostgreSQL gets, at the end, what the old
migrations built by hand and a fresh database needs (SQLite needs none of it):
- the event text search (old 0025 and 0026): the `contextstore_search_text` function, the
  statement trigger that queues every inserted event's ids in contextstore_eventsearchpending,
  the row trigger that queues an event again when its text changes, the foreign key
  contextstore_eventsearch → contextstore_event with ON DELETE CASCADE (the model declares none:
  services/search.py and contextstore/partitions.py know it by name), and the trigram index of
  the searchable text with a 2 MB pending list (docs/architecture.md, "Text search");
- blob keys compared byte for byte (collation "C", old 0032), so the (thread, key) index serves a
  key prefix as a range.
The old migrations' data steps (backfills, re-counts, escapes) had nothing to do on a fresh
database and are gone; the trigram indexes on the event table that 0002, 0009, 0010 and 0013
built were dropped by 0025, and so are not built here.
"""

import contextstore.documents
import contextstore.fields
import contextstore.models.workspaces
import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models


SEARCH_PENDING_LIST_KB = 2048

POSTGRESQL = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # What a search matches, as Django's icontains reads each column (UPPER(col) LIKE UPPER(%s)).
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
    # Every search reads the pending list in full; 2 MB keeps the worker's WAL per indexed event
    # low (7.7 kB; 18 kB at 256 kB) and adds at most ~5 ms to a search.
    "CREATE INDEX eventsearch_trgm ON contextstore_eventsearch USING gin (text gin_trgm_ops) "
    f"WITH (gin_pending_list_limit = {SEARCH_PENDING_LIST_KB})",
    'ALTER TABLE contextstore_threadblob ALTER COLUMN "key" TYPE varchar(500) COLLATE "C"',
)
POSTGRESQL_BACK = (
    "DROP TRIGGER IF EXISTS event_search_update ON contextstore_event",
    "DROP TRIGGER IF EXISTS event_search_insert ON contextstore_event",
    "DROP FUNCTION IF EXISTS contextstore_event_search_requeue()",
    "DROP FUNCTION IF EXISTS contextstore_event_search_enqueue()",
    "DROP FUNCTION IF EXISTS contextstore_search_text(text, text, text)",
)


def postgresql_forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL:
            schema_editor.execute(sql)


def postgresql_backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for sql in POSTGRESQL_BACK:
            schema_editor.execute(sql)


class Migration(migrations.Migration):

    initial = True

    replaces = [
        ("contextstore", "0002_event_text_search"),
        ("contextstore", "0003_thread_document"),
        ("contextstore", "0004_ranges_and_clears"),
        ("contextstore", "0005_render_records"),
        ("contextstore", "0006_agent_sessions"),
        ("contextstore", "0007_hostile_input"),
        ("contextstore", "0008_sync"),
        ("contextstore", "0009_gin_pending_list"),
        ("contextstore", "0010_event_data_search"),
        ("contextstore", "0011_session_models"),
        ("contextstore", "0012_job_progress"),
        ("contextstore", "0013_event_json_search_partial"),
        ("contextstore", "0014_event_run_collapse_partial"),
        ("contextstore", "0015_event_replaced_by_partial"),
        ("contextstore", "0016_agent_text"),
        ("contextstore", "0017_otel_spans"),
        ("contextstore", "0018_event_is_error"),
        ("contextstore", "0019_otel_pending"),
        ("contextstore", "0020_retention"),
        ("contextstore", "0021_redaction"),
        ("contextstore", "0022_admin_scope"),
        ("contextstore", "0023_thread_context_generation"),
        ("contextstore", "0024_read_audit"),
        ("contextstore", "0025_search_index"),
        ("contextstore", "0026_search_pending_list"),
        ("contextstore", "0027_comments_scores"),
        ("contextstore", "0028_call_replays"),
        ("contextstore", "0029_sharing_datasets"),
        ("contextstore", "0030_job_operation_kinds"),
        ("contextstore", "0031_run_recent_index"),
        ("contextstore", "0032_threadblob_key_bytewise"),
        ("contextstore", "0033_fk_indexes_covered"),
        ("contextstore", "0034_fk_indexes_covered_more"),
        ("contextstore", "0035_audit_actor_partial_indexes"),
        ("contextstore", "0036_redact_fields"),
        ("contextstore", "0037_trust_workspace_texts"),
        ("contextstore", "0038_otlp_replay_jobs"),
        ("contextstore", "0039_serve_worker_heartbeat"),
    ]

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='EventSearchPending',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('low', models.BigIntegerField()),
                ('high', models.BigIntegerField()),
            ],
        ),
        migrations.CreateModel(
            name='WorkerHeartbeat',
            fields=[
                ('hostname', models.CharField(max_length=255, primary_key=True, serialize=False)),
                ('pid', models.IntegerField()),
                ('seen_at', models.DateTimeField(db_index=True)),
            ],
        ),
        migrations.CreateModel(
            name='Workspace',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(blank=True, default='', max_length=200)),
                ('context_window', models.PositiveIntegerField(blank=True, null=True)),
                ('reserve_output', models.PositiveIntegerField(blank=True, null=True)),
                ('retention_event_days', models.PositiveIntegerField(blank=True, null=True)),
                ('retention_session_days', models.PositiveIntegerField(blank=True, null=True)),
                ('slug', models.SlugField(max_length=64, unique=True)),
                ('name', contextstore.fields.RedactedCharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('redaction', models.JSONField(blank=True, default=contextstore.models.workspaces.redaction_default)),
            ],
            options={
                'ordering': ['slug'],
            },
        ),
        migrations.CreateModel(
            name='Dataset',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', contextstore.fields.RedactedCharField(max_length=200)),
                ('item_count', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='datasets', to='contextstore.workspace')),
            ],
            options={
                'ordering': ['name'],
                'constraints': [models.UniqueConstraint(fields=('workspace', 'name'), name='dataset_unique_name')],
            },
        ),
        migrations.CreateModel(
            name='Session',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(blank=True, default='', max_length=200)),
                ('context_window', models.PositiveIntegerField(blank=True, null=True)),
                ('reserve_output', models.PositiveIntegerField(blank=True, null=True)),
                ('retention_event_days', models.PositiveIntegerField(blank=True, null=True)),
                ('retention_session_days', models.PositiveIntegerField(blank=True, null=True)),
                ('key', models.CharField(max_length=255)),
                ('user_id', models.CharField(blank=True, default='', max_length=255)),
                ('app', models.CharField(blank=True, default='', max_length=200)),
                ('agent', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('title', contextstore.fields.RedactedCharField(blank=True, default='', max_length=500)),
                ('metadata', contextstore.fields.OrderedJSONField(default=dict)),
                ('archived', models.BooleanField(default=False)),
                ('legal_hold', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('last_activity_at', models.DateTimeField(auto_now_add=True)),
                ('thread_count', models.PositiveIntegerField(default=0)),
                ('event_count', models.PositiveBigIntegerField(default=0)),
                ('error_count', models.PositiveBigIntegerField(default=0)),
                ('token_total', models.PositiveBigIntegerField(default=0)),
                ('cost_total', models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='sessions', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['workspace', '-last_activity_at', '-id'], name='session_activity'), models.Index(fields=['workspace', 'app', 'user_id', '-last_activity_at', '-id'], name='session_app_activity')],
                'constraints': [models.UniqueConstraint(fields=('workspace', 'app', 'user_id', 'key'), name='session_unique_key')],
            },
        ),
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', contextstore.fields.RedactedCharField(blank=True, max_length=100)),
                ('prefix', models.CharField(db_index=True, max_length=16)),
                ('token_hash', models.CharField(max_length=64, unique=True)),
                ('scope', models.CharField(choices=[('read', 'Read'), ('write', 'Write'), ('admin', 'Admin')], default='write', max_length=5)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to='contextstore.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Thread',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(blank=True, default='', max_length=200)),
                ('context_window', models.PositiveIntegerField(blank=True, null=True)),
                ('reserve_output', models.PositiveIntegerField(blank=True, null=True)),
                ('name', contextstore.fields.RedactedCharField(default='main', max_length=200)),
                ('document', contextstore.fields.OrderedJSONField(default=contextstore.documents.new_document)),
                ('revision', models.PositiveIntegerField(default=0)),
                ('summarizer', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('fork_start_position', models.BigIntegerField(blank=True, null=True)),
                ('fork_end_position', models.BigIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('last_seq', models.BigIntegerField(default=0)),
                ('event_count', models.PositiveBigIntegerField(default=0)),
                ('token_total', models.PositiveBigIntegerField(default=0)),
                ('active_event_count', models.PositiveBigIntegerField(default=0)),
                ('active_tokens', models.PositiveBigIntegerField(default=0)),
                ('error_count', models.PositiveBigIntegerField(default=0)),
                ('last_event_at', models.DateTimeField(blank=True, null=True)),
                ('expired_seq', models.BigIntegerField(default=0)),
                ('context_generation', models.PositiveBigIntegerField(default=0)),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='forks', to='contextstore.thread')),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='contextstore.session')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('session', 'name'), name='thread_unique_name')],
            },
        ),
        migrations.CreateModel(
            name='Clear',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('summary', contextstore.fields.AgentTextField(blank=True, default='')),
                ('event_count', models.PositiveIntegerField(default=0)),
                ('tokens', models.PositiveBigIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='clears', to='contextstore.thread')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('kind', models.CharField(choices=[('range', 'Range'), ('token_budget', 'Token Budget'), ('per_run', 'Per Run'), ('clear', 'Clear'), ('unclear', 'Unclear'), ('collapse', 'Collapse')], max_length=16)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('failed', 'Failed')], default='queued', max_length=8)),
                ('params', contextstore.fields.OrderedJSONField(default=dict)),
                ('result', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('error', contextstore.fields.AgentTextField(blank=True, default='')),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('pending_key', models.CharField(blank=True, max_length=100, null=True, unique=True)),
                ('progress', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('thread', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='contextstore.thread')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['status', 'finished_at'], name='job_status')],
            },
        ),
        migrations.CreateModel(
            name='Run',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('run_id', models.CharField(max_length=200)),
                ('input', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('step_results', contextstore.fields.OrderedJSONField(default=dict)),
                ('iteration', models.IntegerField(default=0)),
                ('status', models.CharField(choices=[('running', 'Running'), ('completed', 'Completed'), ('failed', 'Failed'), ('interrupted', 'Interrupted')], default='running', max_length=12)),
                ('error', contextstore.fields.AgentTextField(blank=True, default='')),
                ('started_at', models.DateTimeField(auto_now_add=True)),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('event_count', models.PositiveIntegerField(default=0)),
                ('input_tokens', models.PositiveBigIntegerField(default=0)),
                ('output_tokens', models.PositiveBigIntegerField(default=0)),
                ('cost', models.DecimalField(decimal_places=6, default=0, max_digits=14)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='contextstore.thread')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', '-started_at', '-id'], name='run_recent')],
                'constraints': [models.UniqueConstraint(fields=('thread', 'run_id'), name='run_unique_id')],
            },
        ),
        migrations.CreateModel(
            name='ProviderState',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('provider', models.CharField(max_length=200)),
                ('state', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('version', models.PositiveIntegerField(default=1)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='provider_states', to='contextstore.thread')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread', 'provider'), name='provider_state_unique')],
            },
        ),
        migrations.CreateModel(
            name='ContextBlockVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('version', models.PositiveIntegerField()),
                ('value', contextstore.fields.AgentTextField(blank=True, null=True)),
                ('expr', contextstore.fields.AgentTextField(blank=True, null=True)),
                ('placement', models.CharField(choices=[('prefix', 'Prefix'), ('suffix', 'Suffix')], default='suffix', max_length=6)),
                ('order', models.IntegerField(default=0)),
                ('token_count', models.PositiveIntegerField(default=0)),
                ('deleted', models.BooleanField(default=False)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('reason', contextstore.fields.RedactedCharField(blank=True, default='', max_length=32)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='block_versions', to='contextstore.thread')),
            ],
            options={
                'ordering': ['name', 'version'],
                'constraints': [models.UniqueConstraint(fields=('thread', 'name', 'version'), name='block_version_unique')],
            },
        ),
        migrations.CreateModel(
            name='ContextBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('value', contextstore.fields.AgentTextField(blank=True, null=True)),
                ('expr', contextstore.fields.AgentTextField(blank=True, null=True)),
                ('placement', models.CharField(choices=[('prefix', 'Prefix'), ('suffix', 'Suffix')], default='suffix', max_length=6)),
                ('order', models.IntegerField(default=0)),
                ('version', models.PositiveIntegerField(default=1)),
                ('token_count', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='blocks', to='contextstore.thread')),
            ],
            options={
                'ordering': ['placement', 'order', 'name'],
                'constraints': [models.UniqueConstraint(fields=('thread', 'name'), name='block_unique_name')],
            },
        ),
        migrations.CreateModel(
            name='CommitRecord',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('batch_id', models.CharField(max_length=200)),
                ('request_hash', models.CharField(max_length=64)),
                ('response', contextstore.fields.OrderedJSONField(default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='commit_records', to='contextstore.thread')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread', 'batch_id'), name='commit_record_unique')],
            },
        ),
        migrations.CreateModel(
            name='ThreadBlob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=500)),
                ('content_type', contextstore.fields.RedactedCharField(blank=True, default='', max_length=100)),
                ('data', models.BinaryField()),
                ('meta', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('size', models.PositiveIntegerField(default=0)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='blobs', to='contextstore.thread')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread', 'key'), name='thread_blob_unique')],
            },
        ),
        migrations.CreateModel(
            name='StoredText',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sha256', models.CharField(max_length=64)),
                ('text', contextstore.fields.AgentTextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'sha256'), name='stored_text_key')],
            },
        ),
        migrations.CreateModel(
            name='ShareLink',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('session', 'Session'), ('event', 'Event'), ('call', 'LLM call')], max_length=8)),
                ('seq', models.BigIntegerField(blank=True, null=True)),
                ('prefix', models.CharField(max_length=16)),
                ('token_hash', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField()),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='contextstore.session')),
                ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='contextstore.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['token_hash'], name='share_link_lookup'), models.Index(fields=['session', '-created_at'], name='share_link_session')],
                'constraints': [models.UniqueConstraint(fields=('workspace', 'token_hash'), name='share_link_token')],
            },
        ),
        migrations.CreateModel(
            name='Score',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField(blank=True, null=True)),
                ('name', contextstore.fields.RedactedCharField(max_length=100)),
                ('data_type', models.CharField(choices=[('numeric', 'Numeric'), ('categorical', 'Categorical'), ('boolean', 'Boolean')], max_length=11)),
                ('value', models.FloatField(blank=True, null=True)),
                ('string_value', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('comment', contextstore.fields.RedactedTextField(blank=True, default='')),
                ('author_label', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('author_token', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.apitoken')),
                ('author_user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='contextstore.session')),
                ('thread', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['session', 'created_at'], name='score_session'), models.Index(fields=['thread', 'seq'], name='score_event'), models.Index(fields=['workspace', 'name', 'session'], name='score_name')],
            },
        ),
        migrations.CreateModel(
            name='ScopedState',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('app', models.CharField(max_length=200)),
                ('scope', models.CharField(choices=[('app', 'App'), ('user', 'User')], max_length=4)),
                ('user_id', models.CharField(blank=True, default='', max_length=255)),
                ('state', contextstore.fields.OrderedJSONField(default=dict)),
                ('revision', models.PositiveIntegerField(default=0)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='scoped_states', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'app', 'scope', 'user_id'), name='scoped_state_unique')],
            },
        ),
        migrations.CreateModel(
            name='RenderRecord',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('format', models.CharField(default='raw', max_length=10)),
                ('max_tokens', models.PositiveIntegerField()),
                ('total_tokens', models.PositiveIntegerField(default=0)),
                ('prefix_hash', models.CharField(max_length=64)),
                ('thread_revision', models.PositiveIntegerField(default=0)),
                ('spec', contextstore.fields.OrderedJSONField(default=dict)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='renders', to='contextstore.thread')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='renders', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', 'created_at'], name='render_thread_time')],
            },
        ),
        migrations.CreateModel(
            name='ReadAudit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('session_id', models.BigIntegerField(blank=True, null=True)),
                ('actor_key', models.CharField(max_length=220)),
                ('actor_type', models.CharField(choices=[('user', 'User'), ('token', 'Token'), ('worker', 'Worker'), ('system', 'System'), ('share', 'share link')], max_length=8)),
                ('actor_label', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('action', models.CharField(choices=[('session.view', 'session page'), ('thread.view', 'thread page'), ('context.view', 'what the model sees'), ('call.sent', 'an LLM call as sent'), ('render.read', 'a render record'), ('export', 'export'), ('events.read', 'events (API)'), ('context.read', 'context (API)'), ('share.view', 'a share link')], max_length=32)),
                ('target_type', models.CharField(max_length=64)),
                ('target_id', models.CharField(max_length=64)),
                ('hour', models.DateTimeField(help_text='The hour of the reads (UTC, truncated).')),
                ('first_at', models.DateTimeField(help_text='The first read in that hour.')),
                ('ip', models.GenericIPAddressField(blank=True, null=True)),
                ('actor_token', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.apitoken')),
                ('actor_user', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='read_audits', to='contextstore.workspace')),
            ],
            options={
                'ordering': ['-hour', '-id'],
                'indexes': [models.Index(fields=['session_id', '-hour'], name='read_audit_session'), models.Index(fields=['workspace', '-hour'], name='read_audit_workspace'), models.Index(fields=['target_type', 'target_id'], name='read_audit_target'), models.Index(condition=models.Q(('actor_user__isnull', False)), fields=['actor_user'], name='read_audit_actor_user'), models.Index(condition=models.Q(('actor_token__isnull', False)), fields=['actor_token'], name='read_audit_actor_token')],
                'constraints': [models.UniqueConstraint(fields=('actor_key', 'action', 'target_type', 'target_id', 'hour'), name='read_audit_once_an_hour')],
            },
        ),
        migrations.CreateModel(
            name='OtelTrace',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('trace_id', models.CharField(max_length=32)),
                ('session_key', models.CharField(blank=True, default='', max_length=255)),
                ('mapped_at', models.DateTimeField(blank=True, null=True)),
                ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'trace_id'), name='otel_trace_unique')],
            },
        ),
        migrations.CreateModel(
            name='OtelSpan',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('trace_id', models.CharField(max_length=32)),
                ('span_id', models.CharField(max_length=16)),
                ('parent_span_id', models.CharField(blank=True, default='', max_length=16)),
                ('name', contextstore.fields.AgentTextField()),
                ('kind', models.PositiveSmallIntegerField(default=0)),
                ('start_ns', models.BigIntegerField(default=0)),
                ('end_ns', models.BigIntegerField(default=0)),
                ('status_code', models.PositiveSmallIntegerField(default=0)),
                ('status_message', contextstore.fields.AgentTextField(blank=True, default='')),
                ('attributes', contextstore.fields.OrderedJSONField(default=dict)),
                ('events', contextstore.fields.OrderedJSONField(default=list)),
                ('links', contextstore.fields.OrderedJSONField(default=list)),
                ('resource', contextstore.fields.OrderedJSONField(default=dict)),
                ('scope', contextstore.fields.OrderedJSONField(default=dict)),
                ('received_at', models.DateTimeField(auto_now_add=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'trace_id', 'span_id'), name='otel_span_unique')],
            },
        ),
        migrations.CreateModel(
            name='OtelPending',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('trace_id', models.CharField(max_length=32)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('due_at', models.DateTimeField()),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('token', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.apitoken')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='OtelLog',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('trace_id', models.CharField(max_length=32)),
                ('span_id', models.CharField(max_length=16)),
                ('digest', models.CharField(max_length=64)),
                ('time_ns', models.BigIntegerField(default=0)),
                ('event_name', contextstore.fields.AgentTextField(blank=True, default='')),
                ('body', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('attributes', contextstore.fields.OrderedJSONField(default=dict)),
                ('received_at', models.DateTimeField(auto_now_add=True)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'trace_id', 'span_id', 'digest'), name='otel_log_unique')],
            },
        ),
        migrations.CreateModel(
            name='Membership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('viewer', 'Viewer'), ('editor', 'Editor'), ('admin', 'Admin')], default='viewer', max_length=10)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='contextstore.workspace')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('workspace', 'user'), name='membership_unique')],
            },
        ),
        migrations.CreateModel(
            name='DatasetItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('call', 'LLM call'), ('range', 'range of events')], max_length=8)),
                ('input', contextstore.fields.OrderedJSONField(default=list)),
                ('output', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('metadata', contextstore.fields.OrderedJSONField(default=dict)),
                ('user_id', models.CharField(blank=True, default='', max_length=255)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('dataset', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='contextstore.dataset')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.session')),
                ('thread', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.thread')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['dataset', 'id'], name='dataset_item_order'), models.Index(fields=['workspace', 'user_id'], name='dataset_item_user')],
            },
        ),
        migrations.CreateModel(
            name='Comment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField(blank=True, null=True)),
                ('author_label', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('text', contextstore.fields.RedactedTextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('edited_at', models.DateTimeField(blank=True, null=True)),
                ('author', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='contextstore.session')),
                ('thread', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.thread')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['session', 'created_at'], name='comment_session'), models.Index(fields=['thread', 'seq'], name='comment_event')],
            },
        ),
        migrations.CreateModel(
            name='CallReplay',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('call_seq', models.PositiveBigIntegerField(help_text="The seq naming the call (its LLMCallStart's).")),
                ('model', models.CharField(max_length=200)),
                ('edited', contextstore.fields.OrderedJSONField(default=list, help_text='Indexes of the messages changed before sending.')),
                ('request_hash', models.CharField(max_length=64)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('ok', 'Ok'), ('error', 'Error')], max_length=8)),
                ('answer', contextstore.fields.AgentTextField(blank=True, default='')),
                ('tool_calls', contextstore.fields.OrderedJSONField(default=list)),
                ('finish_reason', contextstore.fields.RedactedCharField(blank=True, default='', max_length=40)),
                ('input_tokens', models.PositiveIntegerField(blank=True, null=True)),
                ('output_tokens', models.PositiveIntegerField(blank=True, null=True)),
                ('cost', models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True)),
                ('latency_ms', models.PositiveIntegerField(default=0)),
                ('error', contextstore.fields.RedactedCharField(blank=True, default='', max_length=500)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='replays', to='contextstore.thread')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', 'call_seq'], name='replay_call'), models.Index(fields=['user', 'status'], name='replay_user')],
            },
        ),
        migrations.CreateModel(
            name='AuditLog',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_type', models.CharField(choices=[('user', 'User'), ('token', 'Token'), ('worker', 'Worker'), ('system', 'System'), ('share', 'share link')], max_length=8)),
                ('actor_label', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('action', models.CharField(max_length=64)),
                ('target_type', models.CharField(max_length=64)),
                ('target_id', models.CharField(max_length=64)),
                ('details', contextstore.fields.OrderedJSONField(default=dict)),
                ('ip', models.GenericIPAddressField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread_id', models.BigIntegerField(blank=True, null=True)),
                ('actor_token', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.apitoken')),
                ('actor_user', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('workspace', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='audit_logs', to='contextstore.workspace')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['workspace', '-created_at'], name='audit_workspace'), models.Index(fields=['target_type', 'target_id'], name='audit_target'), models.Index(condition=models.Q(('thread_id__isnull', False)), fields=['thread_id', '-id'], name='audit_thread'), models.Index(condition=models.Q(('actor_user__isnull', False)), fields=['actor_user'], name='audit_actor_user'), models.Index(condition=models.Q(('actor_token__isnull', False)), fields=['actor_token'], name='audit_actor_token')],
            },
        ),
        migrations.CreateModel(
            name='ScopedStateRevision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.PositiveIntegerField()),
                ('state', contextstore.fields.OrderedJSONField(default=dict)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('scoped_state', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='revisions', to='contextstore.scopedstate')),
            ],
            options={
                'ordering': ['revision'],
                'constraints': [models.UniqueConstraint(fields=('scoped_state', 'revision'), name='scoped_state_revision_unique')],
            },
        ),
        migrations.CreateModel(
            name='SessionModel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('model', models.CharField(max_length=200)),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='models_used', to='contextstore.session')),
            ],
            options={
                'indexes': [models.Index(fields=['model', 'session'], name='session_model_by_name')],
                'constraints': [models.UniqueConstraint(fields=('session', 'model'), name='session_model_unique')],
            },
        ),
        migrations.CreateModel(
            name='SyncUpload',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('upload_id', models.CharField(max_length=64)),
                ('parts', contextstore.fields.OrderedJSONField(default=dict)),
                ('result', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='sync_uploads', to='contextstore.thread')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread', 'upload_id'), name='sync_upload_unique')],
            },
        ),
        migrations.CreateModel(
            name='StateRevision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.PositiveIntegerField()),
                ('document', contextstore.fields.RedactedJSONTextField(blank=True, null=True)),
                ('patch', contextstore.fields.RedactedPatchField(blank=True, null=True)),
                ('base', models.PositiveIntegerField(default=0)),
                ('chain_bytes', models.PositiveBigIntegerField(default=0)),
                ('size', models.PositiveBigIntegerField(default=0)),
                ('reason', contextstore.fields.RedactedCharField(blank=True, default='', max_length=500)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='state_revisions', to='contextstore.thread')),
            ],
            options={
                'ordering': ['revision'],
                'constraints': [models.UniqueConstraint(fields=('thread', 'revision'), name='state_revision_unique')],
            },
        ),
        migrations.CreateModel(
            name='Collapse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('start_position', models.BigIntegerField()),
                ('end_position', models.BigIntegerField()),
                ('source', models.CharField(choices=[('person', 'Person'), ('agent', 'Agent'), ('token_budget', 'Token Budget'), ('per_run', 'Per Run'), ('worker', 'Worker')], default='agent', max_length=16)),
                ('actor', contextstore.fields.RedactedCharField(blank=True, default='', max_length=200)),
                ('event_count', models.PositiveIntegerField(default=0)),
                ('tokens_before', models.PositiveBigIntegerField(default=0)),
                ('tokens_after', models.PositiveBigIntegerField(default=0)),
                ('provenance', contextstore.fields.OrderedJSONField(default=dict)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('expired_count', models.PositiveIntegerField(default=0)),
                ('job', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='collapse', to='contextstore.job')),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='collapses', to='contextstore.thread')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', 'start_position'], name='collapse_range')],
            },
        ),
        migrations.CreateModel(
            name='Event',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.BigIntegerField()),
                ('position', models.BigIntegerField()),
                ('type', models.CharField(max_length=64)),
                ('role', models.CharField(blank=True, default='', max_length=32)),
                ('content', contextstore.fields.AgentTextField(blank=True, default='')),
                ('parts', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('data', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('call_id', models.CharField(blank=True, default='', max_length=200)),
                ('step', models.CharField(blank=True, default='', max_length=200)),
                ('anchor', models.CharField(blank=True, default='', max_length=200)),
                ('client_id', models.CharField(blank=True, max_length=200, null=True)),
                ('payload_hash', models.CharField(blank=True, default='', max_length=64)),
                ('item_key', models.CharField(blank=True, max_length=200, null=True)),
                ('token_count', models.PositiveIntegerField(default=0)),
                ('thinking_tokens', models.PositiveIntegerField(default=0)),
                ('visible', models.BooleanField(default=True)),
                ('is_error', models.BooleanField(default=False)),
                ('status', models.CharField(choices=[('active', 'Active'), ('collapsed', 'Collapsed'), ('cleared', 'Cleared'), ('reverted', 'Reverted'), ('retracted', 'Retracted'), ('replaced', 'Replaced'), ('removed', 'Removed')], default='active', max_length=10)),
                ('occurred_at', models.DateTimeField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('cleared_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='members', to='contextstore.clear')),
                ('collapse', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='members', to='contextstore.collapse')),
                ('replaced_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.event')),
                ('run', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='events', to='contextstore.run')),
                ('thread', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='contextstore.thread')),
            ],
            options={
                'indexes': [models.Index(fields=['thread', 'type', 'seq'], name='event_type'), models.Index(condition=models.Q(('run__isnull', False)), fields=['run', 'seq'], name='event_run'), models.Index(condition=models.Q(('status', 'active'), ('visible', True)), fields=['thread', 'position'], name='event_working_context'), models.Index(condition=models.Q(('is_error', True)), fields=['thread', 'seq'], name='event_error'), models.Index(condition=models.Q(('collapse__isnull', False)), fields=['collapse'], name='event_collapse'), models.Index(condition=models.Q(('cleared_by__isnull', False)), fields=['cleared_by'], name='event_cleared_by'), models.Index(condition=models.Q(('replaced_by__isnull', False)), fields=['replaced_by'], name='event_replaced_by')],
                'constraints': [models.UniqueConstraint(fields=('thread', 'seq'), name='event_unique_seq'), models.UniqueConstraint(condition=models.Q(('client_id__isnull', False)), fields=('thread', 'client_id'), name='event_unique_client_id'), models.UniqueConstraint(condition=models.Q(('item_key__isnull', False), models.Q(('status__in', ['replaced', 'removed']), _negated=True)), fields=('thread', 'item_key'), name='event_unique_item_key')],
            },
        ),
        migrations.CreateModel(
            name='EventSearch',
            fields=[
                ('event', models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name='+', serialize=False, to='contextstore.event')),
                ('thread_id', models.BigIntegerField()),
                ('text', models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name='Memory',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('user_id', models.CharField(blank=True, default='', max_length=255)),
                ('key', models.CharField(blank=True, max_length=200, null=True)),
                ('content', contextstore.fields.AgentTextField()),
                ('data', contextstore.fields.OrderedJSONField(blank=True, null=True)),
                ('source_expired', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('source_event', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='contextstore.event')),
                ('workspace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memories', to='contextstore.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['workspace', 'user_id', '-updated_at'], name='memory_user')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('key__isnull', False)), fields=('workspace', 'user_id', 'key'), name='memory_unique_key')],
            },
        ),
        migrations.AddField(
            model_name='collapse',
            name='summary_event',
            field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='summary_of', to='contextstore.event'),
        ),
        migrations.RunPython(postgresql_forwards, postgresql_backwards),
    ]
