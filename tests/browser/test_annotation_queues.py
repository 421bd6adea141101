"""Human review in a real browser: configure two scores, make a queue asking for them, add a
session (its page) and an LLM call (its card), review both with the form made from the
configs, and see the queue complete; axe at desktop and phone sizes on every page of it."""

import pytest
from playwright.sync_api import expect

from contextstore.models import Score
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations
from tests.browser.test_accessibility import SIZES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_configure_queue_add_review_two_items_and_complete(page, workspace, actor, member):
    session = session_ensure(workspace=workspace, key="rev-s", title="Review me", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "What is 2+2? <b>bold?</b>"},
        {"type": "LLMCallStart",
         "data": {"model": "m", "messages": [{"role": "user", "content": "What is 2+2?"}]}},
        {"type": "LLMComplete", "role": "assistant", "content": "4, said the model", "data": {"model": "m"}},
    ])
    found: dict = {}

    def check(name):
        violations = axe_violations(page)
        if violations:
            found[name] = violations

    # two score configurations
    page.goto("/queues/")
    page.click("a:text-is('Score configurations')")
    page.fill("#config-name", "accuracy")
    page.select_option("#config-type", "numeric")
    page.fill("#config-min", "0")
    page.fill("#config-max", "1")
    page.click("button:text-is('Create configuration')")
    page.fill("#config-name", "tone")
    page.select_option("#config-type", "categorical")
    page.fill("#config-categories", "friendly, curt")
    page.click("button:text-is('Create configuration')")
    expect(page.locator("#score-configs tbody tr")).to_have_count(2)
    check("score-configs")
    # a queue asking for both
    page.goto("/queues/")
    page.fill("#queue-name", "first pass")
    page.check("input[name=score_configs] >> nth=0")
    page.check("input[name=score_configs] >> nth=1")
    page.click("button:text-is('Create queue')")
    expect(page.locator("h1")).to_have_text("first pass")
    queue_url = page.url
    # add the session from its page, the call from its card
    page.goto(f"/sessions/{session.pk}/")
    page.click("#session-to-queue button")
    expect(page.locator("[data-message]")).to_contain_text("Added 1 item to first pass")
    page.goto(f"/threads/{thread.pk}/")
    page.locator("[data-call='2'] [data-to-queue]").click()
    expect(page.locator("#to-queue-form label")).to_have_text("LLM call #2 to")
    check("add-to-queue")
    page.click("#to-queue-form button")
    expect(page.locator("#queue-items tbody tr")).to_have_count(2)
    check("queue")
    # review the two items
    page.click("#start-review")
    expect(page.locator("h1")).to_have_text("Review: Session")
    expect(page.locator(".review-target")).to_contain_text("What is 2+2? <b>bold?</b>")
    check("review-session")
    page.fill("label:text-is('accuracy') + input", "0.5")
    page.click("#complete-next")
    expect(page.locator("h1")).to_have_text("Review: LLM call #2")
    expect(page.locator(".call-sent")).to_contain_text("What is 2+2?")
    expect(page.locator("[data-call-reply]")).to_contain_text("4, said the model")
    check("review-call")
    page.select_option("label:text-is('tone') + select", "friendly")
    page.fill("#review-comment", "right answer")
    page.click("#complete-next")
    expect(page.locator("#queue-complete")).to_have_text("complete")
    expect(page.locator("[data-message]")).to_contain_text("Queue complete")
    expect(page.locator("#queue-progress [data-completed]")).to_have_text("2")
    check("queue-complete")
    assert sorted(Score.objects.values_list("name", "seq", "author_user")) == [
        ("accuracy", None, member.pk), ("tone", 2, member.pk)]
    item_url = page.locator("#queue-items a").first.get_attribute("href")
    # the phone size
    page.set_viewport_size(dict(zip(("width", "height"), SIZES["390"], strict=True)))
    for name, path in (("score-configs-390", "/score-configs/"), ("queues-390", "/queues/"),
                       ("queue-390", queue_url), ("item-390", item_url)):
        page.goto(path)
        check(name)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), name
    assert found == {}, found
    assert page.problems == [], page.problems
