"""A collapse, summary or fork range that would split a tool call from its results is refused
with `splits_tool_exchange` naming them, or with widen=true grown to the whole exchange."""

import pytest

from contextstore.models import Collapse, Event, Job, Thread
from contextstore.services.events import event_append
from tests.services.test_render_asides import ASIDES, two_cities

# positions: 1 user, 2 call p, 3 call r, 4 result p, 5 Error, 6 result r, 7 answer
EXCHANGE = {"first_position": 2, "last_position": 6, "call_ids": ["p", "r"],
            "call_positions": [2, 3], "result_positions": [4, 6]}


@pytest.fixture
def cities(thread, actor):
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[0]))
    return thread


def unchanged(thread) -> bool:
    return (not Collapse.objects.exists() and not Job.objects.exists()
            and Thread.objects.count() == 1
            and Event.objects.filter(thread=thread, status="active").count() == 7)


@pytest.mark.parametrize(("start", "end", "wide"), [(1, 4, (1, 6)), (5, 7, (2, 7)), (3, 5, (2, 6)),
                                                    (2, 2, (2, 6))])
def test_a_collapse_splitting_an_exchange_is_a_400_naming_it_and_changes_nothing(
        api_client, cities, thread_url, start, end, wide):
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": start, "end_position": end, "summary_text": "s"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "splits_tool_exchange"
    assert error["details"] == {"start_position": start, "end_position": end, "exchanges": [EXCHANGE],
                                "widened": {"start_position": wide[0], "end_position": wide[1]}}
    assert "p, r" in error["message"] and f"{wide[0]}-{wide[1]}" in error["message"]
    assert unchanged(cities)


@pytest.mark.parametrize("aside", ASIDES, ids=lambda a: f"{a['type']}-{a.get('role', '')}")
def test_the_refusal_names_only_the_calls_whatever_aside_stands_between_the_results(
        api_client, thread, actor, thread_url, aside):
    """An aside between the results is part of the exchange but makes no call: an Error logged
    with role assistant was once named among the call positions ("calls p, r at 2, 3, 5")."""
    event_append(thread=thread, actor=actor, events=two_cities(aside))
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 1, "end_position": 4, "summary_text": "s"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"]["exchanges"] == [EXCHANGE]
    assert "calls p, r at 2, 3 with results at 4, 6" in error["message"]


def test_widen_collapses_the_whole_exchange(api_client, cities, thread_url):
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 1, "end_position": 4, "summary_text": "asked, looked up", "widen": True},
        format="json")
    assert response.status_code == 201
    assert (response.json()["start_position"], response.json()["end_position"]) == (1, 6)
    render = api_client.get(f"{thread_url}context/?format=openai&max_tokens=4000").json()
    assert [m["role"] for m in render["messages"]] == ["user", "assistant"]
    assert render["stats"]["skipped"] == []


@pytest.mark.parametrize(("start", "end"), [(1, 1), (2, 6), (1, 7), (7, 7), (1, 6), (2, 7)])
def test_a_range_holding_whole_exchanges_is_collapsed_as_given(api_client, cities, thread_url, start, end):
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": start, "end_position": end, "summary_text": "s"}, format="json")
    assert response.status_code == 201
    assert (response.json()["start_position"], response.json()["end_position"]) == (start, end)


def test_a_fork_splitting_an_exchange_is_refused_or_widened(api_client, cities, thread_url):
    response = api_client.post(f"{thread_url}fork/", {"name": "b", "end_position": 3}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["widened"] == {"start_position": None, "end_position": 6}
    assert unchanged(cities)
    response = api_client.post(f"{thread_url}fork/", {"name": "b", "start_position": 6}, format="json")
    assert response.json()["error"]["details"]["widened"] == {"start_position": 2, "end_position": None}
    child = api_client.post(f"{thread_url}fork/", {"name": "b", "end_position": 3, "widen": True},
                            format="json").json()
    assert (child["fork_start_position"], child["fork_end_position"], child["event_count"]) == (None, 6, 6)
    render = api_client.get(f"/api/v1/threads/{child['id']}/context/?format=anthropic&max_tokens=4000")
    assert render.json()["stats"]["skipped"] == []


def test_a_summary_of_a_range_splitting_an_exchange_is_refused_or_widened(api_client, cities, thread_url):
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 3, "end_position": 7, "summarize": True}, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "splits_tool_exchange"
    assert unchanged(cities)
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 3, "end_position": 7, "summarize": True, "widen": True}, format="json")
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["job_id"])
    assert (job.params["start_position"], job.params["end_position"]) == (2, 7)


def test_widen_must_be_a_boolean(api_client, cities, thread_url):
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 1, "end_position": 4, "summary_text": "s", "widen": "sometimes"}, format="json")
    assert response.status_code == 400 and unchanged(cities)


def test_an_exchange_far_from_any_user_message_is_found(api_client, thread, thread_url, actor):
    """The boundary's neighbourhood is read up to the nearest user message on each side: a long
    agent loop of sequential exchanges under one task."""
    loop = []
    for i in range(40):
        loop += [{"type": "ToolCall", "data": {"id": f"c{i}", "name": "step", "arguments": {}}},
                 ASIDES[1],
                 {"type": "ToolResult", "content": f"r{i}", "data": {"tool_call_id": f"c{i}"}}]
    event_append(thread=thread, actor=actor, events=[{"type": "Task", "content": "go"}, *loop])
    # positions: 1 task, then call 3i+2, note 3i+3, result 3i+4
    response = api_client.post(f"{thread_url}collapse/", {
        "start_position": 1, "end_position": 62, "summary_text": "s"}, format="json")
    assert response.json()["error"]["details"]["exchanges"] == [{
        "first_position": 62, "last_position": 64, "call_ids": ["c20"], "call_positions": [62],
        "result_positions": [64]}]
    assert api_client.post(f"{thread_url}collapse/", {
        "start_position": 1, "end_position": 61, "summary_text": "s"}, format="json").status_code == 201
