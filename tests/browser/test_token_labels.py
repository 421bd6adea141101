"""In a real browser: from the sessions list to a session and its thread, stored tokens and the
model's input / output tokens are labelled apart (each label's title says which), and a cost under
a cent shows its digits. axe finds nothing on any of the three pages."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.runs import run_start
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.templatetags.contextstore import TOKEN_TITLES
from tests.browser.conftest import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reader_tells_stored_tokens_from_model_usage_on_every_page(page, workspace, actor):
    session = session_ensure(workspace=workspace, key="labels", title="Order help", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    run_start(thread=thread, run_id="r-1", actor=actor)
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "where is my order?", "run_id": "r-1"},
        {"type": "LLMCallStart", "call_id": "c1", "run_id": "r-1", "data": {"model": "gpt-4o-mini"}},
        {"type": "LLMComplete", "call_id": "c1", "run_id": "r-1",
         "data": {"model": "gpt-4o-mini", "cost": 0.00042, "input_tokens": 1200, "output_tokens": 34}}])

    page.goto("/")
    header = page.locator("th a[data-sort=tokens]")
    expect(header).to_have_text("Stored tokens")
    expect(header).to_have_attribute("title", TOKEN_TITLES["stored"])
    expect(page.locator("fieldset.range legend", has_text="Stored tokens")).to_be_visible()
    expect(page.locator(".session-row td[data-label=cost]")).to_have_text("$0.00042")
    assert axe_violations(page) == []

    page.locator(".session-row .title-cell > a", has_text="Order help").click()
    expect(page.locator(".stat", has_text="stored tokens")).to_have_attribute("title", TOKEN_TITLES["stored"])
    usage = page.locator("th", has_text="Input / output tokens")
    expect(usage).to_have_attribute("title", TOKEN_TITLES["usage"])
    expect(page.locator("td[data-label='input / output tokens']")).to_have_text("1.2k / 34")
    assert axe_violations(page) == []

    page.locator(f"a[href='/threads/{thread.pk}/']").first.click()
    expect(page.locator("#thread-stats .stat", has_text="stored tokens in context")).to_be_visible()
    metrics = page.locator(".call-metrics").first
    expect(metrics.locator("div", has_text="input tokens")).to_have_attribute("title", TOKEN_TITLES["usage"])
    expect(metrics.locator("div", has_text="output tokens")).to_contain_text("34")
    expect(metrics.locator("div", has_text="cost")).to_contain_text("$0.00042")
    assert axe_violations(page) == []
