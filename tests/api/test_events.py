import pytest

from contextstore.models import AuditLog, Collapse, Event
from tests.conftest import messages


def test_append_returns_seq_id_tokens_and_client_id_for_each_event(api_client, thread, thread_url):
    batch = [{"type": "Message", "role": "user", "content": "hello there", "client_id": "c1"},
             {"type": "LLMOutput", "content": "hi", "parts": [{"type": "text", "text": "hi"}],
              "data": {"k": 1}, "run_id": "r1", "call_id": "call", "step": "s", "anchor": "a",
              "occurred_at": "2026-01-02T03:04:05Z"}]
    response = api_client.post(f"{thread_url}events/", {"events": batch}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert [e["seq"] for e in body["events"]] == [1, 2]
    assert [e["client_id"] for e in body["events"]] == ["c1", None]
    assert body["events"][0]["token_count"] == 2 and body["created"] == 2
    assert set(body["events"][0]) == {"seq", "id", "token_count", "client_id"}
    stored = api_client.get(f"{thread_url}events/").json()["results"]
    assert stored[1]["run_id"] == "r1" and stored[1]["occurred_at"] == "2026-01-02T03:04:05Z"
    assert stored[1]["data"] == {"k": 1} and stored[1]["anchor"] == "a"


@pytest.mark.parametrize("size", [3, 100])
def test_a_replayed_batch_returns_the_stored_events_and_adds_nothing(api_client, thread, thread_url,
                                                                     size):
    batch = {"events": [{"type": "Message", "content": f"m{i}", "client_id": f"k{i}"}
                        for i in range(size)]}
    first = api_client.post(f"{thread_url}events/", batch, format="json").json()
    replay = api_client.post(f"{thread_url}events/", batch, format="json")
    assert replay.status_code == 200
    assert replay.json() == {**first, "created": 0}
    thread.refresh_from_db()
    assert (thread.event_count, thread.last_seq) == (size, size)
    assert AuditLog.objects.filter(action="events.append", target_id=str(thread.pk)).count() == 1


def test_a_batch_partly_stored_adds_only_the_rest_after_them(api_client, thread, thread_url):
    """A retry of a big batch whose first half landed (the client timed out meanwhile) rolls its
    one-statement insert back and takes the path that reads what is stored."""
    batch = [{"type": "Message", "content": f"m{i}", "client_id": f"k{i}"} for i in range(100)]
    first = api_client.post(f"{thread_url}events/", {"events": batch[:50]}, format="json").json()
    retry = api_client.post(f"{thread_url}events/", {"events": batch}, format="json")
    assert retry.status_code == 201 and retry.json()["created"] == 50
    events = retry.json()["events"]
    assert events[:50] == first["events"]
    assert [e["seq"] for e in events] == list(range(1, 101))
    thread.refresh_from_db()
    assert (thread.event_count, thread.last_seq) == (100, 100)
    assert list(Event.objects.filter(thread=thread).order_by("seq").values_list("client_id", flat=True)) \
        == [f"k{i}" for i in range(100)]


def test_a_client_id_reused_for_another_payload_is_a_conflict(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Message", "content": "a",
                                                          "client_id": "same"}]}, format="json")
    response = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "fresh"},
        {"type": "Message", "content": "b", "client_id": "same"}]}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "idempotency_conflict"
    assert Event.objects.filter(thread=thread).count() == 1


def test_bad_events_are_refused_with_the_field_named_and_nothing_written(api_client, thread, thread_url):
    cases = [
        ({"events": []}, "events"),
        ({"events": [{"type": "Message"}, {"content": "no type"}]}, "events[1].type"),
        ({"events": [{"type": "Message", "parts": "x"}]}, "events[0].parts"),
        ({"events": [{"type": "Message", "occurred_at": "yesterday"}]}, "events[0].occurred_at"),
        ({"events": [{"type": "Message", "colour": "red"}]}, "events[0].colour"),
        ({"events": "nope"}, "events"),
        ({"evnts": []}, "evnts"),
    ]
    for payload, field in cases:
        response = api_client.post(f"{thread_url}events/", payload, format="json")
        assert response.status_code == 400, payload
        assert field in response.json()["error"]["details"], response.json()
    bad_json = api_client.post(f"{thread_url}events/", "{not json", content_type="application/json")
    assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == "parse_error"
    assert Event.objects.filter(thread=thread).count() == 0


def test_it_queries_events_by_every_filter(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "alpha one", "run_id": "r1", "call_id": "c1"},
        {"type": "ToolCall", "content": "beta two", "run_id": "r1", "step": "plan"},
        {"type": "Error", "content": "Gamma 42", "run_id": "r2", "call_id": "c1"},
        {"type": "LLMComplete", "content": "", "data": {"cost": 0.1}},
        {"type": "Message", "content": "delta four"},
    ]}, format="json")

    def seqs(query: str) -> list[int]:
        response = api_client.get(f"{thread_url}events/?{query}")
        assert response.status_code == 200, response.json()
        return [e["seq"] for e in response.json()["results"]]

    assert seqs("") == [1, 2, 3, 4, 5]
    assert seqs("type=Message,Error") == [1, 3, 5]
    assert seqs("q=ALPHA") == [1]
    assert seqs("regex=gamma%20[0-9]%2B") == [3]
    assert seqs("run_id=r1") == [1, 2]
    assert seqs("call_id=c1") == [1, 3]
    assert seqs("step=plan") == [2]
    assert seqs("after_seq=2&before_seq=5") == [3, 4]
    assert seqs("visible=false") == [4]
    assert seqs("limit=2") == [4, 5]
    assert seqs("type=Message&limit=1") == [5]


