"""Issue 50's polish: numbers a page shows agree with its sentences."""
import re

from contextstore.models import Clear, Event
from contextstore.services.collapses import collapse_create
from contextstore.services.events import event_append
from contextstore.services.summaries.worker import event_item
from contextstore.summarizers import extractive
from tests.conftest import messages


def _summarize(thread, start, end):
    members = Event.objects.filter(thread=thread, status="active", position__gte=start,
                                   position__lte=end).order_by("position")
    return extractive.summarize([event_item(e) for e in members], max_tokens=400).text


def test_a_nested_summary_cards_count_is_the_count_its_text_says(editor_client, thread, actor):
    event_append(thread=thread, events=messages(60), actor=actor)
    collapse_create(thread=thread, start_position=1, end_position=20,
                    summary_text=_summarize(thread, 1, 20), actor=actor, source="person")
    text = _summarize(thread, 1, 40)  # the earlier summary and positions 21..40
    outer = collapse_create(thread=thread, start_position=1, end_position=40, summary_text=text,
                            actor=actor, source="person")
    assert outer.event_count == 21  # 20 events and the earlier summary
    said = int(re.match(r"Summary of (\d+) events", text).group(1))
    assert said == 40
    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    card = html[html.index(f'id="c{outer.pk}"'):]
    shown = int(re.search(r"#1–#40 · (\d+) events?<", card).group(1))
    assert shown == said


def test_clears_confirmation_result_list_and_undo_say_the_same_count(editor_client, thread, actor):
    event_append(thread=thread, events=messages(4) + [
        {"type": "Checkpoint", "visible": False, "content": "runtime"},
        {"type": "Checkpoint", "visible": False, "content": "runtime"}], actor=actor)
    thread.refresh_from_db()
    assert thread.active_event_count == 4  # the two checkpoints are not in the working context
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "takes all 4 events in the working context" in page
    editor_client.post(f"/threads/{thread.pk}/clear/")
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "Cleared 4 events from the working context." in page
    assert "<li><b>4 events</b>" in page  # the Clears panel's entry
    assert Event.objects.filter(thread=thread, status="cleared").count() == 6  # all moved
    clear = Clear.objects.get(thread=thread)
    editor_client.post(f"/threads/{thread.pk}/clears/{clear.pk}/undo/")
    page = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert "Un-cleared: 4 events are back in the working context." in page
    thread.refresh_from_db()
    assert thread.active_event_count == 4
    assert Event.objects.filter(thread=thread, status="active").count() == 6


def test_a_state_diff_lists_each_change_by_json_path(editor_client, thread, actor):
    from contextstore.services.state import state_write

    state_write(thread=thread, state={"plan": ["look up", "refund"], "n": 1, "who": "<b>x</b>"},
                actor=actor)
    state_write(thread=thread, state={"plan": ["look up", "ship"], "n": 2, "done": True},
                actor=actor)
    thread.refresh_from_db()
    b = thread.revision
    html = editor_client.get(f"/threads/{thread.pk}/state/diff/", {"a": b - 1, "b": b}).content.decode()
    table = html[html.index('class="small path-diff"'):html.index("</table>")]
    rows = re.findall(r"<tr class=\"p-(\w+)\"><th scope=\"row\"><code>(.*?)</code></th>"
                      r"<td><code>(.*?)</code></td><td><code>→ (.*?)</code></td></tr>", table)
    assert rows == [("changed", "state.plan[1]", "&quot;refund&quot;", "&quot;ship&quot;"),
                    ("changed", "state.n", "1", "2"),
                    ("removed", "state.who", "&quot;&lt;b&gt;x&lt;/b&gt;&quot;", "—"),
                    ("added", "state.done", "—", "true")]


def test_the_state_panel_pages_its_revisions(editor_client, thread, actor):
    from contextstore.services.state import state_write

    for i in range(45):
        state_write(thread=thread, state={"n": i}, actor=actor)
    thread.refresh_from_db()
    top = thread.revision

    def listed(html):
        return [int(n) for n in re.findall(r'<li><b>r(\d+)</b>', html)]

    html = editor_client.get(f"/threads/{thread.pk}/").content.decode()
    assert listed(html) == list(range(top, top - 20, -1))
    older = re.search(r'href="([^"]*revs_before=(\d+)[^"]*)" data-older-revisions', html)
    assert older and int(older.group(2)) == top - 19
    html = editor_client.get(f"/threads/{thread.pk}/", {"revs_before": top - 19}).content.decode()
    assert listed(html) == list(range(top - 20, top - 40, -1))
    html = editor_client.get(f"/threads/{thread.pk}/", {"revs_before": top - 39}).content.decode()
    assert listed(html) == list(range(top - 40, -1, -1)) and "data-older-revisions" not in html
    assert "Newest revisions" in html
    assert editor_client.get(f"/threads/{thread.pk}/", {"revs_before": "x"}).status_code == 400
