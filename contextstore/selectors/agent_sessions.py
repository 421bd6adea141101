"""Reads behind framework sessions: lookups by identity, one-request reads, lists, blobs
(services/agent_sessions.py owns their writes)."""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import ExpressionWrapper, F, JSONField, Q, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from contextstore.db import PreparedGet, PreparedRows, binary_cursor, prepared_cursor
from contextstore.errors import InvalidInput, NotFound
from contextstore.fields import ESCAPE, NUL_SYMBOL, AgentTextField, text_from_stored
from contextstore.models import Event, ScopedState, Session, Thread, ThreadBlob, Workspace
from contextstore.selectors.threads import BIGINT_MAX

MAX_BLOBS_PER_COMMIT = 500


# The app scope and a user's scope, compiled once per process (db.PreparedGet): every commit
# and every session read reads them.
_SCOPES = PreparedGet(lambda workspace_id, app, user_id: ScopedState.objects.filter(
    Q(scope=ScopedState.Scope.APP, user_id="") | Q(scope=ScopedState.Scope.USER, user_id=user_id),
    workspace_id=workspace_id, app=app), text=(1, 2))


def scoped_states(*, workspace: Workspace, app: str, user_id: str) -> dict[str, ScopedState | None]:
    found: dict[str, ScopedState | None] = {"app": None, "user": None}
    for row in _SCOPES.all(workspace.pk, app, user_id):
        found[row.scope] = row
    return found


def scopes_for_users(*, workspace: Workspace, app: str, user_ids: set[str]) -> tuple[dict, dict[str, dict]]:
    """The app scope's state and the user scopes' states of the given users, in one query."""
    rows = ScopedState.objects.filter(
        Q(scope=ScopedState.Scope.APP, user_id="") | Q(scope=ScopedState.Scope.USER, user_id__in=user_ids),
        workspace=workspace, app=app)
    app_state: dict = {}
    users: dict[str, dict] = {}
    for row in rows:
        if row.scope == ScopedState.Scope.APP:
            app_state = row.state
        else:
            users[row.user_id] = row.state
    return app_state, users


def history_events(*, thread: Thread) -> Any:
    """The framework's own history: appended events not retracted, cleared or collapsed."""
    return Event.objects.filter(thread=thread, status=Event.Status.ACTIVE).select_related("run")


def data_contains_q(contains: dict[str, Any]) -> Q:
    """JSON containment on `data` that behaves the same on PostgreSQL and SQLite: every leaf
    of the given object must equal the event's value at the same path. Applies to a queryset
    annotated with `data_json` (data is stored as text, see fields.OrderedJSONField)."""
    q = Q()

    def walk(prefix: list[str], value: Any) -> None:
        nonlocal q
        if isinstance(value, dict) and value:
            for key, sub in value.items():
                if not key or "__" in key or not key.replace("_", "a").replace("-", "a").isalnum():
                    raise InvalidInput("data_contains keys must be plain names.",
                                       details={"data_contains": key})
                walk([*prefix, key], sub)
            return
        if not prefix:
            raise InvalidInput("data_contains must be a non-empty object.",
                               details={"data_contains": "object"})
        q &= Q(**{"data_json__" + "__".join(prefix): value})

    walk([], contains)
    return q


@dataclass(frozen=True)
class Identity:
    app: str
    user_id: str
    key: str
    thread: str = "main"


def check_identity(identity: Identity) -> None:
    for name, value, limit in (("app", identity.app, 200), ("user_id", identity.user_id, 255),
                               ("key", identity.key, 255), ("thread", identity.thread, 200)):
        if not isinstance(value, str) or len(value) > limit:
            raise InvalidInput(f"{name} must be a string of at most {limit} characters.",
                               details={name: f"at most {limit} characters"})
    if not identity.key:
        raise InvalidInput("key is required.", details={"key": "required"})
    if not identity.thread:
        raise InvalidInput("thread is required.", details={"thread": "required"})


