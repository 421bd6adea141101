""""Load the rest" of a 120 KB JSON tool result shows its tree within a second: the nodes that
start closed come as their JSON and are built when opened, the same tree the server builds
(paths to copy, values, NUL and bidirectional controls as markers)."""

import json
import time

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOC = {"results": [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "score": i / 7,
                    "meta": {"owner": {"name": "x" * 40, "email": "y@example.org"}, "ok": True,
                             "note": None, "file\u202e": "in\u202egpj.exe\x00"},
                    "text": "lorem ipsum dolor " * 8} for i in range(420)]}


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="big-json", title="Big JSON", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    text = json.dumps(DOC)
    assert len(text) > 120_000
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Search"},
        {"type": "ToolResult", "role": "tool", "content": text}])
    return thread


def test_the_rest_of_a_big_json_result_appears_within_a_second_and_opens_node_by_node(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    article = page.locator("#e2")
    load = article.locator("[data-load-rest]")
    expect(load).to_contain_text("KB more")
    started = time.perf_counter()
    load.click()
    tree = page.locator("#e2 .json-tree")
    expect(tree).to_be_visible()
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"the tree took {elapsed:.2f} s"
    first = tree.locator("details.j-node[data-path='$.results[0]']")
    expect(first.locator("> summary")).to_have_text("{6 keys}")
    assert first.locator("li").count() == 0  # not built until opened
    first.locator("> summary").click()
    expect(first.locator("> ul > li > .j-key")).to_have_text(["id", "name", "tags", "score", "meta", "text"])
    expect(first.locator("> ul > li").nth(1)).to_contain_text('"item 0"')
    meta = first.locator("details.j-node[data-path='$.results[0].meta']")
    meta.locator("> summary").click()
    key = meta.locator("> ul > li > .j-key").nth(3)
    expect(key).to_have_attribute("data-copy-path", '$.results[0].meta["file\\u202e"]')
    expect(key.locator(".nul")).to_have_text("RLO")
    value = meta.locator("> ul > li").nth(3).locator(".j-val")
    expect(value).to_have_text('"in\\u202egpj.exe\\u0000"')
    assert "\u202e" not in value.inner_text()
    expect(meta.locator("> ul > li").nth(2).locator(".j-val")).to_have_text("null")
    key.click()  # a built key copies its path like any other
    assert page.evaluate("document.documentElement.getAttribute('data-copied')") == \
        '$.results[0].meta["file\\u202e"]'
    assert page.problems == []
