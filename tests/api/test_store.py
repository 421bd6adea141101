"""POST /api/v1/store/batch/: the long-term store's ops, one transaction, per workspace."""

from datetime import timedelta

import pytest
from django.utils import timezone

from contextstore.models import StoreItem, StoreItemVersion
from contextstore.services.store import store_expire, store_item_restore, store_item_undo

URL = "/api/v1/store/batch/"


def batch(client, *ops, status=200):
    response = client.post(URL, {"ops": list(ops)}, format="json")
    assert response.status_code == status, response.content
    return response.json()["results"] if status == 200 else response.json()["error"]


def put(namespace, key, value, **more):
    return {"op": "put", "namespace": namespace, "key": key, "value": value, **more}


def get(namespace, key, **more):
    return {"op": "get", "namespace": namespace, "key": key, **more}


def test_a_put_is_read_back_with_its_version_and_another_workspace_sees_nothing(api_client, other_client):
    results = batch(api_client, put(["memories", "ann"], "notes/diet.md", {"content": "vegetarian"}),
                    get(["memories", "ann"], "notes/diet.md"))
    assert results[0] is None
    item = results[1]
    assert (item["namespace"], item["key"], item["value"], item["version"], item["expires_at"]) == (
        ["memories", "ann"], "notes/diet.md", {"content": "vegetarian"}, 1, None)
    assert item["created_at"] == item["updated_at"]
    assert batch(other_client, get(["memories", "ann"], "notes/diet.md"),
                 {"op": "search", "namespace_prefix": []},
                 {"op": "list_namespaces"}) == [None, [], []]


def test_every_put_delete_and_move_is_a_version(api_client):
    ns = ["a", "b"]
    batch(api_client, put(ns, "k", {"n": 1}), put(ns, "k", {"n": 2}), put(ns, "k", None),
          put(ns, "k", None), put(ns, "k", {"n": 3}))
    moved = batch(api_client, {"op": "move", "namespace": ns, "key": "k", "new_key": "k2"})[0]
    assert (moved["key"], moved["value"], moved["version"]) == ("k2", {"n": 3}, 1)
    source = StoreItem.objects.get(key="k")
    assert [(v.version, v.action, v.value) for v in source.versions.order_by("version")] == [
        (1, "put", {"n": 1}), (2, "put", {"n": 2}), (3, "delete", None), (4, "put", {"n": 3}),
        (5, "move_out", None)]
    assert batch(api_client, get(ns, "k"), get(ns, "k2"))[0] is None


def test_a_move_onto_a_taken_key_is_a_409_and_the_batch_changes_nothing(api_client):
    ns = ["x"]
    batch(api_client, put(ns, "a", {"v": 1}), put(ns, "b", {"v": 2}))
    error = batch(api_client, put(ns, "c", {"v": 3}),
                  {"op": "move", "namespace": ns, "key": "a", "new_key": "b"}, status=409)
    assert error["code"] == "conflict"
    assert batch(api_client, get(ns, "c")) == [None]
    assert batch(api_client, {"op": "move", "namespace": ns, "key": "nope", "new_key": "z"}) == [None]


@pytest.mark.parametrize(("op", "field"), [
    ({"op": "get", "namespace": [], "key": "k"}, "namespace"),
    ({"op": "get", "namespace": ["a", ""], "key": "k"}, "namespace"),
    ({"op": "get", "namespace": ["a\x1fb"], "key": "k"}, "namespace"),
    ({"op": "get", "namespace": ["a\x00"], "key": "k"}, "namespace"),
    ({"op": "get", "namespace": ["a"], "key": ""}, "key"),
    ({"op": "get", "namespace": ["é" * 199] * 7, "key": "k"}, "key"),
    ({"op": "put", "namespace": ["a"], "key": "k"}, "value"),
    ({"op": "put", "namespace": ["a"], "key": "k", "value": [1]}, "value"),
    ({"op": "put", "namespace": ["a"], "key": "k", "value": {}, "ttl": -1}, "ttl"),
    ({"op": "put", "namespace": ["a"], "key": "k", "value": {}, "vectors": {"$": ["x"]}}, "vectors"),
    ({"op": "search", "namespace_prefix": ["a"], "filter": {"n": {"$regex": "x"}}}, "filter"),
    ({"op": "search", "namespace_prefix": ["a"], "limit": -1}, "limit"),
    ({"op": "list_namespaces", "max_depth": 0}, "max_depth"),
    ({"op": "drop"}, "op"),
    ({"op": "get", "namespace": ["a"], "key": "k", "extra": 1}, "extra"),
])
def test_a_bad_op_is_a_400_naming_it_and_nothing_changes(api_client, op, field):
    error = batch(api_client, put(["a"], "first", {"v": 1}), op, status=400)
    assert error["details"]["ops"]["1"].keys() == {field}, error
    assert not StoreItem.objects.exists()