# Lookups by identity, compiled once per process (db.PreparedGet): every read runs them.
_SESSION = PreparedGet(lambda workspace_id, app, user_id, key: Session.objects.filter(
    workspace_id=workspace_id, app=app, user_id=user_id, key=key), text=(1, 2, 3))
_THREAD = PreparedGet(lambda session_id, name: Thread.objects.filter(session_id=session_id, name=name),
                      text=(1,))


def session_find(*, workspace: Workspace, identity: Identity) -> Session:
    """Exact lookup by (app, user_id, key); never creates."""
    session = _SESSION.get(workspace.pk, identity.app, identity.user_id, identity.key)
    if session is None:
        raise NotFound("No such session.", details={"key": identity.key})
    return session


def thread_of(session: Session, name: str) -> Thread:
    thread = _THREAD.get(session.pk, name)
    if thread is None:
        raise NotFound(f"The session has no thread {name!r}.", details={"thread": name})
    return thread


def _by_identity(workspace_id: Any, app: Any, user_id: Any, key: Any, name: Any) -> QuerySet:
    return Thread.objects.select_related("session").filter(
        session__workspace_id=workspace_id, session__app=app, session__user_id=user_id,
        session__key=key, name=name)


_THREAD_BY_IDENTITY = PreparedGet(_by_identity, text=(1, 2, 3, 4))


def _scope_of(scope: str, field: str, workspace_id: Any, app: Any, user_id: Any) -> Subquery:
    return Subquery(ScopedState.objects.filter(workspace_id=workspace_id, app=app, scope=scope,
                                               user_id=user_id).values(field)[:1])


# A session read's thread and session with the app's and the user's scoped states beside them
# (subqueries by the same identity): one statement where there were two.
_THREAD_AND_SCOPES = PreparedGet(lambda workspace_id, app, user_id, key, name: (
    _by_identity(workspace_id, app, user_id, key, name).annotate(**{
            f"{scope}_{field}": _scope_of(scope, field, workspace_id, app,
                                          "" if scope == ScopedState.Scope.APP else user_id)
            for scope in (ScopedState.Scope.APP, ScopedState.Scope.USER)
            for field in ("state", "revision")})),
    text=(1, 2, 3, 4))


def session_thread(*, workspace: Workspace, identity: Identity) -> tuple[Session, Thread]:
    """The session and its thread named by the identity, in one read; NotFound naming which
    is missing, as session_find and thread_of do."""
    thread = _named_thread(_THREAD_BY_IDENTITY, workspace, identity)
    return thread.session, thread


def _named_thread(read: PreparedGet, workspace: Workspace, identity: Identity) -> Thread:
    """The identity's thread (its session selected) by `read`; NotFound naming which is missing."""
    thread = read.get(workspace.pk, identity.app, identity.user_id, identity.key, identity.thread)
    if thread is None:
        thread_of(session_find(workspace=workspace, identity=identity), identity.thread)  # raises
        raise NotFound("No such session.", details={"key": identity.key})  # deleted meanwhile
    return thread


# An event as session_read gives it: these columns by name (the run's id as run__run_id), read
# as plain rows from the cursor, without building a model instance or a dict per row (a full
# read of 2,000 events spent most of its time in Event.__init__, then in the ORM's values()
# iteration), and its parts and data as their stored JSON text (parts_text, data_text: the API
# sends them on as they are; parsing and re-encoding them took half the CPU of a full read).
EVENT_ROW_FIELDS = ("id", "seq", "position", "type", "role", "content", "call_id",
                    "step", "anchor", "client_id", "token_count", "visible", "status",
                    "collapse_id", "occurred_at", "created_at")
EVENT_ROW_TEXT = {"parts_text": ExpressionWrapper(F("parts"), output_field=TextField()),
                  "data_text": ExpressionWrapper(F("data"), output_field=TextField())}
EVENT_ROW_COLUMNS = (*EVENT_ROW_FIELDS, "run__run_id", *EVENT_ROW_TEXT)


BLOB_ROW_FIELDS = ("key", "data", "content_type", "meta", "size")

