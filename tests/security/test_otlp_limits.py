"""Finding 3 ("no workspace can starve another"): OTLP had no rate limit and no cap. A token
already answered 429 on the API had more OTLP exports accepted, and one 380,000-span export
held a web thread and one transaction for 109 s. Now OTLP counts in the API's own per-token
window (429 + Retry-After, a google.rpc.Status body in the request's encoding), an export over
OTLP_MAX_SPANS_PER_EXPORT is refused whole (413), and a big export is kept in short
transactions of OTLP_STORE_CHUNK spans."""

import json

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from contextstore.models import OtelPending, OtelSpan
from contextstore.services.otlp import ingest
from tests.api.conftest import client_for
from tests.otlp.conftest import export, span

TRACE_A = "aa" * 16


@pytest.fixture(autouse=True)
def fresh_counters():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def tight(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "3/minute"}}


def spans(n: int, trace_id: str = TRACE_A) -> dict:
    return export(*[span(f"{i + 1:016x}", f"step {i}", trace_id=trace_id) for i in range(n)])


def post(token: str, body: dict, content_type: str = "application/json"):
    data = json.dumps(body).encode()
    if content_type == "application/x-protobuf":
        message = trace_service_pb2.ExportTraceServiceRequest()
        json_format.Parse(json.dumps(body), message, ignore_unknown_fields=True)
        data = message.SerializeToString()
    return Client().post("/otlp/v1/traces", data=data, content_type=content_type,
                         headers={"Authorization": f"Bearer {token}"})


def status_of(response) -> status_pb2.Status:
    status = status_pb2.Status()
    if response["Content-Type"] == "application/x-protobuf":
        status.ParseFromString(response.content)
    else:
        json_format.Parse(response.content, status)
    return status


def test_a_token_throttled_on_the_api_is_throttled_on_otlp(tight, token, thread):
    api = client_for(token[1])
    answers = [api.get(f"/api/v1/threads/{thread.pk}/").status_code for _ in range(4)]
    assert answers == [200, 200, 200, 429]
    response = post(token[1], spans(1))
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response["Content-Type"] == "application/json"
    assert status_of(response).code == code_pb2.RESOURCE_EXHAUSTED
    assert OtelSpan.objects.count() == 0


def test_otlp_exports_count_in_the_same_window_as_api_calls(tight, token, thread):
    assert [post(token[1], spans(1)).status_code for _ in range(3)] == [200, 200, 200]
    refused = post(token[1], spans(1), "application/x-protobuf")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused["Content-Type"] == "application/x-protobuf"
    assert status_of(refused).code == code_pb2.RESOURCE_EXHAUSTED
    assert client_for(token[1]).get(f"/api/v1/threads/{thread.pk}/").status_code == 429


def test_an_export_over_the_span_cap_is_refused_whole_with_413(settings, token):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_MAX_SPANS_PER_EXPORT": 5}
    for content_type in ("application/json", "application/x-protobuf"):
        response = post(token[1], spans(6), content_type)
        assert response.status_code == 413
        assert response["Content-Type"] == content_type
        status = status_of(response)
        assert status.code == code_pb2.INVALID_ARGUMENT
        assert "6 spans" in status.message and "at most 5" in status.message
    assert (OtelSpan.objects.count(), OtelPending.objects.count()) == (0, 0)
    assert post(token[1], spans(5)).status_code == 200
    assert OtelSpan.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_a_big_export_is_kept_in_short_transactions_of_bounded_rows(settings, token, monkeypatch):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "OTLP_STORE_CHUNK": 10}
    seen: list[tuple[int, bool, int]] = []
    store = ingest.spans_store

    def recording(**kwargs):
        # each chunk in a transaction of its own: atomic, and no savepoint of an outer one
        seen.append((len(kwargs["spans"]), connection.in_atomic_block, len(connection.savepoint_ids)))
        return store(**kwargs)

    monkeypatch.setattr(ingest, "spans_store", recording)
    monkeypatch.setattr(ingest, "pending_publish", lambda: None)
    body = export(*[span(f"{i + 1:016x}", f"s{i}", trace_id=f"{i % 3 + 1:032x}") for i in range(35)])
    assert post(token[1], body).status_code == 200
    assert seen == [(10, True, 0), (10, True, 0), (10, True, 0), (5, True, 0)]
    assert OtelSpan.objects.count() == 35
    assert set(OtelPending.objects.values_list("trace_id", flat=True)) == {f"{i:032x}" for i in (1, 2, 3)}
