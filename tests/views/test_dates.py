"""Every date a page shows carries its year and its zone (the `when` filter), with the exact
instant in its title and datetime."""

from datetime import UTC, datetime

from contextstore.services.events import event_append
from contextstore.templatetags.contextstore import when


def test_when_shows_the_year_and_the_zone():
    at = datetime(2026, 3, 10, 9, 5, 7, 123456, tzinfo=UTC)
    assert str(when(at)) == ('<time datetime="2026-03-10T09:05:07.123456+00:00" '
                             'title="2026-03-10 09:05:07.123456 UTC (+0000)">2026-03-10 09:05:07 UTC</time>')
    assert ">2026-03-10 09:05 UTC<" in str(when(at, "minutes"))
    assert ">2026-03-10 09:05:07.123 UTC<" in str(when(at, "ms"))
    assert str(when(None)) == "—"


def test_the_thread_and_session_pages_date_events_with_year_and_zone(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "hi", "occurred_at": "2025-12-31T23:59:58+00:00"}])
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert ">2025-12-31 23:59:58 UTC</time>" in html
    session = editor_client.get(f"/sessions/{thread.session_id}/").content.decode()
    assert " UTC</time></dd>" in session
