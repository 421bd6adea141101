from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connection, models
from django.db.models.constants import OnConflict
from django.db.models.sql import subqueries as sql

from contextstore.db import PreparedGet, binary_cursor, binary_placeholders, row_plan, row_values
from contextstore.models import ApiToken, AuditLog, Thread, Workspace
from contextstore.selectors.threads import THREAD_STATE_FIELDS

UNSET: Any = object()


@dataclass(frozen=True)
class Actor:
    """Who makes a change: a person, an API token, a worker or the system itself."""

    type: str
    label: str
    user: User | None = None
    token: ApiToken | None = None
    ip: str | None = None

    @classmethod
    def for_user(cls, user: User, ip: str | None = None) -> "Actor":
        return cls(AuditLog.ActorType.USER, user.get_username(), user=user, ip=ip)

    @classmethod
    def for_token(cls, token: ApiToken, ip: str | None = None) -> "Actor":
        return cls(AuditLog.ActorType.TOKEN, f"token:{token.prefix}", token=token, ip=ip)

    @classmethod
    def worker(cls, name: str = "worker") -> "Actor":
        return cls(AuditLog.ActorType.WORKER, name)

    @classmethod
    def system(cls, name: str = "system") -> "Actor":
        return cls(AuditLog.ActorType.SYSTEM, name)


def audit(
    *, actor: Actor, action: str, target: models.Model, workspace: Workspace | None, **details: Any
) -> AuditLog:
    row = audit_row(actor=actor, action=action, target=target, workspace=workspace, **details)
    row.save(force_insert=True)
    return row


# FOR NO KEY UPDATE: writers of a thread wait for each other, but rows that merely reference
# it (a render record, an audit row, a job) are inserted meanwhile; their foreign-key check
# takes FOR KEY SHARE, which FOR UPDATE would make wait for the writer's commit.
_LOCK_THREAD = {
    history_only: PreparedGet(lambda pk, workspace_id, history_only=history_only: (
        Thread.objects.select_for_update(of=("self",), no_key=True).select_related("workspace")
        .defer(*(THREAD_STATE_FIELDS if history_only else ()))
        .filter(pk=pk, workspace_id=workspace_id)))
    for history_only in (False, True)
}


def lock_thread(thread: Thread, *, history_only: bool = False) -> Thread:
    """Re-read the thread under a row lock; every change to its history or state starts here.

    The row is found by id and workspace: a reference to a thread that is not read yet
    (`Thread(pk=..., workspace_id=...)`, the API's append) never locks another workspace's row.
    history_only skips the document, so appending costs the same however big the
    agent's state has grown. Compiled once per process (db.PreparedGet): every append runs it.
    """
    locked = _LOCK_THREAD[history_only].get(thread.pk, thread.workspace_id)
    if locked is None:
        raise Thread.DoesNotExist("Thread matching query does not exist.")
    return locked


# --- several writes in one statement ------------------------------------------------------------
# A hot path (the append) pays a round trip per statement; PostgreSQL runs data-modifying CTEs
# in one statement, so the ORM's own SQL for each write is compiled here and joined by
# `one_statement`. Field preparation (dates, JSON, defaults) stays Django's.

_INSERTS: dict[tuple, tuple[str, tuple[models.Field, ...], bool]] = {}


