"""Issue 31 clicked through on one thread of 50,000+ events: the history bulk-loaded (as in
test_long_thread.py), then a realistic tail appended through the services at the newest end
(turns whose model calls carry recorded anthropic renders, tools, params, usage and cost; a
failed tool result; a timestamp in a suffix block that breaks the prompt cache). One browser
session walks through the cache analysis, the call card and its waterfall, "as sent" with Copy
and a replay, the failed result, the render at a small budget, a collapse and a clear (a job with
progress) with their Undo, search, trends, a comment, a score, a share link, a dataset and the
activity log; axe at 1440x900 on every page and tab, at 390x844 on the main ones."""

import json
import random
import re
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from contextstore.demo_turns import turn_events
from contextstore.models import Clear, Collapse, Event, Job, Thread
from contextstore.services import operations
from contextstore.services.blocks import block_upsert
from contextstore.services.events import event_append
from contextstore.services.renders import context_render_recorded
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import ARTIFACTS, axe_violations, hold_third_batch, screenshot
from tests.browser.test_long_thread import bulk_load
from tests.fake_chat import fake_chat

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVENTS = 50_000
ERRORS = {12_345: "quota exceeded"}
BUDGET = 4_000  # each recorded render: the newest ~400 events, over Anthropic's 1,024-token minimum
MODEL = "claude-sonnet-4"
TOOLS = [{"name": "run_tests", "description": "Run pytest on a path",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]
PARAMS = {"temperature": 0, "max_tokens": 1024}
LOG = "tests/test_export.py::test_nightly FAILED\nFileNotFoundError: config/scheduler.yaml\n1 failed"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def tail_turn(thread, actor, i: int, at, *, failed: bool = False) -> dict[str, int]:
    """One agent turn at the newest end: the user's message, then a model call whose start
    names the render it sent (with its tools and params), its thinking, a tool call and its
    result, its reply and its usage. The seqs of the call's start, tool call and result."""
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "role": "user", "content": f"Step {i}: find why the nightly export failed."}])
    thread.refresh_from_db()
    _, record = context_render_recorded(thread=thread, max_tokens=BUDGET, actor=actor, fmt="anthropic")
    events = turn_events(random.Random(i), i, f"run-tail-{i}", f"call-tail-{i}")[:6]  # no random extras
    start, _, tool_call, result, _, complete = events
    start["data"].update(model=MODEL, render_id=str(record.pk), tools=TOOLS, params=PARAMS)
    tool_call.update(content="Calling run_tests")
    tool_call["parts"][0].update(name="run_tests", arguments={"path": "tests/"})
    if failed:
        result.update(content=LOG, data={**result["data"], "status": "error", "ok": False})
    # Anthropic's usage (input_tokens: the part neither read from nor written to the cache); the
    # window slides at every call on so long a thread, so nothing is read from the cache
    complete["data"].update(model=MODEL, input_tokens=10, cache_read_input_tokens=0,
                            cache_creation_input_tokens=record.total_tokens - 10)
    for n, event in enumerate(events):  # a call of 2.5 s, its tool answering after 1.4 s
        event["occurred_at"] = (at + timedelta(milliseconds=(0, 300, 600, 2000, 2300, 2500)[n])).isoformat()
    first = event_append(thread=thread, actor=actor, events=events).events[0].seq
    return {"start": first, "tool_call": first + 2, "result": first + 3}


@pytest.fixture
def large(workspace, actor):
    session = session_ensure(workspace=workspace, key="large-50k", title="Nightly export, 50k events",
                             agent="ops-agent", actor=actor)[0]
    small = session_ensure(workspace=workspace, key="small-1", title="A small session", actor=actor)[0]
    event_append(thread=thread_ensure(session=small, actor=actor)[0], actor=actor, events=[
        {"type": "Message", "role": "user", "content": "nothing to see here"}])
    thread = thread_ensure(session=session, actor=actor)[0]
    started = time.monotonic()
    thread = bulk_load(thread, EVENTS, ERRORS)
    loaded = time.monotonic() - started
    block_upsert(thread=thread, name="persona", value="You keep the nightly jobs running.",
                 placement="prefix", actor=actor)
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:00 UTC", placement="suffix",
                 actor=actor)
    at = timezone.now() - timedelta(minutes=5)
    started = time.monotonic()
    turns = [tail_turn(thread, actor, 1, at)]
    turns.append(tail_turn(thread, actor, 2, at + timedelta(seconds=10), failed=True))
    block_upsert(thread=thread, name="clock", value="Now: 2026-01-05 10:05 UTC", actor=actor)
    turns.append(tail_turn(thread, actor, 3, at + timedelta(seconds=20)))
    thread = Thread.objects.get(pk=thread.pk)
    thread.figures = {"bulk load": loaded, "tail": time.monotonic() - started}
    thread.turns = turns
    yield thread
    if connection.vendor == "sqlite":  # as in test_long_thread: the flush would scan for hours
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA foreign_keys = OFF")
            cursor.execute("DELETE FROM contextstore_event WHERE thread_id = %s", [thread.pk])
            cursor.execute("PRAGMA foreign_keys = ON")


