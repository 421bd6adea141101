"""Database plumbing in one place: PostgreSQL COPY for event batches (and an export's spans),
the ORM's INSERT and UPDATE compiled once per shape and several writes joined into one
statement (the append's hot path), queries compiled once per process (PreparedGet,
PreparedRows, read_together), and the bounded REGEXP (SQLite's in-process function and
PostgreSQL's statement timeout) behind regex_guard."""

import contextvars
import functools
import re
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import regex as regex_module
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, models, transaction
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import BigIntegerField, Func, QuerySet
from django.db.models.constants import OnConflict
from django.db.models.query import get_related_populators
from django.db.models.sql import subqueries as sql
from psycopg import Binary
from psycopg.pq import Format

from contextstore.models import Event


class OctetLength(Func):
    """The size of a text column in bytes (UTF-8), on both databases; NULL stays NULL.
    PostgreSQL reads it from the value's header, without decompressing a TOASTed text."""

    function = "OCTET_LENGTH"
    output_field = BigIntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra)


COPY_THRESHOLD = 20  # below this, one INSERT beats nextval + COPY


def bulk_insert_events(objs: list[Event], now: datetime) -> None:
    """Insert new events; on PostgreSQL with COPY (several times faster than INSERT).

    Ids are drawn from the table's sequence first so the caller gets them back, as it does
    from bulk_create.
    """
    if connection.vendor != "postgresql" or len(objs) < COPY_THRESHOLD:
        Event.objects.bulk_create(objs)  # one INSERT … RETURNING: fewer round trips when small
        return
    # a concrete field has a column (the stubs say str | None for every field)
    columns = ", ".join(connection.ops.quote_name(f.column)  # type: ignore[arg-type]
                        for f in Event._meta.concrete_fields)
    # Django wraps execute and fetch, not copy: a value the database refuses (an import's
    # negative token count) is Django's IntegrityError or DataError here too, as bulk_create's.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('contextstore_event', 'id')) "
            "FROM generate_series(1, %s)", [len(objs)],
        )
        for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
            obj.pk = pk
            obj.created_at = now
            obj._state.adding = False
        plan = row_plan(tuple(Event._meta.concrete_fields))
        with cursor.copy(f"COPY contextstore_event ({columns}) FROM STDIN") as copy:
            for obj in objs:
                copy.write_row(row_values(obj, plan))


def copy_rows(objs: Sequence[models.Model]) -> None:
    """Insert new rows of one model with PostgreSQL's COPY, their ids not read back, their values
    as they are (no pre_save: the caller stamps auto_now_add fields, once for all). A row that
    breaks a unique constraint fails them all (IntegrityError), as one INSERT would."""
    if not objs:
        return
    model = type(objs[0])
    fields = tuple(f for f in model._meta.concrete_fields if not f.primary_key)
    columns = ", ".join(connection.ops.quote_name(f.column)  # type: ignore[arg-type]
                        for f in fields)
    plan = row_plan(fields)
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for obj in objs:
                copy.write_row(row_values(obj, plan))


# The field classes whose value psycopg takes as is when it has this exact type (a str for a
# CharField, an aware datetime for a DateTimeField): Django's preparation returns it unchanged.
_COPY_AS_IS: dict[type, type] = {
    models.BigAutoField: int, models.AutoField: int, models.BigIntegerField: int,
    models.IntegerField: int, models.PositiveIntegerField: int, models.SmallIntegerField: int,
    models.PositiveSmallIntegerField: int, models.BooleanField: bool,
    models.CharField: str, models.TextField: str, models.DateTimeField: datetime,
}
RowPlan = list[tuple[str, type[Any] | None, Callable[[Any, Any], Any], Callable[[Any, bool], Any] | None]]


