"""Reads behind framework sessions: lookups by identity, one-request reads, lists, blobs
(services/agent_sessions.py owns their writes)."""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import ExpressionWrapper, F, JSONField, Q, Subquery, TextField
from django.db.models.functions import Cast

from contextstore.db import PreparedGet, binary_cursor, read_together
from contextstore.errors import InvalidInput, NotFound
from contextstore.models import Event, ScopedState, Session, Thread, ThreadBlob, Workspace
from contextstore.selectors.threads import BIGINT_MAX

MAX_BLOBS_PER_COMMIT = 500


# The app scope and a user's scope, compiled once per process (db.PreparedGet): every commit
# and every session read reads them.
_SCOPES = PreparedGet(lambda workspace_id, app, user_id: ScopedState.objects.filter(
    Q(scope=ScopedState.Scope.APP, user_id="") | Q(scope=ScopedState.Scope.USER, user_id=user_id),
    workspace_id=workspace_id, app=app), text=(1, 2))


def scoped_states(*, workspace: Workspace, app: str, user_id: str) -> dict[str, ScopedState | None]:
    return _by_scope(_SCOPES.all(workspace.pk, app, user_id))


def _by_scope(rows: list[ScopedState]) -> dict[str, ScopedState | None]:
    found: dict[str, ScopedState | None] = {"app": None, "user": None}
    for row in rows:
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


_THREAD_BY_IDENTITY = PreparedGet(lambda workspace_id, app, user_id, key, name: (
    Thread.objects.select_related("session").filter(
        session__workspace_id=workspace_id, session__app=app, session__user_id=user_id,
        session__key=key, name=name)), text=(1, 2, 3, 4))


def session_thread(*, workspace: Workspace, identity: Identity) -> tuple[Session, Thread]:
    """The session and its thread named by the identity, in one read; NotFound naming which
    is missing, as session_find and thread_of do."""
    thread = _THREAD_BY_IDENTITY.get(workspace.pk, identity.app, identity.user_id, identity.key,
                                     identity.thread)
    if thread is None:
        thread_of(session_find(workspace=workspace, identity=identity), identity.thread)  # raises
        raise NotFound("No such session.", details={"key": identity.key})  # deleted meanwhile
    return thread.session, thread


# An event as session_read gives it: these columns by name (the run's id as run__run_id), read
# without building a model instance per row (a full read of 2,000 events spent most of its
# time in Event.__init__), and its parts and data as their stored JSON text (parts_text,
# data_text: the API sends them on as they are; parsing and re-encoding them took half the
# CPU of a full read).
EVENT_ROW_FIELDS = ("id", "seq", "position", "type", "role", "content", "call_id",
                    "step", "anchor", "client_id", "token_count", "visible", "status",
                    "collapse_id", "occurred_at", "created_at")
EVENT_ROW_TEXT = {"parts_text": ExpressionWrapper(F("parts"), output_field=TextField()),
                  "data_text": ExpressionWrapper(F("data"), output_field=TextField())}


BLOB_ROW_FIELDS = ("key", "data", "content_type", "meta", "size")

# An event's data may name the blobs it refers to, {"blob_refs": {"keys": [...], "prefixes":
# [...]}} (a LangGraph checkpoint: its serialized checkpoint, metadata, channel values and
# pending writes); a read with event_blobs returns those blobs with the events, in one request.
BLOB_REFS = "blob_refs"
MAX_BLOB_TERMS_PER_QUERY = 500  # keys and prefixes in one blob query


def event_blob_refs(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The blob keys and key prefixes the events' data (rows' data_text) name under BLOB_REFS
    (ill-formed entries are skipped: data is the writer's own)."""
    keys: dict[str, None] = {}
    prefixes: dict[str, None] = {}
    for row in rows:
        data = json.loads(row["data_text"]) if row["data_text"] is not None else None
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
    events: list[dict[str, Any]]  # EVENT_ROW_FIELDS, run__run_id and EVENT_ROW_TEXT, oldest first
    blobs: list[dict[str, Any]]  # BLOB_ROW_FIELDS


def session_read(
    *, workspace: Workspace, identity: Identity, limit: int | None = None,
    after: datetime | None = None, types: list[str] | None = None,
    client_id: str | None = None, data_contains: dict | None = None,
    blob_keys: list[str] | None = None, before_client_id: str | None = None,
    blob_prefixes: list[str] | None = None, event_blobs: bool = False,
    columns: list[str] | None = None,
) -> SessionRead:
    """Session, thread state, scoped states, newest `limit` history events (oldest first),
    optionally only those at or after `after`, and the blobs named by key or prefix, and with
    `event_blobs` those the returned events name (BLOB_REFS). Cost follows `limit`. `columns`
    reads only those of each event's row (of EVENT_ROW_FIELDS, run__run_id, EVENT_ROW_TEXT)."""
    check_identity(identity)
    # The thread and the scopes in one round trip (their values are known before either).
    who = (workspace.pk, identity.app, identity.user_id)
    threads, scope_rows = read_together((_THREAD_BY_IDENTITY, (*who, identity.key, identity.thread), 1),
                                        (_SCOPES, who, None))
    if threads:
        session, thread = threads[0].session, threads[0]
    else:  # NotFound naming which is missing (or the thread, made since)
        session, thread = session_thread(workspace=workspace, identity=identity)
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
        if not isinstance(data_contains, dict):
            raise InvalidInput("data_contains must be a JSON object.", details={"data_contains": "object"})
        qs = qs.annotate(data_json=Cast("data", JSONField())).filter(data_contains_q(data_contains))
    wanted = set(columns) | ({"data_text"} if event_blobs else set()) if columns is not None else None
    newest = qs.order_by("-seq").values(
        *(c for c in (*EVENT_ROW_FIELDS, "run__run_id") if wanted is None or c in wanted),
        **{c: e for c, e in EVENT_ROW_TEXT.items() if wanted is None or c in wanted})
    rows = list(newest[:limit] if limit is not None else newest)
    rows.reverse()
    keys, prefixes = list(blob_keys or []), list(blob_prefixes or [])
    if event_blobs:
        named, named_prefixes = event_blob_refs(rows)
        keys += named
        prefixes += named_prefixes
    blobs = thread_blobs(thread, keys, prefixes) if keys or any(prefixes) else []
    return SessionRead(session=session, thread=thread, scopes=_by_scope(scope_rows), events=rows, blobs=blobs)


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
