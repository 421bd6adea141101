import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from contextstore.services.workspaces import api_token_create
from tests.api.conftest import client_for

FIXTURES = Path(__file__).parent / "fixtures"
TRACE = "5b8efff798038103d269b633813fc60c"


def attr(key: str, value: Any) -> dict[str, Any]:
    """An OTLP/JSON KeyValue."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [attr("", v)["value"] for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


def span(span_id: str, name: str, attrs: dict[str, Any] | None = None, *, trace_id: str = TRACE,
         parent: str = "", start: int = 1, end: int = 2, events: list | None = None,
         status: dict | None = None) -> dict[str, Any]:
    """An OTLP/JSON span; start/end in seconds from a fixed epoch."""
    base = 1_760_000_000_000_000_000
    out = {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 3,
           "startTimeUnixNano": str(base + start * 10**9), "endTimeUnixNano": str(base + end * 10**9),
           "attributes": [attr(k, v) for k, v in (attrs or {}).items()]}
    if events:
        out["events"] = events
    if status:
        out["status"] = status
    return out


def export(*spans: dict[str, Any], service: str = "weather-agent", scope: str = "tests") -> dict[str, Any]:
    return {"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", service)]},
        "scopeSpans": [{"scope": {"name": scope, "version": "1.0"}, "spans": list(spans)}]}]}


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture(autouse=True)
def derive_eagerly(eager_tasks):
    """Tasks run eagerly (CELERY_TASK_ALWAYS_EAGER): the derivation pass an export queues runs
    in the exporting process right after its commit, so its events are there when the answer
    is. tests/otlp/test_pending.py and tests/worker test the pass queued to a real worker."""


@pytest.fixture
def otlp(token, django_capture_on_commit_callbacks):
    """POST an OTLP/JSON export (a dict) or raw bytes to /otlp/v1/<signal> with the write token.
    What the request left to run after commit runs when it returns (the test's own transaction
    never commits)."""
    client = Client()

    def post(body: dict | bytes, *, signal: str = "traces", content_type: str = "application/json",
             auth: str | None = None, **headers: str):
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"/otlp/v1/{signal}", data=data, content_type=content_type,
                               headers={"Authorization": auth or f"Bearer {token[1]}", **headers})
    return post


@pytest.fixture
def api_client(token):
    return client_for(token[1])


@pytest.fixture
def other_client(other_workspace, actor):
    return client_for(api_token_create(workspace=other_workspace, name="rival", actor=actor)[1])
