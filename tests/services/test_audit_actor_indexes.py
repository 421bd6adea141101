"""The audit rows' actor columns (AuditLog's and ReadAudit's user and token) are indexed only
where they hold one (migration 0035): an API write's row has a token and no user, a dashboard
change's a user and no token. The partial indexes must still be there, and still found, when a
user or a token is deleted, on PostgreSQL and SQLite alike."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from contextstore.models import AuditLog, ReadAudit
from contextstore.services.access_log import record_read
from contextstore.services.common import Actor, audit
from tests.services.test_foreign_key_indexes import lookup_plan

PARTIAL = [("contextstore_auditlog", "actor_user_id", "audit_actor_user"),
           ("contextstore_auditlog", "actor_token_id", "audit_actor_token"),
           ("contextstore_readaudit", "actor_user_id", "read_audit_actor_user"),
           ("contextstore_readaudit", "actor_token_id", "read_audit_actor_token")]


def index_definition(name: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else ""


@pytest.mark.parametrize(("table", "column", "name"), PARTIAL)
def test_the_actor_index_holds_only_the_rows_that_have_one(db, table, column, name):
    definition = index_definition(name).replace('"', "").replace("(", "").replace(")", "")
    assert f"ON {table}" in definition.replace("public.", "")
    assert definition.endswith(f"WHERE {column} IS NOT NULL")


@pytest.mark.parametrize(("table", "column", "name"), PARTIAL)
def test_a_lookup_by_the_actor_uses_the_partial_index(db, table, column, name):
    assert name in lookup_plan(table, column)


def test_deleting_a_user_and_a_token_keeps_their_audit_rows_without_them(workspace, session, token, user):
    api_token = token[0]
    for actor in (Actor.for_user(user), Actor.for_token(api_token)):
        audit(actor=actor, action="session.update", target=session, workspace=workspace)
        record_read(actor=actor, action=ReadAudit.Action.SESSION_VIEW, target=session,
                    workspace_id=workspace.pk, session_id=session.pk)
    mine = {"actor_label__in": [Actor.for_user(user).label, Actor.for_token(api_token).label]}
    assert AuditLog.objects.filter(**mine).count() == 2 and ReadAudit.objects.filter(**mine).count() == 2

    get_user_model().objects.filter(pk=user.pk).delete()
    api_token.delete()
    connection.check_constraints()  # the deferred foreign keys, checked now rather than at a commit

    for model in (AuditLog, ReadAudit):
        rows = model.objects.filter(**mine)
        assert rows.count() == 2
        assert not rows.filter(actor_user__isnull=False).exists()
        assert not rows.filter(actor_token__isnull=False).exists()