@functools.cache
def row_plan(fields: tuple[models.Field, ...]) -> RowPlan:
    """Per column, once per process: (attname, the type passed as is or None, Django's
    get_db_prep_save for every other value, the field's own pre_save or None). Preparing each of
    ~25 values of every row through Django cost a third of a batch's CPU; only the JSON fields
    (text, see OrderedJSONField) and values of an unexpected type need it."""
    plan: RowPlan = []
    for field in fields:
        target = field
        while isinstance(target, models.ForeignKey):
            target = target.target_field
        pre_save = field.pre_save if type(field).pre_save is not models.Field.pre_save else None
        plan.append((field.attname, _COPY_AS_IS.get(type(target)), field.get_db_prep_save, pre_save))
    return plan


def row_values(obj: models.Model, plan: RowPlan, *, add: bool = False) -> list[Any]:
    """The values of one row, as the ORM would send them. `add`: run the fields' pre_save as an
    INSERT does (auto_now_add stamps the instance); plain values only, no expressions."""
    values = obj.__dict__
    return [_prepared(attname, pre_save(obj, True) if add and pre_save is not None else values[attname],
                      kind, prepare)
            for attname, kind, prepare, pre_save in plan]


def _prepared(attname: str, value: Any, kind: type[Any] | None,
              prepare: Callable[[Any, Any], Any]) -> Any:
    """One value as the ORM would send it (see row_plan)."""
    # A datetime goes as is to PostgreSQL only when aware: SQLite's driver would write an
    # aware one with its offset ("...+00:00"), not as the ORM does, so the same instant
    # would be two different texts (two rows under one unique key).
    if value is not None and (type(value) is not kind or kind is datetime and (
            value.tzinfo is None or connection.vendor != "postgresql")):
        if hasattr(value, "resolve_expression"):
            raise TypeError(f"{attname}: an expression, which a prepared row cannot hold")
        value = prepare(value, connection)
    return value


# On SQLite the REGEXP function runs in this process; Python's re cannot be interrupted, so
# contextstore installs one built on the regex package, which takes a timeout, and bounds each
# query by the deadline regex_guard sets.
_regex_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "regex_deadline", default=None)


def sqlite_regexp(pattern: str | None, text: Any) -> bool | None:
    if pattern is None or text is None:
        return None
    deadline = _regex_deadline.get()
    timeout = None if deadline is None else deadline - time.monotonic()
    if timeout is not None and timeout <= 0:
        raise TimeoutError("regex deadline passed")
    return bool(regex_module.search(pattern, str(text), timeout=timeout))


def install_sqlite_regexp(sender: Any, connection: Any, **kwargs: Any) -> None:
    """connection_created handler: replace Django's REGEXP on SQLite with the bounded one."""
    if connection.vendor == "sqlite":
        connection.connection.create_function("REGEXP", 2, sqlite_regexp, deterministic=True)


@contextmanager
def _statement_timeout(ms: int) -> Iterator[None]:
    """A transaction of its own whose statements PostgreSQL stops after `ms` (SET LOCAL ends
    with it; 0 is none). Nothing on SQLite: its callers bound it their own way."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {int(ms)}")
        yield


@contextmanager
def without_jit() -> Iterator[None]:
    """A transaction of its own in which PostgreSQL compiles no query with JIT (SET LOCAL ends
    with it). For the analytics' aggregates: their estimates pass jit_above_cost on a large
    workspace, and compiling took about 3.1 s of a 3.9 s trends query, to save milliseconds."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL jit = off")
        yield


@contextmanager
def regex_guard() -> Iterator[None]:
    """Run a regex query under a time limit so a pathological pattern cannot hog the database:
    PostgreSQL's statement timeout, or the deadline of the SQLite REGEXP function."""
    ms = int(settings.CONTEXTSTORE["REGEX_TIMEOUT_MS"])
    token = _regex_deadline.set(time.monotonic() + ms / 1000)
    try:
        with _statement_timeout(ms):
            yield
    finally:
        _regex_deadline.reset(token)


