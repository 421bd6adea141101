"""GET /api/v1/datasets/ and /api/v1/datasets/<id>/items.jsonl."""

import json

from contextstore.services.common import Actor
from contextstore.services.datasets import dataset_add_range, dataset_ensure
from contextstore.services.events import event_append


def test_a_token_lists_its_workspace_datasets_and_reads_their_jsonl(api_client, thread, other_workspace):
    event_append(thread=thread, actor=Actor.system("t"), events=[
        {"type": "Message", "role": "user", "content": "hi"}])
    item = dataset_add_range(dataset_name="evals", thread=thread, start_position=1, end_position=1,
                             actor=Actor.system("t"))
    theirs = dataset_ensure(workspace=other_workspace, name="theirs")
    listed = api_client.get("/api/v1/datasets/").json()
    assert [(d["name"], d["item_count"]) for d in listed["results"]] == [("evals", 1)]
    answer = api_client.get(f"/api/v1/datasets/{item.dataset_id}/items.jsonl")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/jsonl")
    lines = b"".join(answer.streaming_content).decode().splitlines()
    assert [json.loads(line)["input"] for line in lines] == [
        [{"seq": 1, "type": "Message", "role": "user", "content": "hi"}]]
    for url in (f"/api/v1/datasets/{theirs.pk}/", f"/api/v1/datasets/{theirs.pk}/items.jsonl"):
        missing = api_client.get(url)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
