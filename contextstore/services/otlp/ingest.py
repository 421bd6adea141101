"""Keeping what an OTLP export sent: every span and log record raw, once per (trace id, span id)
(a log record once per its digest), and the traces it touched marked for derivation, in
short transactions of at most OTLP_STORE_CHUNK spans each. Deriving is a worker's
(`pending`). An exporter re-sending a batch, at any time later, changes nothing."""

import hashlib
import json
import logging

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from contextstore.db import COPY_THRESHOLD, copy_rows
from contextstore.models import OtelLog, OtelSpan, Workspace
from contextstore.otel.wire import LogRecord, Span
from contextstore.redaction import redact_each, use_workspace
from contextstore.services.common import Actor
from contextstore.services.otlp.pending import pending_mark, pending_publish

logger = logging.getLogger(__name__)
BATCH = 500


def spans_store(*, workspace: Workspace, spans: list[Span]) -> list[str]:
    """Keep the spans (a span already kept is left as it was), in the caller's transaction;
    returns the trace ids named."""
    rows: dict[tuple[str, str], OtelSpan] = {}
    now = timezone.now()
    rules = use_workspace(workspace)  # secrets out of the text a span carries, ids kept
    for s in spans:
        if (s.trace_id, s.span_id) not in rows:  # the first of a span sent twice at once
            name, status_message, attributes, events, links, resource = redact_each(
                rules, (s.name, s.status_message, s.attributes, s.events, s.links, s.resource))
            rows[(s.trace_id, s.span_id)] = OtelSpan(
                workspace=workspace, trace_id=s.trace_id, span_id=s.span_id,
                parent_span_id=s.parent_span_id, name=name, kind=s.kind,
                start_ns=min(s.start_ns, 2**63 - 1), end_ns=min(s.end_ns, 2**63 - 1),
                status_code=s.status_code, status_message=status_message,
                attributes=attributes, events=events, links=links, resource=resource,
                scope=s.scope, received_at=now)
    trace_ids = list(dict.fromkeys(s.trace_id for s in spans))
    if connection.vendor == "postgresql" and len(rows) >= COPY_THRESHOLD:
        # COPY costs a fifth of INSERT … ON CONFLICT for an export's spans, but cannot skip a
        # span already kept: those are left out first, and spans another export is keeping at
        # this moment (the same batch re-sent at once) send this one the slow way.
        kept = set(OtelSpan.objects.filter(workspace=workspace, trace_id__in=trace_ids)
                   .values_list("trace_id", "span_id"))
        try:
            with transaction.atomic():
                copy_rows([row for key, row in rows.items() if key not in kept])
            return trace_ids
        except IntegrityError:
            logger.info("spans of traces %s arrived twice at once", trace_ids[:5])
    OtelSpan.objects.bulk_create(list(rows.values()), batch_size=BATCH, ignore_conflicts=True)
    return trace_ids


def _digest(record: LogRecord) -> str:
    text = json.dumps([record.time_ns, record.event_name, record.body, record.attributes],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def logs_store(*, workspace: Workspace, records: list[LogRecord]) -> list[str]:
    """Keep the log records (one already kept is left), in the caller's transaction; returns
    the trace ids named. The digest is of the record as sent; its body and attributes are
    kept redacted."""
    rules = use_workspace(workspace)
    rows = []
    for r in records:
        body, attributes = redact_each(rules, (r.body, r.attributes))
        rows.append(OtelLog(workspace=workspace, trace_id=r.trace_id, span_id=r.span_id,
                            digest=_digest(r), time_ns=min(r.time_ns, 2**63 - 1),
                            event_name=r.event_name, body=body, attributes=attributes))
    OtelLog.objects.bulk_create(rows, batch_size=BATCH, ignore_conflicts=True)
    return list(dict.fromkeys(r.trace_id for r in records))


def export_ingest(*, workspace: Workspace, spans: list[Span] | None = None,
                  records: list[LogRecord] | None = None, actor: Actor) -> None:
    """One export, kept durably with its traces' outbox rows (an error reaches the caller, who
    answers 503 or 500, and the exporter retries the whole export, which changes nothing for
    what was kept already). A big export is kept in chunks of OTLP_STORE_CHUNK spans or records,
    each its own short transaction with its traces' outbox rows, so no transaction holds its
    locks (SQLite's one write lock among them) for the whole export. After the last commit a
    worker is asked to derive them; the exporter does not wait for it, nor for the broker."""
    chunk = max(1, settings.CONTEXTSTORE["OTLP_STORE_CHUNK"])
    # A trace's spans side by side, so most traces are kept (and marked) by one chunk.
    ordered_spans = sorted(spans or [], key=lambda s: s.trace_id)
    ordered_records = sorted(records or [], key=lambda r: r.trace_id)
    marked = False
    for start in range(0, max(len(ordered_spans), len(ordered_records)), chunk):
        with transaction.atomic():
            trace_ids = spans_store(workspace=workspace, spans=ordered_spans[start:start + chunk])
            trace_ids += logs_store(workspace=workspace, records=ordered_records[start:start + chunk])
            trace_ids = list(dict.fromkeys(trace_ids))
            pending_mark(workspace=workspace, trace_ids=trace_ids, token=actor.token)
        marked = marked or bool(trace_ids)
    if marked:
        transaction.on_commit(pending_publish)
