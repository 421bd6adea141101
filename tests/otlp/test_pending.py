"""Derivation off the export's path: an export keeps its spans and marks its traces in one
transaction (the outbox), asks a worker after commit, and a worker's pass (queued per export,
and run by beat) derives each marked trace once, however many exports named it."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from contextstore import tasks
from contextstore.models import (
    AuditLog,
    Event,
    OtelPending,
    OtelSpan,
    OtelTrace,
    Run,
    Session,
    StoredText,
    Workspace,
)
from contextstore.services import history
from contextstore.services.otlp import derive, ingest, pending
from contextstore.services.otlp.pending import pending_traces_derive
from contextstore.services.workspaces import api_token_create
from project.celery import app
from tests.outage import losing_connection_on

from .conftest import TRACE, export, fixture, span
from .test_dialects import CASES
from .test_endpoint import CHAT


@pytest.fixture
def queued(settings, monkeypatch) -> list[int]:
    """No eager tasks: what the exports ask for after commit is only counted (a worker or beat,
    here the test, runs the pass)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False
    asked: list[int] = []
    monkeypatch.setattr(ingest, "pending_publish", lambda: asked.append(1))
    return asked


def parts(body: dict, *groups: list[int]) -> list[dict]:
    """The export `body` sent as one export per group of its span indexes."""
    spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return [{"resourceSpans": [{**body["resourceSpans"][0], "scopeSpans": [
        {**body["resourceSpans"][0]["scopeSpans"][0], "spans": [spans[i] for i in group]}]}]}
        for group in groups]


def shape() -> list[tuple[str, str, str]]:
    return list(Event.objects.order_by("seq").values_list("type", "role", "content"))


def test_an_export_keeps_its_spans_and_marks_its_trace_and_a_worker_is_asked_after_commit(otlp, queued):
    assert otlp(fixture("semconv_current.json")).status_code == 200
    assert OtelSpan.objects.count() == 5
    assert list(OtelPending.objects.values_list("trace_id", "attempts")) == [
        ("0af7651916cd43dd8448eb211c80319c", 0)]
    assert Event.objects.count() == 0  # not derived in the request
    assert queued == [1]


def test_the_mark_is_written_in_the_spans_transaction(otlp, queued):
    with connection.execute_wrapper(losing_connection_on("otelpending")):
        response = otlp(fixture("semconv_current.json"))
    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert (OtelSpan.objects.count(), OtelPending.objects.count(), queued) == (0, 0, [])


def test_a_crash_between_commit_and_publish_is_derived_by_beats_pass(otlp, queued, settings):
    assert otlp(fixture("semconv_current.json")).status_code == 200  # its message never sent
    assert settings.CELERY_BEAT_SCHEDULE["derive-otlp"]["task"] == tasks.derive_otlp.name
    assert tasks.derive_otlp.apply().get() == {"rows": 1, "traces": 1, "failed": 0}
    assert shape() == CASES["semconv_current"]["events"]
    assert OtelPending.objects.count() == 0
    assert OtelTrace.objects.get().mapped_at is not None


def test_many_exports_of_a_trace_are_derived_in_one_pass(otlp, queued, monkeypatch):
    sessions_derived = []
    real = derive._session_derive
    monkeypatch.setattr(derive, "_session_derive",
                        lambda **kw: sessions_derived.append(kw["key"]) or real(**kw))
    for body in parts(fixture("semconv_current.json"), [4], [1, 2], [3], [0]):
        assert otlp(body).status_code == 200
    assert len(queued) == OtelPending.objects.count() == 4
    assert pending_traces_derive() == {"rows": 4, "traces": 1, "failed": 0}
    assert sessions_derived == ["conv-semconv"]
    assert shape() == CASES["semconv_current"]["events"]
    assert pending_traces_derive() == {"rows": 0, "traces": 0, "failed": 0}


