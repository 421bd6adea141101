"""An LLM call logs its whole request: tool definitions (kept once) and parameters."""

from contextstore.models import StoredText

TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]


def _call(api_client, thread_url, **data):
    return api_client.post(f"{thread_url}events/", {"events": [
        {"type": "LLMCallStart", "data": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                                          **data}}]}, format="json")


def test_tools_and_params_are_recorded_with_the_call_and_tools_kept_once(api_client, thread_url):
    params = {"temperature": 0.1, "tool_choice": "auto", "max_tokens": 500}
    for _ in range(2):
        assert _call(api_client, thread_url, tools=TOOLS, params=params).status_code == 201
    texts = StoredText.objects.count()
    assert _call(api_client, thread_url, tools=TOOLS, params=params).status_code == 201
    assert StoredText.objects.count() == texts  # the same tools and message: nothing new kept
    sent = api_client.get(f"{thread_url}llm-calls/3/").json()
    assert sent["tools"] == TOOLS and sent["params"] == params
    event = api_client.get(f"{thread_url}events/").json()["results"][2]
    assert "tools" not in event["data"] and len(event["data"]["tools_hash"]) == 64
    bare = _call(api_client, thread_url)
    assert bare.status_code == 201
    plain = api_client.get(f"{thread_url}llm-calls/4/").json()
    assert (plain["tools"], plain["params"]) == (None, {})


def test_bad_tools_or_params_are_refused_and_nothing_is_appended(api_client, thread_url):
    for data in ({"tools": {"name": "ls"}}, {"tools": ["ls"]}, {"params": [1]},
                 {"params": {"x": "y" * 20_000}}):
        response = _call(api_client, thread_url, **data)
        assert response.status_code == 400, data
        message = response.json()["error"]["message"]
        assert "data.tools" in message or "data.params" in message
    assert api_client.get(f"{thread_url}events/").json()["results"] == []



def test_the_call_carries_its_reply_however_the_agent_logged_it(api_client, thread_url):
    start = {"type": "LLMCallStart", "data": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}}
    end = {"type": "LLMComplete", "data": {"model": "m"}}
    assert api_client.post(f"{thread_url}events/", {"events": [
        start, {"type": "Message", "role": "assistant", "content": "as a message"}, end,
        start, end, {"type": "ToolCall", "role": "assistant", "content": "Calling ls",
                     "parts": [{"type": "tool_call", "id": "t1", "name": "ls", "arguments": {}}]},
        {"type": "ToolResult", "role": "tool", "content": "a.py", "data": {"tool_call_id": "t1"}},
        start, {"type": "LLMComplete", "role": "assistant", "content": "in the complete", "data": {}},
        start, end]}, format="json").status_code == 201
    replies = [api_client.get(f"{thread_url}llm-calls/{seq}/").json()["reply"] for seq in (1, 4, 8, 10)]
    assert replies == [
        {"role": "assistant", "content": "as a message"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "ls", "arguments": {}}]},
        {"role": "assistant", "content": "in the complete"},
        None]
    assert api_client.get(f"{thread_url}llm-calls/9/").json()["reply"] == replies[2]  # by its LLMComplete
