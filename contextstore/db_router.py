"""Read replicas (DATABASE_REPLICA_URLS) without breaking read-your-writes.

One rule decides: a request whose reads may lag is served from a healthy replica, everything
else from the primary. ReplicaMiddleware makes that choice per request and leaves it in a
context variable; ReplicaRouter reads it.

- Every write goes to the primary, and so does every read inside a transaction on it (a service
  reading what it is about to change: CAS checks, counters, select_for_update).
- Lag-tolerant: the dashboard's GET pages (lists, thread pages, search, exports, stats), the
  admin's index and lists (not its change forms), and the agent API's session list. Every
  other API read (a thread's events, context, state, renders, sync loads, revisions) is on the
  primary: an agent reads its own writes.
- A client that wrote (any POST, PUT, PATCH or DELETE) is pinned to the primary for
  REPLICA_MAX_LAG + 2 x REPLICA_CHECK_SECONDS seconds, longer than any replica in use can be
  behind: the pin is kept in Django's cache (CACHE_URL: Redis, so every web node agrees), keyed
  by a hash of the API token or of the dashboard's session cookie.
- A replica that is down or more than REPLICA_MAX_LAG seconds behind is skipped; its state is
  checked at most every REPLICA_CHECK_SECONDS per process. A request whose replica failed
  mid-way (gone, not a bug of the page) is answered again from the primary.
- Sessions, users, memberships, API tokens, share links and failed logins are always read from
  the primary: a login, a new token, a revoked membership, a revoked or expired share link and
  a login lockout take effect at once.
- Celery tasks, management commands and threads of their own never set the variable: primary.
"""

import hashlib
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger(__name__)

# The replica alias this request's lag-tolerant reads go to; None: the primary.
read_alias: ContextVar[str | None] = ContextVar("read_alias", default=None)

# Read from the primary whatever the request: who may see what, and the login (axes: the
# failed logins that lock one out).
PRIMARY_ONLY_APPS = frozenset({"sessions", "auth", "contenttypes", "admin", "axes"})
# A share link too: a revoked or expired link must stop opening at once, though the page it
# opens reads the rest from a replica.
PRIMARY_ONLY_MODELS = frozenset({"membership", "apitoken", "sharelink"})
# Paths never served from a replica (the probes check the primary themselves; login pages).
PRIMARY_PREFIXES = ("/api/", "/healthz", "/readyz", "/accounts/", "/oidc/", "/otlp/", "/static/")
# Agent API endpoints whose GET may lag (for a client that has not written lately).
LAG_TOLERANT_API = frozenset({"/api/v1/sessions/"})
ADMIN_LIST = re.compile(r"^/admin/(?:[\w-]+/){0,2}$")
LAG_QUERY = (
    "SELECT pg_is_in_recovery(), CASE WHEN NOT pg_is_in_recovery() THEN 0"
    # caught up (all WAL received is replayed): no lag, however long ago the last commit was
    " WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
    " ELSE EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()) END"
)


def replica_aliases() -> list[str]:
    return list(getattr(settings, "DATABASE_REPLICAS", []))


@dataclass(frozen=True)
class ReplicaState:
    alias: str
    up: bool
    lag: float | None  # seconds behind the primary; None when down
    checked: float  # time.monotonic()

    @property
    def usable(self) -> bool:
        return self.up and self.lag is not None and self.lag <= settings.REPLICA_MAX_LAG

    def describe(self) -> str:
        if not self.up:
            return "down (reads go to the primary)"
        lag = f"{self.lag:.1f} s behind"
        return f"ok, {lag}" if self.usable else f"lagging, {lag} (skipped)"


_states: dict[str, ReplicaState] = {}
_checking = threading.Lock()


