from contextstore.services import clientai


def test_input_results_iteration_and_history_follow_clientai(api_client, thread, thread_url):
    assert api_client.post(f"{thread_url}input/", {"input": "first question"},
                           format="json").json()["current_input"] == "first question"
    result = api_client.post(f"{thread_url}results/", {"step": "think", "result": {"a": 1}},
                             format="json")
    assert result.json() == {"step": "think", "result": {"a": 1}}
    assert api_client.get(f"{thread_url}results/think/").json() == {"step": "think", "result": {"a": 1}}
    missing = api_client.get(f"{thread_url}results/nope/")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api_client.post(f"{thread_url}iteration/").json() == {"iteration": 1}
    api_client.post(f"{thread_url}input/", {"input": "second"}, format="json")

    raw = api_client.get(f"{thread_url}history/?raw=true").json()
    assert [(h["input"], h["results"], h["iteration"]) for h in raw] == [
        ("first question", {"think": {"a": 1}}, 1)]
    text = api_client.get(f"{thread_url}history/?n=5").json()["text"]
    thread.refresh_from_db()
    assert text == clientai.recent_history(thread=thread, n=5)
    assert text.startswith("Previous Interactions:\nInteraction 1:\n")
    assert text.endswith("\n\nNow handling the current query.")


def test_max_history_size_reset_and_reset_all(api_client, thread, thread_url):
    for i in range(3):
        api_client.post(f"{thread_url}input/", {"input": f"q{i}"}, format="json")
        api_client.post(f"{thread_url}results/", {"step": "s", "result": i}, format="json")
    api_client.post(f"{thread_url}input/", {"input": "q3"}, format="json")
    assert len(api_client.get(f"{thread_url}history/?raw=1").json()) == 3
    assert api_client.put(f"{thread_url}max-history-size/", {"size": 2},
                          format="json").json()["max_history_size"] == 2
    assert len(api_client.get(f"{thread_url}history/?raw=1").json()) == 2
    bad = api_client.put(f"{thread_url}max-history-size/", {"size": -1}, format="json")
    assert bad.status_code == 400 and "size" in bad.json()["error"]["details"]

    api_client.put(f"{thread_url}state/", {"state": {"k": 1}}, format="json")
    reset = api_client.post(f"{thread_url}reset/").json()
    assert (reset["state"], reset["current_input"], reset["iteration"]) == ({}, None, 0)
    assert len(api_client.get(f"{thread_url}history/?raw=1").json()) == 2
    api_client.post(f"{thread_url}reset-all/")
    assert api_client.get(f"{thread_url}history/?raw=1").json() == []
    assert api_client.get(f"{thread_url}history/").json() == {"text": "No interactions available."}


def test_clear_context_keeps_state_and_history_rows(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Message", "content": "hi"}] * 3},
                    format="json")
    api_client.put(f"{thread_url}state/", {"state": {"tasks": ["a"]}}, format="json")
    assert api_client.post(f"{thread_url}clear-context/").json()["cleared"] == 3
    assert api_client.get(f"{thread_url}state/").json()["state"] == {"tasks": ["a"]}
    assert api_client.get(f"{thread_url}events/").json()["results"] == []
    assert len(api_client.get(f"{thread_url}events/?status=all").json()["results"]) == 3
    history = api_client.get(f"{thread_url}context/").json()["stats"]["sections"]["history"]
    assert history["events_included"] == 0
