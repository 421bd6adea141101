"""Navigation for long threads: permalinks around a seq, jumps, search over data and parts,
and a range typed as from/to."""

import re

from contextstore.services.events import event_append
from tests.conftest import messages
from tests.views.conftest import HTMX


def seqs(html: str) -> list[int]:
    return [int(s) for s in re.findall(r'<article class="event[^"]*" id="e\d+" data-seq="(\d+)"', html)]


def test_a_permalink_opens_the_event_in_place_with_older_and_newer_pages(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=messages(300, words=5))
    url = f"/threads/{thread.pk}/"
    html = editor_client.get(url, {"around": 150}).content.decode()
    assert seqs(html) == list(range(126, 176))
    assert 'class="event t-message target" id="e150"' in html
    assert f'hx-get="{url}?before=126"' in html and f'hx-get="{url}?newer=175"' in html
    assert 'id="tail"' not in html  # not at the newest events: no live tail yet
    newer = editor_client.get(url, {"newer": 175}, **HTMX).content.decode()
    assert seqs(newer) == list(range(176, 226)) and "newer=225" in newer and "<html" not in newer
    last = editor_client.get(url, {"newer": 275}, **HTMX).content.decode()
    assert seqs(last) == list(range(276, 301)) and 'id="tail"' in last and "newer=" not in last
    first = editor_client.get(url, {"around": 1}).content.decode()
    assert seqs(first) == list(range(1, 27)) and "before=" not in first
    # every event links to its own permalink
    assert f'href="{url}?around=150#e150"' in html


def test_jump_to_a_seq_a_time_a_run_or_the_next_and_previous_error(editor_client, thread, actor):
    events = messages(40, words=3)
    for i in (9, 29):
        events[i] = {"type": "Error", "content": f"error at {i + 1}"}
    for i, e in enumerate(events):
        e["occurred_at"] = f"2026-01-05T10:{i:02d}:00Z"
    events[20]["run_id"] = "run-x"
    event_append(thread=thread, actor=actor, events=events)
    jump = f"/threads/{thread.pk}/jump/"

    def target(**params) -> str:
        response = editor_client.get(jump, params)
        assert response.status_code == 302
        return response["Location"]

    base = f"/threads/{thread.pk}/"
    assert target(to="7") == f"{base}?around=7#e7" and target(to="#12") == f"{base}?around=12#e12"
    assert target(to="2026-01-05 10:15") == f"{base}?around=16#e16"
    assert target(to="2026-01-05T10:15:30+00:00") == f"{base}?around=17#e17"
    assert target(to="run-x") == f"{base}?around=21#e21"
    assert target(error="next", **{"from": 1}) == f"{base}?around=10#e10"
    assert target(error="next", **{"from": 10}) == f"{base}?around=30#e30"
    assert target(error="prev", **{"from": 30}) == f"{base}?around=10#e10"
    assert target(error="prev") == f"{base}?around=30#e30"  # from the newest
    assert target(error="next", **{"from": 30}) == base
    assert "No later error than #30." in editor_client.get(base).content.decode()
    assert target(to="999") == base and target(to="no-such-run") == base


def test_search_covers_data_and_parts_and_links_to_the_context(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=[
        {"type": "Message", "content": "nothing here"},
        {"type": "ToolResult", "content": "ok", "data": {"invoice": "INV-4711"}},
        {"type": "ToolCall", "content": "call", "parts": [{"type": "tool_call", "name": "refund",
                                                            "arguments": {"ref": "inv-4711"}}]},
        {"type": "Message", "content": "Invoice inv-4711 is paid"},
    ])
    url = f"/threads/{thread.pk}/"
    html = editor_client.get(url, {"q": "INV-4711"}).content.decode()
    assert seqs(html) == [2, 3, 4]
    assert f'class="in-context" href="{url}?around=3#e3"' in html
    plain = editor_client.get(url).content.decode()
    assert "show in context" not in plain


def test_a_typed_range_opens_selected(editor_client, thread, actor):
    event_append(thread=thread, actor=actor, events=messages(8))
    html = editor_client.get(f"/threads/{thread.pk}/", {"from": 6, "to": 3}).content.decode()
    assert '<div id="selection" data-start="3" data-end="6">' in html
    # collapse, summarize, fork, add to dataset
    assert html.count('name="start_position" data-range="start" value="3"') == 4
    assert 'name="end_position" data-range="end" value="6"' in html and "#3 – #6" in html
    assert '<div id="selection" hidden>' in editor_client.get(f"/threads/{thread.pk}/").content.decode()


def test_jump_is_404_for_other_workspaces(outsider_client, thread):
    assert outsider_client.get(f"/threads/{thread.pk}/jump/", {"to": "1"}).status_code == 404