def test_a_batch_sent_again_after_derivation_changes_nothing(otlp, queued):
    body = fixture("semconv_current.json")
    assert otlp(body).status_code == 200
    pending_traces_derive()
    first = list(Event.objects.order_by("seq").values_list("pk", "seq", "type", "content"))
    assert otlp(body).status_code == 200
    assert pending_traces_derive() == {"rows": 1, "traces": 1, "failed": 0}
    assert list(Event.objects.order_by("seq").values_list("pk", "seq", "type", "content")) == first
    assert (OtelSpan.objects.count(), Session.objects.count(), OtelPending.objects.count()) == (5, 1, 0)


def test_a_failed_derivation_keeps_the_spans_and_the_mark_and_is_tried_again(otlp, queued, monkeypatch,
                                                                              settings):
    settings.OTLP_DERIVE_BACKOFF = 30
    real = derive.trace_events
    monkeypatch.setattr(derive, "trace_events", lambda trace: 1 / 0)
    assert otlp(fixture("semconv_current.json")).status_code == 200
    assert pending_traces_derive() == {"rows": 1, "traces": 0, "failed": 1}
    assert (OtelSpan.objects.count(), Event.objects.count()) == (5, 0)
    mark = OtelPending.objects.get()
    assert mark.attempts == 1
    assert timezone.now() + timedelta(seconds=25) < mark.due_at < timezone.now() + timedelta(seconds=31)
    assert pending_traces_derive()["rows"] == 0  # not due yet
    OtelPending.objects.update(due_at=timezone.now())
    assert pending_traces_derive() == {"rows": 1, "traces": 0, "failed": 1}
    mark = OtelPending.objects.get()
    assert mark.attempts == 2
    assert mark.due_at > timezone.now() + timedelta(seconds=55)  # twice as late

    monkeypatch.setattr(derive, "trace_events", real)  # the bug is fixed
    OtelPending.objects.update(due_at=timezone.now())
    assert tasks.derive_otlp.apply().get() == {"rows": 1, "traces": 1, "failed": 0}
    assert shape() == CASES["semconv_current"]["events"]
    assert OtelPending.objects.count() == 0


def test_a_trace_that_breaks_grouping_holds_back_only_itself(otlp, queued, monkeypatch):
    """A bug outside a session's own derivation (resolving the traces' sessions) fails the
    pass's whole group: its traces are then derived one by one."""
    real = derive._Trace.session_key

    def broken(trace):
        if trace.trace_id == "f" * 32:
            raise ValueError("a mapping bug")
        return real(trace)

    monkeypatch.setattr(derive._Trace, "session_key", broken)
    good = fixture("semconv_current.json")
    bad = {"resourceSpans": [{**good["resourceSpans"][0], "scopeSpans": [{"spans": [
        {**s, "traceId": "f" * 32} for s in good["resourceSpans"][0]["scopeSpans"][0]["spans"]]}]}]}
    assert otlp(good).status_code == otlp(bad).status_code == 200
    assert pending_traces_derive() == {"rows": 2, "traces": 1, "failed": 1}
    assert shape() == CASES["semconv_current"]["events"]
    assert list(OtelPending.objects.values_list("trace_id", "attempts")) == [("f" * 32, 1)]


def test_log_records_alone_wait_for_their_span_and_leave_no_mark(otlp, queued):
    record = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "timeUnixNano": "1760000001000000000", "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7", "eventName": "gen_ai.user.message",
        "body": {"kvlistValue": {"values": []}}}]}]}]}
    assert otlp(record, signal="logs").status_code == 200
    assert pending_traces_derive() == {"rows": 1, "traces": 0, "failed": 0}
    assert OtelPending.objects.count() == 0  # the span's export marks the trace again
    assert otlp(export()).status_code == 200  # an export without spans marks nothing
    assert OtelPending.objects.count() == 0


def many(n: int, *, first: int = 0) -> dict:
    """An export of n chat spans of one trace (enough for the COPY path on PostgreSQL)."""
    return export(*[span(f"{k + 1:016x}", "chat", {**CHAT, "gen_ai.conversation.id": "conv-many"},
                         start=k, end=k + 1) for k in range(first, first + n)])


