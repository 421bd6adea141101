"""Share a call, open the link logged out; add the call to a dataset and download its JSONL;
read the thread's activity after a collapse; axe at both sizes on every new page."""

import json

import pytest
from playwright.sync_api import expect

from contextstore.services.collapses import collapse_create
from contextstore.services.common import Actor
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot
from tests.browser.test_accessibility import SIZES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_share_a_call_add_it_to_a_dataset_and_read_the_activity(browser, page, live_server, workspace,
                                                                 actor, member):
    session = session_ensure(workspace=workspace, key="shared-s", title="Shared run", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "What is 2+2? <b>bold?</b>"},
        {"type": "LLMCallStart",
         "data": {"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "4, said the model", "data": {"model": "m"}},
        {"type": "Message", "role": "assistant", "content": "4"},
    ])
    collapse_create(thread=thread, start_position=1, end_position=1, summary_text="asked a sum",
                    actor=Actor.for_user(member))
    found = {}

    def check(on, name):
        violations = axe_violations(on)
        if violations:
            found[name] = violations

    # make a link to the call on the session page
    page.goto(f"/sessions/{session.pk}/")
    page.select_option("#share-kind", "call")
    page.fill("#share-seq", "2")
    page.select_option("#share-expires", "1h")
    page.click("button:text-is('Create read-only link')")
    url = page.locator("#new-share-link input").input_value()
    expect(page.locator("#share-links tbody tr")).to_have_count(1)
    page.click("#new-share-link button:text-is('Copy link')")  # the link, whole, on the clipboard
    expect(page.locator("#new-share-link button")).to_have_text("Copied")
    assert page.evaluate("document.documentElement.getAttribute('data-copied')") == url
    check(page, "session")
    # open it logged out: the call as sent and its answer, and nothing to change
    anonymous_context = browser.new_context(viewport={"width": 1280, "height": 800})
    anonymous = anonymous_context.new_page()
    response = anonymous.goto(url)
    assert response.status == 200
    expect(anonymous.locator("#shared-call")).to_contain_text("What is 2+2?")
    expect(anonymous.locator("#shared-call")).to_contain_text("4, said the model")
    assert anonymous.locator("form, button[type=submit], textarea").count() == 0
    screenshot(anonymous, "shared-call")
    check(anonymous, "shared")
    # add the call to a dataset from its card, then download the JSONL
    page.goto(f"/threads/{thread.pk}/")
    card = page.locator("[data-call='2']")
    card.locator("summary:text-is('Add to dataset…')").click()
    card.locator("input[name=dataset]").fill("evals")
    card.locator("button:text-is('Add call')").click()
    expect(page.locator("h1")).to_have_text("evals")
    dataset_url = page.url
    check(page, "dataset")
    with page.expect_download() as download:
        page.click("#export-jsonl")
    lines = open(download.value.path(), encoding="utf-8").read().splitlines()
    assert [json.loads(line)["expected_output"]["content"] for line in lines] == ["4, said the model"]
    # the activity log after the collapse
    page.goto(f"/threads/{thread.pk}/")
    page.click("nav.tabs a:text-is('Activity')")
    expect(page.locator("#activity li").first).to_contain_text("bea added an LLM call to a dataset: #2")
    expect(page.locator("#activity li[data-action='collapse.create']")).to_contain_text(
        "bea collapsed 1 event into a summary")
    check(page, "activity")
    page.goto("/datasets/")
    check(page, "datasets")
    # the phone size
    page.set_viewport_size(dict(zip(("width", "height"), SIZES["390"], strict=True)))
    anonymous.set_viewport_size(dict(zip(("width", "height"), SIZES["390"], strict=True)))
    for name, path in (("session-390", f"/sessions/{session.pk}/"),
                       ("activity-390", f"/threads/{thread.pk}/activity/"),
                       ("datasets-390", "/datasets/"), ("dataset-390", dataset_url)):
        page.goto(path)
        check(page, name)
    anonymous.reload()
    check(anonymous, "shared-390")
    screenshot(anonymous, "shared-call-390")
    anonymous_context.close()
    assert found == {}, found
    assert page.problems == [], page.problems