def box(page, selector: str) -> dict:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, vh: window.innerHeight}; }")


def assert_in_view(page, selector: str) -> None:
    b = box(page, selector)
    assert 0 <= b["top"] and b["bottom"] <= b["vh"], b


def test_issue_31_clicked_through_on_a_50k_event_thread(browser, page, live_server, large, settings,
                                                       monkeypatch, make_fs_worker):
    thread, turns = large, large.turns
    t = f"/threads/{thread.pk}"
    assert thread.last_seq > EVENTS
    figures = dict(thread.figures)
    found: dict[str, list] = {}

    def check(on, name: str, within: str | None = None) -> None:
        started = time.monotonic()
        screenshot(on, f"large-{name}")
        violations = axe_violations(on, within)
        figures["axe and screenshots"] = figures.get("axe and screenshots", 0) + time.monotonic() - started
        if violations:
            found[name] = violations

    def timed(name: str, url: str) -> None:
        started = time.monotonic()
        response = page.goto(url)
        figures[name] = time.monotonic() - started
        assert response.status == 200, (name, response.status)

    page.set_viewport_size(DESKTOP)
    last, second = turns[2]["start"], turns[1]["start"]

    # (1) cache analysis: the clock in a suffix block broke the third call's cache
    timed("thread page", f"{t}/")
    expect(page.locator("#timeline .call-card")).to_have_count(3)  # the tail's, at the newest end
    card = page.locator(f"[data-call='{last}']")
    expect(card).to_be_visible()
    card.locator("[data-call-diff]").click()
    verdict = card.locator(".cache-verdict")
    expect(verdict).to_have_attribute("data-cache", "lost")
    expect(verdict).to_have_attribute("data-cause", "timestamp")
    expect(verdict.locator(".word-diff del")).to_have_text("00")
    expect(verdict.locator(".word-diff ins")).to_have_text("05")
    expect(verdict.locator(".cache-reported")).to_contain_text("0 tokens read from the cache")
    expect(verdict.locator(".cache-disagreement")).to_have_count(0)
    check(page, "thread-call-diff")
    timed("call diff page", f"{t}/calls/{last}/diff/")
    expect(page.locator(".cache-verdict")).to_have_attribute("data-cause", "timestamp")
    check(page, "call-diff")
    timed("session page", f"/sessions/{thread.session_id}/")
    expect(page.locator("#cache-panel #cache-causes tr[data-cause=timestamp]")).to_be_visible()
    expect(page.locator("#cache-hit-rate")).to_be_visible()
    check(page, "session")
    timed("session cache page", f"/sessions/{thread.session_id}/cache/")
    check(page, "session-cache")
    timed("workspace cache page", "/cache/")
    expect(page.locator("#cache-sessions")).to_contain_text("Nightly export, 50k events")
    check(page, "workspace-cache")

    # (2) a call card at its start holding its outputs and the nested tool result; the waterfall
    timed("thread page again", f"{t}/")
    card = page.locator(f"[data-call='{second}']")
    expect(card).to_have_attribute("id", f"e{second}")
    outputs = card.locator("[data-outputs]")
    expect(outputs.locator(".tool-card")).to_have_count(1)
    expect(outputs.locator(f".tool-card #e{turns[1]['result']}")).to_contain_text("FileNotFoundError")
    expect(outputs.locator(".tool-card .call-sig")).to_have_text('run_tests(path="tests/")')
    for tab in ("context", "blocks", "state", "runs", "memory"):
        page.locator(f"[data-side-tab={tab}]").click()
        expect(page.locator(f"[data-side-tab={tab}]")).to_have_attribute("aria-pressed", "true")
        check(page, f"thread-side-{tab}", "#context-panel")  # the rest of the page is as checked
    page.locator("[data-side-tab=context]").click()
    page.goto(f"{t}/runs/run-tail-2/spans/")
    expect(page.locator("h1")).to_contain_text("Run run-tail-2: waterfall")
    bars = page.locator("#run-waterfall tbody tr")
    expect(bars.nth(0).locator("[data-duration]")).to_have_text("2.5 s")
    check(page, "run-waterfall")

    # As sent: a chat with tools and params, copied, replayed against the fake endpoint
    timed("as sent", f"{t}/calls/{second}/sent/")
    sent = page.locator(".call-sent")
    expect(sent.locator(".request-tools > summary")).to_contain_text("run_tests")
    expect(sent.locator(".request-params")).to_contain_text("max_tokens")
    expect(sent.locator(".msg.turn").first).to_be_visible()
    sent.locator("text=Copy as Anthropic JSON").click()
    expect(page.locator("html")).to_have_attribute("data-copied", re.compile(rf'"model": "{MODEL}"'))
    body = json.loads(page.locator("html").get_attribute("data-copied"))
    assert body["tools"] == TOOLS and body["messages"][-1]["role"] == "user", body["messages"][-1]
    check(page, "as-sent")
    with fake_chat() as server:
        settings.PLAYGROUND_BASE_URL = server.base_url
        replayer = make_fs_worker(PLAYGROUND_BASE_URL=server.base_url)  # a replay is a worker's job
        replayer.start()
        sent.locator("[data-replay]").click()
        started = time.monotonic()
        page.locator("[data-replay-send]").click()
        expect(page.locator("#latest-replay")).to_contain_text("Replayed answer to:", timeout=60_000)
        figures["replay"] = time.monotonic() - started
        assert server.requests[0]["body"]["model"] == MODEL
    replayer.stop()  # the clear and un-clear below are run by the test itself, step by step
    check(page, "replay")

    # (3) the failed tool result: red, reached by "Next error" from the tail's start
    page.goto(f"{t}/?around={turns[0]['start']}")
    page.click("button:has-text('Next error')")
    failed = page.locator(f"#e{turns[1]['result']}")
    expect(failed).to_have_class(re.compile(r"\bis-error\b"))
    expect(failed).to_have_class(re.compile(r"\btarget\b"))
    assert failed.evaluate("e => getComputedStyle(e).borderLeftColor") == "rgb(201, 42, 42)"
    assert_in_view(page, f"#e{turns[1]['result']}")
    check(page, "next-error")

    # (4) what the model sees at a small budget
    timed("model view 3k", f"{t}/context/?budget=3000")
    expect(page.locator("#fits")).to_have_text("history cut to fit")
    expect(page.locator("#skipped h2")).to_contain_text("and everything older")
    # whole turns kept: the history starts at a user's message, the newest turn is in it
    expect(page.locator(".msg.s-history .badge").first).to_have_text("user")
    # against the last call (sent at 4,000 tokens): the start holds (it moves forward only, by
    # chunks of the budget), so the smaller window keeps the last call's prefix, as it only grew
    expect(page.locator("#prefix-status")).to_have_attribute("data-prefix", "kept")
    expect(page.locator("#prefix-status")).to_contain_text("only appended")
    check(page, "model-view")

    # (5) a collapse and its Undo, the confirmation in view
    edge = EVENTS - 10
    page.goto(f"{t}/?from={edge}&to={edge + 5}")
    page.click("#selection summary:has-text('Collapse')")
    page.fill("#collapse-summary", "six turns reading the export logs")
    page.click("button:text-is('Collapse range')")
    bar = page.locator("#undo-bar")
    expect(bar).to_contain_text("Collapsed 6 events")
    assert_in_view(page, "#undo-bar button:has-text('Undo')")
    bar.locator("button:has-text('Undo')").click()
    expect(bar).to_contain_text("Collapse undone")
    assert_in_view(page, "#undo-bar")
    assert Collapse.objects.get(thread=thread).undone_at is not None

    # a clear of the whole 50k history: a job with progress, then Undo (un-clear, a job too)
    settings.LONG_OPERATION_EVENTS = 10_000
    go_on, begun = hold_third_batch(monkeypatch)  # until the page has shown the first two
    # every active row leaves, the runtime events (call start and end) too
    active = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE).count()
    # what leaves the model's view (the clear's count): hidden runtime rows move but are not counted
    shown = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True).count()
    visible = Thread.objects.get(pk=thread.pk).active_event_count
    page.goto(f"{t}/")
    page.click("summary:has-text('Clear context…')")
    page.click("button:text-is('Clear context')")
    job = page.locator("#job-status .job")
    expect(job).to_contain_text(f"Clear of {active} events queued for the worker")
    begun.clear()
    started = time.monotonic()
    worker = threading.Thread(target=operations.operation_job_run,
                              kwargs={"job_id": Job.objects.get(kind="clear").pk})
    worker.start()
    expect(job).to_contain_text(f"Clear: {2 * operations.OPERATION_BATCH} of {active} events done",
                                timeout=15_000)
    check(page, "clear-progress")
    go_on.set()
    worker.join(60)
    figures["clear job"] = time.monotonic() - started
    expect(bar).to_contain_text(f"Cleared {shown} events", timeout=15_000)
    assert_in_view(page, "#undo-bar button:has-text('Undo')")
    assert Thread.objects.get(pk=thread.pk).active_event_count == 0
    monkeypatch.undo()
    bar.locator("button:has-text('Undo')").click()
    expect(job).to_contain_text(f"Un-clear of {active} events queued")
    started = time.monotonic()
    operations.operation_job_run(job_id=Job.objects.get(kind="unclear").pk)
    figures["un-clear job"] = time.monotonic() - started
    expect(bar).to_contain_text(f"Un-cleared: {shown} events are back", timeout=15_000)
    assert Thread.objects.get(pk=thread.pk).active_event_count == visible
    assert Clear.objects.get(thread=thread).undone_at is not None
    check(page, "unclear")

    # (6) search across sessions finds the thread's session by its failed result's text
    page.goto("/")
    started = time.monotonic()
    page.fill("input[name=q]", "filenotfounderror")
    expect(page.locator(".session-row .title-cell > a")).to_have_text(["Nightly export, 50k events"])
    figures["search"] = time.monotonic() - started
    check(page, "search")
    timed("trends", "/trends/")
    expect(page.locator("figure.chart")).to_have_count(6)
    check(page, "trends")

    # a comment on the call card and a score on the session
    page.goto(f"{t}/")
    card = page.locator(f"[data-call='{last}']")
    card.locator("[data-call-comments]").click()
    card.get_by_label("Add a comment (Markdown)").fill("The clock in the prompt costs us the **cache**.")
    card.get_by_role("button", name="Comment", exact=True).click()
    expect(card.locator(".comment-text strong")).to_have_text("cache")
    check(page, "comment")
    page.goto(f"/sessions/{thread.session_id}/")
    scores = page.locator("#scores")
    scores.get_by_label("Score name").fill("helpful")
    scores.get_by_label("Score value").fill("0.7")
    scores.get_by_role("button", name="Add score").click()
    expect(scores.locator("tr.score")).to_contain_text("0.7")

    # a share link to the call, opened in a fresh (logged-out) context
    page.select_option("#share-kind", "call")
    page.fill("#share-seq", str(last))
    page.select_option("#share-expires", "1h")
    page.click("button:text-is('Create read-only link')")
    url = page.locator("#new-share-link input").input_value()
    check(page, "session-shared")
    fresh = browser.new_context(viewport=DESKTOP)
    anonymous = fresh.new_page()
    assert anonymous.goto(url).status == 200
    shared = anonymous.locator("#shared-call")
    # a chat, its system sections first, then the newest messages down to the one that made the call
    expect(shared.locator(".msg.turn.r-system").first).to_contain_text("You keep the nightly jobs running.")
    expect(shared.locator(".msg.turn").last).to_contain_text("Step 3: find why the nightly export failed.")
    expect(shared.locator("#older-messages")).to_contain_text("older messages not shown")
    expect(shared.locator(".msg.turn .json-tree")).to_have_count(0)
    expect(shared.locator(".calls").last).to_contain_text('run_tests(path="tests/")')  # its answer
    assert anonymous.locator("form, button[type=submit], textarea").count() == 0
    check(anonymous, "shared")
    fresh.close()

    # the call into a dataset, its JSONL; the activity tab
    page.goto(f"{t}/")
    card = page.locator(f"[data-call='{last}']")
    card.locator("summary:text-is('Add to dataset…')").click()
    card.locator("input[name=dataset]").fill("export-failures")
    card.locator("button:text-is('Add call')").click()
    expect(page.locator("h1")).to_have_text("export-failures")
    check(page, "dataset")
    with page.expect_download() as download:
        page.click("#export-jsonl")
    lines = open(download.value.path(), encoding="utf-8").read().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["input"], lines
    timed("activity", f"{t}/activity/")
    activity = page.locator("#activity")
    for action in ("collapse.create", "collapse.undo", "thread.clear_context", "thread.unclear"):
        expect(activity.locator(f"li[data-action='{action}']")).to_have_count(1)
    expect(activity.locator("li[data-action='thread.clear_context']")).to_contain_text(
        f"cleared the context ({shown} events")
    expect(activity).to_contain_text("added an LLM call to a dataset")
    check(page, "activity")

    # the phone size on the main pages
    page.set_viewport_size(PHONE)
    for name, url in (("thread", f"{t}/"), ("session", f"/sessions/{thread.session_id}/"),
                      ("as-sent", f"{t}/calls/{second}/sent/"), ("trends", "/trends/"),
                      ("activity", f"{t}/activity/")):
        page.goto(url)
        expect(page.locator("main")).to_be_visible()
        check(page, f"{name}-390")
    print("50k walkthrough:", ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))
    (ARTIFACTS / "axe-large-thread.json").write_text(json.dumps(found, indent=1))
    assert found == {}, found
    assert page.problems == [], page.problems
