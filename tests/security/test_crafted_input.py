"""Finding 5: crafted input was a 500. A superscript digit such as "²" passes `str.isdigit()` and
int() refuses it, on the public share page and in the dashboard's forms; an OTLP/JSON export
nested 990 levels deep overflowed the recursion of the walks after parsing. Numbers are now
parsed by one helper (ranges.positive_int; views.access.query_int in pages and forms) and a
crafted one is a 400; OTLP/JSON deeper than jsonstrict.MAX_JSON_DEPTH is a 400 as every JSON
body of the API is."""

import json

import pytest
from django.test import Client

from contextstore.jsonstrict import MAX_JSON_DEPTH
from contextstore.models import Collapse, OtelSpan
from contextstore.ranges import positive_int
from contextstore.services.collapses import collapse_create
from contextstore.services.datasets import dataset_ensure
from contextstore.services.events import event_append
from contextstore.services.sharing import share_link_create
from contextstore.services.state import state_write
from tests.otlp.conftest import export, span

CRAFTED = ["²", "١٢", "-1", "1e3", " ", "9" * 30, "1_000"]


@pytest.fixture
def busy(thread, actor):
    """A thread with messages, a logged call, a collapse and a state revision."""
    event_append(thread=thread, actor=actor, events=[
        *[{"type": "Message", "role": "user", "content": f"turn {i}"} for i in range(6)],
        {"type": "LLMCallStart", "data": {"messages": [{"role": "user", "content": "hi"}]}}])
    collapse_create(thread=thread, start_position=1, end_position=2, summary_text="s", actor=actor)
    state_write(thread=thread, state={"a": 1}, actor=actor)
    return thread


def test_the_one_parser_takes_plain_ascii_digits_only():
    assert [positive_int(v) for v in ("1", "42", "0", "", None, 7, *CRAFTED)] == [
        1, 42, None, None, None, None, *[None] * len(CRAFTED)]
    assert positive_int("0", zero=True) == 0
    assert positive_int(str(2**62)) == 2**62 and positive_int(str(2**62 + 1)) is None


def test_the_share_page_refuses_a_crafted_number_with_a_400(busy, actor):
    _, raw = share_link_create(session=busy.session, kind="session", actor=actor)
    for value in ("²", "1e3"):
        for query in (f"thread={value}", f"thread={busy.pk}&before={value}"):
            response = Client().get(f"/share/{raw}/?{query}")
            assert response.status_code == 400, query
    assert Client().get(f"/share/{raw}/?thread={busy.pk}&before=5").status_code == 200


def _pages(thread) -> list[str]:
    collapse = Collapse.objects.get(thread=thread)
    dataset = dataset_ensure(workspace=thread.workspace, name="ds")
    t = f"/threads/{thread.pk}"
    return [f"{t}/?before={{n}}", f"{t}/?after={{n}}", f"{t}/?around={{n}}", f"{t}/?newer={{n}}",
            f"{t}/?budget={{n}}", f"{t}/?from={{n}}&to=3", f"{t}/jump/?from={{n}}&error=next",
            f"{t}/collapses/{collapse.pk}/?after={{n}}", f"{t}/context/?page={{n}}",
            f"{t}/context/?budget={{n}}", f"{t}/export/?start_position={{n}}",
            f"{t}/activity/?before={{n}}", f"/datasets/{dataset.pk}/?after={{n}}",
            f"{t}/calls/7/sent/?from={{n}}"]


def test_every_dashboard_page_refuses_a_crafted_number_with_a_400(busy, editor_client):
    for page in _pages(busy):
        for value in ("²", "-1", "9" * 30):
            url = page.format(n=value)
            assert editor_client.get(url).status_code == 400, url
        assert editor_client.get(page.format(n="2")).status_code in (200, 302), page


def test_free_text_and_cursors_that_hold_a_crafted_number_are_not_an_error(busy, editor_client):
    assert editor_client.get(f"/threads/{busy.pk}/jump/?to=²").status_code < 500
    assert editor_client.get(f"/threads/{busy.pk}/jump/?to=%23²").status_code < 500
    assert editor_client.get("/?sort=events&cursor=5~²").status_code == 200
    assert editor_client.get("/?cursor=2026-01-01T00:00:00~²").status_code == 200


def test_every_dashboard_form_refuses_a_crafted_number_with_a_400(busy, editor_client):
    t = f"/threads/{busy.pk}"
    forms = [(f"{t}/blocks/restore/", {"name": "b", "version": "{n}"}),
             (f"{t}/state/restore/", {"revision": "{n}"}),
             (f"{t}/dataset/", {"dataset": "ds", "start_position": "{n}", "end_position": "2"}),
             (f"{t}/calls/7/replay/", {"model": "m", "text-{n}": "edited"}),
             (f"/sessions/{busy.session_id}/shares/", {"kind": "event", "thread": "{n}", "seq": "1",
                                                       "expires": "1d"})]
    for url, fields in forms:
        for value in ("²", "-1"):
            data = {k.format(n=value): v.format(n=value) for k, v in fields.items()}
            response = editor_client.post(url, data)
            assert response.status_code == 400, (url, value, response.status_code)


def _nested(depth: int) -> dict:
    value: dict = {"stringValue": "deep"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


def test_otlp_json_nested_too_deep_is_a_400(otlp):
    body = export(span("00f067aa0ba902b7", "chat", {}))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
        {"key": "deep", "value": _nested(330)}]  # 990 levels of JSON
    response = otlp(json.dumps(body).encode())
    assert response.status_code == 400
    assert f"nested deeper than {MAX_JSON_DEPTH} levels".encode() in response.content
    assert not OtelSpan.objects.exists()


def test_a_crafted_index_in_a_span_attribute_key_stays_a_name_and_never_fails_derivation():
    from contextstore.otel.mapping import _int, unflatten

    attrs = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.\u00b2.role": "system",
             "gen_ai.prompt.1" + "0" * 30 + ".role": "tool"}
    assert unflatten(attrs, "gen_ai.prompt.") == {0: {"role": "user"}, "\u00b2": {"role": "system"},
                                                  "1" + "0" * 30: {"role": "tool"}}
    assert (_int("\u00b2"), _int("12"), _int("9" * 5000)) == (None, 12, None)