@contextmanager
def time_limit(ms: int) -> Iterator[None]:
    """Run the queries inside under a time limit, for a search over many events: PostgreSQL's
    statement timeout (SET LOCAL, in a transaction of its own), or on SQLite a progress handler
    that interrupts the statement past the deadline. Past it the query raises DatabaseError."""
    deadline = time.monotonic() + ms / 1000
    with _statement_timeout(max(int(ms), 1)):  # 0 would be none
        if connection.vendor == "postgresql":
            yield
            return
        raw = connection.connection  # sqlite3.Connection, open inside atomic()
        raw.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        try:
            yield
        finally:
            raw.set_progress_handler(None, 10_000)


class _Prepared:
    """A fixed-shape ORM query compiled once per process: `build(*values)` is compiled with
    stand-in values; each call runs that SQL with the real ones. `build` must use each value as
    a plain query parameter (an exact filter on an integer column, or with `text` naming the
    positions of string values, on a text column). A value may be used more than once (the
    workspace of a row and of a subquery's): each of its places gets it."""

    STAND_INS = tuple(range(-7_310_001, -7_310_009, -1))

    def __init__(self, build: Callable[..., QuerySet], *, text: tuple[int, ...] = ()) -> None:
        self.build = build
        self.stand_ins = tuple(f"(stand-in {value})" if i in text else value
                               for i, value in enumerate(self.STAND_INS))
        self.compiled: dict[str, tuple] = {}  # per database vendor

    def _compile(self, arity: int) -> tuple:
        qs = self.build(*self.stand_ins[:arity])
        compiler = qs.query.get_compiler(using=qs.db)
        text, params = compiler.as_sql()
        params = list(params)
        slots = [[i for i, param in enumerate(params) if param == value]
                 for value in self.stand_ins[:arity]]
        if not all(slots):
            raise ValueError(f"{self.build}: a value is not a plain query parameter")
        return (text, params, slots, *self._reading(qs, compiler))

    def _reading(self, qs: QuerySet, compiler: Any) -> tuple:
        """What turning a row into the answer needs, after the SQL, its params and slots."""
        raise NotImplementedError

    def _answer(self, compiled: tuple, rows: list[tuple]) -> Any:
        """The rows read, as the caller gets them."""
        raise NotImplementedError

    def _statement(self, values: tuple[int | str, ...], limit: int | None = None,
                   along: Sequence[tuple[str, list]] = ()) -> tuple[tuple, str, list]:
        compiled = self.compiled.get(connection.vendor)
        if compiled is None:
            compiled = self.compiled[connection.vendor] = self._compile(len(values))
        text, params, slots = compiled[:3]
        params = list(params)
        for places, value in zip(slots, values, strict=True):
            for place in places:
                params[place] = value
        if limit is not None:  # the ORM writes a slice into the SQL text; here it is a parameter
            text, params = f"{text} LIMIT %s", [*params, limit]
        if along:  # data-modifying statements run with this read (PostgreSQL runs each once)
            ctes = ", ".join(f"_along{i} AS ({sql})" for i, (sql, _) in enumerate(along))
            text, params = f"WITH {ctes} {text}", [p for _, ps in along for p in ps] + params
        return compiled, text, params

    def _rows(self, values: tuple[int | str, ...], limit: int | None = None,
              along: Sequence[tuple[str, list]] = ()) -> tuple[tuple, list[tuple]]:
        compiled, text, params = self._statement(values, limit, along)
        with prepared_cursor() as cursor:
            cursor.execute(text, params)
            return compiled, cursor.fetchall()


def statements_share_a_message() -> bool:
    """Whether several statements can go in one message, a result set each: PostgreSQL with
    client-side binding (psycopg's ClientCursor); server-side binding, and SQLite, take one."""
    return connection.vendor == "postgresql" and not connection.settings_dict["OPTIONS"].get(
        "server_side_binding")


