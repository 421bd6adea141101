"""The OpenAI Conversations API at /openai/v1, driven by the official `openai` SDK (its own
request building, response parsing, pagination and exception classes) over the WSGI app in
process; tests/frameworks/test_openai_conversations_live.py runs the async SDK and the Agents
SDK's OpenAIConversationsSession against a live server."""

import json

import httpx
import openai
import pytest
from openai import OpenAI

from contextstore.models import AuditLog, Event, Session
from contextstore.openai_items import item_event, stored_item
from contextstore.selectors.conversations import APP, items_page
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.common import Actor
from contextstore.services.erasure import user_erase
from contextstore.services.events import event_append
from contextstore.services.sessions import session_archive
from contextstore.services.workspaces import api_token_create
from project.wsgi import application
from tests.fuzzing import in_process_app  # noqa: F401 - autouse: the test's connection stays open

ITEMS = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18C and sunny"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "The tool said so."}]},
    {"type": "message", "id": "msg_a", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "18C and sunny.", "annotations": []}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "paris weather"}},
]


def sdk(raw: str, **options) -> OpenAI:
    return OpenAI(base_url="http://testserver/openai/v1", api_key=raw, max_retries=0,
                  http_client=httpx.Client(transport=httpx.WSGITransport(app=application)), **options)


@pytest.fixture
def client(token) -> OpenAI:
    return sdk(token[1])


def without_id(item: dict) -> dict:
    return {k: v for k, v in item.items() if k != "id"}


