"""POST/GET /threads/{id}/sync/ and the client's sync_save / SyncTracker."""

import pytest

from contextstore.models import Event
from tests.client_flavours import FLAVOURS, client_flavour


def items(n: int, start: int = 0) -> list[dict]:
    return [{"key": f"m{i}", "event": {"type": "Message", "role": "user", "content": f"msg {i}"}}
            for i in range(start, start + n)]


def test_load_then_save_then_a_stale_save_is_412(api_client, thread, thread_url):
    loaded = api_client.get(f"{thread_url}sync/", {"namespace": "fw"})
    assert loaded.status_code == 200 and loaded.json()["revision"] == 0
    saved = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "base_revision": 0,
                                                   "items": items(2), "state": {"a": 1}},
                            format="json")
    assert saved.status_code == 200 and saved.json()["created"] == 2
    stale = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "base_revision": 0,
                                                   "items": items(1, 5), "state": {"x": 1}},
                            format="json")
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "stale_revision"
    body = api_client.get(f"{thread_url}sync/", {"namespace": "fw"}).json()
    assert [i["key"] for i in body["items"]] == ["m0", "m1"] and body["state"] == {"a": 1}


def test_a_part_over_the_limit_is_413_and_unknown_fields_are_400(api_client, thread_url, settings):
    settings.CONTEXTSTORE = {**settings.CONTEXTSTORE, "MAX_EVENTS_PER_BATCH": 10}
    big = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "items": items(11)},
                          format="json")
    assert big.status_code == 413
    odd = api_client.post(f"{thread_url}sync/", {"namespace": "fw", "itemz": []}, format="json")
    assert odd.status_code == 400
    bad = api_client.post(f"{thread_url}sync/", {"namespace": "a b", "items": []}, format="json")
    assert bad.status_code == 400


def test_another_workspace_gets_404(other_client, thread_url):
    assert other_client.get(f"{thread_url}sync/", {"namespace": "fw"}).status_code == 404
    assert other_client.post(f"{thread_url}sync/", {"namespace": "fw"}, format="json").status_code == 404


def test_the_endpoint_is_in_the_schema(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert {"get", "post"} <= set(schema["paths"]["/api/v1/threads/{thread_pk}/sync/"])


@pytest.fixture(params=FLAVOURS)
def flavour(request):
    """The client's tests run twice: through ContextStore and AsyncContextStore."""
    with client_flavour(request.param) as made:
        yield made


@pytest.fixture
def live_thread(flavour, live_server, token):
    with flavour.connect(live_server.url, token[1]) as client:
        yield client.thread("sync-live", user_id="ann")


def test_the_client_saves_5000_items_in_parts_atomically(live_thread, settings):
    result = live_thread.sync_save("fw", items=items(5000), base_revision=0, state={"n": 1})
    assert result["created"] == 5000 and result["revision"] == 1
    events = Event.objects.filter(thread_id=live_thread.id)
    assert events.count() == 5000
    assert list(events.order_by("position").values_list("content", flat=True)[:3]) == [
        "msg 0", "msg 1", "msg 2"]


def test_a_refused_large_save_leaves_the_thread_as_it_was(live_thread):
    from contextstore_client import InvalidInput

    live_thread.sync_save("fw", items=items(3))
    batch = items(3000, 3)
    batch[2500]["event"]["type"] = "not a type!"
    with pytest.raises(InvalidInput):
        live_thread.sync_save("fw", items=batch, base_revision=0, state={"n": 2})
    assert Event.objects.filter(thread_id=live_thread.id).count() == 3
    assert live_thread.state().state == {}


def test_two_trackers_take_turns_and_a_stale_one_reloads(flavour, live_thread, live_server, token):
    from contextstore_client import StaleRevision

    with flavour.connect(live_server.url, token[1]) as other_client:
        a = flavour.tracker(live_thread, "fw")
        b = flavour.tracker(other_client.get_thread(live_thread.id), "fw")
        a.load()
        a.save([(i["key"], i["event"]) for i in items(2)], document={"by": "a"})
        b.load()
        b.save([(i["key"], i["event"]) for i in items(3)], document={"by": "b"})
        with pytest.raises(StaleRevision):
            a.save([(i["key"], i["event"]) for i in items(2)] + [("x", {"type": "Message"})],
                   document={"by": "a"})
        loaded = a.load()
        for entry in loaded.items:
            a.seen(entry.key, {"type": "Message", "role": "user", "content": entry.event.content})
        a.save([(i["key"], i["event"]) for i in items(4)])
    assert [i.key for i in live_thread.sync_load("fw").items] == ["m0", "m1", "m2", "m3"]
