"""Property-based API tests generated from the OpenAPI schema, on every operation: no 5xx, no
response that breaks the schema (status codes, content types, bodies, headers), and issue 11's
rules (tests/fuzzing.py): refusals in the error shape naming the place, nothing written by a
refused request, and the fixture thread still reads afterwards. Stateful sequences:
tests/test_fuzz.py."""

import schemathesis
from django.core.cache import cache
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from project.wsgi import application
from tests.fuzzing import (  # noqa: F401 - in_process_app is an autouse fixture
    assert_thread_reads,
    check_answer,
    in_process_app,
    snapshot,
)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, response_headers_conformance]


# Served through the WSGI app (no database needed to build the schema).
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)



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
