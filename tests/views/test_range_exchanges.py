"""The dashboard's collapse and fork forms: a range that would split a tool call from its
results is not acted on as selected; the confirm step names the exchange and offers the whole
range, which the person confirms (widen)."""

import pytest

from contextstore.models import Collapse, Event, Thread
from contextstore.services.events import event_append
from tests.services.test_render_asides import ASIDES, two_cities
from tests.views.conftest import HTMX


@pytest.fixture
def cities(thread, actor):
    event_append(thread=thread, actor=actor, events=two_cities(ASIDES[0]))
    return thread


def test_the_collapse_form_shows_the_refusal_and_the_widened_range_before_anything_changes(
        editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/collapse/", {
        "start_position": 1, "end_position": 4, "summary": "asked"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "HX-Redirect" not in response
    assert "Not collapsed as selected" in html and "#1–#4 would split" in html
    assert "<code>p</code>, <code>r</code> at #2, #3, results at #4, #6" in html
    assert 'data-widened-start="1" data-widened-end="6"' in html
    assert 'name="widen"' in html and "Collapse #1–#6" in html
    assert "<html" not in html  # the fragment the form swaps in
    assert not Collapse.objects.exists()
    assert Event.objects.filter(thread=cities, status="active").count() == 7


def test_confirming_the_widened_range_collapses_the_whole_exchange(editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/collapse/", {
        "start_position": 1, "end_position": 4, "summary": "asked", "widen": "on"}, **HTMX)
    assert response.status_code == 204 and response["HX-Redirect"]
    collapse = Collapse.objects.get()
    assert (collapse.start_position, collapse.end_position, collapse.event_count) == (1, 6, 6)


def test_without_htmx_the_confirm_step_is_a_page_holding_the_form(editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/collapse/", {
        "start_position": 5, "end_position": 7, "summary": "<b>tail</b>"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html and "Confirm the collapse" in html
    assert 'name="summary" value="&lt;b&gt;tail&lt;/b&gt;"' in html  # escaped, carried on
    assert 'name="start_position" value="5"' in html and "Collapse #2–#7" in html
    assert not Collapse.objects.exists()


def test_a_range_splitting_nothing_is_collapsed_at_once(editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/collapse/", {
        "start_position": 2, "end_position": 6, "summary": "looked up"}, **HTMX)
    assert response.status_code == 204
    assert (Collapse.objects.get().start_position, Collapse.objects.get().end_position) == (2, 6)


def test_the_fork_form_confirms_the_widened_range_too(editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/fork/", {
        "start_position": 1, "end_position": 3, "name": "what-if"}, **HTMX)
    html = response.content.decode()
    assert "Not forked as selected" in html and "Fork #1–#6" in html
    assert Thread.objects.count() == 1
    response = editor_client.post(f"/threads/{cities.pk}/fork/", {
        "start_position": 1, "end_position": 3, "name": "what-if", "widen": "on"}, **HTMX)
    assert response.status_code == 204
    child = Thread.objects.get(name="what-if")
    assert (child.fork_start_position, child.fork_end_position, child.event_count) == (1, 6, 6)


def test_the_worker_summary_of_a_splitting_range_is_refused_in_words(editor_client, cities):
    response = editor_client.post(f"/threads/{cities.pk}/summarize/", {
        "start_position": 3, "end_position": 7}, **HTMX)
    assert response.status_code == 400
    assert "splits a tool call from its results" in response.content.decode()
    assert response["HX-Retarget"] == "#flash"


def test_the_thread_page_forms_post_through_htmx_into_their_confirm_area(editor_client, cities):
    html = editor_client.get(f"/threads/{cities.pk}/").content.decode()
    assert html.count('hx-target="find .range-confirm"') == 2
    assert html.count('<div class="range-confirm"') == 2
