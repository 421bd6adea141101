"""What the model sees: the budget is capped at the context window (and says so), and a long
render is shown 50 messages a page, with the stats of the whole render on every page."""

import re

from contextstore.models import Thread
from contextstore.services.events import event_append
from tests.conftest import messages
from tests.views.conftest import HTMX


def shown_turns(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"turn (\d+):", html)]


def test_a_long_render_is_paged_with_the_whole_renders_stats(editor_client, thread, actor):
    event_append(thread=thread, events=messages(120, words=5), actor=actor)
    url = f"/threads/{thread.pk}/context/"
    first = editor_client.get(url, {"budget": 100_000}).content.decode()
    assert shown_turns(first) == list(range(50))
    assert "Messages 1–50 of 120 · page 1 of 3" in first and 'rel="prev"' not in first
    stats = first.split('<div class="stats">')[1].split("</div>")[0]
    assert "(120 events, 0 left out)" in stats
    link = f'href="{url}?budget=100000&amp;page=2"'
    assert link in first
    second = editor_client.get(url, {"budget": 100_000, "page": 2}, **HTMX).content.decode()
    assert "<html" not in second and shown_turns(second) == list(range(50, 100))
    assert second.split('<div class="stats">')[1].split("</div>")[0] == stats
    last = editor_client.get(url, {"budget": 100_000, "page": 3}).content.decode()
    assert shown_turns(last) == list(range(100, 120)) and 'rel="next"' not in last
    assert "Messages 101–120 of 120" in last


def test_out_of_range_pages_show_the_nearest_page_and_malformed_ones_are_refused(editor_client, thread,
                                                                                  actor):
    event_append(thread=thread, events=messages(60, words=5), actor=actor)
    url = f"/threads/{thread.pk}/context/"
    for page, expected in (("99", 2), ("0", 1)):
        response = editor_client.get(url, {"budget": 100_000, "page": page})
        assert response.status_code == 200
        assert f'data-page="{expected}"' in response.content.decode()
    for page in ("-3", "x", "1\x00", "\u00b2"):  # a crafted number is a 400, never a guess or a 500
        assert editor_client.get(url, {"budget": 100_000, "page": page}).status_code == 400


def test_a_short_render_has_no_pager(editor_client, thread, actor):
    event_append(thread=thread, events=messages(3, words=5), actor=actor)
    html = editor_client.get(f"/threads/{thread.pk}/context/").content.decode()
    assert 'class="pager"' not in html and len(shown_turns(html)) == 3


def test_the_cap_at_the_context_window_is_visible(editor_client, thread, actor):
    Thread.objects.filter(pk=thread.pk).update(context_window=4000)
    url = f"/threads/{thread.pk}/context/"
    html = editor_client.get(url, {"budget": 500_000}).content.decode()
    assert 'name="budget" value="4000" min="1" max="4000"' in html
    assert "context window of the thread's model: 4000 tokens" in html
    assert 'id="budget-capped"' in html and "You asked for 500000 tokens" in html
    assert 'id="budget-capped"' not in editor_client.get(url, {"budget": 3000}).content.decode()


def test_without_a_context_window_the_cap_is_the_servers(editor_client, thread):
    html = editor_client.get(f"/threads/{thread.pk}/context/", {"budget": 9_000_000}).content.decode()
    assert 'name="budget" value="2000000"' in html and "You asked for 9000000 tokens" in html