# An event's data may name the blobs it refers to, {"blob_refs": {"keys": [...], "prefixes":
# [...]}} (a LangGraph checkpoint: its serialized checkpoint, metadata, channel values and
# pending writes); a read with event_blobs returns those blobs with the events, in one request.
BLOB_REFS = "blob_refs"
MAX_BLOB_TERMS_PER_QUERY = 500  # keys and prefixes in one blob query


def event_blob_refs(texts: list[str | None]) -> tuple[list[str], list[str]]:
    """The blob keys and key prefixes the events' data (their data_text) name under BLOB_REFS
    (ill-formed entries are skipped: data is the writer's own)."""
    keys: dict[str, None] = {}
    prefixes: dict[str, None] = {}
    for text in texts:
        data = json.loads(text) if text is not None else None
        refs = data.get(BLOB_REFS) if isinstance(data, dict) else None
        if not isinstance(refs, dict):
            continue
        for name, out in (("keys", keys), ("prefixes", prefixes)):
            values = refs.get(name)
            if isinstance(values, list):
                out.update((v, None) for v in values if isinstance(v, str) and v)
    return list(keys), list(prefixes)


def _key_range(prefix: str) -> tuple[str, str] | None:
    """The keys starting with `prefix` as [low, high) (see key_prefix_q); None past U+10FFFF."""
    after = ord(prefix[-1]) + 1
    if after > 0x10FFFF:
        return None
    if 0xD800 <= after <= 0xDFFF:  # surrogates are no characters: U+D7FF is followed by U+E000
        after = 0xE000
    return prefix, prefix[:-1] + chr(after)


def key_prefix_q(prefix: str) -> Q:
    """Keys starting with `prefix`, as a range of the (thread, key) index: keys compare byte for
    byte (code point order) on both databases (SQLite's BINARY, collation "C" on PostgreSQL),
    so they are those from the prefix up to the prefix with its last character's successor."""
    bounds = _key_range(prefix)
    if bounds is None:
        return Q(key__startswith=prefix)
    return Q(key__gte=bounds[0], key__lt=bounds[1])


def _blobs_sql(thread_id: int, keys: list[str], ranges: list[tuple[str, str]]) -> tuple[str, list[Any]]:
    """The read of a thread's blobs by key and key range, written here: the ORM compiled a
    checkpoint read's filter (a key list and a range) in more time than the database ran it."""
    quote = connection.ops.quote_name
    column = {f.name: quote(str(f.column)) for f in ThreadBlob._meta.concrete_fields}
    wanted = ([f"{column['key']} IN ({', '.join(['%s'] * len(keys))})"] if keys else []) + [
        f"({column['key']} >= %s AND {column['key']} < %s)"] * len(ranges)
    return (f"SELECT {', '.join(column[name] for name in BLOB_ROW_FIELDS)} FROM "
            f"{quote(ThreadBlob._meta.db_table)} WHERE {column['thread']} = %s AND ({' OR '.join(wanted)})",
            [thread_id, *keys, *(bound for pair in ranges for bound in pair)])


_BLOB_META = ThreadBlob._meta.get_field("meta")


def thread_blobs(thread: Thread, keys: list[str], prefixes: list[str]) -> list[dict[str, Any]]:
    """The thread's blobs with these keys or starting with one of these prefixes, by key, as
    rows of BLOB_ROW_FIELDS; one query per MAX_BLOB_TERMS_PER_QUERY keys and prefixes."""
    terms = [("key", k) for k in keys] + [("prefix", p) for p in prefixes if p]
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(terms), MAX_BLOB_TERMS_PER_QUERY):
        chunk = terms[start:start + MAX_BLOB_TERMS_PER_QUERY]
        ranges = [_key_range(v) for kind, v in chunk if kind == "prefix"]
        if None in ranges:  # a prefix ending in U+10FFFF: the ORM's LIKE
            wanted = Q(key__in=[v for kind, v in chunk if kind == "key"])
            for kind, value in chunk:
                if kind == "prefix":
                    wanted |= key_prefix_q(value)
            found.update((row["key"], row) for row in
                         ThreadBlob.objects.filter(wanted, thread=thread).values(*BLOB_ROW_FIELDS))
            continue
        # On PostgreSQL the bytes come back as they are (binary results), not as hex text.
        postgresql = connection.vendor == "postgresql"
        with binary_cursor(results=True) if postgresql else connection.cursor() as cursor:
            cursor.execute(*_blobs_sql(thread.pk, [v for kind, v in chunk if kind == "key"],
                                       [r for r in ranges if r is not None]))
            for key, data, content_type, meta, size in cursor.fetchall():
                found[key] = {"key": key, "data": data, "content_type": content_type, "size": size,
                              "meta": _BLOB_META.from_db_value(meta, None, connection)}
    return [found[key] for key in sorted(found)]