def check_replica(alias: str) -> ReplicaState:
    """Ask the replica now how far behind it is; a failure to connect or query is "down"."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(LAG_QUERY)
            _in_recovery, lag = cursor.fetchone()
        state = ReplicaState(alias, True, max(float(lag or 0), 0.0), time.monotonic())
    except DatabaseError as exc:
        logger.warning("replica %s unavailable: %s", alias, exc)
        connections[alias].close()
        state = ReplicaState(alias, False, None, time.monotonic())
    _states[alias] = state
    return state


def replica_state(alias: str) -> ReplicaState:
    """The replica's state, checked at most every REPLICA_CHECK_SECONDS by this process (one
    thread checks; the others use the last answer meanwhile)."""
    state = _states.get(alias)
    if state is not None and time.monotonic() - state.checked < settings.REPLICA_CHECK_SECONDS:
        return state
    if state is not None and not _checking.acquire(blocking=False):
        return state
    if state is None:
        _checking.acquire()
    try:
        return check_replica(alias)
    finally:
        _checking.release()


def forget_states() -> None:
    _states.clear()


def choose_replica() -> ReplicaState | None:
    """A usable replica, at random among them; None: read from the primary."""
    usable = [state for alias in replica_aliases() if (state := replica_state(alias)).usable]
    return random.choice(usable) if usable else None  # noqa: S311 - load spreading, not security


def _pin_key(request: HttpRequest) -> str | None:
    """Who the request comes from: its bearer token, else its dashboard session cookie."""
    credential = request.headers.get("Authorization", "") or request.COOKIES.get(
        settings.SESSION_COOKIE_NAME, "")
    if not credential:
        return None
    return "replica-pin:" + hashlib.sha256(credential.encode()).hexdigest()[:32]


def _pinned(key: str) -> bool:
    """Whether the client wrote lately; when the cache cannot tell, it did (the primary is safe)."""
    try:
        return bool(cache.get(key))
    except Exception as exc:  # the cache server is down or slow
        logger.warning("could not read the replica pin, reading the primary: %s", exc)
        return True


def pin_seconds() -> int:
    return int(settings.REPLICA_MAX_LAG + 2 * settings.REPLICA_CHECK_SECONDS) + 1


def lag_tolerant(request: HttpRequest) -> bool:
    if request.method not in ("GET", "HEAD"):
        return False
    path = request.path
    if path in LAG_TOLERANT_API:
        return True
    if path.startswith("/admin/"):  # its lists; a change form is read from the primary it saves to
        return ADMIN_LIST.match(path) is not None
    return not path.startswith(PRIMARY_PREFIXES)


class ReplicaMiddleware:
    """Chooses where the request's lag-tolerant reads go (see the module); a no-op without
    replicas. Placed before DatabaseOutageMiddleware: a replica that failed mid-request shows
    here as a 5xx with a database error on its connection, and the request runs again on the
    primary."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not replica_aliases():
            return self.get_response(request)
        key = _pin_key(request)
        if not lag_tolerant(request):
            response = self.get_response(request)
            if request.method not in ("GET", "HEAD", "OPTIONS") and key is not None:
                # the session cookie may have changed (a login): pin the one the client now holds
                cookie = response.cookies.get(settings.SESSION_COOKIE_NAME)
                if cookie is not None and cookie.value and not request.headers.get("Authorization"):
                    request.COOKIES[settings.SESSION_COOKIE_NAME] = cookie.value
                    key = _pin_key(request)
                try:
                    cache.set(key, 1, pin_seconds())
                except Exception as exc:  # a cache outage must not fail a write that is done
                    logger.warning("could not pin a client to the primary: %s", exc)
            return response
        if key is not None and _pinned(key):
            return self.get_response(request)
        state = choose_replica()
        if state is None:
            return self.get_response(request)
        request.replica_lag = state.lag  # type: ignore[attr-defined]  # read by the dashboard's notice
        token = read_alias.set(state.alias)
        try:
            response = self.get_response(request)
        finally:
            read_alias.reset(token)
        if response.streaming and not response.is_async:  # type: ignore[attr-defined]
            # an export reads as it streams, after this returns: from the same replica
            response.streaming_content = _reading_from(  # type: ignore[attr-defined]
                state.alias, response.streaming_content)  # type: ignore[attr-defined]
        if response.status_code >= 500 and connections[state.alias].errors_occurred:
            connections[state.alias].close()
            if not check_replica(state.alias).up:  # gone, not a bug of the page: answer again
                logger.warning("replica %s failed during %s %s; answered from the primary",
                               state.alias, request.method, request.path)
                del request.replica_lag  # type: ignore[attr-defined]
                response = self.get_response(request)
        return response


def _reading_from(alias: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
    iterator = iter(chunks)
    while True:
        token = read_alias.set(alias)
        try:
            chunk = next(iterator)
        except StopIteration:
            return
        finally:
            read_alias.reset(token)
        yield chunk


class ReplicaRouter:
    """DATABASE_ROUTERS entry when replicas are configured."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        alias = read_alias.get()
        if alias is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return DEFAULT_DB_ALIAS
        meta = model._meta
        if meta.app_label in PRIMARY_ONLY_APPS or meta.model_name in PRIMARY_ONLY_MODELS:
            return DEFAULT_DB_ALIAS
        return alias

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, copied

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


def replica_lag(request: HttpRequest) -> dict[str, int | None]:
    """Context processor: whole seconds the replica serving this page is behind, when over 1."""
    lag = getattr(request, "replica_lag", None)
    return {"replica_lag": round(lag) if lag is not None and lag > 1 else None}
