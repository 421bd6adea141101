"""Deriving off the export's path: the outbox of OTLP derivation.

An export writes one OtelPending row per trace it touched, in the transaction that keeps its
spans; after commit it hands a message to the broker from the outbox's background thread
(contextstore.outbox), so the exporter never waits for derivation or for the broker. A worker's
pass (`pending_traces_derive`) takes every due row, derives each trace named once whatever
number of exports named it (coalescing), and deletes the rows it derived. Beat runs the same
pass every OTLP_DERIVE_RECOVER_EVERY seconds, so rows left by a crash between commit and
publish, a lost message or a dead worker are derived then. A pass that fails on a trace leaves
its rows, due again after a backoff; a database outage rolls the whole pass back.

A pass takes due rows round robin across workspaces (each workspace's oldest first), so one
workspace's backlog never holds back another's trace. Passes never wait for each other's
claims (SKIP LOCKED); two passes deriving the same trace are serialised by the trace's row
lock in `traces_derive`, and the later one reads every span committed before it began.
"""

import logging
import time
from collections import defaultdict
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Case, F, IntegerField, Value, When, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from contextstore.models import ApiToken, OtelPending, Workspace
from contextstore.outbox import publish_after_commit
from contextstore.services.common import Actor
from contextstore.services.otlp.derive import traces_derive

logger = logging.getLogger(__name__)
DERIVE_TASK = "contextstore.tasks.derive_otlp"  # registered by apps.ready
# Outbox rows one pass claims, in one transaction that holds its traces' locks (and, on SQLite,
# the database's one write lock, which exports wait for) until it commits; the task repeats
# passes while they come back full, for TASK_SECONDS at most, then queues a task for the rest (so
# the worker serves summaries between, and a backlog never waits for beat's pass).
PASS_ROWS = 25
# Passes that may claim at once without one finding every row it was shown held by the others.
CLAIM_SPREAD = 8
TASK_SECONDS = 60
MAX_BACKOFF = 3600


def pending_mark(*, workspace: Workspace, trace_ids: list[str], token: ApiToken | None) -> None:
    """Name the traces an export brought spans or records to, in the caller's transaction."""
    now = timezone.now()
    OtelPending.objects.bulk_create([OtelPending(workspace=workspace, trace_id=t, token=token, due_at=now)
                                     for t in trace_ids])


def pending_publish() -> None:
    """After the export commits: ask a worker for a pass, off the request's thread."""
    publish_after_commit(lambda _: send_derive(), None)


def send_derive() -> None:
    """Hand a pass to the broker (bounded waits, settings). A broker outage is only logged:
    the rows are kept and beat's pass derives them."""
    try:
        # By name through the Celery app: services sit below contextstore.tasks (import-linter).
        current_app.tasks[DERIVE_TASK].delay()
    except Exception:  # noqa: BLE001 - any broker failure; beat's pass recovers
        logger.exception("could not ask the broker for an OTLP derivation pass")


def pending_traces_derive(*, rows: int = PASS_ROWS) -> dict[str, int]:
    """Derive every trace the outbox names and is due, `rows` outbox rows a transaction; returns
    how many rows were taken, traces derived and traces that failed."""
    total = {"rows": 0, "traces": 0, "failed": 0}
    deadline = time.monotonic() + TASK_SECONDS
    while True:
        taken, done, failed = _pass(rows)
        total["rows"] += taken
        total["traces"] += done
        total["failed"] += failed
        if taken < rows:
            return total
        if time.monotonic() > deadline:
            # More is due: the rest is the next task's, queued behind whatever summary waits
            # (not left for the next export's or beat's, which may be half a minute away).
            send_derive()
            return total


