"""The session list's filters on model, errors, cost, tokens and last activity: each alone,
combined with search, sort and each other, across "load more" pages, and refused clearly."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from contextstore.models import Session, SessionModel
from contextstore.services import history
from contextstore.services.events import event_append
from contextstore.services.sessions import session_ensure, thread_ensure
from contextstore.services.threads import thread_clear_context, thread_delete_fork, thread_fork
from tests.views.conftest import HTMX


def call(model: str | None, cost: str = "0.01", tokens: int = 100) -> list[dict]:
    data = {"input_tokens": tokens, "output_tokens": 0, "cost": cost}
    if model is not None:
        data["model"] = model
    return [{"type": "LLMCallStart", "content": "calling", "data": {"model": model} if model else {}},
            {"type": "LLMComplete", "content": "done", "data": data}]


def make(workspace, actor, key: str, *events: dict, **counters) -> Session:
    session = session_ensure(workspace=workspace, key=key, actor=actor)[0]
    thread = thread_ensure(session=session, actor=actor)[0]
    if events:
        event_append(thread=thread, events=list(events), actor=actor)
    if counters:
        Session.objects.filter(pk=session.pk).update(**counters)
    return session


def keys(client, **params) -> list[str]:
    """The session keys the list shows, in order (htmx fragment)."""
    html = client.get("/", params, **HTMX).content.decode()
    return [part.split("<")[0] for part in html.split('<div class="sub">')[1:]]


@pytest.fixture
def fleet(workspace, actor):
    """Four sessions with different models, errors, costs, tokens and activity."""
    now = timezone.now()
    a = make(workspace, actor, "a", *call("gpt-4o", "0.50", 1000))
    b = make(workspace, actor, "b", *call("claude-sonnet", "2.00", 20), {"type": "Error", "content": "boom"})
    c = make(workspace, actor, "c", *call("gpt-4o", "0.04", 5), *call("ünïcode-模型", "0.04", 5))
    d = make(workspace, actor, "d", {"type": "Message", "role": "user", "content": "hi"})
    # Tokens are the events' own counts (content tokens); set apart so the ranges can tell.
    for s, days, tokens in ((a, 0, 5000), (b, 3, 300), (c, 10, 40), (d, 1, 1)):
        Session.objects.filter(pk=s.pk).update(last_activity_at=now - timedelta(days=days),
                                               token_total=tokens)
    return {s.key: Session.objects.get(pk=s.pk) for s in (a, b, c, d)}


def test_the_model_filter_uses_the_models_the_calls_reported(editor_client, fleet):
    assert keys(editor_client, model="gpt-4o") == ["a", "c"]
    assert keys(editor_client, model="claude-sonnet") == ["b"]
    assert keys(editor_client, model="ünïcode-模型") == ["c"]
    assert keys(editor_client, model="no-such-model") == []
    html = editor_client.get("/").content.decode()
    assert '<option value="claude-sonnet">' in html and '<option value="ünïcode-模型">' in html


def test_the_errors_filter_reads_the_error_counter(editor_client, fleet):
    assert keys(editor_client, errors="on") == ["b"]
    assert fleet["b"].error_count == 1


def test_cost_and_token_ranges_include_both_ends(editor_client, fleet):
    assert sorted(keys(editor_client, cost_min="0.5")) == ["a", "b"]
    assert sorted(keys(editor_client, cost_min="0.1", cost_max="0.5")) == ["a"]
    assert sorted(keys(editor_client, cost_max="0.1")) == ["c", "d"]
    assert sorted(keys(editor_client, tokens_min="1000")) == ["a"]
    assert sorted(keys(editor_client, tokens_min="40", tokens_max="300")) == ["b", "c"]
    assert sorted(keys(editor_client, tokens_max="0")) == []
    assert sorted(keys(editor_client, cost_min="2", cost_max="2")) == ["b"]


def test_the_activity_range_takes_whole_days_to_included(editor_client, fleet):
    today = timezone.localdate()
    assert keys(editor_client, active_from=str(today - timedelta(days=1))) == ["a", "d"]
    assert keys(editor_client, active_to=str(today - timedelta(days=3))) == ["b", "c"]
    assert keys(editor_client, active_from=str(today - timedelta(days=5)),
                active_to=str(today - timedelta(days=2))) == ["b"]
    assert keys(editor_client, active="day", active_from=str(today - timedelta(days=30))) == ["a"]


def test_filters_combine_with_each_other_search_and_sort(editor_client, fleet):
    assert keys(editor_client, model="gpt-4o", cost_min="0.1") == ["a"]
    # The search reads the events too ("c" is in every session's "calling"): c's cost alone.
    assert keys(editor_client, model="gpt-4o", q='"cost": "0.04"') == ["c"]
    assert keys(editor_client, model="gpt-4o", sort="cost") == ["c", "a"]
    assert keys(editor_client, model="gpt-4o", sort="-cost") == ["a", "c"]
    assert keys(editor_client, errors="on", model="gpt-4o") == []
    assert keys(editor_client, cost_max="1", tokens_max="100", active_from="2000-01-01") == ["d", "c"]
    assert keys(editor_client, cost_max="1", tokens_max="100", active_from=str(timezone.localdate()
                                                                               - timedelta(days=2))) == ["d"]


def test_the_filters_stay_in_the_url_and_the_next_page_link(editor_client, workspace, actor):
    for i in range(55):
        make(workspace, actor, f"m-{i:02d}", *call("gpt-4o", str(i)))
    for i in range(20):
        make(workspace, actor, f"other-{i:02d}", *call("other", "40"))
    params = {"model": "gpt-4o", "cost_min": "3", "sort": "-cost"}
    first = editor_client.get("/", params).content.decode()
    link = first.split('class="btn" data-pause-refresh href="')[1].split('"')[0].replace("&amp;", "&")
    assert "model=gpt-4o" in link and "cost_min=3" in link and "sort=-cost" in link
    second = editor_client.get(link, **HTMX).content.decode()
    assert "Load more" not in second
    shown = [p.split("<")[0] for p in (first + second).split('<div class="sub">')[1:]]
    # 52 sessions (gpt-4o, at least $3), most expensive first, across two pages, none twice.
    assert shown == [f"m-{i:02d}" for i in range(54, 2, -1)]
    assert first.count('class="session-row"') == 50


@pytest.mark.parametrize("params, says", [
    ({"cost_min": "abc"}, "Cost from: Enter a number."),
    ({"tokens_max": "-5"}, "Tokens to: Ensure this value is greater than or equal to 0."),
    ({"tokens_min": "99999999999999999999999"}, "Tokens from: Ensure this value is less than"),
    ({"active_from": "2026-13-01"}, "Active from: Enter a valid date."),
    ({"cost_min": "5", "cost_max": "1"}, "The cost range is upside down"),
    ({"active_from": "2026-02-01", "active_to": "2026-01-01"}, "The last activity range is upside down"),
    ({"model": "bad\x00name"}, "Model: Null characters are not allowed."),
    ({"cost_max": "NaN"}, "Cost to:"),
])
def test_bad_filter_values_get_a_clear_message_and_a_400(editor_client, fleet, params, says):
    for headers in ({}, HTMX):
        response = editor_client.get("/", params, **headers)
        html = response.content.decode()
        assert response.status_code == 400
        assert says in html.replace("&#x27;", "'") and 'role="alert"' in html
        assert 'class="session-row"' not in html
    assert response["HX-Retarget"] == "#results"


def test_far_dates_are_accepted(editor_client, fleet):
    assert keys(editor_client, active_to="9999-12-31") == ["a", "d", "b", "c"]
    assert keys(editor_client, active_from="0001-01-01") == ["a", "d", "b", "c"]


def test_other_workspaces_models_are_neither_offered_nor_matched(
        editor_client, fleet, other_workspace, actor):
    make(other_workspace, actor, "theirs", *call("secret-model"))
    assert "secret-model" not in editor_client.get("/").content.decode()
    assert keys(editor_client, model="secret-model") == []


def test_filtering_queries_do_not_grow_with_history(
        editor_client, workspace, actor, django_assert_max_num_queries):
    for i in range(3):
        make(workspace, actor, f"big-{i}", *(call("gpt-4o") * 100 * (i + 1)))
    # 12: the list's own 10, the saved-views menu's one and the firing-alerts banner's one
    with django_assert_max_num_queries(12):
        response = editor_client.get("/", {"model": "gpt-4o", "errors": "", "cost_min": "0.5",
                                           "tokens_max": "10000000", "active_from": "2000-01-01"})
    assert response.status_code == 200 and response.content.decode().count('class="session-row"') == 3


# --- the model rows follow the events ---------------------------------------------------------

def test_model_rows_survive_clear_and_go_with_the_last_thread_naming_them(workspace, actor):
    session = make(workspace, actor, "s", *call("kept"))
    thread = session.threads.get()
    fork = thread_fork(thread=thread, name="f", actor=actor)
    event_append(thread=fork, events=call("fork-only"), actor=actor)
    thread_clear_context(thread=thread, actor=actor)
    assert set(SessionModel.objects.filter(session=session).values_list("model", flat=True)) == {
        "kept", "fork-only"}
    thread_delete_fork(thread=fork, actor=actor)
    # "kept" is still named by the parent's rows (the fork's copies went with it).
    assert set(SessionModel.objects.filter(session=session).values_list("model", flat=True)) == {"kept"}
    recount = history.counters_recount(session=session)
    assert recount["models"] == history.counters_stored(session=session)["models"] == {"kept"}


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_naming_one_model_keep_one_row(workspace, actor):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite serialises writers; the race needs PostgreSQL")
    session = session_ensure(workspace=workspace, key="race", actor=actor)[0]
    threads = [thread_ensure(session=session, name=f"t{i}", actor=actor)[0] for i in range(4)]
    barrier = threading.Barrier(len(threads))
    errors: list[BaseException] = []

    def append(thread) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                event_append(thread=thread, events=call("shared") + call(f"own-{thread.name}"), actor=actor)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=append, args=(t,)) for t in threads]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    names = sorted(SessionModel.objects.filter(session=session).values_list("model", flat=True))
    assert names == ["own-t0", "own-t1", "own-t2", "own-t3", "shared"]
    assert Session.objects.get(pk=session.pk).cost_total == Decimal("0.01") * 40