@dataclass
class SessionRead:
    session: Session
    thread: Thread
    scopes: dict[str, ScopedState | None]
    events: list[Sequence[Any]]  # rows of `columns`' values, oldest first
    blobs: list[dict[str, Any]]  # BLOB_ROW_FIELDS
    columns: tuple[str, ...] = EVENT_ROW_COLUMNS  # the events' columns, in their rows' order


# A read of events: its SQL, its params and its columns' converters by position; made for a
# range of seqs: "all", "above" or "below" a floor, with a limit or none (_newest).
Statement = tuple[str, list[Any], dict[int, tuple[list[Any], Any]]]


def _orm_statement(qs: QuerySet, bound: str, floor: int, limit: int | None) -> Statement | None:
    """A values_list() query's statement for a range of it (None: it matches nothing)."""
    if bound != "all":
        qs = qs.filter(**{"seq__gt" if bound == "above" else "seq__lte": floor})
    if limit is not None:
        qs = qs[:limit]
    compiler = qs.query.get_compiler(using=qs.db)
    try:
        text, params = compiler.as_sql()
    except EmptyResultSet:
        return None
    return text, list(params), compiler.get_converters([s[0] for s in compiler.select[:compiler.col_count]])


# The reads adapters make (every field or some, of ADK's event types or all, the newest N),
# compiled once per process and shape (db.PreparedRows): building and compiling the query with
# the ORM cost 0.4-0.8 ms of every read, a fifth of a get_items(limit=20).
# The shapes are the callers' (any fields in any order): past MAX_COMPILED shapes, a read is
# built by the ORM, so no caller can grow the cache without bound.
_COMPILED: dict[tuple[tuple[str, ...], int, str], PreparedRows] = {}
MAX_COMPILED = 64
MAX_COMPILED_TYPES = len(PreparedRows.STAND_INS) - 2  # the thread and the seq floor beside them


def _compiled_events(read: tuple[str, ...], types: int, bound: str) -> PreparedRows | None:
    prepared = _COMPILED.get((read, types, bound))
    if prepared is None:
        if len(_COMPILED) >= MAX_COMPILED or types > MAX_COMPILED_TYPES:
            return None
        def build(thread_id: Any, *values: Any) -> QuerySet:
            qs = Event.objects.filter(thread_id=thread_id, status=Event.Status.ACTIVE)
            if types:
                qs = qs.filter(type__in=values[:types])
            if bound != "all":
                qs = qs.filter(**{"seq__gt" if bound == "above" else "seq__lte": values[types]})
            return (qs.annotate(**{c: e for c, e in EVENT_ROW_TEXT.items() if c in read})
                    .order_by("-seq").values_list(*read))
        prepared = _COMPILED[(read, types, bound)] = PreparedRows(build, text=tuple(range(1, types + 1)))
    return prepared


def _compiled_statement(thread: Thread, read: tuple[str, ...], types: list[str], bound: str, floor: int,
                        limit: int | None, *, otherwise: Callable[[str, int, int | None], Statement | None],
                        ) -> Statement | None:
    prepared = _compiled_events(read, len(types), bound)
    if prepared is None:
        return otherwise(bound, floor, limit)
    values = (thread.pk, *types, *((floor,) if bound != "all" else ()))
    compiled, text, params = prepared.statement(*values, limit=limit)
    return text, params, dict(compiled[-1])


