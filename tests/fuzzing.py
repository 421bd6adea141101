"""What every fuzzed answer must hold (issue 11), shared by tests/test_schemathesis.py (every
operation) and tests/test_fuzz.py (stateful sequences) and cheap enough to run per call."""

from typing import Any

import pytest
from django.core import signals
from django.db import close_old_connections

from contextstore.models import AuditLog, Event, Job, Memory, Session, Thread

THREAD_READS = ("events/", "context/", "export/", "window/?count=5", "state/", "")


def snapshot() -> tuple:
    """Row counts of what requests write (every service write is audited, so the audit log
    counts the rest) and each thread's write markers."""
    return (AuditLog.objects.count(), Event.objects.count(), Session.objects.count(),
            Job.objects.count(), Memory.objects.count(),
            sorted(Thread.objects.values_list("pk", "revision", "last_seq", "updated_at")))


def check_answer(response: Any, case: Any, before: tuple) -> None:
    """No 5xx; a refusal is the JSON error shape, a 400 names the place in `details`, and a
    refused request wrote nothing. `before` is the snapshot taken before the call."""
    status = response.status_code
    where = f"{case.method} {case.formatted_path} -> {status}: {response.content[:300]!r}"
    assert status < 500, where
    if status >= 400:
        error = response.json()["error"]
        assert set(error) == {"code", "message", "details"} and error["message"], where
        if status == 400:
            assert error["details"], f"a 400 must name the place: {where}"
        assert snapshot() == before, f"a refused request wrote something: {where}"


def assert_thread_reads(client: Any, token: str, thread_id: int, reads=THREAD_READS) -> None:
    for read in reads:
        response = client.get(f"/api/v1/threads/{thread_id}/{read}",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 200, (read, response.content[:300])
    # Django's test client reconnects these handlers after each request; the WSGI calls that
    # follow must keep the test transaction's connection.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)


@pytest.fixture(autouse=True)
def in_process_app(settings):
    """Keep the test transaction's connection open across WSGI calls (as Django's test client
    does) and switch throttling off."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "off"}}
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)
