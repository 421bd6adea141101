"""Finding 1: a client-sent text hash (`data.message_hashes`, `data.tools_hash`) named another
workspace's stored text, which then read back through the LLM-call endpoints and outlived its
owner's erasure; a hash stored nowhere was a 500 on every view of the call. Texts now belong
to their workspace, and a hash the workspace has not stored is refused wherever events come in."""

import json

from django.test import Client

from contextstore.models import Event, StoredText
from contextstore.selectors.renders import sha256
from contextstore.services.common import Actor
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.sharing import share_link_create

SECRET = {"role": "system", "content": "You are RivalBot. Discount code: RIVAL-90-OFF."}


def _hash(message: dict) -> str:
    """How the server names a logged message (services/renders.py llm_call_prepare)."""
    return sha256(json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def _rival_logs_its_prompt(other_workspace, actor):
    """Workspace B (rival) logs a call with its system prompt; returns B's thread."""
    session = session_ensure(workspace=other_workspace, key="rival-s", user_id="bob", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": [SECRET]}}])
    return thread


def _call(client, url, **data):
    return client.post(f"{url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", **data}}]}, format="json")


def test_a_hash_of_another_workspaces_text_is_refused_and_reads_nothing(
        api_client, thread_url, other_workspace, actor):
    _rival_logs_its_prompt(other_workspace, actor)
    response = _call(api_client, thread_url, message_hashes=[_hash(SECRET)])
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["details"] == {"events[0].data.message_hashes": "unknown text"}
    assert api_client.get(f"{thread_url}events/").json()["results"] == []
    tools = _call(api_client, thread_url, messages=[], tools_hash=_hash(SECRET))
    assert tools.status_code == 400
    assert tools.json()["error"]["details"] == {"events[0].data.tools_hash": "unknown text"}


def test_a_hash_stored_nowhere_is_refused_at_every_way_in(api_client, thread_url):
    nowhere = "ab" * 32
    assert _call(api_client, thread_url, message_hashes=[nowhere]).status_code == 400
    assert _call(api_client, thread_url, message_hashes="not a list").status_code == 400
    synced = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": [
        {"key": "c1", "event": {"type": "LLMCallStart", "data": {"message_hashes": [nowhere]}}}]},
        format="json")
    assert synced.status_code == 400
    assert synced.json()["error"]["details"] == {"items[0].data.message_hashes": "unknown text"}
    who = {"app": "shop", "user_id": "ann", "key": "s1"}
    assert api_client.post("/api/v1/agent-sessions/", who, format="json").status_code == 201
    committed = api_client.post("/api/v1/agent-sessions/commit/", {
        "app": "shop", "user_id": "ann", "key": "s1",
        "events": [{"type": "LLMComplete", "data": {"tools_hash": nowhere}}]}, format="json")
    assert committed.status_code == 400
    imported = api_client.post("/api/v1/threads/import/?session_key=copy", {
        "format": "contextstore", "version": 1, "thread": {"name": "main"},
        "events": [{"seq": 1, "type": "LLMCallStart", "data": {"message_hashes": [nowhere]}}]},
        format="json")
    assert imported.status_code == 400
    assert imported.json()["error"]["details"] == {"events[0].data.message_hashes": "unknown text"}
    assert not Event.objects.exists()


def test_a_workspace_may_name_its_own_stored_texts_again(api_client, thread_url):
    message = {"role": "user", "content": "hi"}
    assert _call(api_client, thread_url, messages=[message]).status_code == 201
    again = _call(api_client, thread_url, message_hashes=[_hash(message)])
    assert again.status_code == 201
    assert api_client.get(f"{thread_url}llm-calls/2/").json()["messages"] == [message]
    # a batch may name a text another event of the same batch carries
    both = api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"messages": [SECRET]}},
        {"type": "LLMCallStart", "data": {"message_hashes": [_hash(SECRET)]}}]}, format="json")
    assert both.status_code == 201


def test_a_call_whose_text_is_gone_reads_as_expired_everywhere(
        api_client, thread, thread_url, editor_client, actor):
    tools = [{"type": "function", "function": {"name": "ls"}}]
    assert _call(api_client, thread_url, messages=[{"role": "user", "content": "hi"}, SECRET],
                 tools=tools).status_code == 201
    StoredText.objects.filter(text=json.dumps(SECRET, sort_keys=True, separators=(",", ":"))).delete()
    StoredText.objects.filter(text__contains='"ls"').delete()
    read = api_client.get(f"{thread_url}llm-calls/1/")
    assert read.status_code == 200
    body = read.json()
    assert (body["messages"], body["messages_expired"], body["tools"]) == (
        [{"role": "user", "content": "hi"}], 1, None)
    page = editor_client.get(f"/threads/{thread.pk}/calls/1/sent/")
    assert page.status_code == 200
    assert b'id="messages-expired"' in page.content
    for path in ("diff/", "request/openai/", "request/curl/"):
        assert editor_client.get(f"/threads/{thread.pk}/calls/1/{path}").status_code == 200, path
    _, raw = share_link_create(session=thread.session, kind="call", thread=thread, seq=1, actor=actor)
    assert Client().get(f"/share/{raw}/").status_code == 200


def test_erasure_is_not_held_back_by_another_workspace_naming_the_hash(
        thread, other_workspace, actor):
    rival = _rival_logs_its_prompt(other_workspace, actor)
    # an older event of workspace A that names B's hash (stored before hashes were checked)
    event_append(thread=thread, actor=actor, events=[{"type": "LLMCallStart", "data": {}}])
    Event.objects.filter(thread=thread).update(data={"message_hashes": [_hash(SECRET)]})
    receipt = user_erase(workspace=other_workspace, user_id="bob", actor=Actor.system("dpo"))
    assert receipt["counts"]["stored_texts"] == 1
    assert not StoredText.objects.filter(sha256=_hash(SECRET)).exists()
    assert not type(rival).objects.filter(pk=rival.pk).exists()


def test_an_export_carries_the_logged_texts_so_another_workspace_imports_them_as_its_own(
        api_client, thread_url, other_client):
    tools = [{"type": "function", "function": {"name": "ls"}}]
    assert _call(api_client, thread_url, messages=[SECRET], tools=tools).status_code == 201
    exported = api_client.get(f"{thread_url}export/")
    body = json.loads(b"".join(exported.streaming_content) if exported.streaming else exported.content)
    assert body["events"][0]["data"]["messages"] == [SECRET]
    assert body["events"][0]["data"]["tools"] == tools and "tools_hash" not in body["events"][0]["data"]
    imported = other_client.post("/api/v1/threads/import/?session_key=copy", body, format="json")
    assert imported.status_code == 201
    read = other_client.get(f"/api/v1/threads/{imported.json()['id']}/llm-calls/1/").json()
    assert (read["messages"], read["tools"]) == ([SECRET], tools)
    assert StoredText.objects.filter(text__contains="RivalBot").count() == 2  # one per workspace