def test_a_batch_that_is_not_a_list_of_at_most_1000_ops_is_a_400(api_client):
    for ops, detail in [({"op": "get"}, "must be a list"), ([put(["a"], "k", {})] * 1001, "at most 1000")]:
        response = api_client.post(URL, {"ops": ops}, format="json")
        assert response.status_code == 400 and response.json()["error"]["details"] == {"ops": detail}
    assert not StoreItem.objects.exists()


def test_a_read_token_may_read_but_not_write(read_client):
    assert batch(read_client, get(["a"], "k")) == [None]
    assert read_client.post(URL, {"ops": [put(["a"], "k", {})]}, format="json").status_code == 403


def test_search_filters_pages_and_recalls_by_words(api_client):
    ns = ["docs", "ann"]
    batch(api_client, *[put(ns, f"k{i}", {"rank": i, "kind": "even" if i % 2 == 0 else "odd",
                                          "text": f"note {i} about cats" if i < 3 else f"note {i}"})
                        for i in range(6)], put(["docs", "bob"], "k", {"rank": 9, "text": "cats"}))
    found = batch(api_client, {"op": "search", "namespace_prefix": ns,
                               "filter": {"kind": "even", "rank": {"$gte": 2}}})[0]
    assert [i["key"] for i in found] == ["k4", "k2"]  # newest first
    page = batch(api_client, {"op": "search", "namespace_prefix": ["docs"], "limit": 2, "offset": 1})[0]
    assert [i["key"] for i in page] == ["k5", "k4"]
    words = batch(api_client, {"op": "search", "namespace_prefix": ns, "query": "Cats dogs"})[0]
    assert {i["key"] for i in words} == {"k0", "k1", "k2"} and {i["score"] for i in words} == {0.5}
    assert batch(api_client, {"op": "search", "namespace_prefix": ["doc"]})[0] == []


def test_search_by_vectors_ranks_by_cosine(api_client):
    ns = ["v"]
    batch(api_client, put(ns, "x", {"t": "x"}, vectors={"t": [1, 0, 0]}),
          put(ns, "y", {"t": "y"}, vectors={"t": [0, 1, 0]}),
          put(ns, "xy", {"t": "xy"}, vectors={"t": [1, 1, 0]}), put(ns, "plain", {"t": "p"}, index=False))
    found = batch(api_client, {"op": "search", "namespace_prefix": ns, "query_vector": [1, 0.1, 0]})[0]
    assert [i["key"] for i in found] == ["x", "xy", "y", "plain"]
    assert found[0]["score"] == pytest.approx(0.995, abs=1e-3) and found[-1]["score"] is None


def test_list_namespaces_with_prefix_suffix_wildcards_and_depth(api_client):
    for ns in (["a", "b", "c"], ["a", "b", "d"], ["a", "e", "c"], ["f", "b", "c"]):
        batch(api_client, put(ns, "k", {}))
    listed = lambda **kw: batch(api_client, {"op": "list_namespaces", **kw})[0]  # noqa: E731
    assert listed() == [["a", "b", "c"], ["a", "b", "d"], ["a", "e", "c"], ["f", "b", "c"]]
    assert listed(prefix=["a", "b"]) == [["a", "b", "c"], ["a", "b", "d"]]
    assert listed(suffix=["c"], prefix=["a"]) == [["a", "b", "c"], ["a", "e", "c"]]
    assert listed(prefix=["*", "b"]) == [["a", "b", "c"], ["a", "b", "d"], ["f", "b", "c"]]
    assert listed(max_depth=2) == [["a", "b"], ["a", "e"], ["f", "b"]]
    assert listed(max_depth=1, limit=1, offset=1) == [["f"]]
    batch(api_client, put(["a", "b", "d"], "k", None))
    assert listed(prefix=["a", "b"]) == [["a", "b", "c"]]


