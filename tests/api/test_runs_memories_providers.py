import pytest

from contextstore.models import Memory, Run


def test_runs_are_listed_and_finished(api_client, other_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "go", "run_id": "run-a"},
        {"type": "LLMComplete", "run_id": "run-a",
         "data": {"input_tokens": 10, "output_tokens": 5, "cost": 0.25}},
        {"type": "Message", "content": "go", "run_id": "run-b"}]}, format="json")
    runs = api_client.get(f"{thread_url}runs/").json()["results"]
    assert [r["run_id"] for r in runs] == ["run-a", "run-b"]
    assert (runs[0]["input_tokens"], runs[0]["output_tokens"], runs[0]["cost"]) == (10, 5, 0.25)
    a, b = runs[0]["id"], runs[1]["id"]
    done = api_client.post(f"/api/v1/runs/{a}/complete/")
    assert done.status_code == 200 and done.json()["status"] == "completed"
    assert api_client.post(f"/api/v1/runs/{a}/complete/").status_code == 200
    clash = api_client.post(f"/api/v1/runs/{a}/fail/", {"error": "x"}, format="json")
    assert clash.status_code == 409 and clash.json()["error"]["code"] == "run_finished"
    failed = api_client.post(f"/api/v1/runs/{b}/fail/", {"error": "boom"}, format="json").json()
    assert (failed["status"], failed["error"]) == ("failed", "boom")
    assert api_client.get(f"/api/v1/runs/{b}/").json()["duration_ms"] >= 0
    assert other_client.post(f"/api/v1/runs/{a}/interrupt/").status_code == 404
    assert other_client.get(f"/api/v1/runs/{a}/").status_code == 404


def test_interrupt_marks_a_running_run(api_client, thread, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [{"type": "Task", "run_id": "r"}]},
                    format="json")
    run = Run.objects.get(run_id="r")
    assert api_client.post(f"/api/v1/runs/{run.pk}/interrupt/").json()["status"] == "interrupted"


def test_provider_state_is_put_and_read_back_versioned(api_client, other_client, thread, thread_url):
    assert api_client.get(f"{thread_url}providers/mem0/").status_code == 404
    first = api_client.put(f"{thread_url}providers/mem0/", {"state": {"user": "ann", "n": 1}},
                           format="json").json()
    assert (first["name"], first["version"], first["state"]) == ("mem0", 1, {"user": "ann", "n": 1})
    api_client.put(f"{thread_url}providers/mem0/", {"state": {"n": 2}}, format="json")
    read = api_client.get(f"{thread_url}providers/mem0/").json()
    assert (read["version"], read["state"]) == (2, {"n": 2})
    assert other_client.get(f"{thread_url}providers/mem0/").status_code == 404
    assert api_client.put(f"{thread_url}providers/mem0/", {}, format="json").status_code == 400


def test_memories_are_remembered_and_recalled_per_workspace(api_client, other_client, workspace):
    made = api_client.post("/api/v1/memories/", {"user_id": "ann", "content": "likes tea",
                                                 "key": "drink"}, format="json")
    assert made.status_code == 201
    replaced = api_client.post("/api/v1/memories/", {"user_id": "ann", "content": "likes coffee",
                                                     "key": "drink", "data": {"since": 2026}},
                               format="json")
    assert replaced.status_code == 200 and replaced.json()["id"] == made.json()["id"]
    api_client.post("/api/v1/memories/", {"user_id": "bob", "content": "lives in Oslo"}, format="json")
    recalled = api_client.get("/api/v1/memories/?user_id=ann&q=coffee").json()
    assert [m["content"] for m in recalled["results"]] == ["likes coffee"]
    assert recalled["next"] is None
    assert len(api_client.get("/api/v1/memories/").json()["results"]) == 2
    assert other_client.get("/api/v1/memories/").json()["results"] == []
    assert api_client.post("/api/v1/memories/", {"user_id": "x"}, format="json").status_code == 400


@pytest.mark.parametrize(("body", "field"), [
    ({"user_id": "ann", "key": "", "content": "likes tea"}, "key"),
    ({"user_id": "ann", "key": "k" * 201, "content": "likes tea"}, "key"),
    ({"user_id": "a" * 256, "content": "likes tea"}, "user_id"),
])
def test_a_memory_of_the_wrong_shape_is_refused_at_the_boundary_and_nothing_stored(api_client, body, field):
    refused = api_client.post("/api/v1/memories/", body, format="json")
    assert refused.status_code == 400 and field in refused.json()["error"]["details"]
    assert Memory.objects.count() == 0


@pytest.mark.parametrize("step", [None, ["a"], {"a": 1}])
def test_a_step_result_needs_a_string_step(api_client, thread, thread_url, step):
    refused = api_client.post(f"{thread_url}results/", {"step": step, "result": 1}, format="json")
    assert refused.status_code == 400 and "step" in refused.json()["error"]["details"]
    thread.refresh_from_db()
    assert thread.last_results == {}
