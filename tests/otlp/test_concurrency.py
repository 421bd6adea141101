"""Exporters in several processes send the spans of the same traces at once, in different
orders, each span alone and some twice: every trace still ends as one thread, each message once."""

import json
import random
import threading

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from contextstore.models import Event, OtelPending, Session, Workspace
from contextstore.otel import wire
from contextstore.services.common import Actor
from contextstore.services.otlp import pending
from contextstore.services.otlp.ingest import export_ingest
from tests.processes import run_forked

from .conftest import fixture
from .test_dialects import CASES

TRACES = 4
WRITERS = 4


def traced(n: int) -> dict:
    """The golden semconv export as its own trace and conversation number n."""
    text = (json.dumps(fixture("semconv_current.json"))
            .replace("0af7651916cd43dd8448eb211c80319c", f"{n:032x}").replace("conv-semconv", f"conv-{n}"))
    return json.loads(text)


def _writer(workspace_pk: int, writer: int) -> None:
    connections.close_all()  # the child opens its own connection
    workspace = Workspace.objects.get(pk=workspace_pk)
    rng = random.Random(writer)
    for n in range(TRACES):
        body = traced(n + 1)
        spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
        rng.shuffle(spans)
        for span in spans + spans[:2]:  # the first two re-sent
            one = {"resourceSpans": [{**body["resourceSpans"][0], "scopeSpans": [
                {**body["resourceSpans"][0]["scopeSpans"][0], "spans": [span]}]}]}
            request = wire.parse(json.dumps(one).encode(), wire.JSON, wire.TraceRequest)
            export_ingest(workspace=workspace, spans=wire.spans_of(request).items,
                          actor=Actor.worker(f"exporter-{writer}"))
    connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_exporters_racing_on_the_same_traces_make_each_thread_once(workspace):
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs against PostgreSQL")
    run_forked(_writer, [(workspace.pk, w) for w in range(WRITERS)], timeout=180)
    keys = sorted(Session.objects.values_list("key", flat=True))
    assert keys == [f"conv-{n}" for n in range(1, TRACES + 1)]
    for session in Session.objects.all():
        shape = list(Event.objects.filter(thread__session=session).order_by("seq")
                     .values_list("type", "role", "content"))
        assert shape == CASES["semconv_current"]["events"], session.key


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_passes_claiming_at_once_take_rows_of_their_own(workspace):
    """N workers: a pass skips the rows another holds (SKIP LOCKED) and takes the next ones,
    in the round-robin order, rather than finding its candidates held and ending."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's")
    now = timezone.now()
    OtelPending.objects.bulk_create([OtelPending(workspace=workspace, trace_id=f"{n:032x}", due_at=now)
                                     for n in range(1, 8)])
    held, release, first = threading.Event(), threading.Event(), []

    def hold() -> None:
        try:
            with transaction.atomic():
                first.extend(row.pk for row in pending._claim(timezone.now(), 3))
                held.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    try:
        with transaction.atomic():
            second = [row.pk for row in pending._claim(timezone.now(), 3)]
    finally:
        release.set()
        holder.join()
    ids = list(OtelPending.objects.order_by("pk").values_list("pk", flat=True))
    assert (first, second) == (ids[:3], ids[3:6])
