"""Probes for load balancers and orchestrators: no auth, no templates, no sessions.

/healthz answers "should this process be restarted?" (it runs and reaches its database);
/readyz answers "should traffic come here?" (also the broker is reachable and the schema is
migrated). Both return JSON with one entry per check and 200, or 503 with Retry-After.
With WORKER_HEARTBEAT_MAX_AGE set (`manage.py serve` sets it for itself, compose for its web
service), /readyz also fails when no Celery worker has written its heartbeat for that long: a
worker that died quietly shows here, naming the worker.
/readyz also reports each read replica (DATABASE_REPLICA_URLS): "ok, N s behind", "lagging"
or "down"; neither of the last two fails it, since reads then go to the primary.
/readyz also says how far behind OTLP derivation is (traces waiting, the oldest's age, and
whether exports are refused for it); that fails no probe either: the API still serves, and the
OTLP endpoint answers 503 itself while the backlog is past its bound.
/metrics gives the same figures in Prometheus' text format (figures only, no names, no auth).
"""

import logging
import time
from collections.abc import Callable

from celery import current_app
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from contextstore import db_router, outage
from contextstore.selectors.otlp_backlog import otlp_backlog
from contextstore.selectors.workers import worker_last_heartbeat

logger = logging.getLogger(__name__)

BROKER_TIMEOUT_SECONDS = 2.0

# Once this process has seen every migration applied it stays so (a rollback of the schema
# under a running release is not a supported operation), so /readyz reads the migration files
# once per process instead of on every probe.
_migrations_seen_applied = False


class CheckFailed(Exception):
    """A failure described by our own words, safe to show to anyone."""


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def check_broker() -> str:
    # Without socket timeouts a broker that accepts but never answers would hang the probe
    # (and its gunicorn thread) for minutes; max_retries=0 fails on the first refusal instead
    # of sleeping between retries. The app is the project's (project/celery.py, made the
    # default app when Django's settings load), reached as Celery's current app, as the
    # services queue their tasks: contextstore imports nothing of the project package.
    options = {**current_app.conf.broker_transport_options,
               "socket_timeout": BROKER_TIMEOUT_SECONDS,
               "socket_connect_timeout": BROKER_TIMEOUT_SECONDS}
    with current_app.connection_for_write(connect_timeout=BROKER_TIMEOUT_SECONDS,
                                         transport_options=options) as conn:
        # kombu takes seconds as a float; celery-types' kombu stub says int
        conn.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_SECONDS)  # type: ignore[arg-type]
    return "ok"


def check_worker() -> str:
    limit = settings.WORKER_HEARTBEAT_MAX_AGE
    seen = worker_last_heartbeat()
    if seen is None:
        raise CheckFailed("no worker has written a heartbeat yet")
    age = (timezone.now() - seen).total_seconds()
    if age > limit:
        raise CheckFailed(f"no worker heartbeat for {age:.0f} s (limit {limit} s)")
    return f"ok, heartbeat {max(age, 0):.0f} s ago"


def check_migrations() -> str:
    global _migrations_seen_applied
    if _migrations_seen_applied:
        return "ok"
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise CheckFailed(f"{len(pending)} migration(s) not applied")
    _migrations_seen_applied = True
    return "ok"


def check_otlp_derivation() -> str:
    backlog = otlp_backlog()
    text = f"{backlog.traces} traces waiting, oldest {backlog.oldest_seconds:.0f} s"
    if backlog.over:
        return f"behind ({text}): past the {backlog.over} bound, OTLP exports answered 503"
    return f"ok, {text}"


def _run(checks: dict[str, Callable[[], str]]) -> JsonResponse:
    results: dict[str, str] = {}
    healthy = True
    for name, check in checks.items():
        started = time.perf_counter()
        try:
            results[name] = check()
        except Exception as exc:  # any failure is an answer (503), never a 500 page
            healthy = False
            # The probes need no login, so the answer names no host, user or URL; the log does.
            results[name] = (f"error: {exc}" if isinstance(exc, CheckFailed)
                             else f"error: {type(exc).__name__}")
            logger.warning("health check %s failed: %s", name, exc,
                           extra={"check": name, "seconds": time.perf_counter() - started})
    if healthy:
        return JsonResponse({"status": "ok", "checks": results})
    return JsonResponse({"status": "error", "checks": results}, status=503,
                        headers={"Retry-After": str(outage.RETRY_AFTER_SECONDS)})


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return _run({"database": check_database})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, Callable[[], str]] = {"database": check_database, "broker": check_broker,
                                             "migrations": check_migrations,
                                             "otlp_derivation": check_otlp_derivation}
    if settings.WORKER_HEARTBEAT_MAX_AGE > 0:
        checks["worker"] = check_worker
    # A replica down or lagging is reported, not a failure: its reads fall back to the primary.
    for alias in db_router.replica_aliases():
        checks[alias] = lambda alias=alias: db_router.check_replica(alias).describe()  # type: ignore[misc]
    return _run(checks)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' text exposition format: how far behind OTLP derivation is."""
    backlog = otlp_backlog()
    lines = []
    for name, kind, help_text, value in (
        ("contextstore_otlp_pending_traces", "gauge",
         "OTLP traces waiting for derivation (outbox rows, one per export and trace).", backlog.traces),
        ("contextstore_otlp_pending_oldest_seconds", "gauge",
         "Age of the oldest OTLP trace waiting for derivation.", round(backlog.oldest_seconds, 3)),
        ("contextstore_otlp_backpressure", "gauge",
         "1 while OTLP exports are answered 503 because derivation is past its bound.",
         int(bool(backlog.over))),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {value}"]
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; version=0.0.4; charset=utf-8")


PROBES: dict[str, Callable[[HttpRequest], HttpResponse]] = {"/healthz": healthz, "/readyz": readyz,
                                                             "/metrics": metrics}


class ProbeMiddleware:
    """Answers /healthz and /readyz whatever the Host header says.

    A probe addressed by IP (`curl http://127.0.0.1:8000/healthz`, an orchestrator calling the
    pod's or container's address) names a host that ALLOWED_HOSTS does not list, and Django's
    host check (request.get_host(), first called by CommonMiddleware) would answer 400. The
    probes read nothing from the host and need no session, CSRF or security header, so they
    are answered here, before any of that; every other path still goes through the check."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
