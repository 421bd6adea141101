"""Stateful fuzzing of the agent API (schemathesis + hypothesis): sequences of calls that follow
the links schemathesis finds in the OpenAPI schema (a created session's id feeds its reads and
writes, a thread's id its events, state, fork...), on whichever database the suite runs on.
Every answer is held to tests/fuzzing.py's rules (no 5xx, refusals in the error shape naming
the place, nothing written by a refusal), and the fixture thread reads afterwards.
Per-operation fuzzing with the same rules is tests/test_schemathesis.py.

Bounded for CI: a fixed number of derandomized sequences of at most 6 calls."""

from typing import Any

import schemathesis
from django.core.cache import cache
from django.db import transaction
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error

from contextstore.models import Thread
from project.wsgi import application
from tests.fuzzing import (  # noqa: F401 - in_process_app is an autouse fixture
    assert_thread_reads,
    check_answer,
    in_process_app,
    snapshot,
)

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)



def test_stateful_sequences_following_the_schema_links(db, token, thread, client):
    auth = {"Authorization": f"Bearer {token[1]}"}
    calls: list[int] = []

    class Workflow(schema.as_state_machine()):
        def setup(self) -> None:
            # Each sequence starts from the same database: which links can be followed depends on
            # what earlier calls created, and hypothesis replays sequences expecting the same.
            cache.clear()
            self.sandbox = transaction.atomic()
            self.sandbox.__enter__()

        def teardown(self) -> None:
            transaction.set_rollback(True)
            self.sandbox.__exit__(None, None, None)

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": auth}

        def call(self, case: Any, **kwargs: Any) -> Any:
            before = snapshot()
            response = super().call(case, **kwargs)
            calls.append(response.status_code)
            check_answer(response, case, before)
            return response

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=[not_a_server_error])

    Workflow.run(settings=hypothesis_settings(
        max_examples=40, stateful_step_count=6, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck)))
    assert len(calls) >= 40 and any(code < 300 for code in calls)  # it really ran sequences
    if Thread.objects.filter(pk=thread.pk).exists():
        assert_thread_reads(client, token[1], thread.pk)
