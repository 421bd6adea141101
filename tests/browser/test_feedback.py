"""Feedback where the reader looks, on a long thread (the page opens thousands of px below its
top): the confirmation with its Undo is in view after collapse, clear, un-clear, fork and
restore; Undo on a card keeps the reader in place; a finished summary says so; pending jobs show
on a revisit; a permalink puts its event a third down; on a phone the side panel is a tap away
and two taps choose a range."""

import pytest
from playwright.sync_api import expect

from contextstore.models import Collapse, Job, Thread
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.state import state_write
from contextstore.services.summaries.requests import summarize_range_request
from contextstore.services.summaries.worker import summary_job_run
from tests.browser.conftest import axe_violations, hold_third_batch, screenshot
from tests.conftest import messages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture
def thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="feedback-1", title="Feedback", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    for batch in range(6):
        event_append(thread=thread, actor=actor, events=messages(500, start=batch * 500, words=6))
    state_write(thread=thread, summary="first", actor=actor)
    state_write(thread=thread, summary="second", actor=actor)
    return Thread.objects.get(pk=thread.pk)


def box(page, selector: str) -> dict:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, vh: window.innerHeight, y: window.scrollY}; }")


def assert_undo_in_view(page, text: str) -> None:
    bar = page.locator("#undo-bar")
    expect(bar).to_contain_text(text)
    expect(bar.locator("button:has-text('Undo')")).to_be_visible()
    b = box(page, "#undo-bar button:has-text('Undo')")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    # The page is scrolled deep: an offer at the page's top would be this far out of view.
    assert b["y"] > 2000, b


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_undo_is_in_view_after_collapse_clear_unclear_fork_and_restore(page, thread, viewport):
    page.set_viewport_size(viewport)
    name = viewport["width"]

    page.goto(f"/threads/{thread.pk}/?from=2990&to=2995")
    page.click("#selection summary:has-text('Collapse')")
    page.fill("#collapse-summary", EVIL)
    page.click("button:text-is('Collapse range')")
    assert_undo_in_view(page, "Collapsed 6 events")
    expect(page.locator(".card-summary .content").last).to_have_text(EVIL)  # text, not markup
    screenshot(page, f"feedback-collapse-{name}")

    page.evaluate("window.scrollTo(0, 0)")
    page.click("summary:has-text('Clear context…')")
    page.click("button:text-is('Clear context')")
    assert_undo_in_view(page, "Cleared")
    page.click("#undo-bar button:has-text('Undo')")  # un-clear: its message is in view too
    bar = page.locator("#undo-bar")
    expect(bar).to_contain_text("back in the working context")
    b = box(page, "#undo-bar")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b

    page.evaluate("window.scrollTo(0, 0)")
    page.click("button.side-tab:has-text('State')")
    page.locator("#context-panel button:text-is('Restore')").first.click()
    assert_undo_in_view(page, "Restored revision")
    assert axe_violations(page) == []

    page.goto(f"/threads/{thread.pk}/?from=2900&to=2950")
    page.click("#selection summary:has-text('Fork')")
    page.fill("#fork-name", "what-if")
    page.click("text=Fork into new thread")
    expect(page.locator("h1")).to_have_text("what-if")
    b = box(page, "#undo-bar button")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    assert page.problems == [], page.problems


def test_undo_on_a_card_keeps_the_reader_in_place(page, thread, actor):
    page.set_viewport_size(DESKTOP)
    collapse = collapse_create(thread=thread, start_position=1500, end_position=1510,
                               summary_text="eleven turns", actor=actor)
    page.goto(f"/threads/{thread.pk}/?around=1500")
    card = page.locator(f"#c{collapse.pk}")
    expect(card).to_be_visible()
    card.evaluate("e => window.scrollBy(0, e.getBoundingClientRect().top - 240)")
    before = box(page, f"#c{collapse.pk}")["top"]
    card.locator("button:has-text('Undo collapse')").click()
    expect(page.locator("#undo-bar")).to_contain_text("Collapse undone")
    expect(page.locator(f"#c{collapse.pk}")).to_have_count(0)
    after = box(page, '#timeline .event[data-position="1500"]')["top"]
    assert abs(after - before) <= 5, (before, after)
    assert Collapse.objects.get().undone_at is not None
    assert page.problems == [], page.problems


def test_a_summary_finishing_while_the_page_is_open_says_summary_ready(page, thread):
    page.set_viewport_size(DESKTOP)
    page.goto(f"/threads/{thread.pk}/?from=2980&to=2989")
    page.click("button:has-text('Summarize with worker')")
    expect(page.locator("#job-status .job")).to_contain_text("Summary queued")
    summary_job_run(job_id=Job.objects.get().pk)  # what the worker does, in this process
    bar = page.locator("#undo-bar")
    expect(bar).to_contain_text("Summary ready: #2980–#2989", timeout=15_000)
    b = box(page, "#undo-bar")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    link = bar.locator("a:has-text('Show it')")
    expect(link).to_have_attribute("href", f"/threads/{thread.pk}/?around=2980#c{Collapse.objects.get().pk}")
    link.click()
    expect(page.locator(f"#c{Collapse.objects.get().pk}")).to_be_visible()
    assert page.problems == [], page.problems