def test_a_conversation_is_created_read_updated_and_deleted(client, workspace):
    made = client.conversations.create(metadata={"topic": "weather"})
    assert made.id.startswith("conv_") and made.object == "conversation"
    assert made.metadata == {"topic": "weather"} and isinstance(made.created_at, int)
    session = Session.objects.get(workspace=workspace, app=APP, key=made.id)
    assert session.metadata == {"topic": "weather"}
    assert client.conversations.retrieve(made.id).model_dump() == made.model_dump()
    updated = client.conversations.update(made.id, metadata={"topic": "travel", "user": "ann"})
    assert updated.metadata == {"topic": "travel", "user": "ann"}
    deleted = client.conversations.delete(made.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (made.id, "conversation.deleted", True)
    with pytest.raises(openai.NotFoundError) as caught:
        client.conversations.retrieve(made.id)
    assert caught.value.body["message"] == f"Conversation with id '{made.id}' not found."
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.list(made.id)
    # Deleted as OpenAI deletes: the items stay; the session is archived, and reopened it is back.
    session.refresh_from_db()
    assert session.archived
    session_archive(session=session, actor=Actor.system(), archived=False)
    assert client.conversations.retrieve(made.id).id == made.id


def test_items_come_back_exactly_as_sent_with_ids(client):
    conversation = client.conversations.create(items=ITEMS[:2])
    added = client.conversations.items.create(conversation.id, items=ITEMS[2:])
    assert added.object == "list" and added.has_more is False
    assert added.first_id == added.data[0].id and added.last_id == "ws_1"
    listed = [i.model_dump(exclude_unset=True)
              for i in client.conversations.items.list(conversation.id, order="asc")]
    assert [without_id(i) for i in listed] == [without_id(i) for i in ITEMS]
    assert [i["id"] for i in listed][1:] == ["fc_1", listed[2]["id"], "rs_1", "msg_a", "ws_1"]
    assert listed[0]["id"].startswith("msg_") and listed[2]["id"].startswith("fco_")
    assert client.conversations.items.retrieve("fc_1", conversation_id=conversation.id,
                                               include=["reasoning.encrypted_content"]).model_dump(
        exclude_unset=True) == ITEMS[1]
    # The default order is newest first.
    newest = client.conversations.items.list(conversation.id, limit=2)
    assert [i.id for i in newest.data] == ["ws_1", "msg_a"] and newest.has_more


def test_items_are_events_the_thread_reads_and_renders(client, workspace, api_client):
    conversation = client.conversations.create(items=ITEMS[:3])
    thread = Session.objects.get(key=conversation.id).threads.get()
    rows = list(Event.objects.filter(thread=thread).order_by("seq")
                .values("type", "role", "content", "call_id"))
    assert rows == [
        {"type": "Message", "role": "user", "content": "Weather in Paris?", "call_id": ""},
        {"type": "ToolCall", "role": "assistant", "content": "", "call_id": "call_1"},
        {"type": "ToolResult", "role": "tool", "content": "18C and sunny", "call_id": "call_1"},
    ]
    render = api_client.get(f"/api/v1/threads/{thread.pk}/context/?format=openai").json()
    assert [m["role"] for m in render["messages"]][-3:] == ["user", "assistant", "tool"]
    assert render["messages"][-2]["tool_calls"][0]["function"]["name"] == "weather"


def test_pagination_walks_every_item_both_ways(client):
    conversation = client.conversations.create()
    for start in range(0, 45, 15):
        client.conversations.items.create(conversation.id, items=[
            {"type": "message", "role": "user", "content": f"m{n}"} for n in range(start, start + 15)])
    asc = [i.content[0].text for i in client.conversations.items.list(conversation.id, order="asc", limit=7)]
    assert asc == [f"m{n}" for n in range(45)]
    desc = [i.content[0].text for i in client.conversations.items.list(conversation.id, limit=20)]
    assert desc == [f"m{n}" for n in reversed(range(45))]
    page = client.conversations.items.list(conversation.id, order="asc", limit=5)
    after = client.conversations.items.list(conversation.id, order="asc", limit=5, after=page.last_id)
    assert [i.content[0].text for i in after.data] == [f"m{n}" for n in range(5, 10)]
    # Stored as sent: the event holds the string once; the item lists it as a text part.
    assert Event.objects.get(content="m7").data["item"]["content"] is None
    assert after.first_id == after.data[0].id and after.has_more


def test_a_deleted_item_leaves_the_list_and_stays_as_a_retracted_event(client):
    conversation = client.conversations.create(items=ITEMS[:2])
    answer = client.conversations.items.delete("fc_1", conversation_id=conversation.id)
    assert answer.id == conversation.id and answer.object == "conversation"
    assert [i.type for i in client.conversations.items.list(conversation.id)] == ["message"]
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve("fc_1", conversation_id=conversation.id)
    assert Event.objects.get(client_id__startswith="fc_1").status == Event.Status.RETRACTED
    # A popped item can be added again (its old row keeps its place in history).
    client.conversations.items.create(conversation.id, items=[ITEMS[1]])
    assert client.conversations.items.retrieve("fc_1", conversation_id=conversation.id).id == "fc_1"


def test_a_persons_note_and_a_summary_read_as_message_items(client, token):
    conversation = client.conversations.create(items=ITEMS[:1])
    thread = Session.objects.get(key=conversation.id).threads.get()
    event_append(thread=thread, events=[{"type": "Message", "role": "user", "content": "A note."}],
                 actor=Actor.system())
    items = client.conversations.items.list(conversation.id, order="asc").data
    note = items[-1].model_dump(exclude_unset=True)
    assert note["role"] == "user" and note["content"] == [{"type": "input_text", "text": "A note."}]
    assert client.conversations.items.retrieve(note["id"], conversation_id=conversation.id).id == note["id"]
    # A person collapses the two into a summary: the conversation reads the summary in their
    # place; undone, the items are back.
    collapse = collapse_create(thread=thread, start_position=1, end_position=2, summary_text="Asked; noted.",
                               actor=Actor.system())
    summary = client.conversations.items.list(conversation.id).data
    assert len(summary) == 1 and summary[0].content[0].text == "Asked; noted." and summary[0].role == "system"
    collapse_undo(collapse=collapse, actor=Actor.system())
    back = [i.id for i in client.conversations.items.list(conversation.id, order="asc")]
    assert back == [items[0].id, note["id"]]


BAD, GONE = openai.BadRequestError, openai.NotFoundError


@pytest.mark.parametrize(("call", "error"), [
    (lambda c, cid: c.conversations.create(metadata={f"k{n}": "v" for n in range(17)}), BAD),
    (lambda c, cid: c.conversations.create(metadata={"k" * 65: "v"}), BAD),
    (lambda c, cid: c.conversations.create(metadata={"k": "v" * 513}), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items=[{"content": "no type or role"}]), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items=[ITEMS[0]] * 21), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items=[ITEMS[1], ITEMS[1]]), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items=[{**ITEMS[1], "id": "x" * 201}]), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items=["not an object"]), BAD),
    (lambda c, cid: c.conversations.items.create(cid, items={"not": "an array"}), BAD),
    (lambda c, cid: c.conversations.update(cid, metadata=["not an object"]), BAD),
    (lambda c, cid: c.conversations.create(items=[ITEMS[0]] * 21), BAD),
    (lambda c, cid: c.conversations.items.list(cid, limit=101), BAD),
    (lambda c, cid: c.conversations.items.list(cid, order="sideways"), BAD),
    (lambda c, cid: c.conversations.items.list(cid, include=["everything"]), BAD),
    (lambda c, cid: c.conversations.items.list(cid, after="msg_nope"), GONE),
    (lambda c, cid: c.conversations.items.retrieve("msg_nope", conversation_id=cid), GONE),
    (lambda c, cid: c.conversations.items.delete("msg_nope", conversation_id=cid), GONE),
    (lambda c, cid: c.conversations.retrieve("conv_nope"), GONE),
])
def test_bad_requests_raise_the_sdks_own_errors_and_change_nothing(client, call, error):
    conversation = client.conversations.create(items=[ITEMS[1]], metadata={"a": "b"})
    before = Event.objects.count(), Session.objects.count()
    with pytest.raises(error) as caught:
        call(client, conversation.id)
    assert caught.value.status_code == (400 if error is BAD else 404)
    assert set(caught.value.body) == {"message", "type", "param", "code"}
    assert caught.value.body["type"] == "invalid_request_error"
    assert (Event.objects.count(), Session.objects.count()) == before
    assert client.conversations.retrieve(conversation.id).metadata == {"a": "b"}


