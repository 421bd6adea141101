"""Five foreign keys lose the index of their own that Django gives every foreign key: a
composite index leading with the same column serves every lookup by it (cascades included), and
each index is one more write on the hot paths (an audit row per change, a session update per
commit, a blob row per LangGraph channel). Only the indexes go: the constraints stay as they
are (Django's AlterField would drop and re-add each, validating the whole table under lock)."""

import django.db.models.deletion
from django.db import migrations, models

INDEXES = (
    "contextstore_auditlog_workspace_id_71be7847",
    "contextstore_commitrecord_thread_id_10331ca4",
    "contextstore_run_thread_id_5159ea90",
    "contextstore_session_workspace_id_26dcde73",
    "contextstore_threadblob_thread_id_5ec880db",
)


class Migration(migrations.Migration):

    dependencies = [
        ("contextstore", "0032_threadblob_key_bytewise"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                [f'DROP INDEX IF EXISTS "{name}"' for name in INDEXES],
                # back: the indexes again, as Django names them
                [f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}")' for name, table, column in (
                    (INDEXES[0], "contextstore_auditlog", "workspace_id"),
                    (INDEXES[1], "contextstore_commitrecord", "thread_id"),
                    (INDEXES[2], "contextstore_run", "thread_id"),
                    (INDEXES[3], "contextstore_session", "workspace_id"),
                    (INDEXES[4], "contextstore_threadblob", "thread_id"))],
            )],
            state_operations=[
                migrations.AlterField(
                    model_name="auditlog", name="workspace",
                    field=models.ForeignKey(blank=True, db_index=False, null=True,
                                            on_delete=django.db.models.deletion.SET_NULL,
                                            related_name="audit_logs", to="contextstore.workspace"),
                ),
                migrations.AlterField(
                    model_name="commitrecord", name="thread",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="commit_records", to="contextstore.thread"),
                ),
                migrations.AlterField(
                    model_name="run", name="thread",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="runs", to="contextstore.thread"),
                ),
                migrations.AlterField(
                    model_name="session", name="workspace",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="sessions", to="contextstore.workspace"),
                ),
                migrations.AlterField(
                    model_name="threadblob", name="thread",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="blobs", to="contextstore.thread"),
                ),
            ],
        ),
    ]
