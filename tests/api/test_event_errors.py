"""Every endpoint that takes events refuses a bad one in the same shape: the same status, code
and message, and `details` naming the event's place in that endpoint's body (`events[1].type`,
`items[1].event.type`). The events endpoint is the reference; nothing is written by a refusal."""

import json
from typing import Any

import pytest
from django.apps import apps

GOOD = {"type": "Message", "role": "user", "content": "fine"}
LIMIT = 1000  # MAX_EVENT_CONTENT_BYTES here, so one case can be too large without a big body

# (name, the bad event, the place under the event that details must name)
BAD: list[tuple[str, Any, str]] = [
    ("missing type", {"content": "no type"}, ".type"),
    ("type with a space", {"type": "My Event"}, ".type"),
    ("type of 65 characters", {"type": "T" * 65}, ".type"),
    ("content not a string", {"type": "Message", "content": 5}, ".content"),
    ("content too large", {"type": "Message", "content": "x" * (LIMIT + 1)}, ".content"),
    ("occurred_at not a date", {"type": "Message", "occurred_at": "yesterday"}, ".occurred_at"),
    ("occurred_at past year 9999 in UTC",
     {"type": "Message", "occurred_at": "9999-12-31T23:59:59-12:00"}, ".occurred_at"),
    ("parts not a list", {"type": "Message", "parts": "x"}, ".parts"),
    ("NUL in a call id", {"type": "ToolCall", "call_id": "a\u0000b"}, ".call_id"),
    ("NaN in a nested part", {"type": "ToolCall", "parts": [{"type": "x", "score": float("nan")}]},
     ".parts[0].score"),
    ("lone surrogate in data", {"type": "Message", "data": {"k": "\ud800"}}, ".data.k"),
    ("role too long", {"type": "Message", "role": "r" * 33}, ".role"),
    ("visible not a boolean", {"type": "Message", "visible": "yes"}, ".visible"),
    ("run_id not a string", {"type": "Message", "run_id": 7}, ".run_id"),
    ("not an object", "just text", ""),
    ("unknown field", {"type": "Message", "colour": "red"}, ".colour"),
]
# An exported event carries fields an import does not take: what was stored with it (collapse,
# cleared_by, ...) and its run_id (an import makes no runs).
IMPORT_IGNORES = {"unknown field", "run_id not a string"}


def _events(bad: Any) -> dict:
    return {"events": [GOOD, bad]}


def _commit(bad: Any) -> dict:
    return {"key": "commit-errors", "create": True, "events": [GOOD, bad]}


def _sync(bad: Any) -> dict:
    return {"namespace": "fw", "items": [{"key": "a", "event": GOOD}, {"key": "b", "event": bad}]}


def _import(bad: Any) -> dict:
    # An exported event also carries its stored fields (seq, ...).
    return {"format": "contextstore", "version": 1, "session": {"key": "import-errors"},
            "events": [{**GOOD, "seq": 1}, {**bad, "seq": 2} if isinstance(bad, dict) else bad]}


# (name, the path under /api/v1/ ({thread} is the thread's id), the body around the bad event,
#  where that body holds it)
ENDPOINTS = [
    ("events", "threads/{thread}/events/", _events, "events[1]"),
    ("commit", "agent-sessions/commit/", _commit, "events[1]"),
    ("sync", "threads/{thread}/sync/", _sync, "items[1].event"),
    ("import", "threads/import/", _import, "events[1]"),
]


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in apps.get_app_config("contextstore").get_models()}


def post(api_client, thread, path: str, body: dict):
    # Sent as text: json.dumps escapes NUL and lone surrogates, and writes NaN, as the hostile
    # clients send them.
    return api_client.post(f"/api/v1/{path.format(thread=thread.pk)}", json.dumps(body),
                           content_type="application/json")


@pytest.fixture(autouse=True)
def small_content_limit(settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENT_CONTENT_BYTES": LIMIT}


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_every_endpoint_that_takes_events_refuses_a_bad_one_alike(case, api_client, thread):
    name, bad, under = case
    before = counts()
    reference = post(api_client, thread, "threads/{thread}/events/", _events(bad))
    assert reference.status_code in (400, 413), reference.json()
    expected = reference.json()["error"]
    assert list(expected["details"]) == [f"events[1]{under}"], expected
    for endpoint, path, wrap, place in ENDPOINTS[1:]:
        if endpoint == "import" and name in IMPORT_IGNORES:
            continue
        response = post(api_client, thread, path, wrap(bad))
        assert response.status_code == reference.status_code, (endpoint, response.json())
        assert response.json()["error"] == {
            "code": expected["code"],
            "message": expected["message"].replace("events[1]", place, 1),
            "details": {f"{place}{under}": expected["details"][f"events[1]{under}"]},
        }, endpoint
    assert counts() == before


def test_an_import_refuses_a_bad_stored_field_naming_its_place(api_client, thread):
    cases = [({"seq": 0}, "events[1].seq"), ({"seq": 2, "position": True}, "events[1].position"),
             ({"seq": 2, "status": "gone"}, "events[1].status"),
             ({"seq": 2, "position": 3}, "events[1].position")]
    for fields, place in cases:
        body = {"format": "contextstore", "version": 1,
                "events": [{**GOOD, "seq": 1}, {**GOOD, **fields}]}
        response = post(api_client, thread, "threads/import/", body)
        assert response.status_code == 400, response.json()
        assert list(response.json()["error"]["details"]) == [place], response.json()


@pytest.mark.parametrize("events", [None, {"type": "Message"}, "x"], ids=["null", "object", "text"])
def test_events_that_are_not_a_list_are_refused_by_append_and_commit(events, api_client, thread):
    appended = post(api_client, thread, "threads/{thread}/events/", {"events": events})
    committed = post(api_client, thread, "agent-sessions/commit/",
                     {"key": "commit-errors", "create": True, "events": events})
    assert appended.status_code == committed.status_code == 400
    assert appended.json()["error"]["details"] == {"events": "non-empty list"}
    assert committed.json()["error"]["details"] == {"events": "list"}  # a commit may have none
