"""OTLP exports derived by a real worker process: on the embedded default (`make run`'s
filesystem queue) the events are there within 2 seconds of the exporter's answer; with Redis,
exports answered while no worker runs are derived when one starts, each thread once."""

import json
import time

import pytest
from django.test import Client

from contextstore.models import Event, OtelPending, Session
from tests.otlp.conftest import fixture
from tests.otlp.test_dialects import CASES
from tests.worker.conftest import wait_for

pytestmark = pytest.mark.worker
EXPECTED = CASES["semconv_current"]["events"]


def traced(n: int) -> dict:
    """The golden semconv export as its own trace and conversation number n."""
    text = (json.dumps(fixture("semconv_current.json"))
            .replace("0af7651916cd43dd8448eb211c80319c", f"{n:032x}").replace("conv-semconv", f"conv-{n}"))
    return json.loads(text)


def post(token: str, body: dict) -> None:
    response = Client().post("/otlp/v1/traces", data=json.dumps(body), content_type="application/json",
                             headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200


def shape(key: str) -> list[tuple[str, str, str]]:
    return list(Event.objects.filter(thread__session__key=key).order_by("seq")
                .values_list("type", "role", "content"))


def test_on_the_embedded_default_events_appear_within_two_seconds(make_fs_worker, token):
    make_fs_worker().start()
    for n in (1, 2, 3):
        post(token[1], traced(n))
        answered = time.monotonic()
        wait_for(lambda n=n: shape(f"conv-{n}") == EXPECTED, timeout=10, interval=0.05,
                 what=f"conversation {n}'s events")
        assert time.monotonic() - answered < 2
    assert OtelPending.objects.count() == 0


def test_exports_answered_while_no_worker_runs_are_derived_when_one_starts(make_worker, token):
    for n in (1, 2):
        spans = traced(n)["resourceSpans"][0]
        for span in reversed(spans["scopeSpans"][0]["spans"]):  # the root last, as exporters do
            post(token[1], {"resourceSpans": [{**spans, "scopeSpans": [{"spans": [span]}]}]})
    assert OtelPending.objects.count() == 10
    assert Event.objects.count() == 0
    make_worker().start()
    wait_for(lambda: OtelPending.objects.count() == 0, timeout=30, what="the outbox emptied")
    assert sorted(Session.objects.values_list("key", flat=True)) == ["conv-1", "conv-2"]
    assert shape("conv-1") == shape("conv-2") == EXPECTED