def _event_rows(statement: Statement | None) -> list[Sequence[Any]]:
    """The rows of an events statement as the cursor gives them, through the columns' own
    converters only where the database needs them (on PostgreSQL the content's unescaping
    alone, looked for inline: a call per row cost 0.5 µs; SQLite's booleans and dates too): the
    ORM's row iteration, a generator per value, cost more than the query on a read of thousands
    of events."""
    if statement is None:
        return []
    text, params, converters = statement
    with prepared_cursor() as cursor:
        cursor.execute(text, params)
        rows: list[Sequence[Any]] = cursor.fetchall()
    converters = dict(converters)
    for pos, (convs, expression) in list(converters.items()):
        if len(convs) == 1 and isinstance(expression.output_field, AgentTextField):  # its own alone
            del converters[pos]
            rows = [row if NUL_SYMBOL not in row[pos] and ESCAPE not in row[pos]
                    else [*row[:pos], text_from_stored(row[pos]), *row[pos + 1:]] for row in rows]
    if not converters:
        return rows
    converted: list[Sequence[Any]] = []
    for row in rows:
        cells = list(row)
        for pos, (convs, expression) in converters.items():
            for converter in convs:
                cells[pos] = converter(cells[pos], expression, connection)
        converted.append(cells)
    return converted


def _newest(statement: Callable[[str, int, int | None], Statement | None], thread: Thread,
            limit: int | None, *, filtered: bool) -> list[Sequence[Any]]:
    """The newest `limit` rows (newest first) of the read `statement(bound, floor, limit)` makes,
    all without a limit. A limited read of the unfiltered history looks first among the
    thread's last `limit` seqs (seq is gap-free: the newest `limit` events lie there unless some
    left the history), so it reads that many index entries and rows whatever the planner
    believes of the thread's size (on a table whose statistics lag, it sorted the whole thread
    for the newest 20); what it lacks it reads below. A filtered read (LangGraph's newest
    checkpoint among its messages) would mostly lack some, so it reads as before."""
    if limit is None:
        return _event_rows(statement("all", 0, None))
    if limit == 0:
        return []
    floor = thread.last_seq - limit
    if floor <= 0 or filtered:
        return _event_rows(statement("all", 0, limit))
    rows = _event_rows(statement("above", floor, limit))
    if len(rows) < limit:
        rows += _event_rows(statement("below", floor, limit - len(rows)))
    return rows


def _history_query(thread: Thread, *, after: datetime | None, types: list[str] | None,
                   client_id: str | None, before_client_id: str | None,
                   data_contains: dict | None) -> QuerySet:
    qs = history_events(thread=thread)
    if after is not None:
        qs = qs.filter(occurred_at__gte=after)
    if types:
        qs = qs.filter(type__in=types)
    if client_id is not None:
        qs = qs.filter(client_id=client_id)
    if before_client_id is not None:
        # Older than the event with that client id (LangGraph's list(before=...)).
        bound = Event.objects.filter(thread=thread, client_id=before_client_id).values_list("seq", flat=True)
        qs = qs.filter(seq__lt=Subquery(bound[:1]))
    if data_contains is not None:
        qs = qs.annotate(data_json=Cast("data", JSONField())).filter(data_contains_q(data_contains))
    return qs