def insert_sql[M: models.Model](
    model: type[M], objs: list[M], *, returning: tuple[str, ...] = (),
    ignore_conflicts: bool = False,
) -> tuple[str, tuple]:
    """The ORM's INSERT of `objs` (plain values, no expressions). Its text is compiled once per
    shape (model, number of rows, RETURNING, ON CONFLICT; on PostgreSQL any number of rows
    above one is one shape, UNNEST's): compiling the ORM's INSERT on every append cost more than
    running it. Each value is still prepared as the ORM does it, pre_save included (created_at
    is stamped on the instance)."""
    many = connection.vendor == "postgresql" and len(objs) > 1
    key = (connection.vendor, model, "many" if many else len(objs), returning, ignore_conflicts)
    shape = _INSERTS.get(key)
    if shape is None:
        # as bulk_create does for rows without a pk: the database numbers them, a natural key is sent
        fields = tuple(f for f in model._meta.concrete_fields
                       if not isinstance(f, models.AutoField) and not f.generated)
        query = sql.InsertQuery(model, on_conflict=OnConflict.IGNORE if ignore_conflicts else None)
        query.insert_values(fields, objs)  # type: ignore[arg-type]  # takes any model's list (stub: list[Model])
        compiler = query.get_compiler(using=DEFAULT_DB_ALIAS)
        compiler.returning_fields = [model._meta.get_field(name) for name in returning] or None
        [(text, params)] = compiler.as_sql()
        # One placeholder per value, row after row; or on PostgreSQL for several rows one array
        # per column (UNNEST). Any other shape (a field's own placeholder, a database default)
        # is compiled every time.
        columnar = len(objs) > 1 and len(params) == len(fields)
        if (columnar if many else len(params) == len(fields) * len(objs)) and not any(
                f.has_db_default() or hasattr(f, "get_placeholder_sql") for f in fields):
            _INSERTS[key] = (text, fields, columnar)
        return text, tuple(params)
    text, fields, columnar = shape
    plan = row_plan(fields)
    rows = [row_values(obj, plan, add=True) for obj in objs]
    if columnar:
        return text, tuple(list(column) for column in zip(*rows, strict=True))
    return text, tuple(value for row in rows for value in row)


_ROW_UPDATES: dict[tuple, str] = {}


def row_update_sql(
    model: type[models.Model], pk: int, values: dict[str, Any], amounts: dict[str, Any]
) -> tuple[str, tuple]:
    """UPDATE of one row by pk: `values` set, `amounts` added to the columns' values. The text
    is written once per shape (compiling the ORM's UPDATE on every append cost more than
    running it); each value is still prepared by its field."""
    meta = model._meta
    key = (model, tuple(values), tuple(amounts))
    text = _ROW_UPDATES.get(key)
    if text is None:
        quote = connection.ops.quote_name
        # Concrete fields, which have a column: the stubs cannot tell them from other fields.
        columns = [quote(meta.get_field(name).column)  # type: ignore[union-attr, arg-type]
                   for name in (*values, *amounts)]
        sets = [f"{c} = %s" for c in columns[:len(values)]]
        sets += [f"{c} = {c} + %s" for c in columns[len(values):]]
        text = _ROW_UPDATES[key] = (f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} "
                                    f"WHERE {quote(meta.pk.column)} = %s")  # type: ignore[arg-type]
    params = [meta.get_field(name).get_db_prep_save(value, connection)  # type: ignore[union-attr]
              for name, value in (*values.items(), *amounts.items())]
    return text, (*params, pk)


def one_statement(main: tuple[str, tuple], *others: tuple[str, tuple],
                  binary: bool = False) -> list[tuple]:
    """Run `main` (its rows are returned) with `others` as data-modifying CTEs: one round trip,
    one snapshot; PostgreSQL only. `binary`: the values go apart from the text, in binary (for
    big array values, which PostgreSQL would otherwise lex in the statement and parse as text:
    a third of a 100-event insert's time)."""
    ctes = [f"w{i} AS ({text})" for i, (text, _) in enumerate(others)]
    params: list[Any] = [p for _, ps in others for p in ps]
    text = f"WITH {', '.join([*ctes, f'main AS ({main[0]})'])} SELECT * FROM main"
    with binary_cursor() if binary else connection.cursor() as cursor:
        cursor.execute(binary_placeholders(text) if binary else text, [*params, *main[1]])
        return cursor.fetchall()


def audit_row(
    *, actor: Actor, action: str, target: models.Model, workspace: Workspace | None, **details: Any
) -> AuditLog:
    """An unsaved audit record (for `insert_sql`); `audit` saves one at once."""
    return AuditLog(
        workspace=workspace, actor_type=actor.type, actor_user=actor.user,
        actor_token=actor.token, actor_label=actor.label[:200], action=action,
        target_type=target._meta.model_name,  # type: ignore[misc]  # None only before class creation
        target_id=str(target.pk), details=details,
        ip=actor.ip,
    )
