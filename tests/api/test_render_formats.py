from tests.provider_types import assert_anthropic_request, assert_openai_request


def _tool_thread(api_client, thread_url):
    api_client.put(f"{thread_url}blocks/persona/", {"value": "Be brief.", "placement": "prefix"},
                   format="json")
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "weather in Paris?"},
        {"type": "ToolCall", "data": {"id": "c1", "name": "weather", "arguments": {"city": "Paris"}}},
        {"type": "ToolResult", "content": "18C, cloudy", "data": {"tool_call_id": "c1"}},
        {"type": "LLMOutput", "content": "18C and cloudy."},
        {"type": "Message", "content": "thanks"},
    ]}, format="json")


def test_openai_format_gives_chat_completions_messages(api_client, thread_url):
    _tool_thread(api_client, thread_url)
    body = api_client.get(f"{thread_url}context/?format=openai").json()
    assert body["format"] == "openai"
    assert body["messages"] == [
        {"role": "system", "content": "## persona\nBe brief."},
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C, cloudy"},
        {"role": "assistant", "content": "18C and cloudy."},
        {"role": "user", "content": "thanks"},
    ]
    assert_openai_request(body["messages"])


def test_anthropic_format_gives_system_and_tool_blocks(api_client, thread_url):
    _tool_thread(api_client, thread_url)
    body = api_client.get(f"{thread_url}context/?format=anthropic").json()
    assert body["system"] == [{"type": "text", "text": "## persona\nBe brief."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "18C, cloudy"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "18C and cloudy."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]
    assert_anthropic_request(body["system"], body["messages"])


def test_consecutive_same_role_turns_are_merged_for_anthropic(api_client, thread_url):
    api_client.post(f"{thread_url}events/", {"events": [
        {"type": "Message", "content": "one"}, {"type": "Message", "content": "two"},
        {"type": "Error", "content": "tool crashed"}]}, format="json")
    body = api_client.get(f"{thread_url}context/?format=anthropic").json()
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "one"}, {"type": "text", "text": "two"},
        {"type": "text", "text": "tool crashed"}]}]


def test_bad_format_or_on_oversize_is_a_400(api_client, thread_url):
    for query in ("format=gemini", "on_oversize=truncate"):
        response = api_client.get(f"{thread_url}context/?{query}")
        assert response.status_code == 400 and response.json()["error"]["code"]


def test_start_chunk_is_a_share_of_the_budget_and_anything_else_is_a_400(api_client, thread_url):
    for query in ("start_chunk=2", "start_chunk=-0.1", "start_chunk=nan", "start_chunk=x"):
        response = api_client.get(f"{thread_url}context/?{query}")
        assert response.status_code == 400 and response.json()["error"]["code"]
    body = api_client.get(f"{thread_url}context/?start_chunk=0.5").json()
    assert body["stats"]["start_chunk"] == 0.5
