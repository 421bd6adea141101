"""Navigating a long thread in a real browser: jump to seq 1 and to the next error, a
permalink opening an old event in place, search with marks and "show in context", and a
typed range collapsed, then undone from the message."""

import re

import pytest
from playwright.sync_api import expect

from contextstore.models import Collapse, Job
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import in_view, screenshot, scroll_to, scroll_to_older
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="long-1", title="A long thread", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    for batch in range(4):
        events = messages(500, start=batch * 500, words=6)
        if batch == 0:
            events[99] = {"type": "Error", "content": "first failure: quota exceeded"}
            events[299] = {"type": "ToolResult", "content": "lookup", "data": {"needle": "haystack-42"}}
        if batch == 2:
            events[10] = {"type": "Error", "content": "second failure: timeout"}
        event_append(thread=thread, actor=actor, events=events)
    return thread


def test_jump_to_seq_1_and_the_next_error_and_open_a_permalink_in_place(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e2000")).to_be_attached()
    page.fill("#jump-to", "1")
    page.click(".jump button:text-is('Go')")
    expect(page).to_have_url(f"{page.url.split('/threads/')[0]}/threads/{thread.pk}/?around=1#e1")
    expect(page.locator("#e1.target")).to_be_visible()
    assert in_view(page, "#e1")

    page.click("button:has-text('Next error')")
    expect(page.locator("#e100.target")).to_be_visible()
    expect(page.locator("#e100")).to_contain_text("quota exceeded")
    assert in_view(page, "#e100")
    page.click("button:has-text('Next error')")
    expect(page.locator("#e1011.target")).to_contain_text("timeout")
    screenshot(page, "jump-next-error-1280")

    # scrolling down from a permalink loads the newer page below
    page.goto(f"/threads/{thread.pk}/?around=700")
    assert in_view(page, "#e700")
    expect(page.locator("#e726")).to_have_count(0)
    scroll_to(page, "bottom")
    expect(page.locator("#e726")).to_be_attached()
    assert page.problems == [], page.problems


def test_search_data_marks_matches_and_shows_the_match_in_context(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.fill("input[name=q]", "haystack-42")
    expect(page.locator("#timeline .event")).to_have_count(1)
    expect(page.locator("#e300 mark")).to_have_text("haystack-42")
    page.click("#e300 .in-context")
    expect(page.locator("#e300.target")).to_be_visible()
    expect(page.locator("#e299")).to_be_attached()
    expect(page.locator("#e301")).to_be_attached()
    assert in_view(page, "#e300")
    assert page.problems == [], page.problems


def test_type_a_range_collapse_it_and_undo_from_the_message(page, thread):
    page.goto(f"/threads/{thread.pk}/?around=1990")
    page.fill("#range-form input[name=from]", "1985")
    page.fill("#range-form input[name=to]", "1988")
    page.press("#range-form input[name=to]", "Enter")
    expect(page.locator("#selection")).to_be_visible()
    expect(page.locator("#selection [data-range-label]")).to_have_text("#1985 – #1988")
    expect(page.locator("#e1986.selected")).to_be_visible()
    page.keyboard.press("Enter")  # focus moved to "Collapse…"
    page.fill("#collapse-summary", "four greetings")
    page.click("button:text-is('Collapse range')")
    expect(page.locator("#undo-bar")).to_contain_text("Collapsed 4 events (positions 1985–1988)")
    assert Collapse.objects.filter(thread=thread, undone_at__isnull=True).count() == 1
    screenshot(page, "typed-range-collapsed-1280")
    page.click("#undo-bar button:has-text('Undo')")
    expect(page.locator("#undo-bar")).to_contain_text("Collapse undone")
    assert Collapse.objects.filter(thread=thread, undone_at__isnull=True).count() == 0
    assert page.problems == [], page.problems


def test_cancel_a_queued_summary_when_no_worker_runs(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    page.fill("#range-form input[name=from]", "1990")
    page.fill("#range-form input[name=to]", "1995")
    page.click("#range-form button")
    page.click("button:has-text('Summarize with worker')")
    job = page.locator("#job-status .job")
    expect(job).to_contain_text("Summary queued for the worker")
    job.locator("button:has-text('Cancel')").click()
    expect(page.locator("#job-status .job")).to_contain_text("Cancelled by bea before a worker took it.")
    assert page.problems == [], page.problems


def test_a_queued_summary_times_out_visibly_and_is_retried_then_cancelled(page, thread, settings):
    settings.SUMMARIZER_JOB_TIMEOUT = 2  # the live server runs in this process
    page.goto(f"/threads/{thread.pk}/?from=1990&to=1995")
    page.click("button:has-text('Summarize with worker')")
    job = page.locator("#job-status .job")
    expect(job).to_contain_text("Summary queued for the worker")
    expect(job).to_contain_text("range #1990–#1995")
    expect(job).to_be_in_viewport()  # docked above the selection bar, wherever the page is scrolled
    expect(job.locator("button:has-text('Retry')")).to_have_count(0)
    expect(job).to_contain_text(re.compile(r"Timed out: queued for \d+ s, longer than the 2 s allowed"))
    screenshot(page, "job-timed-out-1280")
    first = Job.objects.get()
    job.locator("button:has-text('Retry')").click()
    expect(page.locator("#job-status .job")).to_contain_text("Summary queued for the worker")
    second = Job.objects.get(status="queued")
    assert second.pk != first.pk and Job.objects.get(pk=first.pk).error.startswith("Timed out after")
    expect(page.locator(f"#job-{second.pk}")).to_contain_text("Timed out")
    page.locator(f"#job-{second.pk} button:has-text('Cancel')").click()
    expect(page.locator("#job-status .job")).to_contain_text("Cancelled by bea before a worker took it.")
    assert not Job.objects.filter(status__in=["queued", "running"]).exists()
    assert page.problems == [], page.problems


def test_the_thread_page_scrolls_as_one_document(page, thread):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e2000")).to_be_attached()
    assert in_view(page, "#e2000")  # it opens at the newest event
    # the timeline has no scroll box of its own: the document scrolls
    assert page.locator("#timeline-scroll").evaluate(
        "e => getComputedStyle(e).overflowY === 'visible' && e.scrollHeight <= e.clientHeight + 1")
    assert page.evaluate("document.documentElement.scrollHeight > window.innerHeight + 2000")
    assert page.evaluate("window.scrollY") > 0
    first = rows(page)[0]
    scroll_to_older(page)  # scrolling up to the timeline's top loads older events...
    expect(page.locator(f"#e{first - 1}")).to_be_attached()
    assert rows(page)[0] < first
    # ...in above what the reader looked at, which stays in place (the page did not jump to them)
    assert page.evaluate("window.scrollY") > 1000
    expect(page.locator(".side-tabs")).to_be_in_viewport()  # the side panel stays beside it
    # a permalink opens its event in place
    page.goto(f"/threads/{thread.pk}/?around=700")
    expect(page.locator("#e700.target")).to_be_visible()
    assert in_view(page, "#e700") and page.evaluate("window.scrollY") > 0
    # on a phone the side panel follows the timeline; the page still opens at the newest event
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e2000")).to_be_attached()
    assert in_view(page, "#e2000")
    assert page.evaluate("""() => document.getElementById('context-panel').getBoundingClientRect().top
                            >= document.getElementById('timeline-scroll').getBoundingClientRect().bottom""")
    screenshot(page, "thread-one-scroll-390")
    assert page.problems == [], page.problems


def rows(page) -> list[int]:
    return page.locator("#timeline-scroll").evaluate(
        "box => Array.from(box.children).filter(c => c.matches('article[data-seq]'))"
        ".map(c => Number(c.dataset.seq))")


def test_the_timeline_keeps_a_bounded_number_of_rows_while_scrolling(page, thread):
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator("#e2000")).to_be_attached()
    page.locator("#timeline-scroll").evaluate("box => box.setAttribute('data-max-rows', '120')")
    for oldest in (1950, 1900, 1850):  # three older pages come in above
        scroll_to_older(page)
        expect(page.locator(f"#e{oldest - 49}")).to_be_attached()
    shown = rows(page)
    assert len(shown) <= 120 and shown[0] == 1801 and 2000 not in shown
    expect(page.locator("#tail")).to_have_count(0)  # the live tail went with the newest rows
    expect(page.locator("#timeline-scroll > .newer")).to_have_count(1)
    # scrolling back down brings the newer rows back and drops the oldest
    scroll_to(page, "bottom")
    expect(page.locator(f"#e{shown[-1] + 1}")).to_be_attached()
    after = rows(page)
    assert len(after) <= 120 and after[0] > 1801 and after == sorted(after)
    expect(page.locator("#timeline-scroll > .older").first).to_be_attached()
    assert page.problems == [], page.problems
