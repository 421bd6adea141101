"""A failed tool result in a real browser: red on its thread, in the error counts, reached by
"Next error", found by "Has errors"; its log readable as written; axe finds nothing wrong."""

import re

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOG = """tests/test_api.py::test_it_refuses_a_stale_revision[sqlite] PASSED   [ 50%]
tests/test_api.py::test_it_keeps_the_order_of_*args* FAILED          [100%]
FAILED tests/test_api.py::test_it_keeps_the_order_of_*args* - assert 1 == 2"""


@pytest.fixture
def sessions(workspace, actor):
    broken = session_ensure(workspace=workspace, key="tests-broke", title="Tests broke", actor=actor)[0]
    thread = thread_ensure(session=broken, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        *messages(30, words=20),
        {"type": "ToolCall", "role": "assistant", "content": "Calling run_tests",
         "parts": [{"type": "tool_call", "id": "t1", "name": "run_tests",
                    "arguments": {"path": "tests/", "verbose": True}}]},
        {"type": "ToolResult", "role": "tool", "content": LOG,
         "data": {"tool_call_id": "t1", "status": "error"}},
        *messages(30, start=30, words=20),
    ])
    fine = session_ensure(workspace=workspace, key="all-good", title="All good", actor=actor)[0]
    event_append(thread=thread_ensure(session=fine, actor=actor)[0], actor=actor, events=[
        {"type": "ToolResult", "role": "tool", "content": "3 passed", "data": {"status": "success"}}])
    return thread


def test_a_failed_tool_result_is_an_error_from_the_list_to_the_event(page, sessions):
    page.goto("/")
    expect(page.locator("#results")).to_contain_text("All good")
    page.check("input[name=errors]")
    expect(page.locator("#results")).not_to_contain_text("All good")
    expect(page.locator("#results")).to_contain_text("Tests broke")
    assert axe_violations(page) == []

    page.click("text=Tests broke")
    expect(page.locator(".stat.bad")).to_contain_text("1 errors")
    expect(page.locator("td[data-label=errors] .err-count")).to_have_text("1")
    assert axe_violations(page) == []

    page.click("a:text-is('main')")
    expect(page.locator("#stat-errors")).to_have_text("1 error")
    page.goto(f"/threads/{sessions.pk}/?around=1#e1")
    page.click("button:has-text('Next error')")
    result = page.locator("#e32")
    expect(result).to_have_class(re.compile(r"\bis-error\b.*\btarget\b|\btarget\b.*\bis-error\b"))
    expect(result.locator(".badge.failed")).to_have_text("failed")
    assert result.evaluate("e => getComputedStyle(e).borderLeftColor") == "rgb(201, 42, 42)"
    # The log as written: monospace, its lines kept, its `*args*` and `[sqlite]` not Markdown.
    log = result.locator("pre.content.output")
    assert log.inner_text() == LOG
    assert "monospace" in log.evaluate("e => getComputedStyle(e).fontFamily")
    assert result.locator("em, a:not(.permalink):not(.in-context):not(.run):not(.comments-link)").count() == 0
    expect(page.locator("#e31 .call-sig")).to_have_text('run_tests(path="tests/", verbose=true)')
    screenshot(page, "tool-error-1280")
    assert axe_violations(page) == []
    assert page.problems == []