def binary_cursor(*, results: bool = False) -> Any:
    """A cursor (Django's wrapper: logged and counted as any other) whose values are sent apart
    from the SQL, in binary where the SQL says %b (see binary_placeholders): psycopg's
    server-binding cursor, on this connection and in its transaction. `results`: the rows come
    back in binary too (a bytea as its bytes, not as hex text twice its size to decode; text
    and numbers as the ORM reads them). PostgreSQL only."""
    connection.ensure_connection()
    connection.validate_thread_sharing()
    # The stubs leave out psycopg's Cursor, its base, and make_cursor wraps any DB-API cursor.
    raw = ServerBindingCursor(connection.connection)  # type: ignore[call-arg]
    if results:
        raw.format = Format.BINARY  # type: ignore[attr-defined]  # psycopg's cursor attribute (stubs leave it out)
    return (connection.make_debug_cursor(raw) if connection.queries_logged  # type: ignore[arg-type]
            else connection.make_cursor(raw))  # type: ignore[arg-type]


def prepared_cursor() -> Any:
    """A cursor for a statement run again and again with the same text (the compiled reads of
    the hot paths): on PostgreSQL with server-side prepared statements on (the settings turn
    them on unless a transaction-mode pooler is in the way: DATABASE_POOLER) a server-binding
    cursor, whose statements psycopg prepares (prepare_threshold), so the server parses and
    plans each once per connection; else Django's own."""
    if connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get(
            "prepare_threshold") is not None:
        return binary_cursor()
    return connection.cursor()


def binary_placeholders(text: str) -> str:
    """The SQL with each %s placeholder asking for a binary value (%b); %% stays a percent."""
    return re.sub(r"%[%s]", lambda m: "%b" if m.group() == "%s" else "%%", text)


# --- several writes in one statement ------------------------------------------------------------
# A hot path (the append) pays a round trip per statement; PostgreSQL runs data-modifying CTEs
# in one statement, so the ORM's own SQL for each write is compiled here and joined by
# `one_statement`. Field preparation (dates, JSON, defaults) stays Django's.

_INSERTS: dict[tuple, tuple[str, tuple[models.Field, ...], bool]] = {}


