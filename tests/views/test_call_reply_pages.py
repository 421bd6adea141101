"""The replay page, the shared call page and "add to dataset" show what a logged call answered,
whatever shape the agent logged it in."""

from django.test import Client

from contextstore.models import DatasetItem
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sharing import share_link_create

XSS = "<img src=x onerror=alert(1)>"
TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
START = {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                                          "tools": TOOLS, "params": {"temperature": 0.3}}}


def test_the_replay_page_shows_an_assistant_message_reply_escaped(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "Message", "role": "assistant", "content": f"hello {XSS}"},
        {"type": "LLMComplete", "data": {"model": "m"}}])
    html = editor_client.get(f"/threads/{thread.pk}/calls/1/replay/").content.decode()
    original = html[html.index('id="original-h"'):html.index('id="latest-replay"')]
    assert "hello &lt;img" in original and XSS not in html and "No reply was logged" not in original


def test_the_replay_page_shows_an_llm_complete_s_content_and_says_when_nothing_was_logged(
        editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "LLMComplete", "content": "the complete's answer", "data": {"model": "m"}},
        START, {"type": "LLMComplete", "data": {"model": "m"}}])
    first = editor_client.get(f"/threads/{thread.pk}/calls/1/replay/").content.decode()
    assert "the complete&#x27;s answer" in first and "No reply was logged" not in first
    second = editor_client.get(f"/threads/{thread.pk}/calls/3/replay/").content.decode()
    assert "No reply was logged" in second


def test_a_shared_call_shows_its_tool_calls_when_that_was_its_reply(session, thread, actor, user):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "LLMComplete", "data": {"model": "m"}},
        {"type": "ToolCall", "role": "assistant", "content": "Calling ls",
         "parts": [{"type": "tool_call", "id": "t1", "name": "ls", "arguments": {"path": "src"}}]}])
    _, raw = share_link_create(session=session, kind="call", thread=thread, seq=1, actor=Actor.for_user(user))
    answer = Client().get(f"/share/{raw}/").content.decode().split("<h3>Answer</h3>")[1]
    assert "ls(path=" in answer and "No reply was logged" not in answer


def test_adding_a_call_to_a_dataset_keeps_its_reply_tools_and_params(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        START, {"type": "LLMComplete", "data": {"model": "m"}},
        {"type": "LLMOutput", "role": "assistant", "content": "the answer"}])
    response = editor_client.post(f"/threads/{thread.pk}/calls/1/dataset/", {"dataset": "evals"})
    assert response.status_code == 302
    item = DatasetItem.objects.get()
    assert item.output == {"role": "assistant", "content": "the answer"}
    assert item.input == {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS,
                          "params": {"temperature": 0.3}}
