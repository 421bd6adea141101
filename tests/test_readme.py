"""The README's loop "context → call the model → log the call with its render" runs as written:
against a live server, with the real openai client (only its HTTP transport is scripted)."""

import json
import re
from pathlib import Path

import httpx
import openai

from contextstore.client import ContextStore

README = Path(__file__).resolve().parents[1] / "README.md"


def loop_snippet() -> str:
    text = README.read_text()
    section = text.split("### The loop: context → call the model → log the call with its render", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_loop_logs_the_call_with_the_render_it_sent(live_server, token, monkeypatch):
    sent: list = []

    def model(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sent.append(body)
        return httpx.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Paris, ünïcode."}}],
            "usage": {"prompt_tokens": 31, "completion_tokens": 4, "total_tokens": 35}})

    real = openai.OpenAI
    monkeypatch.setattr(openai, "OpenAI", lambda: real(
        api_key="test", http_client=httpx.Client(transport=httpx.MockTransport(model))))
    with ContextStore(live_server.url, token[1]) as cs:
        thread = cs.thread("readme-loop", user_id="ann", agent="helper")
        thread.put_block("persona", value="Be brief.", placement="prefix")
        thread.append([{"type": "Message", "role": "user", "content": "Capital of France?"}])
        old_render_id = thread.context(format="openai").render_id
        namespace = {"cs": cs, "thread": thread, "old_render_id": old_render_id}
        exec(compile(loop_snippet(), "README.md", "exec"), namespace)  # noqa: S102

        ctx = namespace["ctx"]
        assert sent[0]["messages"] == ctx.messages  # what the model got is the render
        start, complete = thread.events(type=["LLMCallStart", "LLMComplete"])[-2:]
        assert start.data["render_id"] == complete.data["render_id"] == ctx.render_id
        assert complete.data["input_tokens"] == 31
        assert thread.llm_call(start.seq)["messages"] == sent[0]["messages"]
        assert thread.events(type="LLMOutput")[-1].content == "Paris, ünïcode."