def test_a_large_export_sent_again_and_overlapping_keeps_each_span_once(otlp):
    assert otlp(many(40)).status_code == 200
    first = list(OtelSpan.objects.order_by("span_id").values_list("pk", "span_id", "received_at"))
    events = shape()
    assert otlp(many(40)).status_code == 200
    assert otlp(many(40, first=20)).status_code == 200  # half known, half new
    spans = list(OtelSpan.objects.order_by("span_id").values_list("pk", "span_id", "received_at"))
    assert spans[:40] == first
    assert len(spans) == len({s[1] for s in spans}) == 60
    assert shape()[:len(events)] == events


@pytest.mark.postgres
def test_spans_kept_by_another_export_meanwhile_are_left_as_they_are(otlp):
    """A span kept by another export between this one's look and its COPY (PostgreSQL): the
    write falls back to skipping what is kept, row by row."""
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    body = many(30)
    done = []

    def meanwhile(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not done and sql.startswith('SELECT "contextstore_otelspan"."trace_id"'):
            done.append(1)
            OtelSpan.objects.create(workspace=Workspace.objects.get(), trace_id=TRACE,
                                    span_id=f"{1:016x}", name="the other export's")
        return result

    with connection.execute_wrapper(meanwhile):
        assert otlp(body).status_code == 200
    assert OtelSpan.objects.count() == 30
    assert OtelSpan.objects.get(span_id=f"{1:016x}").name == "the other export's"
    assert Event.objects.filter(type="LLMComplete").count() == 29  # that one is no chat span


def test_a_task_out_of_time_queues_the_next_for_what_is_left(otlp, queued, monkeypatch):
    for n in (1, 2, 3):
        body = fixture("semconv_current.json")
        for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{n:032x}"
        assert otlp(body).status_code == 200
    monkeypatch.setattr(pending, "TASK_SECONDS", -1)  # out of time after the first pass
    asked: list[int] = []
    monkeypatch.setattr(pending, "send_derive", lambda: asked.append(1))
    assert pending_traces_derive(rows=2) == {"rows": 2, "traces": 2, "failed": 0}
    assert (OtelPending.objects.count(), asked) == (1, [1])
    assert pending_traces_derive(rows=2) == {"rows": 1, "traces": 1, "failed": 0}
    assert asked == [1]  # a pass that was not full: nothing left to ask for


def test_a_backlog_is_derived_in_passes_of_a_bounded_size(otlp, queued):
    for n in (1, 2, 3):
        body = fixture("semconv_current.json")
        for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{n:032x}"
        assert otlp(body).status_code == 200
    assert pending_traces_derive(rows=2) == {"rows": 3, "traces": 3, "failed": 0}
    assert OtelTrace.objects.filter(mapped_at__isnull=False).count() == 3
    assert OtelPending.objects.count() == 0


def _stored(value):
    """Counters as the columns hold them (costs to their 6 decimal places)."""
    if isinstance(value, dict):
        return {k: _stored(v) for k, v in value.items()}
    return value.quantize(Decimal("0.000001")) if isinstance(value, Decimal) else value


def _derived(workspace: Workspace) -> dict:
    """Everything derivation wrote in a workspace, by session key, without ids or write times."""
    out = {}
    for session in Session.objects.filter(workspace=workspace):
        events = [(e.seq, e.type, e.role, e.content, e.parts, e.data, e.run.run_id if e.run else None,
                   e.is_error, e.token_count, e.occurred_at, e.client_id, e.payload_hash, e.status)
                  for e in Event.objects.filter(thread__session=session).select_related("run")
                  .order_by("seq")]
        runs = sorted(Run.objects.filter(thread__session=session).values_list(
            "run_id", "status", "error", "ended_at", "event_count", "input_tokens", "output_tokens", "cost"))
        started = sorted(Run.objects.filter(thread__session=session, status="completed")
                         .values_list("run_id", "started_at"))
        targets = (Q(target_type="session", target_id=str(session.pk))
                   | Q(target_type="thread", target_id__in=[str(pk) for pk in session.threads.values_list(
                       "pk", flat=True)])
                   | Q(target_type="run", target_id__in=[str(pk) for pk in Run.objects.filter(
                       thread__session=session).values_list("pk", flat=True)]))
        # (alone, a session's otel metadata is a second write, audited as session.update; made
        # together with others (sessions_create_many), the session is created with it)
        audits = sorted(AuditLog.objects.filter(targets, workspace=workspace)
                        .exclude(action="session.update").values_list("action", flat=True))
        assert _stored(history.counters_recount(session=session)) == _stored(
            history.counters_stored(session=session))
        out[session.key] = (session.user_id, session.agent, session.metadata, events, runs, started, audits,
                            {k: getattr(session, k) for k in history.SESSION_COUNTERS})
    out["texts"] = set(StoredText.objects.filter(workspace=workspace).values_list("sha256", flat=True))
    return out


def test_a_pass_of_new_conversations_writes_what_one_at_a_time_writes(otlp, queued, workspace, actor):
    """Sessions new in a pass are derived together (one insert of their events across threads,
    runs made and finished in bulk): the same events, runs, counters, texts and audit rows as
    deriving each trace in a pass of its own, and a pass again adds nothing."""
    bodies = []
    for n, name in enumerate(("semconv_current", "span_events", "flattened", "openinference"), 1):
        body = fixture(f"{name}.json")
        for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{n:032x}"
        bodies.append(body)
    for body in bodies:  # alone: each pass makes one session, derived on its own
        assert otlp(body).status_code == 200
        assert pending_traces_derive() == {"rows": 1, "traces": 1, "failed": 0}
    other = Workspace.objects.create(slug="together", name="together")
    _, raw = api_token_create(workspace=other, name="tests", scope="write", actor=actor)
    for body in bodies:
        assert otlp(body, auth=f"Bearer {raw}").status_code == 200
    calls = []
    real = history.events_add_many
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(history, "events_add_many", lambda **kw: calls.append(kw) or real(**kw))
        assert pending_traces_derive() == {"rows": 4, "traces": 4, "failed": 0}
    assert len(calls) == 1 and len(calls[0]["batches"]) == 4  # one insert for the four threads
    alone, together = _derived(workspace), _derived(other)
    assert together == alone
    assert len(together) == 5 and all(v[4] and v[4][0][1] == "completed" for k, v in together.items()
                                       if k != "texts")
    for body in bodies:  # re-sent: nothing more
        assert otlp(body, auth=f"Bearer {raw}").status_code == 200
    assert pending_traces_derive() == {"rows": 4, "traces": 4, "failed": 0}
    assert _derived(other) == together


def test_a_new_conversation_whose_events_cannot_be_made_holds_back_only_itself(otlp, queued, monkeypatch):
    real = derive.trace_events
    monkeypatch.setattr(derive, "trace_events",
                        lambda trace: 1 / 0 if trace.trace_id == f"{2:032x}" else real(trace))
    for n in (1, 2, 3):
        body = fixture("semconv_current.json")
        for s in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            s["traceId"] = f"{n:032x}"
            for a in s["attributes"]:
                if a["key"] == "gen_ai.conversation.id":
                    a["value"] = {"stringValue": f"conv-{n}"}
        assert otlp(body).status_code == 200
    assert pending_traces_derive() == {"rows": 3, "traces": 2, "failed": 1}
    assert list(OtelPending.objects.values_list("trace_id", flat=True)) == [f"{2:032x}"]
    derived = {s.key: s.event_count for s in Session.objects.all()}
    assert derived["conv-1"] == derived["conv-3"] == len(CASES["semconv_current"]["events"])
    monkeypatch.setattr(derive, "trace_events", real)
    OtelPending.objects.update(due_at=timezone.now())
    assert pending_traces_derive() == {"rows": 1, "traces": 1, "failed": 0}
    assert Session.objects.get(key="conv-2").event_count == len(CASES["semconv_current"]["events"])