def test_another_workspace_and_bad_tokens_are_refused(client, other_workspace, read_token):
    conversation = client.conversations.create(items=ITEMS[:1])
    rival = sdk(api_token_create(workspace=other_workspace, name="rival", actor=Actor.system())[1])
    for call in (lambda c: c.conversations.retrieve(conversation.id),
                 lambda c: c.conversations.items.list(conversation.id),
                 lambda c: c.conversations.delete(conversation.id),
                 lambda c: c.conversations.items.create(conversation.id, items=ITEMS[:1])):
        with pytest.raises(openai.NotFoundError):
            call(rival)
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk("cs_not-a-token").conversations.retrieve(conversation.id)
    assert caught.value.body["code"] == "invalid_api_key"
    reader = sdk(read_token[1])
    assert reader.conversations.retrieve(conversation.id).id == conversation.id
    with pytest.raises(openai.PermissionDeniedError):
        reader.conversations.items.create(conversation.id, items=ITEMS[:1])
    assert len(client.conversations.items.list(conversation.id).data) == 1


def test_an_unknown_path_answers_in_openais_shape(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.get("/responses/nope", cast_to=object)
    assert caught.value.body["type"] == "invalid_request_error"


def test_a_secret_in_an_item_is_redacted_and_erasure_removes_the_conversation(client, workspace):
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    conversation = client.conversations.create(metadata={"user_id": "ann"}, items=[
        {"type": "message", "role": "user", "content": f"my key is {secret}"},
        {"type": "function_call_output", "call_id": "c", "output": json.dumps({"key": secret})}])
    items = client.conversations.items.list(conversation.id, order="asc").data
    text = json.dumps([i.model_dump() for i in items])
    assert secret not in text and "[REDACTED" in text
    thread = Session.objects.get(key=conversation.id).threads.get()
    assert not any(secret in json.dumps([e.content, e.data]) for e in Event.objects.filter(thread=thread))
    # Its metadata's user_id is the session's: erasing that person removes the conversation.
    session = Session.objects.get(key=conversation.id)
    assert session.user_id == "ann"
    user_erase(workspace=workspace, user_id="ann", actor=Actor.system())
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Event.objects.filter(thread_id=thread.pk).exists()
    assert AuditLog.objects.filter(action="conversation.delete").count() == 0


def test_the_server_mapping_is_the_agents_adapters():
    adapter = pytest.importorskip("contextstore_client.adapters.openai_agents")
    for item in [*ITEMS, {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text"}]},
                 {"role": "user", "content": "typeless"}]:
        assert item_event(item) == adapter.item_event(item)
        stored = item_event(item)
        assert stored_item(stored["content"], stored["data"]) == adapter.stored_item(stored) == item


def test_a_retried_request_with_an_idempotency_key_answers_the_first_answer(client):
    key = {"Idempotency-Key": "retry-1"}
    first = client.conversations.create(items=ITEMS[:1], extra_headers=key)
    assert client.conversations.create(items=ITEMS[:1], extra_headers=key).id == first.id
    items = [{"role": "user", "content": "once"}, ITEMS[1]]
    added = client.conversations.items.create(first.id, items=items, extra_headers=key)
    again = client.conversations.items.create(first.id, items=items, extra_headers=key)
    assert again.model_dump() == added.model_dump()
    assert len(client.conversations.items.list(first.id).data) == 3
    # The same ids in a new request are a duplicate, as OpenAI answers.
    with pytest.raises(openai.BadRequestError, match="Duplicate item found with id fc_1"):
        client.conversations.items.create(first.id, items=[ITEMS[1]])


def test_a_page_costs_three_statements_whatever_the_history(client, workspace, django_assert_num_queries):
    conversation = client.conversations.create()
    for start in range(0, 60, 20):
        client.conversations.items.create(conversation.id, items=[
            {"type": "message", "role": "user", "content": f"m{n}"} for n in range(start, start + 20)])
    first = items_page(workspace=workspace, conversation_id=conversation.id, order="asc", limit=5)
    with django_assert_num_queries(3):  # the conversation, the after item, the page
        page = items_page(workspace=workspace, conversation_id=conversation.id, order="asc", limit=5,
                          after=first.data[-1]["id"])
    assert [i["content"][0]["text"] for i in page.data] == ["m5", "m6", "m7", "m8", "m9"]