def test_a_queued_job_shows_again_on_a_revisit(page, thread, actor):
    summarize_range_request(thread=thread, start_position=10, end_position=20, actor=actor)
    page.goto(f"/threads/{thread.pk}/")
    job = page.locator("#job-status .job")
    expect(job).to_contain_text("Summary queued for the worker")
    expect(job).to_contain_text("range #10–#20")
    expect(job.locator("button:has-text('Cancel')")).to_be_visible()
    assert page.problems == [], page.problems


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440", "390"])
def test_a_permalink_puts_its_event_a_third_down(page, thread, viewport):
    page.set_viewport_size(viewport)
    page.goto(f"/threads/{thread.pk}/?around=1234#e1234")
    expect(page.locator("#e1234.target")).to_be_visible()
    page.wait_for_load_state("load")
    b = box(page, "#e1234")
    assert 0.25 * b["vh"] <= b["top"] <= 0.42 * b["vh"], b
    page.fill("#jump-to", "777")  # the jump form lands the same way
    page.click(".jump button:text-is('Go')")
    expect(page.locator("#e777.target")).to_be_visible()
    page.wait_for_load_state("load")
    b = box(page, "#e777")
    assert 0.25 * b["vh"] <= b["top"] <= 0.42 * b["vh"], b
    assert page.problems == [], page.problems


def test_on_a_phone_the_panel_is_a_tap_away_and_two_taps_choose_a_range(page, thread):
    page.set_viewport_size(PHONE)
    page.goto(f"/threads/{thread.pk}/")
    toggle = page.locator(".panel-jump")
    b = box(page, ".panel-jump")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b  # in the window the page opens with
    # Reading up in the timeline, the toggle stays docked in view.
    page.locator("#e2970").evaluate("e => e.scrollIntoView({block: 'start'})")
    b = box(page, ".panel-jump")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    toggle.click()
    b = box(page, "#context-panel")
    assert 0 <= b["top"] < b["vh"] / 2, b
    expect(page.locator("#context-panel .side-tabs")).to_be_in_viewport()

    page.locator("#e2960 .pick").scroll_into_view_if_needed()
    page.click("#e2960 .pick")
    label = page.locator("#selection .sel-label")
    expect(label).to_have_text("Start: #2960 — tap another number to end the range")
    page.click("#e2964 .pick")
    expect(label).to_have_text("Selected #2960 – #2964")
    expect(page.locator("#timeline .event.selected")).to_have_count(5)
    expect(page.locator("#selection input[name=start_position]").first).to_have_value("2960")
    expect(page.locator("#selection input[name=end_position]").first).to_have_value("2964")
    screenshot(page, "feedback-two-taps-390")
    assert axe_violations(page) == []
    # A third tap starts a new range.
    page.click("#e2970 .pick")
    expect(label).to_have_text("Start: #2970 — tap another number to end the range")
    assert page.problems == [], page.problems


def test_a_newer_offer_from_the_side_panel_replaces_the_one_showing(page, thread, actor):
    from contextstore.services.blocks import block_upsert

    block_upsert(thread=thread, name="persona", value="Be brief.", actor=actor)
    page.set_viewport_size(DESKTOP)
    page.goto(f"/threads/{thread.pk}/")
    page.click("summary:has-text('Clear context…')")
    page.click("button:text-is('Clear context')")
    expect(page.locator("#undo-bar")).to_contain_text("Cleared")
    page.click("button.side-tab:has-text('Blocks')")
    page.click("#context-panel summary:text-is('Edit')")
    page.click("#context-panel summary:has-text('Delete…')")
    page.click("#context-panel button:text-is('Delete block')")
    expect(page.locator(".undo-bar").last).to_contain_text("Deleted the block persona")
    expect(page.locator(".undo-bar")).to_have_count(1)
    b = box(page, "#undo-bar button:has-text('Undo')")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    page.click("#undo-bar [data-dismiss]")
    expect(page.locator(".undo-bar")).to_have_count(0)
    assert page.problems == [], page.problems


def test_a_long_clear_runs_as_a_job_with_progress_then_offers_undo(page, thread, settings, monkeypatch):
    """Over LONG_OPERATION_EVENTS the clear is queued; the dock shows its progress as the worker
    (here: this process) goes batch by batch, then the usual confirmation with Undo, in view."""
    import threading

    from contextstore.services import operations

    settings.LONG_OPERATION_EVENTS = 1000
    monkeypatch.setattr(operations, "OPERATION_BATCH", 500)
    go_on, begun = hold_third_batch(monkeypatch)  # until the page has shown the first two
    page.set_viewport_size(DESKTOP)
    page.goto(f"/threads/{thread.pk}/")
    page.click("summary:has-text('Clear context…')")
    page.click("button:text-is('Clear context')")
    job = page.locator("#job-status .job")
    expect(job).to_contain_text("Clear of 3000 events queued for the worker")
    begun.clear()  # the request's own transactions count no more
    worker = threading.Thread(target=operations.operation_job_run,
                              kwargs={"job_id": Job.objects.get(kind="clear").pk})
    worker.start()
    expect(job).to_contain_text("Clear: 1000 of 3000 events done", timeout=15_000)
    assert axe_violations(page) == []
    go_on.set()
    worker.join(30)
    bar = page.locator("#undo-bar")
    expect(bar).to_contain_text("Cleared 3000 events and the summary", timeout=15_000)
    b = box(page, "#undo-bar button:has-text('Undo')")
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b
    assert Thread.objects.get(pk=thread.pk).active_event_count == 0
    bar.locator("button:has-text('Undo')").click()  # un-clear: a long one too
    expect(job).to_contain_text("Un-clear of 3000 events queued")
    operations.operation_job_run(job_id=Job.objects.get(kind="unclear").pk)
    expect(page.locator("#undo-bar")).to_contain_text(
        "Un-cleared: 3000 events are back in the working context, and the summary with them",
        timeout=15_000)
    assert Thread.objects.get(pk=thread.pk).active_event_count == 3000
    assert axe_violations(page) == []
    assert page.problems == [], page.problems
