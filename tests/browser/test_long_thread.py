"""A 100,000-event thread in a real browser: jump to seq 1 and to the next error, each shown in
place. The thread is bulk-loaded through the history service's counters (no per-event append
path), which keeps the fixture to seconds on PostgreSQL and SQLite alike."""

import time

import pytest
from django.db import connection, transaction
from django.utils import timezone
from playwright.sync_api import expect

from contextstore.models import Event, Thread
from contextstore.services.common import lock_thread
from contextstore.services.history import history_added
from contextstore.services.sessions import session_ensure, thread_ensure
from tests.browser.conftest import in_view, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVENTS = 100_000
ERRORS = {37_123: "first failure: quota exceeded", 81_500: "second failure: timeout"}


def bulk_load(thread: Thread, n: int, errors: dict[int, str]) -> Thread:
    """n events (Messages, with Errors at the given seqs) inserted under the thread's lock and
    counted by `history_added` as an append would count them. The rows go in with COPY on
    PostgreSQL and executemany on SQLite: building 100,000 model instances through the ORM's
    insert compiler alone would take a minute and a half on the CI machine."""
    now = timezone.now()
    fields = [f for f in Event._meta.concrete_fields if not f.primary_key]
    columns = [f.column for f in fields]
    with transaction.atomic():
        locked = lock_thread(thread, history_only=True)
        # One row as the ORM would save it; every event below differs only in these columns.
        model = Event(thread=locked, seq=0, position=0, type="Message", occurred_at=now, token_count=9,
                      created_at=now)
        base = [f.get_db_prep_save(f.pre_save(model, add=True), connection) for f in fields]
        at = {name: columns.index(name)
              for name in ("seq", "position", "type", "role", "content", "is_error")}
        rows, counted = [], []
        for seq in range(locked.last_seq + 1, locked.last_seq + n + 1):
            row = list(base)
            kind, role, content = (("Error", "", errors[seq]) if seq in errors else
                                   ("Message", "user" if seq % 2 else "assistant",
                                    f"turn {seq}: the agent reads and answers"))
            for name, value in (("seq", seq), ("position", seq), ("type", kind), ("role", role),
                                ("content", content), ("is_error", kind == "Error")):
                row[at[name]] = value
            rows.append(row)
            counted.append(Event(thread=locked, seq=seq, position=seq, type=kind, token_count=9,
                                 is_error=kind == "Error", created_at=now))
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                sql = f"COPY contextstore_event ({', '.join(columns)}) FROM STDIN"
                with cursor.cursor.copy(sql) as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join(["%s"] * len(columns))
                cursor.executemany(
                    f"INSERT INTO contextstore_event ({', '.join(columns)}) VALUES ({marks})", rows)
        history_added(thread=locked, events=counted, now=now)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE contextstore_event")  # what autovacuum does after a bulk load
    return Thread.objects.get(pk=thread.pk)


@pytest.fixture
def long_thread(workspace, actor):
    session = session_ensure(workspace=workspace, key="long-100k", title="100k events", actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    started = time.monotonic()
    thread = bulk_load(thread, EVENTS, ERRORS)
    thread.load_seconds = time.monotonic() - started
    yield thread
    if connection.vendor == "sqlite":
        # The test database's flush deletes row by row, and SQLite checks each deleted event
        # against the unindexed replaced_by foreign key by scanning the table: with 100,000
        # rows that is hours. Nothing here refers to another event, so skip the check.
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA foreign_keys = OFF")
            cursor.execute("DELETE FROM contextstore_event WHERE thread_id = %s", [thread.pk])
            cursor.execute("PRAGMA foreign_keys = ON")


def test_jump_to_seq_1_and_the_next_error_of_a_100k_event_thread(page, long_thread):
    thread = long_thread
    assert thread.event_count == thread.active_event_count == thread.last_seq == EVENTS
    assert thread.session.__class__.objects.get(pk=thread.session_id).error_count == len(ERRORS)
    # 10-20 s on the shared CI machine; the ORM's bulk_create took 90 s (a guard, not a benchmark)
    assert thread.load_seconds < 60, f"bulk load took {thread.load_seconds:.1f} s"
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"/threads/{thread.pk}/")
    expect(page.locator(f"#e{EVENTS}")).to_be_attached()
    assert in_view(page, f"#e{EVENTS}")

    started = time.monotonic()
    page.click("a.btn:text-is('First event')")
    expect(page.locator("#e1.target")).to_be_visible()
    jumped = time.monotonic() - started
    assert page.url.endswith(f"/threads/{thread.pk}/?around=1#e1")
    assert in_view(page, "#e1") and page.locator("#e1").inner_text().startswith("#1")
    expect(page.locator("#e2")).to_be_attached()  # the page around it, newer events below

    page.click("button:has-text('Next error')")
    first_error = min(ERRORS)
    expect(page.locator(f"#e{first_error}.target")).to_be_visible()
    expect(page.locator(f"#e{first_error}")).to_contain_text(ERRORS[first_error])
    assert in_view(page, f"#e{first_error}")
    expect(page.locator(f"#e{first_error - 1}")).to_be_attached()  # shown in place, not alone
    expect(page.locator(f"#e{first_error + 1}")).to_be_attached()

    page.click("button:has-text('Next error')")
    second = max(ERRORS)
    expect(page.locator(f"#e{second}.target")).to_contain_text(ERRORS[second])
    assert in_view(page, f"#e{second}")
    screenshot(page, "long-thread-next-error-1440")
    print(f"100k-event thread: bulk load {thread.load_seconds:.1f} s, jump to seq 1 {jumped:.2f} s")
    assert page.problems == [], page.problems
