"""Property-based API tests generated from the OpenAPI schema, on every operation: no 5xx, no
response that breaks the schema (status codes, content types, bodies, headers), and issue 11's
rules (tests/fuzzing.py): refusals in the error shape naming the place, nothing written by a
refused request, and the fixture thread still reads afterwards. Stateful sequences:
tests/test_fuzz.py."""

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from project.wsgi import application
from tests.fuzzing import assert_thread_reads, check_answer, snapshot

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, response_headers_conformance]


# Served through the WSGI app (no database needed to build the schema).
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


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


@schema.parametrize()
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_the_api_honours_its_schema(case, db, token, session, thread, client):
    cache.clear()
    # Point most generated ids at real objects so the handlers run, not only the 404 path;
    # deleting the fixture session is left to random ids so later cases still find it.
    params = case.path_parameters or {}
    if "id" in params and not (case.method == "DELETE" and "/sessions/" in case.path):
        if case.path.startswith("/api/v1/threads/"):
            params["id"] = thread.pk
        elif case.path.startswith("/api/v1/sessions/"):
            params["id"] = session.pk
    before = snapshot()
    response = case.call(headers={"Authorization": f"Bearer {token[1]}"})
    case.validate_response(response, checks=CHECKS)
    check_answer(response, case, before)
    if case.method != "DELETE":  # deleting the fixture session (and thread) is allowed
        assert_thread_reads(client, token[1], thread.pk, reads=("context/",))