def session_read(
    *, workspace: Workspace, identity: Identity, limit: int | None = None,
    after: datetime | None = None, types: list[str] | None = None,
    client_id: str | None = None, data_contains: dict | None = None,
    blob_keys: list[str] | None = None, before_client_id: str | None = None,
    blob_prefixes: list[str] | None = None, event_blobs: bool = False,
    columns: Sequence[str] | None = None,
) -> SessionRead:
    """Session, thread state, scoped states, newest `limit` history events (oldest first),
    optionally only those at or after `after`, and the blobs named by key or prefix, and with
    `event_blobs` those the returned events name (BLOB_REFS). Cost follows `limit`. `columns`
    reads only those of each event's row (of EVENT_ROW_COLUMNS), in that order."""
    check_identity(identity)
    thread = _named_thread(_THREAD_AND_SCOPES, workspace, identity)
    session = thread.session
    scopes: dict[str, ScopedState | None] = {
        scope: None if getattr(thread, f"{scope}_revision") is None else ScopedState(
            workspace=workspace, app=identity.app, scope=scope, state=getattr(thread, f"{scope}_state"),
            revision=getattr(thread, f"{scope}_revision"),
            user_id="" if scope == ScopedState.Scope.APP else identity.user_id)
        for scope in (ScopedState.Scope.APP, ScopedState.Scope.USER)}
    if data_contains is not None:
        if not isinstance(data_contains, dict):
            raise InvalidInput("data_contains must be a JSON object.", details={"data_contains": "object"})
        data_contains_q(data_contains)  # refused before any read, whatever the limit
    read = tuple(dict.fromkeys(columns)) if columns is not None else EVENT_ROW_COLUMNS
    if event_blobs and "data_text" not in read:
        read += ("data_text",)

    def by_the_orm(*range_: Any) -> Statement | None:
        newest = _history_query(thread, after=after, types=types, client_id=client_id,
                                before_client_id=before_client_id, data_contains=data_contains)
        return _orm_statement(newest.annotate(**{c: e for c, e in EVENT_ROW_TEXT.items() if c in read})
                              .order_by("-seq").values_list(*read), *range_)

    if after is None and client_id is None and before_client_id is None and data_contains is None:
        rows = _newest(lambda *range_: _compiled_statement(thread, read, types or [], *range_,
                                                           otherwise=by_the_orm),
                       thread, limit, filtered=bool(types))
    else:
        rows = _newest(by_the_orm, thread, limit, filtered=True)
    rows.reverse()
    keys, prefixes = list(blob_keys or []), list(blob_prefixes or [])
    if event_blobs:
        named, named_prefixes = event_blob_refs([row[read.index("data_text")] for row in rows])
        keys += named
        prefixes += named_prefixes
    blobs = thread_blobs(thread, keys, prefixes) if keys or any(prefixes) else []
    return SessionRead(session=session, thread=thread, scopes=scopes, events=rows, blobs=blobs,
                       columns=read)


def sessions_list(
    *, workspace: Workspace, app: str, user_id: str | None = None, thread: str = "main",
    cursor: str | None = None, limit: int = 50,
) -> tuple[list[tuple[Session, Thread | None]], str | None]:
    """Sessions of an app (and user), newest activity first, each with its thread's state.

    The cursor is the (last_activity_at, id) of the last row of the previous page."""
    qs = Session.objects.filter(workspace=workspace, app=app)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if cursor:
        # A cursor this API did not give out names no page: 404, as DRF's CursorPagination
        # answers on every other list.
        try:
            stamp, _, pk = cursor.rpartition("|")
            at = datetime.fromisoformat(stamp)
            last_pk = int(pk)
        except ValueError:
            last_pk = 0
        if not 0 < last_pk <= BIGINT_MAX:
            raise NotFound("cursor is not one this API gave out.", details={"cursor": cursor})
        qs = qs.filter(Q(last_activity_at__lt=at) | Q(last_activity_at=at, id__lt=last_pk))
    page = list(qs.order_by("-last_activity_at", "-id")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    threads = {t.session_id: t for t in Thread.objects.filter(session__in=page, name=thread)}
    next_cursor = f"{page[-1].last_activity_at.isoformat()}|{page[-1].pk}" if more else None
    return [(s, threads.get(s.pk)) for s in page], next_cursor


def blobs_get(*, workspace: Workspace, identity: Identity, keys: list[str],
              prefixes: list[str] | None = None) -> list[dict[str, Any]]:
    """The blobs with the given keys or starting with one of the prefixes, by key, as rows of
    BLOB_ROW_FIELDS (a list of a thread's every checkpoint reads thousands)."""
    if len(keys) + len(prefixes or []) > MAX_BLOBS_PER_COMMIT:
        raise InvalidInput(f"At most {MAX_BLOBS_PER_COMMIT} keys and prefixes.", details={"blob": "too many"})
    _, thread = session_thread(workspace=workspace, identity=identity)
    return thread_blobs(thread, keys, prefixes or [])