def test_ttl_hides_refreshes_and_expires(api_client, workspace):
    ns = ["t"]
    batch(api_client, put(ns, "k", {"v": 1}, ttl=1.0))
    item = StoreItem.objects.get()
    first = item.expires_at
    assert first is not None
    StoreItem.objects.filter(pk=item.pk).update(expires_at=timezone.now() + timedelta(seconds=5))
    assert batch(api_client, get(ns, "k", refresh_ttl=False))[0] is not None
    batch(api_client, get(ns, "k"))
    assert StoreItem.objects.get().expires_at > timezone.now() + timedelta(seconds=50)
    StoreItem.objects.filter(pk=item.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert batch(api_client, get(ns, "k"), {"op": "search", "namespace_prefix": []}) == [None, []]
    assert store_expire() == 1
    assert StoreItem.objects.get().versions.order_by("-version").first().action == "expire"


def test_a_sweep_op_expires_what_is_past_its_ttl_under_its_prefix_only(api_client, other_client,
                                                                       read_client):
    """PostgresStore's sweep_ttl, asked by the LangGraph adapter's sweeper: the items past their
    TTL under the prefix, and only they, become expire versions (undoable) by the token's actor;
    the item stays readable with omit_expired false until then."""
    batch(api_client, put(["s", "a"], "old", {"v": 1}, ttl=1.0), put(["s", "b"], "live", {"v": 2}, ttl=1.0),
          put(["s", "a"], "forever", {"v": 3}), put(["t"], "old", {"v": 4}, ttl=1.0))
    batch(other_client, put(["s", "a"], "old", {"v": 5}, ttl=1.0))
    past = timezone.now() - timedelta(seconds=1)
    StoreItem.objects.filter(key="old").update(expires_at=past)
    [unswept] = batch(api_client, get(["s", "a"], "old", omit_expired=False, refresh_ttl=False))
    assert unswept["value"] == {"v": 1}
    assert read_client.post(URL, {"ops": [{"op": "sweep"}]}, format="json").status_code == 403
    assert batch(api_client, {"op": "sweep", "namespace_prefix": ["s"]},
                 {"op": "sweep", "namespace_prefix": ["s"]}) == [1, 0]
    gone, live, forever, other_prefix = batch(
        api_client, get(["s", "a"], "old", omit_expired=False), get(["s", "b"], "live"),
        get(["s", "a"], "forever"), get(["t"], "old", omit_expired=False, refresh_ttl=False))
    assert gone is None and live and forever and other_prefix  # past its TTL, not swept
    latest = StoreItem.objects.get(key="old", deleted_at__isnull=False).versions.order_by("-version").first()
    assert (latest.action, latest.actor != "system:ttl") == ("expire", True)
    assert StoreItem.objects.filter(key="old", deleted_at__isnull=True).count() == 2  # ["t"], the other's
    assert batch(other_client, {"op": "sweep"}) == [1]
    assert batch(api_client, {"op": "sweep", "namespace_prefix": []}) == [1]
    assert batch(api_client, {"op": "sweep", "namespace_prefix": "s"}, status=400)["details"] == {
        "ops": {"0": {"namespace_prefix": "must be a list of strings"}}}


def test_a_person_restores_a_version_and_undoes_a_move(api_client, actor):
    ns = ["m"]
    batch(api_client, put(ns, "k", {"v": 1}), put(ns, "k", {"v": 2}))
    item = StoreItem.objects.get()
    store_item_restore(item=item, version=1, actor=actor)
    assert batch(api_client, get(ns, "k"))[0]["value"] == {"v": 1}
    batch(api_client, {"op": "move", "namespace": ns, "key": "k", "new_key": "k2"})
    store_item_undo(item=StoreItem.objects.get(key="k2"), actor=actor)
    back, gone = batch(api_client, get(ns, "k"), get(ns, "k2"))
    assert (back["value"], gone) == ({"v": 1}, None)
    assert StoreItemVersion.objects.filter(item__key="k2").count() == 2
    store_item_undo(item=StoreItem.objects.get(key="k"), actor=actor)  # the move back, undone
    assert batch(api_client, get(ns, "k2"))[0]["value"] == {"v": 1}
    batch(api_client, put(["first"], "k", {"v": 1}))
    store_item_undo(item=StoreItem.objects.get(path="\x1ffirst\x1f"), actor=actor)
    assert batch(api_client, get(["first"], "k")) == [None]


def test_a_secret_in_a_value_is_redacted_before_it_is_stored(api_client):
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    batch(api_client, put(["r"], "k", {"note": f"key {secret}"}))
    assert secret not in str(batch(api_client, get(["r"], "k"))[0]["value"])
    assert secret not in str(StoreItemVersion.objects.get().value)


def test_erasing_a_person_takes_the_items_naming_them_and_nothing_else(api_client, workspace, actor):
    from contextstore.services.erasure import user_erase

    batch(api_client, put(["memories", "ann"], "a", {"v": 1}), put(["memories", "ann"], "a", {"v": 2}),
          put(["adk_memory", "app", "ann"], "s/e", {"text": "hi"}, vectors={"text": [1.0, 0.0]}),
          put(["memories", "Ann"], "a", {"v": 1}), put(["memories", "annie"], "a", {"v": 1}))
    counts = user_erase(workspace=workspace, user_id="ann", actor=actor)["counts"]
    assert (counts["store_items"], counts["store_item_versions"], counts["store_vectors"]) == (2, 3, 1)
    assert batch(api_client, {"op": "list_namespaces"})[0] == [["memories", "Ann"], ["memories", "annie"]]


def test_retention_prunes_old_versions_and_long_deleted_items(api_client, workspace):
    from contextstore.services.retention import retention_run

    batch(api_client, put(["r"], "kept", {"v": 1}), put(["r"], "kept", {"v": 2}),
          put(["r"], "gone", {"v": 1}), put(["r"], "gone", None))
    StoreItemVersion.objects.update(created_at=timezone.now() - timedelta(days=40))
    StoreItem.objects.filter(key="gone").update(deleted_at=timezone.now() - timedelta(days=40))
    workspace.retention_event_days = 30
    workspace.save()
    retention_run()
    assert [(v.item.key, v.version) for v in StoreItemVersion.objects.all()] == [("kept", 2)]
    assert batch(api_client, get(["r"], "kept"))[0]["value"] == {"v": 2}


@pytest.fixture
def embedder(settings, eager_tasks):
    """A local OpenAI-compatible embeddings endpoint: a text's vector counts its vowels."""
    import json as jsonlib
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = jsonlib.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, body["model"], self.headers.get("Authorization"), body["input"]))
            data = [{"index": i, "embedding": [t.count(v) + 0.01 for v in "aeiou"]}
                    for i, t in enumerate(body["input"])]
            out = jsonlib.dumps({"data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    settings.STORE_EMBEDDINGS_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.STORE_EMBEDDINGS_MODEL = "fake-embed"
    settings.STORE_EMBEDDINGS_API_KEY = "k-1"
    yield seen
    server.shutdown()


def test_the_deployments_embedder_embeds_puts_in_the_worker_and_queries_in_search(
        api_client, embedder, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        batch(api_client, put(["e"], "a", {"text": "aaaa"}, index=["text"]),
              put(["e"], "o", {"text": "oooo"}, index=["text"]),
              put(["e"], "plain", {"text": "aaaa"}, index=False))
    assert embedder[0][:3] == ("/v1/embeddings", "fake-embed", "Bearer k-1")
    assert sorted(embedder[0][3]) == ["aaaa", "oooo"]  # one call for the batch, not the unindexed
    found = batch(api_client, {"op": "search", "namespace_prefix": ["e"], "query": "o"})[0]
    assert [i["key"] for i in found] == ["o", "a", "plain"]
    assert found[0]["score"] == pytest.approx(1.0, abs=1e-3) and found[2]["score"] is None
    assert embedder[-1][3] == ["o"]


def test_search_recalls_by_words_when_the_embedder_is_down(api_client, settings):
    settings.STORE_EMBEDDINGS_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    settings.STORE_EMBEDDINGS_TIMEOUT = 0.5
    batch(api_client, put(["d"], "k", {"text": "the cat sat"}))
    found = batch(api_client, {"op": "search", "namespace_prefix": ["d"], "query": "cat"})[0]
    assert [(i["key"], i["score"]) for i in found] == [("k", 1.0)]
