"""An OTLP-derived call carries its reply everywhere a call is read: the llm-calls API, the
replay page, the shared call page and a dataset item made from it. Spans come from
gen_ai.output.messages and from the older gen_ai.choice span events."""

import json

from django.test import Client

from contextstore.models import DatasetItem, Event, Thread
from contextstore.selectors.calls import llm_call_at, llm_call_reply
from contextstore.services.common import Actor
from contextstore.services.sharing import share_link_create
from tests.views.conftest import editor, editor_client  # noqa: F401

from .conftest import export, span

TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
ASK = {"role": "user", "parts": [{"type": "text", "content": "Weather in Rome?"}]}
CALLS_TOOL = {"role": "assistant", "parts": [
    {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Rome"}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "warm"}]}
ANSWER = {"role": "assistant", "parts": [{"type": "text", "content": "It is warm in <b>Rome</b>."}]}


def chat(span_id: str, inputs: list, outputs: list, *, start: int) -> dict:
    return span(span_id, "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-1", "gen_ai.tool.definitions": json.dumps(TOOLS),
        "gen_ai.request.temperature": 0.2, "gen_ai.request.max_tokens": 300,
        "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)},
        start=start, end=start + 1)


def two_calls(otlp) -> tuple[Thread, int, int]:
    """A tool-calling turn: the first call asks for the weather tool, the second answers."""
    body = export(chat("00f067aa0ba90201", [ASK], [CALLS_TOOL], start=1),
                  chat("00f067aa0ba90202", [ASK, CALLS_TOOL, RESULT], [ANSWER], start=3))
    assert otlp(body).status_code == 200
    first, second = Event.objects.filter(type="LLMCallStart").order_by("seq").values_list("seq", flat=True)
    return Thread.objects.get(), first, second


def test_each_derived_call_s_reply_is_its_own_output_messages(otlp):
    thread, first, second = two_calls(otlp)
    one = llm_call_reply(thread=thread, call=llm_call_at(thread=thread, seq=first))
    two = llm_call_reply(thread=thread, call=llm_call_at(thread=thread, seq=second))
    assert one.as_message() == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "name": "get_weather", "arguments": {"city": "Rome"}}]}
    assert two.as_message() == {"role": "assistant", "content": "It is warm in <b>Rome</b>."}
    assert [e.type for e in two.events] == ["Message"]


def test_a_gen_ai_choice_span_event_is_the_derived_call_s_reply(otlp, api_client):
    events = [{"timeUnixNano": "1760000001000000000", "name": "gen_ai.user.message",
               "attributes": [{"key": "content", "value": {"stringValue": "2+2?"}}]},
              {"timeUnixNano": "1760000001000000000", "name": "gen_ai.choice",
               "attributes": [{"key": "finish_reason", "value": {"stringValue": "stop"}},
                              {"key": "message", "value": {"stringValue": '{"content": "4"}'}}]}]
    assert otlp(export(span("00f067aa0ba90203", "chat gpt-4o", {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.conversation.id": "conv-2"}, events=events))).status_code == 200
    thread = Thread.objects.get()
    seq = Event.objects.get(type="LLMComplete").seq
    body = api_client.get(f"/api/v1/threads/{thread.pk}/llm-calls/{seq}/").json()
    assert body["reply"] == {"role": "assistant", "content": "4"}


def test_the_api_returns_each_derived_call_s_reply(otlp, api_client):
    thread, first, second = two_calls(otlp)
    one = api_client.get(f"/api/v1/threads/{thread.pk}/llm-calls/{first}/").json()
    assert one["reply"]["tool_calls"][0]["name"] == "get_weather" and one["reply"]["content"] == ""
    two = api_client.get(f"/api/v1/threads/{thread.pk}/llm-calls/{second}/").json()
    assert two["reply"] == {"role": "assistant", "content": "It is warm in <b>Rome</b>."}


def test_the_replay_page_shows_the_derived_call_s_original_reply(otlp, editor_client):  # noqa: F811
    thread, _, second = two_calls(otlp)
    html = editor_client.get(f"/threads/{thread.pk}/calls/{second}/replay/").content.decode()
    original = html[html.index('id="original-h"'):html.index('id="latest-replay"')]
    assert "It is warm in &lt;b&gt;Rome&lt;/b&gt;." in original and "<b>Rome" not in original
    assert "No reply was logged" not in original


def test_the_shared_call_page_shows_the_derived_call_s_reply(otlp, user):
    thread, first, second = two_calls(otlp)
    _, raw = share_link_create(session=thread.session, kind="call", thread=thread, seq=second,
                               actor=Actor.for_user(user))
    html = Client().get(f"/share/{raw}/").content.decode()
    answer = html[html.index("<h3>Answer</h3>"):]
    assert "It is warm in &lt;b&gt;Rome&lt;/b&gt;." in answer and "No reply was logged" not in answer
    _, raw = share_link_create(session=thread.session, kind="call", thread=thread, seq=first,
                               actor=Actor.for_user(user))
    answer = Client().get(f"/share/{raw}/").content.decode().split("<h3>Answer</h3>")[1]
    assert "get_weather(city=" in answer and "It is warm" not in answer


def test_a_dataset_item_from_a_derived_call_expects_its_reply_keeps_tools_and_params(otlp,
                                                                                     editor_client):  # noqa: F811
    thread, _, second = two_calls(otlp)
    response = editor_client.post(f"/threads/{thread.pk}/calls/{second}/dataset/", {"dataset": "evals"})
    assert response.status_code == 302
    item = DatasetItem.objects.get()
    assert item.output == {"role": "assistant", "content": "It is warm in <b>Rome</b>."}
    assert item.input["tools"] == TOOLS and item.input["params"] == {"temperature": 0.2, "max_tokens": 300}
    assert [m["role"] for m in item.input["messages"]] == ["user", "assistant", "tool"]


def test_openinference_invocation_parameters_are_the_derived_call_s_params(otlp):
    assert otlp(export(span("00f067aa0ba90209", "ChatCompletion", {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "session.id": "conv-3",
        "llm.invocation_parameters": json.dumps({"model": "gpt-4o", "temperature": 0, "seed": 7}),
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi"}))
    ).status_code == 200
    start = Event.objects.get(type="LLMCallStart")
    assert start.data["params"] == {"temperature": 0, "seed": 7}
    assert "llm.invocation_parameters" not in start.data.get("attributes", {})
