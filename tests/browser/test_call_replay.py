"""'As sent' as a chat with its tools and params, a Copy button, and a replay against a local
fake endpoint shown beside the original; axe finds nothing at either size. The replay is a
real worker's job (the embedded filesystem broker): the page shows it queued and follows it."""

import json
import re

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.fake_chat import fake_chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SENT = [
    {"role": "system", "content": "You fix failing tests."},
    {"role": "user", "content": "Why does CI fail?"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Run the tests first.", "signature": "s1"},
        {"type": "tool_use", "id": "t1", "name": "run_tests", "input": {"path": "tests/"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                  "content": "FAILED tests/test_a.py::test_x\n1 failed, 9 passed"}]},
]
TOOLS = [{"name": "run_tests", "description": "Run pytest on a path",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="replay-1", title="CI fix", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "LLMCallStart", "data": {"model": "claude-sonnet-4", "messages": SENT, "tools": TOOLS,
                                          "params": {"temperature": 0, "max_tokens": 1024}}},
        {"type": "LLMComplete",
         "data": {"model": "claude-sonnet-4", "input_tokens": 2100, "output_tokens": 35}},
        {"type": "LLMOutput", "role": "assistant", "content": "test_x fails: a missing fixture."}])
    return thread


def test_as_sent_copy_and_replay_beside_the_original(page, thread, settings, make_fs_worker):
    page.goto(f"/threads/{thread.pk}/calls/1/sent/")
    sent = page.locator(".call-sent")
    expect(sent.locator(".msg.turn")).to_have_count(4)
    expect(sent.locator(".msg.r-assistant .call-sig")).to_have_text('run_tests(path="tests/")')
    expect(sent.locator(".msg.r-tool.is-error pre.output")).to_contain_text("1 failed, 9 passed")
    expect(sent.locator(".msg.r-assistant details.thinking")).not_to_have_attribute("open", "")
    expect(sent.locator(".request-params")).to_contain_text("max_tokens")
    expect(sent.locator(".request-tools > summary")).to_contain_text("run_tests")
    sent.locator("text=Copy as Anthropic JSON").click()
    expect(page.locator("html")).to_have_attribute("data-copied", re.compile(r'"model": "claude-sonnet-4"'))
    body = json.loads(page.locator("html").get_attribute("data-copied"))
    assert body["system"] == [{"type": "text", "text": "You fix failing tests."}]
    assert body["messages"][1]["content"][0]["signature"] == "s1" and body["tools"] == TOOLS
    problems = {}
    for size in ((1440, 900), (390, 844)):
        page.set_viewport_size(dict(zip(("width", "height"), size, strict=True)))
        problems[f"sent-{size[0]}"] = axe_violations(page)
    screenshot(page, "call-as-sent-chat-390")

    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        make_fs_worker(PLAYGROUND_BASE_URL=server.base_url).start()
        page.set_viewport_size({"width": 1440, "height": 900})
        sent.locator("[data-replay]").click()
        page.locator("details.replay-edit summary").click()
        page.locator("#text-1").fill("Why does CI fail on main?")
        page.locator("text=Replay with these messages").click()
        latest = page.locator("#latest-replay")
        # Answered by the web request at once: the replay is queued, and its card polls.
        expect(latest.locator(".replay.pending")).to_have_count(1)
        expect(latest).to_contain_text("Replayed answer to: FAILED tests/test_a.py", timeout=60_000)
        expect(latest.locator(".replay.pending")).to_have_count(0)
        expect(latest).to_contain_text("1 message edited")
        expect(page.locator(".replay-side").first).to_contain_text("test_x fails: a missing fixture.")
        edited = server.requests[0]["body"]["messages"][1]
        assert edited == {"role": "user", "content": "Why does CI fail on main?"}
    for size in ((1440, 900), (390, 844)):
        page.set_viewport_size(dict(zip(("width", "height"), size, strict=True)))
        problems[f"replay-{size[0]}"] = axe_violations(page)
        screenshot(page, f"call-replay-{size[0]}")
    assert not any(problems.values()), problems
    assert page.problems == [], page.problems
