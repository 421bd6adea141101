"""The audit rows' actor indexes (AuditLog and ReadAudit, user and token) hold only the rows that
have one: an API write's row has a token and no user, a dashboard change's a user and no token, a
worker's neither, so each full index carried a NULL entry for most rows. A lookup by either
(deleting a user or a token sets its rows' column to NULL, `column = x`) implies NOT NULL and uses
the partial index, on PostgreSQL and SQLite alike. The new indexes are built before the old ones
go; the foreign-key constraints stay as they are (Django's AlterField would drop and re-add each
on PostgreSQL and rebuild the tables on SQLite)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# (Django's index of the column, table, column)
OLD = (
    ("contextstore_auditlog_actor_user_id_4b8296d8", "contextstore_auditlog", "actor_user_id"),
    ("contextstore_auditlog_actor_token_id_ff6deca2", "contextstore_auditlog", "actor_token_id"),
    ("contextstore_readaudit_actor_user_id_cd06066d", "contextstore_readaudit", "actor_user_id"),
    ("contextstore_readaudit_actor_token_id_042dea7d", "contextstore_readaudit", "actor_token_id"),
)


def actor(model_name: str, name: str, to: str) -> migrations.AlterField:
    return migrations.AlterField(
        model_name=model_name, name=name,
        field=models.ForeignKey(blank=True, db_index=False, null=True,
                                on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=to),
    )


def partial(model_name: str, field: str, name: str) -> migrations.AddIndex:
    return migrations.AddIndex(
        model_name=model_name,
        index=models.Index(condition=models.Q((f"{field}__isnull", False)), fields=[field], name=name),
    )


class Migration(migrations.Migration):

    dependencies = [
        ("contextstore", "0034_fk_indexes_covered_more"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        partial("auditlog", "actor_user", "audit_actor_user"),
        partial("auditlog", "actor_token", "audit_actor_token"),
        partial("readaudit", "actor_user", "read_audit_actor_user"),
        partial("readaudit", "actor_token", "read_audit_actor_token"),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                [f'DROP INDEX IF EXISTS "{name}"' for name, _, _ in OLD],
                # back: the full indexes again, as Django names them
                [f'CREATE INDEX IF NOT EXISTS "{name}" ON "{table}" ("{column}")' for name, table, column in OLD],
            )],
            state_operations=[
                actor("auditlog", "actor_user", settings.AUTH_USER_MODEL),
                actor("auditlog", "actor_token", "contextstore.apitoken"),
                actor("readaudit", "actor_user", settings.AUTH_USER_MODEL),
                actor("readaudit", "actor_token", "contextstore.apitoken"),
            ],
        ),
    ]