def test_type_repeats_and_each_value_is_one_whole_name_commas_included(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "a"}, {"type": "tool.call,v2", "content": "b"},
        {"type": "Error", "content": "c"}, {"type": "v2", "content": "d"},
    ]}, format="json")

    def seqs(query: str) -> list[int]:
        response = api_client.get(f"{thread_url}events/?{query}")
        assert response.status_code == 200, response.json()
        return [e["seq"] for e in response.json()["results"]]

    assert seqs("type=Message&type=Error") == [1, 3]
    assert seqs("type=tool.call,v2&type=Error") == [2, 3]
    assert seqs("type=tool.call%2Cv2&type=tool.call%2Cv2") == [2]  # one name alone: say it twice
    assert seqs("type=Message,Error") == [1, 3]  # the older comma-separated list, still read
    assert seqs("type=tool.call,v2") == [4]  # ... as a list: "tool.call" and "v2"
    assert seqs("type=Message&type=") == [1]


def test_collapsed_events_show_only_with_status_all(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(4)}, format="json")
    api_client.post(f"{thread_url}collapse/", {"start_position": 1, "end_position": 2, "summary_text": "s"},
                    format="json")
    assert [e["seq"] for e in api_client.get(f"{thread_url}events/").json()["results"]] == [3, 4, 5]
    everything = api_client.get(f"{thread_url}events/?status=all").json()["results"]
    assert [(e["seq"], e["status"]) for e in everything] == [
        (1, "collapsed"), (2, "collapsed"), (3, "active"), (4, "active"), (5, "active")]
    collapsed = api_client.get(f"{thread_url}events/?status=collapsed").json()["results"]
    assert [e["seq"] for e in collapsed] == [1, 2]


def test_event_pages_follow_the_next_link_and_limit_keeps_the_newest(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(25, words=5)}, format="json")
    seen, url = [], f"{thread_url}events/?limit=20&page_size=8"
    while url:
        page = api_client.get(url).json()
        seen += [e["seq"] for e in page["results"]]
        url = page["next"]
    assert seen == list(range(6, 26))


def test_a_bad_regex_is_a_clear_400(api_client, thread, thread_url):
    response = api_client.get(f"{thread_url}events/?regex=(unclosed")
    assert response.status_code == 400
    assert "regex" in response.json()["error"]["details"]


def test_collapse_replaces_a_range_and_undo_brings_it_back(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(6)}, format="json")
    response = api_client.post(f"{thread_url}collapse/",
                               {"start_position": 2, "end_position": 4, "summary_text": "middle turns"},
                               format="json")
    assert response.status_code == 201
    collapse = response.json()
    assert (collapse["start_position"], collapse["end_position"], collapse["event_count"]) == (2, 4, 3)
    assert collapse["summary_event"]["type"] == "Summary"
    assert collapse["summary_event"]["content"] == "middle turns"
    assert collapse["summary_event"]["position"] == 2
    context = api_client.get(f"{thread_url}context/").json()["messages"]
    assert [m.get("seq") for m in context] == [1, 7, 5, 6]
    undone = api_client.post(f"/api/v1/collapses/{collapse['id']}/undo/")
    assert undone.status_code == 200 and undone.json()["undone_at"]
    again = api_client.post(f"/api/v1/collapses/{collapse['id']}/undo/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_undone"
    assert [m.get("seq") for m in api_client.get(f"{thread_url}context/").json()["messages"]] == [
        1, 2, 3, 4, 5, 6]


def test_collapse_input_errors_change_nothing(api_client, thread, thread_url, other_client):
    api_client.post(f"{thread_url}events/", {"events": messages(3)}, format="json")
    for payload in ({"start_position": 3, "end_position": 1, "summary_text": "x"},
                    {"start_position": 1, "end_position": 2},
                    {"start_position": 1, "end_position": 2, "summary_text": "x", "summarize": True},
                    {"start_position": 0, "end_position": 2, "summary_text": "x"},
                    {"start_position": "one", "end_position": 2, "summary_text": "x"}):
        assert api_client.post(f"{thread_url}collapse/", payload, format="json").status_code == 400
    empty = api_client.post(f"{thread_url}collapse/",
                            {"start_position": 50, "end_position": 60, "summary_text": "x"}, format="json")
    assert empty.status_code == 400 and empty.json()["error"]["code"] == "empty_range"
    assert not Collapse.objects.exists()
    made = api_client.post(f"{thread_url}collapse/", {"start_position": 1, "end_position": 2,
                                                      "summary_text": "x"}, format="json").json()
    assert other_client.post(f"/api/v1/collapses/{made['id']}/undo/").status_code == 404


def test_appends_are_audited_against_the_token(api_client, token, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(2)}, format="json")
    log = AuditLog.objects.get(action="events.append")
    assert log.actor_token == token[0]
    assert log.ip == "127.0.0.1"
