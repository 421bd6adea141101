from contextstore.selectors import rendering
from contextstore.services.collapses import collapse_create, collapse_undo
from contextstore.services.events import event_append
from tests.conftest import messages


def test_append_render_collapse_undo(thread, actor):
    result = event_append(thread=thread, events=messages(10), actor=actor)
    assert [e.seq for e in result.events] == list(range(1, 11))
    out = rendering.context_render(thread=thread, max_tokens=8000)
    assert out["stats"]["sections"]["history"]["events_included"] == 10
    c = collapse_create(thread=thread, start_position=2, end_position=5,
                        summary_text="early turns", actor=actor)
    thread.refresh_from_db()
    assert thread.active_event_count == 7
    collapse_undo(collapse=c, actor=actor)
    thread.refresh_from_db()
    assert thread.active_event_count == 10
