"""SERVER_TIMING: a response says how long the request took in Django and, of that, in SQL."""

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

TIMING = re.compile(r'^app;dur=(?P<app>\d+\.\d\d), db;dur=(?P<db>\d+\.\d\d);desc="(?P<n>\d+) statements"$')


def test_server_timing_splits_a_request_into_django_and_sql(api_client, thread, settings):
    settings.SERVER_TIMING = True
    with CaptureQueriesContext(connection) as queries:
        response = api_client.post(f"/api/v1/threads/{thread.pk}/events/",
                                   {"events": [{"type": "Message", "role": "user", "content": "hi"}]},
                                   format="json")
    assert response.status_code == 201
    timing = TIMING.match(response["Server-Timing"])
    assert timing, response["Server-Timing"]
    # every statement the request ran is counted (SAVEPOINTs included), no more
    assert int(timing["n"]) == len(queries.captured_queries)
    assert 0 < float(timing["db"]) <= float(timing["app"])


def test_server_timing_is_off_by_default(api_client, thread):
    response = api_client.get(f"/api/v1/threads/{thread.pk}/")
    assert response.status_code == 200
    assert "Server-Timing" not in response
