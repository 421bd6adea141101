"""A recorded call as a chat and as each provider's request body (contextstore/provider_request.py)."""

import json

from contextstore.provider_request import anthropic_body, chat, curl, openai_body

SENT_OPENAI = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "List the tests."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "tests/"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "test_a.py\ntest_b.py"},
    {"role": "system", "content": "Now: 10:00"},
]
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [{"type": "function",
          "function": {"name": "ls", "description": "List a folder", "parameters": SCHEMA}}]
PARAMS = {"temperature": 0.2, "max_tokens": 300, "tool_choice": "required", "seed": 7, "top_k": 5}


def test_the_chat_reads_roles_text_calls_and_results():
    turns = chat(system=[], messages=SENT_OPENAI)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "system"]
    assert turns[2].calls[0].name == "ls" and turns[3].answers == "c1"
    assert turns[3].text == "test_a.py\ntest_b.py"
    assert not turns[0].history and not turns[4].history  # leading and trailing system: sections


def test_the_openai_body_keeps_system_messages_in_place_with_tools_and_its_params():
    turns = chat(system=[], messages=SENT_OPENAI)
    body = openai_body(model="gpt-4o", turns=turns, tools=TOOLS, params=PARAMS)
    assert body["messages"] == SENT_OPENAI[:2] + [
        {"role": "assistant", "content": None, "tool_calls": SENT_OPENAI[2]["tool_calls"]},
        SENT_OPENAI[3], SENT_OPENAI[4]]
    assert body["tools"] == TOOLS
    # Anthropic-only parameters left out; OpenAI's own kept
    assert {k: body[k] for k in ("model", "temperature", "max_tokens", "tool_choice", "seed")} == {
        "model": "gpt-4o", "temperature": 0.2, "max_tokens": 300, "tool_choice": "required", "seed": 7}
    assert "top_k" not in body


def test_the_anthropic_body_puts_system_on_top_results_in_user_turns_and_converts_tools():
    body = anthropic_body(model="claude-sonnet-4", turns=chat(system=[], messages=SENT_OPENAI), tools=TOOLS,
                          params=PARAMS)
    assert body["system"] == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Now: 10:00"}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "List the tests."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "ls",
                                           "input": {"path": "tests/"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1",
                                      "content": "test_a.py\ntest_b.py"}]},
    ]
    assert body["tools"] == [{"name": "ls", "description": "List a folder",
                              "input_schema": TOOLS[0]["function"]["parameters"]}]
    assert body["max_tokens"] == 300 and body["top_k"] == 5 and body["tool_choice"] == {"type": "any"}
    assert "seed" not in body


def test_an_anthropic_render_reads_back_into_both_formats_thinking_kept_only_for_anthropic():
    system = [{"type": "text", "text": "## persona\nBe brief."}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Why?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Let me see.", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "none",
                                      "is_error": True}]},
    ]
    turns = chat(system=system, messages=messages)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool"]
    assert turns[2].thinking_text == "Let me see." and turns[3].is_error
    back = anthropic_body(model="claude-sonnet-4", turns=turns, tools=None, params={})
    assert back["system"] == system and back["messages"] == messages and back["max_tokens"] == 4096
    openai = openai_body(model="gpt-4o", turns=turns, tools=None, params={})
    assert openai["messages"][0] == {"role": "system", "content": "## persona\nBe brief."}
    assert openai["messages"][2] == {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "grep", "arguments": '{"q":"x"}'}}]}
    assert "tools" not in openai and "thinking" not in json.dumps(openai)


def test_a_raw_render_s_history_notes_stay_in_the_messages_for_anthropic():
    messages = [{"role": "system", "section": "prefix", "content": "Be brief."},
                {"role": "user", "section": "history", "content": "hi", "seq": 3, "tokens": 2},
                {"role": "system", "section": "history", "content": "Job failed", "seq": 4},
                {"role": "assistant", "section": "history", "content": "", "seq": 5,
                 "parts": [{"type": "thinking", "thinking": "hm"}]}]
    turns = chat(system=[], messages=messages)
    assert turns[3].thinking_text == "hm" and turns[1].seq == 3 and turns[1].tokens == 2
    # thinking without its signature nor any text: neither API takes it back
    assert [m["role"] for m in openai_body(model="m", turns=turns, tools=None, params={})["messages"]] == [
        "system", "user", "system"]
    body = anthropic_body(model="m", turns=turns, tools=None, params={})
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                             {"type": "text", "text": "Job failed"}]}]


def test_curl_reads_the_key_from_the_shell_and_sends_the_body_verbatim():
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "it's $HOME"}]}
    command = curl("openai", body)
    assert command.startswith("curl https://api.openai.com/v1/chat/completions")
    assert '"Authorization: Bearer $OPENAI_API_KEY"' in command
    sent = command.split("<<'JSON'\n")[1].rsplit("\nJSON", 1)[0]
    assert json.loads(sent) == body
    anthropic = curl("anthropic", body)
    assert '"x-api-key: $ANTHROPIC_API_KEY"' in anthropic and "anthropic-version: 2023-06-01" in anthropic
    assert "sk-" not in command + anthropic
