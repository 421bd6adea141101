"""Comments and scores in a real browser: comment on a call card and on the session, add a
score, filter the session list by it; axe finds nothing at either size."""

import pytest
from playwright.sync_api import expect

from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import axe_violations, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

XSS = "<img src=x onerror=alert(1)>"


def test_comment_on_a_call_and_the_session_score_it_and_filter_by_the_score(page, workspace, actor):
    session = session_ensure(workspace=workspace, key="scored-1", title="Graded run", actor=actor)[0]
    session_ensure(workspace=workspace, key="unscored-2", title="Other run", actor=actor)
    thread = thread_ensure(session=session, actor=actor)[0]
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": "Where is order 4711?"},
        {"type": "LLMCallStart", "data": {"model": "gpt-4o"}, "occurred_at": "2026-01-05T10:00:00Z"},
        {"type": "LLMComplete", "data": {"model": "gpt-4o", "input_tokens": 900, "output_tokens": 20},
         "occurred_at": "2026-01-05T10:00:01Z"},
    ])
    page.goto(f"/threads/{thread.pk}/")
    card = page.locator("#timeline .call-card")
    card.locator("[data-call-comments]").click()
    card.get_by_label("Add a comment (Markdown)").fill(f"Too **slow** {XSS}")
    card.get_by_role("button", name="Comment", exact=True).click()
    expect(card.locator(".comment-text strong")).to_have_text("slow")
    expect(card.locator(".comment-text")).to_contain_text(XSS)  # text, never markup
    assert axe_violations(page) == []

    page.goto(f"/sessions/{session.pk}/")
    comments = page.locator("#comments-session")
    comments.get_by_label("Add a comment (Markdown)").fill("Graded by hand.")
    comments.get_by_role("button", name="Comment", exact=True).click()
    expect(comments.locator(".comment")).to_have_count(1)
    scores = page.locator("#scores")
    scores.get_by_label("Score name").fill("accuracy")
    scores.get_by_label("Score value").fill("0.8")
    scores.get_by_role("button", name="Add score").click()
    expect(scores.locator("tr.score")).to_contain_text("0.8")
    screenshot(page, "session-comments-scores-1280")
    assert axe_violations(page) == []

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#scores tr.score")).to_have_count(1)
    assert axe_violations(page) == []
    page.goto("/")
    page.get_by_label("Score filter").fill("accuracy:>=0.5")
    expect(page.locator("#results")).not_to_contain_text("unscored-2")
    expect(page.locator("#results")).to_contain_text("Graded run")
    assert "score=accuracy" in page.url
    assert axe_violations(page) == []
    assert page.problems == [], page.problems
