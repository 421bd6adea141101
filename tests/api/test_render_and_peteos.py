from contextstore.models import Thread
from tests.conftest import messages, response_json


def test_blocks_are_put_listed_rendered_and_deleted(api_client, thread, thread_url):
    made = api_client.put(f"{thread_url}blocks/persona/", {"value": "You help.", "placement": "prefix"},
                          format="json")
    assert made.status_code == 201 and made.json()["version"] == 1
    expr = api_client.put(f"{thread_url}blocks/goal/", {"expr": "Goal: {{ state.goal }}"},
                          format="json")
    assert expr.status_code == 201
    api_client.put(f"{thread_url}state/", {"state": {"goal": "<b>ship</b>"}}, format="json")
    api_client.post(f"{thread_url}events/", {"events": messages(2, words=5)}, format="json")
    rendered = api_client.get(f"{thread_url}context/?max_tokens=500").json()
    sections = [m["section"] for m in rendered["messages"]]
    assert sections == ["prefix", "history", "history", "suffix"]
    assert rendered["messages"][0]["content"] == "## persona\nYou help."
    assert rendered["messages"][-1]["content"] == "## goal\nGoal: <b>ship</b>"
    assert rendered["stats"]["max_tokens"] == 500 and rendered["stats"]["fits"] is True
    listed = api_client.get(f"{thread_url}blocks/").json()
    assert [b["name"] for b in listed["results"]] == ["persona", "goal"]
    same = api_client.put(f"{thread_url}blocks/persona/", {"value": "You help."}, format="json")
    assert same.status_code == 200 and same.json()["version"] == 1
    assert api_client.delete(f"{thread_url}blocks/goal/").status_code == 204
    assert api_client.delete(f"{thread_url}blocks/goal/").status_code == 404
    bad = api_client.put(f"{thread_url}blocks/x/", {"value": "a", "expr": "b"}, format="json")
    assert bad.status_code == 400
    broken = api_client.put(f"{thread_url}blocks/x/", {"expr": "{% if %}"}, format="json")
    assert broken.status_code == 400 and "expr" in broken.json()["error"]["details"]


def test_context_budget_and_strip_thinking(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "why?"},  # a render's history opens with a user message
        {"type": "LLMOutput", "content": "answer",
         "parts": [{"type": "thinking", "thinking": "long private reasoning " * 10},
                   {"type": "text", "text": "answer"}]}] + messages(5, words=20)}, format="json")
    small = api_client.get(f"{thread_url}context/?max_tokens=60").json()
    assert small["stats"]["sections"]["history"]["events_included"] < 7
    stripped = api_client.get(f"{thread_url}context/?strip_thinking=true").json()["messages"][1]
    full = api_client.get(f"{thread_url}context/").json()["messages"][1]
    assert [p["type"] for p in stripped["parts"]] == ["text"]
    assert stripped["tokens"] < full["tokens"]
    assert api_client.get(f"{thread_url}context/?max_tokens=0").status_code == 400


def test_windows_by_count_and_tokens(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(5, words=10)}, format="json")
    window = api_client.get(f"{thread_url}window/?count=2").json()
    assert [e["seq"] for e in window["events"]] == [4, 5] and window["covers_all"] is False
    assert api_client.get(f"{thread_url}window/?count=5").json()["covers_all"] is True
    tokens = api_client.get(f"{thread_url}tokens/").json()["total_tokens"]
    assert api_client.get(f"{thread_url}window/?max_tokens={tokens}").json()["covers_all"] is True
    by_tokens = api_client.get(f"{thread_url}window/?max_tokens={tokens - 1}").json()
    assert by_tokens["covers_all"] is False and len(by_tokens["events"]) == 4
    for query in ("", "count=1&max_tokens=5", "count=-1"):
        assert api_client.get(f"{thread_url}window/?{query}").status_code == 400


def test_fork_copies_a_position_range_into_a_new_thread(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(5, words=5)}, format="json")
    forked = api_client.post(f"{thread_url}fork/", {"name": "branch", "start_position": 2, "end_position": 3,
                                                    "system_prompt": "be brief"}, format="json")
    assert forked.status_code == 201
    child = forked.json()
    assert (child["name"], child["parent"], child["event_count"]) == ("branch", thread.pk, 2)
    assert Thread.objects.get(pk=child["id"]).system_prompt == "be brief"
    events = api_client.get(f"/api/v1/threads/{child['id']}/events/").json()["results"]
    assert [e["content"].split(":")[0] for e in events] == ["turn 1", "turn 2"]
    clash = api_client.post(f"{thread_url}fork/", {"name": "branch"}, format="json")
    assert clash.status_code == 409 and clash.json()["error"]["code"] == "name_taken"


def test_export_and_import_round_trip_in_both_formats(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": messages(3, words=5)}, format="json")
    api_client.put(f"{thread_url}state/", {"state": {"k": [1, 2]}}, format="json")
    exported = response_json(api_client.get(f"{thread_url}export/"))
    assert exported["format"] == "contextstore" and len(exported["events"]) == 3
    imported = api_client.post("/api/v1/threads/import/?session_key=copy&name=restored", exported,
                               format="json")
    assert imported.status_code == 201
    copy = imported.json()
    assert (copy["session_key"], copy["name"], copy["event_count"]) == ("copy", "restored", 3)
    assert api_client.get(f"/api/v1/threads/{copy['id']}/state/").json()["state"] == {"k": [1, 2]}

    peteos = api_client.get(f"{thread_url}export/?format=peteos").json()
    assert len(peteos["messages"]) == 3
    again = api_client.post("/api/v1/threads/import/?session_key=pete", peteos, format="json")
    assert again.status_code == 201 and again.json()["event_count"] == 3
    assert api_client.get(f"{thread_url}export/?format=yaml").status_code == 400
    assert api_client.post("/api/v1/threads/import/", {"nothing": 1}, format="json").status_code == 400
