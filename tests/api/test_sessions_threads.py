from contextstore.models import AuditLog, Session, Thread


def test_it_creates_a_session_then_returns_it_on_the_second_upsert(api_client, workspace):
    body = {"key": "conv-9", "user_id": "bob", "agent": "helper", "title": "Trip",
            "metadata": {"z": 1, "a": 2}}
    first = api_client.post("/api/v1/sessions/", body, format="json")
    assert first.status_code == 201
    assert first.json()["key"] == "conv-9"
    assert list(first.json()["metadata"]) == ["z", "a"]
    second = api_client.post("/api/v1/sessions/", body, format="json")
    assert second.status_code == 200
    assert second.json()["id"] == first.json()["id"]
    assert Session.objects.filter(workspace=workspace, key="conv-9").count() == 1


def test_it_lists_sessions_oldest_first_with_filters_and_a_cursor(api_client, session):
    for i in range(3):
        api_client.post("/api/v1/sessions/", {"key": f"k{i}", "user_id": "bob", "agent": "x"},
                        format="json")
    page = api_client.get("/api/v1/sessions/?page_size=2").json()
    assert [r["key"] for r in page["results"]] == ["s-1", "k0"]
    assert set(page) == {"results", "next"}
    rest = api_client.get(page["next"]).json()
    assert [r["key"] for r in rest["results"]] == ["k1", "k2"]
    assert rest["next"] is None
    bobs = api_client.get("/api/v1/sessions/?user_id=bob&agent=x").json()["results"]
    assert [r["key"] for r in bobs] == ["k0", "k1", "k2"]
    assert [r["key"] for r in api_client.get("/api/v1/sessions/?q=k1").json()["results"]] == ["k1"]
    assert api_client.get("/api/v1/sessions/?archived=true").json()["results"] == []


def test_it_patches_and_deletes_a_session(api_client, session, thread):
    url = f"/api/v1/sessions/{session.pk}/"
    patched = api_client.patch(url, {"title": "Renamed", "archived": True}, format="json")
    assert patched.status_code == 200
    assert (patched.json()["title"], patched.json()["archived"]) == ("Renamed", True)
    assert api_client.delete(url).status_code == 204
    assert not Session.objects.filter(pk=session.pk).exists()
    assert AuditLog.objects.filter(action="session.delete").exists()
    assert api_client.get(url).status_code == 404


def test_it_refuses_a_session_without_a_key_and_changes_nothing(api_client, workspace):
    response = api_client.post("/api/v1/sessions/", {"user_id": "bob"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "key" in response.json()["error"]["details"]
    assert not Session.objects.filter(workspace=workspace, user_id="bob").exists()


def test_ensure_creates_the_session_and_thread_once(api_client, workspace):
    body = {"session_key": "chat-1", "user_id": "u", "agent": "a", "name": "planner"}
    first = api_client.post("/api/v1/threads/ensure/", body, format="json")
    assert first.status_code == 201
    assert (first.json()["name"], first.json()["session_key"]) == ("planner", "chat-1")
    again = api_client.post("/api/v1/threads/ensure/", body, format="json")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    default = api_client.post("/api/v1/threads/ensure/", {"session_key": "chat-1", "user_id": "u"},
                              format="json")
    assert default.json()["name"] == "main"
    session_id = first.json()["session"]
    listed = api_client.get(f"/api/v1/sessions/{session_id}/threads/").json()["results"]
    assert [t["name"] for t in listed] == ["planner", "main"]
    assert Thread.objects.filter(session_id=session_id).count() == 2


def test_it_hides_other_workspaces(other_client, session, thread, thread_url):
    assert other_client.get(f"/api/v1/sessions/{session.pk}/").status_code == 404
    assert other_client.get(thread_url).status_code == 404
    assert other_client.get(f"{thread_url}events/").status_code == 404
    assert other_client.get(f"{thread_url}state/").status_code == 404
    response = other_client.post(f"{thread_url}events/", {"events": [{"type": "Message"}]},
                                 format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert other_client.delete(f"/api/v1/sessions/{session.pk}/").status_code == 404
    assert other_client.get("/api/v1/sessions/").json()["results"] == []
    assert Session.objects.filter(pk=session.pk).exists()
    thread.refresh_from_db()
    assert thread.event_count == 0


def test_keys_are_kept_verbatim_and_blank_ones_refused(api_client):
    spaced = api_client.post("/api/v1/threads/ensure/", {"session_key": " k ", "user_id": "u "},
                             format="json")
    assert spaced.status_code == 201
    assert (spaced.json()["session_key"], spaced.json()["user_id"]) == (" k ", "u ")
    plain = api_client.post("/api/v1/threads/ensure/", {"session_key": "k", "user_id": "u"},
                            format="json")
    assert plain.status_code == 201 and plain.json()["id"] != spaced.json()["id"]
    blank = api_client.post("/api/v1/sessions/", {"key": ""}, format="json")
    assert blank.status_code == 400 and "key" in blank.json()["error"]["details"]
