"""The inverses through the API: clear-context ↔ un-clear, fork ↔ delete fork; ranges in
positions with the deprecated seq names still accepted for one version."""

from contextstore.models import AuditLog, Thread
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.state import state_write
from tests.conftest import messages


def contents(api_client, thread_id: int) -> list[str]:
    render = api_client.get(f"/api/v1/threads/{thread_id}/context/?max_tokens=100000").json()
    return [m["content"] for m in render["messages"] if m["section"] == "history"]


def test_clear_context_is_undone_by_unclear(api_client, thread, thread_url, actor):
    event_append(thread=thread, events=messages(3, words=4), actor=actor)
    state_write(thread=thread, summary="what happened so far", actor=actor)
    before = contents(api_client, thread.pk)

    cleared = api_client.post(f"{thread_url}clear-context/").json()
    assert cleared["cleared"] == 3 and cleared["clear"]["summary"] == "what happened so far"
    assert contents(api_client, thread.pk) == []
    listed = api_client.get(f"{thread_url}clears/").json()["results"]
    assert [c["id"] for c in listed] == [cleared["clear"]["id"]]

    undone = api_client.post(f"{thread_url}clears/{cleared['clear']['id']}/undo/")

    assert undone.status_code == 200
    assert undone.json()["restored"] == 3 and undone.json()["summary_restored"] is True
    assert contents(api_client, thread.pk) == before
    assert api_client.get(f"{thread_url}state/").json()["summary"] == "what happened so far"
    again = api_client.post(f"{thread_url}clears/{cleared['clear']['id']}/undo/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_undone"
    assert AuditLog.objects.filter(action="thread.unclear").count() == 1


def test_a_clear_of_another_thread_is_404(api_client, thread, session, actor):
    from contextstore.services.sessions import thread_ensure
    from contextstore.services.threads import thread_clear_context

    other = thread_ensure(session=session, name="other", actor=actor)[0]
    clear = thread_clear_context(thread=other, actor=actor)
    response = api_client.post(f"/api/v1/threads/{thread.pk}/clears/{clear.pk}/undo/")
    assert response.status_code == 404


def test_a_fork_is_deleted_through_the_api_and_the_parent_is_untouched(api_client, thread, thread_url,
                                                                        actor):
    event_append(thread=thread, events=messages(4, words=4), actor=actor)
    child = api_client.post(f"{thread_url}fork/", {"name": "branch", "start_position": 2,
                                                   "end_position": 3}, format="json").json()
    assert (child["fork_start_position"], child["fork_end_position"], child["event_count"]) == (2, 3, 2)
    assert "fork_start_seq" not in child and "fork_end_seq" not in child  # the old names are gone
    assert api_client.delete(thread_url).json()["error"]["code"] == "not_a_fork"

    assert api_client.delete(f"/api/v1/threads/{child['id']}/").status_code == 204

    assert not Thread.objects.filter(pk=child["id"]).exists()
    assert api_client.get(thread_url).json()["event_count"] == 4
    assert AuditLog.objects.filter(action="thread.delete_fork").count() == 1


def test_a_collapse_needs_its_positions_by_name(api_client, thread, thread_url, actor):
    event_append(thread=thread, events=messages(6, words=4), actor=actor)
    made = api_client.post(f"{thread_url}collapse/", {"start_position": 2, "end_position": 3,
                                                      "summary_text": "s"}, format="json").json()
    assert (made["start_position"], made["end_position"]) == (2, 3) and "start_seq" not in made
    old = api_client.post(f"{thread_url}collapse/", {"start_seq": 4, "end_seq": 5, "summary_text": "s"},
                          format="json")
    assert old.status_code == 400 and "start_position" in old.json()["error"]["details"]


def test_the_schema_has_no_seq_names_for_ranges(api_client):
    import json

    raw = api_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content
    schema = json.loads(raw)
    for name in ("CollapseInRequest", "ForkInRequest", "Collapse"):
        fields = schema["components"]["schemas"][name]["properties"]
        assert "start_position" in fields and "start_seq" not in fields and "end_seq" not in fields
    assert "fork_start_seq" not in schema["components"]["schemas"]["Thread"]["properties"]
    assert "/api/v1/threads/{thread_pk}/clears/{id}/undo/" in schema["paths"]
    assert "delete" in schema["paths"]["/api/v1/threads/{id}/"]


def test_a_fork_over_a_collapse_copies_the_summary_through_the_api(api_client, thread, thread_url,
                                                                   actor):
    event_append(thread=thread, events=messages(10, words=3), actor=actor)
    collapse_create(thread=thread, start_position=3, end_position=5, summary_text="S", actor=actor)
    child = api_client.post(f"{thread_url}fork/", {"name": "b", "start_position": 1, "end_position": 8},
                            format="json").json()
    assert [c.split(":")[0] for c in contents(api_client, child["id"])] == [
        "turn 0", "turn 1", "S", "turn 5", "turn 6", "turn 7"]
