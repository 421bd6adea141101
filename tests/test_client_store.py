"""The client's long-term store methods (sync and async) against a live server."""

import contextstore_client as cs_client
import pytest

from tests.client_flavours import FLAVOURS, client_flavour


@pytest.fixture(params=FLAVOURS)
def flavour(request):
    with client_flavour(request.param) as made:
        yield made


@pytest.fixture
def cs(flavour, live_server, transactional_db, token):
    with flavour.connect(live_server.url, token[1], retries=1, backoff=0.01) as store:
        yield store


def test_the_store_methods_round_trip(cs):
    ns = ["memories", "ann"]
    assert cs.store_put(ns, "notes/todo.md", {"content": "buy milk"}, ttl=60) is None
    item = cs.store_get(ns, "notes/todo.md")
    assert (item["value"], item["version"]) == ({"content": "buy milk"}, 1)
    assert item["expires_at"] is not None
    moved = cs.store_move(ns, "notes/todo.md", "notes/done.md")
    assert moved["key"] == "notes/done.md" and cs.store_get(ns, "notes/todo.md") is None
    cs.store_put(ns, "x", {"content": "x"})
    with pytest.raises(cs_client.Conflict):
        cs.store_move(ns, "x", "notes/done.md")
    hits = cs.store_search(["memories"], query="milk")
    assert [(h["key"], h["score"]) for h in hits] == [("notes/done.md", 1.0)]
    assert cs.store_list_namespaces(prefix=["memories"]) == [ns]
    cs.store_delete(ns, "x")
    cs.store_delete(ns, "never-there")
    assert [h["key"] for h in cs.store_search(ns)] == ["notes/done.md"]
    results = cs.store_batch([{"op": "get", "namespace": ns, "key": "x"},
                              {"op": "list_namespaces", "max_depth": 1}])
    assert results == [None, [["memories"]]]
    with pytest.raises(cs_client.InvalidInput) as bad:
        cs.store_batch([{"op": "get", "namespace": [], "key": "k"}])
    assert bad.value.details["ops"]["0"] == {"namespace": "must be a non-empty list of strings"}