def insert_sql[M: models.Model](
    model: type[M], objs: list[M], *, returning: tuple[str, ...] = (),
    ignore_conflicts: bool = False, update_conflicts: tuple[tuple[str, ...], tuple[str, ...]] | None = None,
    leave_out: tuple[str, ...] = (),
) -> tuple[str, tuple]:
    """The ORM's INSERT of `objs` (plain values, no expressions); `update_conflicts`, (unique
    fields, fields to update): as bulk_create's, ON CONFLICT (…) DO UPDATE. Its text is compiled once per
    shape (model, number of rows, RETURNING, ON CONFLICT; on PostgreSQL any number of rows
    above one is one shape, UNNEST's): compiling the ORM's INSERT on every append cost more than
    running it. Each value is still prepared as the ORM does it, pre_save included (created_at
    is stamped on the instance).

    `leave_out`: nullable columns every row leaves NULL (checked), not sent. psycopg converts
    a statement's placeholders once per process only when it has at most 50 values (and 4 kB):
    the append's one statement had 52, and splitting it again on every call cost ~0.1 ms."""
    for name in leave_out:
        attname = model._meta.get_field(name).attname  # type: ignore[union-attr]  # a concrete field
        if any(getattr(obj, attname) is not None for obj in objs):
            raise ValueError(f"{name} is left out of the insert but set")
    many = connection.vendor == "postgresql" and len(objs) > 1
    key = (connection.vendor, model, returning, ignore_conflicts, update_conflicts, leave_out)
    shape = (many and _INSERTS.get((*key, "many"))) or _INSERTS.get((*key, len(objs)))
    if shape is None:
        # as bulk_create does for rows without a pk: the database numbers them, a natural key is sent
        fields = tuple(f for f in model._meta.concrete_fields
                       if not isinstance(f, models.AutoField) and not f.generated
                       and f.name not in leave_out)
        unique, update = update_conflicts or ((), ())
        query = sql.InsertQuery(
            model, on_conflict=(OnConflict.UPDATE if update_conflicts else
                                OnConflict.IGNORE if ignore_conflicts else None),
            unique_fields=[model._meta.get_field(name) for name in unique],
            update_fields=[model._meta.get_field(name) for name in update])
        query.insert_values(fields, objs)  # type: ignore[arg-type]  # takes any model's list (stub: list[Model])
        compiler = query.get_compiler(using=DEFAULT_DB_ALIAS)
        compiler.returning_fields = [model._meta.get_field(name) for name in returning] or None
        [(text, params)] = compiler.as_sql()
        # One placeholder per value, row after row (a text per number of rows); or on
        # PostgreSQL for several rows one array per column (UNNEST, any number). Any other shape
        # (a field's own placeholder, a database default) is compiled every time; a binary
        # field's placeholder is a plain %s but on MySQL, which contextstore does not run on.
        columnar = len(objs) > 1 and len(params) == len(fields)
        plain = not any(f.has_db_default() or hasattr(f, "get_placeholder_sql")
                        and not isinstance(f, models.BinaryField) for f in fields)
        row = f"({', '.join(['%s'] * len(fields))})"
        values = "VALUES " + ", ".join([row] * len(objs))
        if many and not columnar and plain and values in text:
            # Django writes no UNNEST for a binary field (its placeholder could be MySQL's);
            # here it is a plain one: columns as Django's UNNEST casts them, any number of rows.
            arrays = ", ".join(f"(%s)::{f.db_type(connection).split('(')[0]}[]"  # type: ignore[union-attr]
                               for f in fields)
            text = text.replace(values, f"SELECT * FROM UNNEST({arrays})")
            params = [list(params[i::len(fields)]) for i in range(len(fields))]
            columnar = True
        if plain and (columnar or len(params) == len(fields) * len(objs)):
            _INSERTS[(*key, "many" if columnar else len(objs))] = (text, fields, columnar)
        return text, tuple(params)
    text, fields, columnar = shape
    plan = row_plan(fields)
    rows = [row_values(obj, plan, add=True) for obj in objs]
    if columnar:
        return text, tuple(list(column) for column in zip(*rows, strict=True))
    return text, tuple(value for row in rows for value in row)


_ROW_UPDATES: dict[tuple, tuple[str, RowPlan]] = {}


def row_update_sql(
    model: type[models.Model], pk: int, values: dict[str, Any], amounts: dict[str, Any]
) -> tuple[str, tuple]:
    """UPDATE of one row by pk: `values` set, `amounts` added to the columns' values. The text
    is written once per shape (compiling the ORM's UPDATE on every append cost more than
    running it); each value is still prepared as its field does (see row_plan)."""
    meta = model._meta
    key = (model, tuple(values), tuple(amounts))
    shape = _ROW_UPDATES.get(key)
    if shape is None:
        quote = connection.ops.quote_name
        # Concrete fields, which have a column: the stubs cannot tell them from other fields.
        fields = tuple(meta.get_field(name) for name in (*values, *amounts))
        columns = [quote(f.column) for f in fields]  # type: ignore[union-attr, arg-type]
        sets = [f"{c} = %s" for c in columns[:len(values)]]
        sets += [f"{c} = {c} + %s" for c in columns[len(values):]]
        shape = _ROW_UPDATES[key] = (
            f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} "
            f"WHERE {quote(meta.pk.column)} = %s",  # type: ignore[arg-type]
            row_plan(fields))
    text, plan = shape
    params = [_prepared(attname, value, kind, prepare) for (attname, kind, prepare, _), value in zip(
        plan, (*values.values(), *amounts.values()), strict=True)]
    return text, (*params, pk)


