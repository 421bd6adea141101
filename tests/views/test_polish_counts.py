"""Issue 50's polish: numbers a page shows agree with its sentences."""
import re

from contextstore.models import Event
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
