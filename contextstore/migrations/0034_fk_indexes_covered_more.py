"""28 more foreign keys lose the index of their own, as five did in 0033: each column already
leads a composite index or unique constraint (named beside each below), which serves every
lookup by it, ON DELETE included. Each was one more index to write and store per row (a state
revision, a scoped-state revision, a render record, a block version, a thread). Only the indexes go: the constraints stay (Django's AlterField would drop and
re-add each on PostgreSQL, validating the table under lock, and rebuild the table on SQLite).
tests/services/test_foreign_key_indexes.py checks that every foreign key still leads an index."""

import django.db.models.deletion
from django.db import migrations, models

# (index, table, column): the indexes as Django named them
INDEXES = (
    ("contextstore_callreplay_thread_id_930a18df", "contextstore_callreplay", "thread_id"),  # replay_call
    ("contextstore_collapse_thread_id_5ed47128", "contextstore_collapse", "thread_id"),  # collapse_range
    ("contextstore_comment_session_id_966ccfae", "contextstore_comment", "session_id"),  # comment_session
    ("contextstore_comment_thread_id_980a6d90", "contextstore_comment", "thread_id"),  # comment_event
    ("contextstore_contextblock_thread_id_9320702f", "contextstore_contextblock", "thread_id"),  # block_unique_name
    ("contextstore_contextblockversion_thread_id_a4747f30", "contextstore_contextblockversion", "thread_id"),  # block_version_unique
    ("contextstore_dataset_workspace_id_ddab6ed6", "contextstore_dataset", "workspace_id"),  # dataset_unique_name
    ("contextstore_datasetitem_dataset_id_e5ce93d0", "contextstore_datasetitem", "dataset_id"),  # dataset_item_order
    ("contextstore_datasetitem_workspace_id_975bc88b", "contextstore_datasetitem", "workspace_id"),  # dataset_item_user
    ("contextstore_membership_workspace_id_c27314fd", "contextstore_membership", "workspace_id"),  # membership_unique
    ("contextstore_memory_workspace_id_f3399ac4", "contextstore_memory", "workspace_id"),  # memory_unique_key
    ("contextstore_otellog_workspace_id_fd09c70e", "contextstore_otellog", "workspace_id"),  # otel_log_unique
    ("contextstore_otelspan_workspace_id_f8d1681c", "contextstore_otelspan", "workspace_id"),  # otel_span_unique
    ("contextstore_oteltrace_workspace_id_91ebb99b", "contextstore_oteltrace", "workspace_id"),  # otel_trace_unique
    ("contextstore_providerstate_thread_id_38e6bbc1", "contextstore_providerstate", "thread_id"),  # provider_state_unique
    ("contextstore_readaudit_workspace_id_b5888fc5", "contextstore_readaudit", "workspace_id"),  # read_audit_workspace
    ("contextstore_renderrecord_thread_id_a1f2ef45", "contextstore_renderrecord", "thread_id"),  # render_thread_time
    ("contextstore_scopedstate_workspace_id_03fcad7f", "contextstore_scopedstate", "workspace_id"),  # scoped_state_unique
    ("contextstore_scopedstaterevision_scoped_state_id_eafcba62", "contextstore_scopedstaterevision", "scoped_state_id"),  # scoped_state_revision_unique
    ("contextstore_score_session_id_c5e3f26f", "contextstore_score", "session_id"),  # score_session
    ("contextstore_score_thread_id_0445c9c7", "contextstore_score", "thread_id"),  # score_event
    ("contextstore_score_workspace_id_abb616c0", "contextstore_score", "workspace_id"),  # score_name
    ("contextstore_sessionmodel_session_id_c263c8c5", "contextstore_sessionmodel", "session_id"),  # session_model_unique
    ("contextstore_sharelink_session_id_59520be1", "contextstore_sharelink", "session_id"),  # share_link_session
    ("contextstore_sharelink_workspace_id_59770e0d", "contextstore_sharelink", "workspace_id"),  # share_link_token
    ("contextstore_staterevision_thread_id_fad4cbf0", "contextstore_staterevision", "thread_id"),  # state_revision_unique
    ("contextstore_syncupload_thread_id_663aeec8", "contextstore_syncupload", "thread_id"),  # sync_upload_unique
    ("contextstore_thread_session_id_a6b7b466", "contextstore_thread", "session_id"),  # thread_unique_name
)


class Migration(migrations.Migration):

    dependencies = [
        ("contextstore", "0033_fk_indexes_covered"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                [f'DROP INDEX IF EXISTS "{name}"' for name, _, _ in INDEXES],
                # back: the indexes again, as Django names them
                [f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}")'
                 for name, table, column in INDEXES],
            )],
            state_operations=[
                migrations.AlterField(
                    model_name='callreplay',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='replays', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='collapse',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='collapses', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='comment',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='contextstore.session'),
                ),
                migrations.AlterField(
                    model_name='comment',
                    name='thread',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='contextblock',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='blocks', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='contextblockversion',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='block_versions', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='dataset',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='datasets', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='datasetitem',
                    name='dataset',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='items', to='contextstore.dataset'),
                ),
                migrations.AlterField(
                    model_name='datasetitem',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='membership',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='memory',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='memories', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='otellog',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='otelspan',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='oteltrace',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='providerstate',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='provider_states', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='readaudit',
                    name='workspace',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='read_audits', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='renderrecord',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='renders', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='scopedstate',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='scoped_states', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='scopedstaterevision',
                    name='scoped_state',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='revisions', to='contextstore.scopedstate'),
                ),
                migrations.AlterField(
                    model_name='score',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='scores', to='contextstore.session'),
                ),
                migrations.AlterField(
                    model_name='score',
                    name='thread',
                    field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='score',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='sessionmodel',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='models_used', to='contextstore.session'),
                ),
                migrations.AlterField(
                    model_name='sharelink',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='contextstore.session'),
                ),
                migrations.AlterField(
                    model_name='sharelink',
                    name='workspace',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='share_links', to='contextstore.workspace'),
                ),
                migrations.AlterField(
                    model_name='staterevision',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='state_revisions', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='syncupload',
                    name='thread',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='sync_uploads', to='contextstore.thread'),
                ),
                migrations.AlterField(
                    model_name='thread',
                    name='session',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='threads', to='contextstore.session'),
                ),
            ],
        ),
    ]
