"""Back-pressure: while derivation is further behind than its bound (traces waiting, or the
oldest's age), an export is refused with 503 + Retry-After in OTLP's error shape and nothing of
it is kept; once the workers catch up it is taken again. /readyz and /metrics say how far behind."""

import json
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from google.rpc.status_pb2 import Status

from contextstore.models import OtelPending, OtelSpan
from contextstore.otel import wire
from contextstore.services.otlp.pending import pending_traces_derive

from .conftest import export, span
from .test_endpoint import CHAT, PROTOBUF, sdk_protobuf
from .test_pending import queued  # noqa: F401 - the fixture


def chat(trace_id: str) -> dict:
    return export(span("a" * 16, "chat gpt-4o", CHAT, trace_id=trace_id))


@pytest.fixture
def bound(settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_BACKLOG_MAX_TRACES": 2,
                             "OTLP_BACKLOG_MAX_AGE": 0, "OTLP_BACKLOG_RETRY_AFTER": 7}
    return settings


def test_an_export_past_the_bound_is_503_with_retry_after_and_nothing_kept(otlp, queued, bound):  # noqa: F811
    for n in range(3):
        assert otlp(chat(f"{n + 1:032x}")).status_code == 200
    kept = (OtelSpan.objects.count(), OtelPending.objects.count())
    assert kept == (3, 3)

    refused = otlp(chat("f" * 32))
    assert refused.status_code == 503
    assert refused["Retry-After"] == "7"
    assert refused["Content-Type"] == "application/json"
    body = json.loads(refused.content)
    assert body["code"] == wire.UNAVAILABLE and "behind" in body["message"]
    assert (OtelSpan.objects.count(), OtelPending.objects.count()) == kept

    refused = otlp(sdk_protobuf(), content_type=PROTOBUF)  # protobuf asks a protobuf Status
    assert refused.status_code == 503
    status = Status.FromString(refused.content)
    assert status.code == wire.UNAVAILABLE and "retry later" in status.message
    assert (OtelSpan.objects.count(), OtelPending.objects.count()) == kept


def test_it_is_taken_again_once_derivation_catches_up(otlp, queued, bound):  # noqa: F811
    for n in range(3):
        otlp(chat(f"{n + 1:032x}"))
    assert otlp(chat("f" * 32)).status_code == 503
    assert pending_traces_derive()["traces"] == 3
    assert otlp(chat("f" * 32)).status_code == 200
    assert OtelPending.objects.get().trace_id == "f" * 32


def test_the_oldest_trace_waiting_too_long_is_a_bound_too(otlp, queued, settings):  # noqa: F811
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_BACKLOG_MAX_TRACES": 0,
                             "OTLP_BACKLOG_MAX_AGE": 60}
    assert otlp(chat("1" * 32)).status_code == 200
    assert otlp(chat("2" * 32)).status_code == 200
    first = OtelPending.objects.order_by("pk").first()
    OtelPending.objects.filter(pk=first.pk).update(created_at=first.created_at - timedelta(seconds=61))
    assert otlp(chat("3" * 32)).status_code == 503
    # a trace whose derivation failed waits its backoff without holding the exports back
    OtelPending.objects.filter(pk=first.pk).update(attempts=1)
    assert otlp(chat("3" * 32)).status_code == 200


def test_readyz_and_metrics_say_how_far_behind_derivation_is(client, otlp, queued, bound):  # noqa: F811
    for n in range(3):
        otlp(chat(f"{n + 1:032x}"))
    # 90 s old from now (not from the first export, which a loaded machine may have taken seconds to store)
    OtelPending.objects.update(created_at=timezone.now() - timedelta(seconds=90))
    ready = client.get("/readyz")
    assert ready.status_code == 200  # the API still serves: reported, not a failure
    assert re.fullmatch(r"behind \(3 traces waiting, oldest 9[0-4] s\): past the traces bound, "
                        r"OTLP exports answered 503", ready.json()["checks"]["otlp_derivation"])
    metrics = client.get("/metrics")
    assert metrics.status_code == 200
    assert metrics["Content-Type"].startswith("text/plain; version=0.0.4")
    figures = dict(line.split() for line in metrics.content.decode().splitlines()
                   if not line.startswith("#"))
    assert figures["contextstore_otlp_pending_traces"] == "3"
    assert 90 <= float(figures["contextstore_otlp_pending_oldest_seconds"]) < 95
    assert figures["contextstore_otlp_backpressure"] == "1"

    pending_traces_derive()
    assert client.get("/readyz").json()["checks"]["otlp_derivation"] == "ok, 0 traces waiting, oldest 0 s"
    assert "contextstore_otlp_backpressure 0\n" in client.get("/metrics").content.decode()