def rows_update(model: type[models.Model],
                rows: Sequence[tuple[int, dict[str, Any], dict[str, Any]]]) -> None:
    """row_update_sql for many rows, (pk, values, amounts) each, every row naming the same
    columns: on PostgreSQL one UPDATE … FROM UNNEST(one array per column) whatever the number of
    rows (Django's bulk_update writes a CASE per column and row, whose compiling cost more than
    the pass it served); on SQLite, in process, one UPDATE per row."""
    if not rows:
        return
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql" or len(rows) == 1:
            for pk, values, amounts in rows:
                cursor.execute(*row_update_sql(model, pk, values, amounts))
            return
        meta = model._meta
        quote = connection.ops.quote_name
        _, first_values, first_amounts = rows[0]
        fields = tuple(meta.get_field(name) for name in (*first_values, *first_amounts))
        columns = [quote(f.column) for f in fields]  # type: ignore[union-attr, arg-type]
        sets = [f"{c} = v.{c}" for c in columns[:len(first_values)]]
        sets += [f"{c} = {quote(meta.db_table)}.{c} + v.{c}" for c in columns[len(first_values):]]
        arrays = ", ".join(f"(%s)::{f.db_type(connection).split('(')[0]}[]"  # type: ignore[union-attr]
                           for f in (meta.pk, *fields))
        pk_column = quote(meta.pk.column)  # type: ignore[arg-type]
        text = (f"UPDATE {quote(meta.db_table)} SET {', '.join(sets)} "
                f"FROM UNNEST({arrays}) AS v({pk_column}, {', '.join(columns)}) "
                f"WHERE {quote(meta.db_table)}.{pk_column} = v.{pk_column}")
        plan = row_plan(fields)
        params: list[list[Any]] = [[pk for pk, _, _ in rows]] + [[] for _ in fields]
        for _, values, amounts in rows:
            for column, (attname, kind, prepare, _), value in zip(
                    params[1:], plan, (*values.values(), *amounts.values()), strict=True):
                column.append(_prepared(attname, value, kind, prepare))
        cursor.execute(text, params)


def bytes_bound(statements: Sequence[tuple[str, Sequence[Any]]]) -> int:
    """How many bytes the statements' binary values hold (the ORM wraps each in psycopg's
    Binary; an UNNEST insert has a list of them per column)."""
    return sum(len(value.obj) for _, params in statements for param in params
               for value in (param if isinstance(param, list) else (param,))
               if isinstance(value, Binary))


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


def read_together(*reads: tuple[_Prepared, tuple[int, ...], int | None]) -> list[Any]:
    """Several prepared reads, each (query, its values, its limit or None), in one round trip on
    PostgreSQL: one message, a result set each (client-side binding; with server-side binding,
    and on SQLite, one after the other). Each answer is what the query's own method gives:
    instances as PreparedGet.all, rows as PreparedRows.rows."""
    statements = [(prepared, *prepared._statement(values, limit)) for prepared, values, limit in reads]
    with connection.cursor() as cursor:
        if not statements_share_a_message():
            answers = []
            for prepared, compiled, text, params in statements:
                cursor.execute(text, params)
                answers.append(prepared._answer(compiled, cursor.fetchall()))
            return answers
        cursor.execute("; ".join(text for _, _, text, _ in statements),
                       [p for *_, params in statements for p in params])
        answers = []
        for index, (prepared, compiled, _, _) in enumerate(statements):
            if index:
                cursor.nextset()
            answers.append(prepared._answer(compiled, cursor.fetchall()))
        return answers


