"""README.md and docs/ hold to what they say: the loop in docs/api.md ("context → call the
model → log the call with its render") and README's client example run as written against a
live server (the real openai client, only its HTTP transport scripted); README stays short and
every relative link in README.md and docs/ leads to a file that exists."""

import json
import re
from pathlib import Path

import httpx
import openai
from contextstore_client import ContextStore

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
API_DOC = ROOT / "docs" / "api.md"
README_MAX_LINES = 185  # the quick start, usage, configuration, performance and a map; the rest is in docs/
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def python_block(text: str, after: str) -> str:
    """The first ```python block after the line `after`."""
    section = text.split(f"\n{after}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def loop_snippet() -> str:
    return python_block(API_DOC.read_text(),
                        "## The loop: context → call the model → log the call with its render")


def test_the_loop_logs_the_call_with_the_render_it_sent(live_server, token, monkeypatch):
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
        exec(compile(loop_snippet(), "docs/api.md", "exec"), namespace)  # noqa: S102

        ctx = namespace["ctx"]
        assert sent[0]["messages"] == ctx.messages  # what the model got is the render
        start, complete = thread.events(type=["LLMCallStart", "LLMComplete"])[-2:]
        assert start.data["render_id"] == complete.data["render_id"] == ctx.render_id
        assert complete.data["input_tokens"] == 31
        assert thread.llm_call(start.seq)["messages"] == sent[0]["messages"]
        assert thread.events(type="LLMOutput")[-1].content == "Paris, ünïcode."


def test_the_readme_client_example_runs_as_written(live_server, token):
    example = python_block(README.read_text(), "## Using it")
    assert '"http://127.0.0.1:8000", token="cs_..."' in example
    example = example.replace('"http://127.0.0.1:8000", token="cs_..."',
                              f"{live_server.url!r}, token={token[1]!r}")
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102
    assert [message["content"] for message in namespace["ctx"].messages] == ["Hi"]
    with ContextStore(live_server.url, token[1]) as cs:
        assert cs.thread("conversation-42", user_id="ann").state().state["plan"] == ["research"]


def test_the_readme_stays_short():
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def relative_links(page: Path) -> list[str]:
    """Link targets in a Markdown page, outside code, that are neither URLs nor anchors."""
    text = re.sub(r"`[^`\n]*`", "", FENCED.sub("", page.read_text()))
    return [target for target in LINK.findall(text)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_every_relative_link_in_the_readme_and_docs_leads_to_a_file():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    links = {(page, target) for page in pages for target in relative_links(page)}
    broken = [f"{page.relative_to(ROOT)}: {target}" for page, target in sorted(links)
              if not (page.parent / target.split("#", 1)[0]).exists()]
    assert not broken
    readme_links = {target for page, target in links if page == README}
    assert {"docs/api.md", "docs/configuration.md", "docs/operations.md",
            "docs/performance.md"} <= readme_links