def _fair_ids(now: datetime, limit: int) -> list[int]:
    """The due outbox rows a pass may take, round robin across workspaces: every workspace's
    oldest row first, then every workspace's second, and so on (ROW_NUMBER per workspace). A
    workspace's backlog of thousands of traces is shared with, never ahead of, another's one
    trace, which is taken by the very next pass."""
    rank = Window(RowNumber(), partition_by=[F("workspace_id")], order_by=F("pk").asc())
    return list(OtelPending.objects.filter(due_at__lte=now).annotate(rank=rank)
                .order_by("rank", "pk").values_list("pk", flat=True)[:limit])


def _claim(now: datetime, limit: int) -> list[OtelPending]:
    """Lock `limit` of the due rows, in their round-robin order, skipping those another pass
    holds (SKIP LOCKED): N workers' passes running at once each take rows of their own, the
    first the first `limit`, the next the `limit` after them, and so on (CLAIM_SPREAD passes at
    once before a pass finds the candidates it was shown all held; it then ends, and the next
    export's task or beat's starts it again). FOR UPDATE cannot go with a window function, so
    the candidates are chosen first and locked by key, in the order chosen."""
    ids = _fair_ids(now, limit * CLAIM_SPREAD)
    if not ids:
        return []
    order = Case(*[When(pk=pk, then=Value(n)) for n, pk in enumerate(ids)], output_field=IntegerField())
    rows = list(OtelPending.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(pk__in=ids, due_at__lte=now).select_related("workspace", "token")
                .order_by(order)[:limit])
    return sorted(rows, key=lambda row: row.pk)


def _pass(limit: int) -> tuple[int, int, int]:
    now = timezone.now()
    with transaction.atomic():
        claimed = _claim(now, limit)
        by_workspace: dict[int, list[OtelPending]] = defaultdict(list)
        for row in claimed:
            by_workspace[row.workspace_id].append(row)
        done, failed = 0, set()
        for group in by_workspace.values():
            token = next((row.token for row in group if row.token is not None), None)
            actor = Actor.for_token(token) if token is not None else Actor.worker("otlp")
            derived, failures = _derive(group[0].workspace, sorted({r.trace_id for r in group}), actor)
            done += derived
            failed |= {(group[0].workspace_id, t) for t in failures}
        retry = [r for r in claimed if (r.workspace_id, r.trace_id) in failed]
        kept = {r.pk for r in retry}
        gone = [r.pk for r in claimed if r.pk not in kept]
        for i in range(0, len(gone), 500):
            OtelPending.objects.filter(pk__in=gone[i:i + 500]).delete()
        for row in retry:  # due again later, twice as late each time
            wait = min(MAX_BACKOFF, settings.OTLP_DERIVE_BACKOFF * 2 ** row.attempts)
            row.attempts += 1
            row.due_at = now + timedelta(seconds=wait)
        OtelPending.objects.bulk_update(retry, ["attempts", "due_at"], batch_size=500)
    return len(claimed), done, len(failed)


def _derive(workspace: Workspace, trace_ids: list[str], actor: Actor) -> tuple[int, list[str]]:
    """Derive the traces together; when that raises outside a session's own derivation (a
    mapping bug while grouping them), one by one, so one bad trace holds back only itself."""
    try:
        with transaction.atomic():
            derived = traces_derive(workspace=workspace, trace_ids=trace_ids, actor=actor, safely=True)
        return derived.done, derived.failed
    except (OperationalError, InterfaceError):
        raise
    except Exception:  # noqa: BLE001 - logged; each trace is tried alone below
        logger.exception("otel traces could not be derived together; trying them one by one")
    done, failed = 0, []
    for trace_id in trace_ids:
        try:
            with transaction.atomic():
                derived = traces_derive(workspace=workspace, trace_ids=[trace_id], actor=actor, safely=True)
            done += derived.done
            failed += derived.failed
        except (OperationalError, InterfaceError):
            raise
        except Exception:  # noqa: BLE001 - the spans and the outbox row stay; retried later
            logger.exception("otel trace %s could not be derived; its spans are kept", trace_id)
            failed.append(trace_id)
    return done, failed