class PreparedGet(_Prepared):
    """A query for model instances, compiled once per process (see _Prepared).

    The ORM builds and compiles a queryset on every call, which on the hottest reads (the thread
    of every API request, its row lock in every append) costs more than the query itself. Here
    each row is built into an instance as QuerySet does (converters, select_related, deferred
    fields, annotations); `get` reads at most one row, `all` every row.
    """

    def _reading(self, qs: QuerySet, compiler: Any) -> tuple:
        klass_info, select = compiler.klass_info, compiler.select
        fields = klass_info["select_fields"]
        fetch_mode = qs._fetch_mode  # type: ignore[attr-defined]  # Django 6.1's; not in the stubs yet
        return (klass_info["model"], fields[0], fields[-1] + 1,
                [f[0].target.attname for f in select[fields[0]:fields[-1] + 1]],
                get_related_populators(klass_info, select, qs.db, fetch_mode),
                compiler.get_converters([s[0] for s in select[:compiler.col_count]]), qs.db,
                fetch_mode, dict(compiler.annotation_col_map or {}))

    @staticmethod
    def _instance(compiled: tuple, row: tuple) -> Any:
        (_, _, _, model, start, end, attnames, populators, converters, db, fetch_mode,
         annotations) = compiled
        cells = list(row)
        for pos, (convs, expression) in converters.items():
            for converter in convs:
                cells[pos] = converter(cells[pos], expression, connection)
        obj = model.from_db(db, attnames, cells[start:end], fetch_mode=fetch_mode)
        for populator in populators:
            populator.populate(cells, obj)
        for name, pos in annotations.items():
            setattr(obj, name, cells[pos])
        return obj

    def get(self, *values: int | str) -> Any:
        compiled, rows = self._rows(values)
        return self._instance(compiled, rows[0]) if rows else None

    def all(self, *values: int | str) -> list[Any]:
        return self._answer(*self._rows(values))

    def _answer(self, compiled: tuple, rows: list[tuple]) -> list[Any]:
        objs = [self._instance(compiled, row) for row in rows]
        if objs and compiled[10].track_peers:  # as QuerySet does in a FETCH_PEERS mode
            peers = [weakref.ref(obj) for obj in objs]
            for obj in objs:
                obj._state.peers = peers
        return objs


class PreparedRows(_Prepared):
    """A values_list() query of many rows, compiled once per process (see _Prepared); rows come
    back as tuples, through the fields' converters (JSON text parsed). `limit`, when given, is
    added as a parameter; `along`, statements to run in the same statement (see _rows). The
    render's history reads run on every context request."""

    def _reading(self, qs: QuerySet, compiler: Any) -> tuple:
        converters = compiler.get_converters([s[0] for s in compiler.select[:compiler.col_count]])
        return (list(converters.items()),)

    def rows(self, *values: int | str, limit: int | None = None,
             along: Sequence[tuple[str, list]] = ()) -> list[tuple]:
        return self._answer(*self._rows(values, limit, along))

    def statement(self, *values: int | str, limit: int | None = None) -> tuple[tuple, str, list]:
        """(what `answer` needs, the SQL, its params): the query for a caller to run itself,
        with statements of its own (run_along). What `answer` needs ends with the columns'
        converters, (position, (converters, expression)) pairs."""
        return self._statement(values, limit)

    def answer(self, compiled: tuple, rows: list[tuple]) -> list[tuple]:
        """The rows `statement`'s SQL gave, as `rows` returns them."""
        return self._answer(compiled, rows)

    def _answer(self, compiled: tuple, rows: list[tuple]) -> list[tuple]:
        converters = compiled[3]
        if not converters:
            return rows
        converted = []
        for row in rows:
            cells = list(row)
            for pos, (convs, expression) in converters:
                for converter in convs:
                    cells[pos] = converter(cells[pos], expression, connection)
            converted.append(tuple(cells))
        return converted


def run_along(along: Sequence[tuple[str, list]], read: tuple[str, list] | None = None) -> list[tuple]:
    """Data-modifying statements (PostgreSQL) in one statement with a read, whose rows it
    returns (`read`: its SQL and params; none: `SELECT 1`): one round trip for both."""
    text, params = read or ("SELECT 1", [])
    ctes = ", ".join(f"_along{i} AS ({sql})" for i, (sql, _) in enumerate(along))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {ctes} {text}", [p for _, ps in along for p in ps] + list(params))
        return cursor.fetchall()


