"""LangGraph's own store tests, run against ContextStoreStore (scripts/framework-tests).

Ported from LangGraph's repository at the newest tag its mirror holds (checkpoint==4.2.0,
checkpointpostgres 3.1.2; the assertions have not changed at the pinned 4.3.2 / 3.2.0 as far
as the published packages show): `libs/checkpoint/tests/test_store.py` (the InMemoryStore tests
of a store's behaviour) and `libs/checkpoint-postgres/tests/test_store.py` (PostgresStore's),
each test's assertions as written there, only the store's construction adapted: every test
gets a ContextStoreStore under a fresh `namespace` of its own on the live server, so it starts
empty as theirs do. Not ported (they test LangGraph's own classes or PostgreSQL internals, not
a store's behaviour): test_async_batch_store_* and test_get_text_at_path (AsyncBatchedBaseStore
and a LangGraph helper), test_escape_like_literal / test_namespace_match_pattern /
test_nonnull_migrations (PostgresStore's SQL). PostgresStore's vector parametrizations are
kept: `distance_type` l2, inner_product and cosine, each under both `vector_type`s (vector,
halfvec; ContextStoreStore keeps float32 either way, so a halfvec case checks the same scores
as PostgresStore's float16 within the tests' 1e-3); `bit`/hamming is not among its test
parameters (its conftest's VECTOR_TYPES are vector and halfvec). The `store` fixture is theirs:
a TTL of TTL_MINUTES refreshed on read, and the store's sweeper started every TTL_MINUTES / 2
(ContextStoreStore.start_ttl_sweeper, a sweep op to the server, where PostgresStore's thread
deletes rows). The omit_expired tests backdate a row with SQL and stop the sweeper; here the
sweeper is stopped too and an item gets a one-second TTL and the test waits it out (the test
server runs no beat, so nothing else sweeps it meanwhile).
"""

import asyncio
import os
import time
import uuid
from typing import Any

import pytest
from contextstore_client import AsyncContextStore, ContextStore
from contextstore_client.adapters.langgraph import ContextStoreStore
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from framework_tests.embed_utils import CharacterEmbeddings

TTL_SECONDS = 6
TTL_MINUTES = TTL_SECONDS / 60


def client() -> ContextStore:
    return ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])


def make_store(**kwargs: Any) -> ContextStoreStore:
    return ContextStoreStore(client(), namespace=f"lgtest-{uuid.uuid4().hex[:12]}", **kwargs)


@pytest.fixture
def store() -> ContextStoreStore:  # PostgresStore's fixture, its sweeper started
    s = make_store(ttl={"default_ttl": TTL_MINUTES, "refresh_on_read": True,
                        "sweep_interval_minutes": TTL_MINUTES / 2})
    s.start_ttl_sweeper()
    yield s
    s.stop_ttl_sweeper()
    s.client.close()


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)


def vector_store_of(fake_embeddings, text_fields=None, enable_ttl=True, vector_type="vector",
                    distance_type="cosine") -> ContextStoreStore:
    return make_store(index={"dims": fake_embeddings.dims, "embed": fake_embeddings,
                             "ann_index_config": {"vector_type": vector_type},
                             "distance_type": distance_type, "fields": text_fields},
                      ttl={"default_ttl": 2, "refresh_on_read": True} if enable_ttl else None)


# PostgresStore's _vector_params: each vector type with each distance, and the last without TTL.
_vector_params = [(vector_type, distance_type, True) for vector_type in ("vector", "halfvec")
                  for distance_type in ("l2", "inner_product", "cosine")]
_vector_params += [(*_vector_params[-1][:2], False)]
_path_params = [("vector", "cosine"), ("vector", "inner_product"), ("halfvec", "cosine"),
                ("halfvec", "inner_product")]


@pytest.fixture(params=_vector_params, ids=lambda p: f"{p[0]}_{p[1]}" + ("" if p[2] else "_no-ttl"))
def vector_store(request, fake_embeddings) -> ContextStoreStore:
    vector_type, distance_type, enable_ttl = request.param
    return vector_store_of(fake_embeddings, enable_ttl=enable_ttl, vector_type=vector_type,
                           distance_type=distance_type)


# ---- libs/checkpoint/tests/test_store.py (InMemoryStore() -> make_store()) ----------------------

def test_list_namespaces_basic() -> None:
    store = make_store()
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                  ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
                  ("admin", "users", "789")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("a", "b"))) == sorted(
        [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")])
    assert sorted(store.list_namespaces(suffix=("f",))) == sorted(
        [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == sorted(
        [("a", "b", "f"), ("a", "c", "f")])
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == sorted(
        [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")])
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == sorted([("a", "b", "f"), ("a", "c", "f")])
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == sorted(
        [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards() -> None:
    store = make_store()
    namespaces = [("users", "123"), ("users", "456"), ("users", "789", "settings"),
                  ("admin", "users", "789"), ("guests", "123"), ("guests", "456", "preferences")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == sorted(
        [("users", "123"), ("users", "456"), ("users", "789", "settings")])
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination() -> None:
    store = make_store()
    for i in range(20):
        store.put(namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}",
                  value={"data": f"value_{i:02d}"})
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=0) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)]


def test_list_namespaces_max_depth() -> None:
    store = make_store()
    for i, ns in enumerate([("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"),
                            ("h", "i", "j", "k")]):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(max_depth=2)) == sorted([("a", "b"), ("a", "g"), ("h", "i")])


def test_list_namespaces_no_conditions() -> None:
    store = make_store()
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == sorted(namespaces)


def test_list_namespaces_empty_store() -> None:
    assert make_store().list_namespaces() == []


async def test_cannot_put_empty_namespace() -> None:
    store = make_store()
    doc = {"foo": "bar"}
    for ns in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            await store.aput(ns, "foo", doc)
    await store.aput(("foo", "langgraph", "foo"), "bar", doc)
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")).value == doc
    assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
    await store.adelete(("foo", "langgraph", "foo"), "bar")
    assert (await store.aget(("foo", "langgraph", "foo"), "bar")) is None
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None
    # Do the same but go past the public put api
    await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert (await store.aget(("langgraph", "foo"), "bar")).value == doc
    assert (await store.asearch(("langgraph", "foo")))[0].value == doc
    await store.adelete(("langgraph", "foo"), "bar")
    assert (await store.aget(("langgraph", "foo"), "bar")) is None
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    assert store.get(("langgraph", "foo"), "bar").value == doc
    assert store.search(("langgraph", "foo"))[0].value == doc
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None


def test_vector_store_initialization(fake_embeddings) -> None:
    store = make_store(index={"dims": fake_embeddings.dims, "embed": fake_embeddings})
    assert store.index_config is not None
    assert store.index_config["dims"] == fake_embeddings.dims
    assert store.index_config["embed"] == fake_embeddings


DOCS = [("doc1", {"text": "short text"}), ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}), ("doc6", {"body": "text in body field"})]


def test_vector_insert_with_auto_embedding(vector_store) -> None:
    for key, value in DOCS:
        vector_store.put(("test",), key, value)
    results = vector_store.search(("test",), query="long text")
    assert len(results) > 0
    doc_order = [r.key for r in results]
    assert "doc2" in doc_order and "doc3" in doc_order


async def test_async_vector_insert_with_auto_embedding(vector_store) -> None:
    for key, value in DOCS:
        await vector_store.aput(("test",), key, value)
    results = await vector_store.asearch(("test",), query="long text")
    assert len(results) > 0
    doc_order = [r.key for r in results]
    assert "doc2" in doc_order and "doc3" in doc_order


def test_vector_update_with_embedding(vector_store) -> None:
    vector_store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    vector_store.put(("test",), "doc2", {"text": "something about dogs"})
    vector_store.put(("test",), "doc3", {"text": "text about birds"})
    results_initial = vector_store.search(("test",), query="Zany Xerxes")
    assert len(results_initial) > 0
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score
    vector_store.put(("test",), "doc1", {"text": "new text about dogs"})
    results_after = vector_store.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score < initial_score
    results_new = vector_store.search(("test",), query="new text about dogs")
    for r in results_new:
        if r.key == "doc1":
            assert r.score > after_score
    vector_store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = vector_store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


async def test_async_vector_update_with_embedding(vector_store) -> None:
    await vector_store.aput(("test",), "doc1", {"text": "zany zebra Xerxes"})
    await vector_store.aput(("test",), "doc2", {"text": "something about dogs"})
    await vector_store.aput(("test",), "doc3", {"text": "text about birds"})
    results_initial = await vector_store.asearch(("test",), query="Zany Xerxes")
    assert len(results_initial) > 0
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score
    await vector_store.aput(("test",), "doc1", {"text": "new text about dogs"})
    results_after = await vector_store.asearch(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score < initial_score
    results_new = await vector_store.asearch(("test",), query="new text about dogs")
    for r in results_new:
        if r.key == "doc1":
            assert r.score > after_score
    await vector_store.aput(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = await vector_store.asearch(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


FILTER_DOCS = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
               ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
               ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
               ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]


@pytest.mark.parametrize("refresh_ttl", [True, False])
def test_vector_search_with_filters(vector_store, refresh_ttl) -> None:
    for key, value in FILTER_DOCS:
        vector_store.put(("test",), key, value)
    results = vector_store.search(("test",), query="apple", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert len(results) == 2 and results[0].key == "doc1"
    results = vector_store.search(("test",), query="car", filter={"color": "red"}, refresh_ttl=refresh_ttl)
    assert len(results) == 2 and results[0].key == "doc2"
    results = vector_store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}},
                                  refresh_ttl=refresh_ttl)
    assert len(results) == 3 and results[0].key == "doc4"
    results = vector_store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    assert len(results) == 1 and results[0].key == "doc3"


async def test_async_vector_search_with_filters(vector_store) -> None:
    for key, value in FILTER_DOCS:
        await vector_store.aput(("test",), key, value)
    results = await vector_store.asearch(("test",), query="apple", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc1"
    results = await vector_store.asearch(("test",), query="car", filter={"color": "red"})
    assert len(results) == 2 and results[0].key == "doc2"
    results = await vector_store.asearch(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3 and results[0].key == "doc4"
    results = await vector_store.asearch(("test",), query="apple",
                                         filter={"score": {"$gte": 4.0}, "color": "green"})
    assert len(results) == 1 and results[0].key == "doc3"


async def test_async_batched_vector_search_concurrent(vector_store) -> None:
    colors = ["red", "blue", "green", "yellow", "purple"]
    items = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = [(f"doc{i}", {"text": f"{colors[i % 5]} {items[i % 5]}", "color": colors[i % 5],
                         "score": scores[i % 5], "index": i}) for i in range(50)]
    # theirs gathers all 150 writes at once; a put, a delete and a put of one key race there only
    # through AsyncBatchedBaseStore's queue, which orders them: here each phase is gathered in turn
    for phase in ("put", "delete", "put"):
        await asyncio.gather(*[vector_store.aput(("test",), k, v) if phase == "put"
                               else vector_store.adelete(("test",), k) for k, v in docs])
    search_queries = [("apple", {"color": "red"}), ("car", {"color": "blue"}), ("house", {"color": "green"}),
                      ("phone", {"score": {"$gt": 4.99}}), ("book", {"score": {"$lte": 3.5}}),
                      ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
                      ("car", {"score": {"$lt": 5.1}, "color": "blue"}), ("house", {"index": {"$gt": 25}}),
                      ("phone", {"index": {"$lte": 10}})]
    all_results = await asyncio.gather(*[vector_store.asearch(("test",), query=q, filter=f)
                                         for q, f in search_queries])
    ops = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b,
           "$lte": lambda a, b: a <= b}
    for results, (query, filter_) in zip(all_results, search_queries, strict=True):
        assert len(results) > 0, f"No results for query '{query}' with filter {filter_}"
        for result in results:
            if "color" in filter_:
                assert result.value["color"] == filter_["color"]
            for field in ("score", "index"):
                for op, value in filter_.get(field, {}).items():
                    assert ops[op](result.value[field], value)


def test_vector_search_pagination(vector_store) -> None:
    for i in range(5):
        vector_store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    results_page1 = vector_store.search(("test",), query="test", limit=2)
    results_page2 = vector_store.search(("test",), query="test", limit=2, offset=2)
    assert len(results_page1) == 2 and len(results_page2) == 2
    assert results_page1[0].key != results_page2[0].key
    assert len(vector_store.search(("test",), query="test", limit=10)) == 5


async def test_async_vector_search_pagination(vector_store) -> None:
    for i in range(5):
        await vector_store.aput(("test",), f"doc{i}", {"text": f"test document number {i}"})
    results_page1 = await vector_store.asearch(("test",), query="test", limit=2)
    results_page2 = await vector_store.asearch(("test",), query="test", limit=2, offset=2)
    assert len(results_page1) == 2 and len(results_page2) == 2
    assert results_page1[0].key != results_page2[0].key
    assert len(await vector_store.asearch(("test",), query="test", limit=10)) == 5


async def test_embed_with_path(fake_embeddings) -> None:
    store = vector_store_of(fake_embeddings, text_fields=["key0", "key1", "key3"])
    doc1 = {"key1": "xxx", "key2": "yyy", "key3": "zzz"}
    doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
    await store.aput(("test",), "doc1", doc1)
    await store.aput(("test",), "doc2", doc2)
    results = await store.asearch(("test",), query="xxx")
    assert len(results) == 2 and results[0].key != results[1].key
    ascore, bscore = results[0].score, results[1].score
    assert ascore is not None and bscore is not None
    assert ascore == pytest.approx(bscore, abs=1e-5)
    results = await store.asearch(("test",), query="uuu")
    assert len(results) == 2 and results[0].key != results[1].key and results[0].key == "doc2"
    assert results[0].score is not None and results[0].score > results[1].score
    assert ascore == pytest.approx(results[0].score, abs=1e-5)
    results = await store.asearch(("test",), query="www")
    assert len(results) == 2 and results[0].score < ascore and results[1].score < ascore
    store_no_defaults = vector_store_of(fake_embeddings, text_fields=["key17"])
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    await store_no_defaults.aput(("test",), "doc3", doc3, index=["key0", "key1"])
    await store_no_defaults.aput(("test",), "doc4", doc4, index=["key1", "key3"])
    results = await store_no_defaults.asearch(("test",), query="aaa")
    assert len(results) == 2 and results[0].key == "doc3"
    assert results[0].score is not None and results[0].score > results[1].score
    results = await store_no_defaults.asearch(("test",), query="ggg")
    assert len(results) == 2 and results[0].key == "doc4"
    assert results[0].score is not None and results[0].score > results[1].score
    results = await store_no_defaults.asearch(("test",), query="bbb")
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score == results[1].score
    results = await store_no_defaults.asearch(("test",), query="ccc")
    assert len(results) == 2 and all(r.score < ascore for r in results)
    await store_no_defaults.aput(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = await store_no_defaults.asearch(("test",), query="hhh")
    assert len(results) == 3
    assert next(r for r in results if r.key == "doc5").score is None


@pytest.mark.parametrize("vector_type,distance_type", _path_params)
def test_non_ascii(fake_embeddings, vector_type, distance_type) -> None:
    store = vector_store_of(fake_embeddings, vector_type=vector_type, distance_type=distance_type)
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


# ---- libs/checkpoint-postgres/tests/test_store.py (PostgresStore fixture -> ContextStoreStore) ---

def test_batch_order(store) -> None:
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})
    results = store.batch([
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ])
    assert len(results) == 5
    assert isinstance(results[0], Item) and isinstance(results[0].value, dict)
    assert results[0].value == {"data": "value1"} and results[0].key == "key1"
    assert results[1] is None
    assert isinstance(results[2], list) and len(results[2]) == 1
    assert isinstance(results[3], list) and len(results[3]) > 0
    assert results[4] is None
    results_reordered = store.batch([
        SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
        GetOp(namespace=("test", "bar"), key="key2"),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
        GetOp(namespace=("test", "foo"), key="key1"),
    ])
    assert len(results_reordered) == 5
    assert isinstance(results_reordered[0], list) and len(results_reordered[0]) >= 2
    assert isinstance(results_reordered[1], Item)
    assert results_reordered[1].value == {"data": "value2"} and results_reordered[1].key == "key2"
    assert isinstance(results_reordered[2], list) and len(results_reordered[2]) > 0
    assert results_reordered[3] is None
    assert isinstance(results_reordered[4], Item)
    assert results_reordered[4].value == {"data": "value1"} and results_reordered[4].key == "key1"


def test_batch_get_ops(store) -> None:
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    results = store.batch([GetOp(namespace=("test",), key="key1"), GetOp(namespace=("test",), key="key2"),
                           GetOp(namespace=("test",), key="key3")])
    assert len(results) == 3 and results[0] is not None and results[1] is not None and results[2] is None
    assert results[0].key == "key1" and results[1].key == "key2"


def test_batch_put_ops(store) -> None:
    results = store.batch([PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
                           PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
                           PutOp(namespace=("test",), key="key3", value=None)])
    assert len(results) == 3 and all(result is None for result in results)
    item1, item2 = store.get(("test",), "key1"), store.get(("test",), "key2")
    assert item1 and item1.value == {"data": "value1"}
    assert item2 and item2.value == {"data": "value2"}
    assert store.get(("test",), "key3") is None


def test_batch_search_ops(store) -> None:
    for namespace, key, value in [(("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
                                  (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
                                  (("test", "baz"), "key3", {"data": "value3", "tag": "b"})]:
        store.put(namespace, key, value)
    results = store.batch([SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
                           SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
                           SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0)])
    assert len(results) == 3
    assert len(results[0]) == 2 and all(item.value["tag"] == "a" for item in results[0])
    assert len(results[1]) == 2
    assert len(results[2]) == 1 and results[2][0].namespace == ("test", "foo")


def test_batch_list_namespaces_ops(store) -> None:
    test_data = [(("test", "documents", "public"), "doc1", {"content": "public doc"}),
                 (("test", "documents", "private"), "doc2", {"content": "private doc"}),
                 (("test", "images", "public"), "img1", {"content": "public image"}),
                 (("prod", "documents", "public"), "doc3", {"content": "prod doc"})]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    results = store.batch([
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
        ListNamespacesOp(match_conditions=[MatchCondition("suffix", "public")], max_depth=None,
                         limit=10, offset=0)])
    assert len(results) == 3
    assert len(results[0]) == len(test_data)
    assert all(len(ns) <= 2 for ns in results[1])
    assert all(ns[-1] == "public" for ns in results[2])


def test_basic_store_ops(store) -> None:
    namespace, item_id = ("test", "documents"), "doc1"
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(namespace, item_id, item_value)
    item = store.get(namespace, item_id)
    assert item and item.namespace == namespace and item.key == item_id and item.value == item_value
    updated_value = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(namespace, item_id, updated_value)
    updated_item = store.get(namespace, item_id)
    assert updated_item.value == updated_value
    assert updated_item.updated_at > item.updated_at
    assert store.get(("test", "other_documents"), item_id) is None
    store.delete(namespace, item_id)
    assert store.get(namespace, item_id) is None


def test_list_namespaces(store) -> None:
    test_namespaces = [("test", "documents", "public"), ("test", "documents", "private"),
                       ("test", "images", "public"), ("test", "images", "private"),
                       ("prod", "documents", "public"), ("prod", "documents", "private")]
    for namespace in test_namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})
    assert len(store.list_namespaces()) == len(test_namespaces)
    test_prefix_namespaces = store.list_namespaces(prefix=["test"])
    assert len(test_prefix_namespaces) == 4 and all(ns[0] == "test" for ns in test_prefix_namespaces)
    public_namespaces = store.list_namespaces(suffix=["public"])
    assert len(public_namespaces) == 3 and all(ns[-1] == "public" for ns in public_namespaces)
    assert all(len(ns) <= 2 for ns in store.list_namespaces(max_depth=2))
    assert len(store.list_namespaces(limit=3)) == 3
    for namespace in test_namespaces:
        store.delete(namespace, "dummy")


def test_search_namespace_segment_boundary(store) -> None:
    for namespace in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",), ("foobar", "baz"),
                      ("foo2",)]:
        store.put(namespace, "k", {"v": 1})

    def _namespaces(prefix):
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert _namespaces(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _namespaces(("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(("foo2",)) == {("foo2",)}
    assert _namespaces(("fo",)) == set()


def test_search_empty_prefix_is_unconstrained(store) -> None:
    for namespace in [("a",), ("b", "c"), ("d", "e", "f")]:
        store.put(namespace, "k", {"v": 1})
    assert {item.namespace for item in store.search((), limit=100)} == {("a",), ("b", "c"), ("d", "e", "f")}


def test_search_namespace_like_metacharacters(store) -> None:
    for namespace in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",)]:
        store.put(namespace, "k", {"v": 1})

    def _namespaces(prefix):
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert _namespaces(("user_1",)) == {("user_1",), ("user_1", "child")}
    assert _namespaces(("a%b",)) == {("a%b",)}


def test_list_namespaces_segment_boundary(store) -> None:
    for namespace in [("foo",), ("foo", "child"), ("foobar",), ("foobar", "baz"), ("uid", "users", "alice"),
                      ("uid", "users", "malice"), ("uid", "a", "b", "alice")]:
        store.put(namespace, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=["foo"], limit=100)) == {("foo",), ("foo", "child")}
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {
        ("uid", "users", "alice"), ("uid", "a", "b", "alice")}
    assert set(store.list_namespaces(prefix=["uid", "*", "alice"], limit=100)) == {("uid", "users", "alice")}
    assert set(store.list_namespaces(prefix=["uid"], limit=100)) == {
        ("uid", "users", "alice"), ("uid", "users", "malice"), ("uid", "a", "b", "alice")}


def test_search(store) -> None:
    test_data = [(("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
                 (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
                 (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]})]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    assert len(store.search(["test"])) == 3
    docs_items = store.search(["test", "docs"])
    assert len(docs_items) == 2 and all(item.namespace == ("test", "docs") for item in docs_items)
    alice_items = store.search(["test"], filter={"author": "Alice"})
    assert len(alice_items) == 2 and all(item.value["author"] == "Alice" for item in alice_items)
    assert len(store.search(["test"], limit=2)) == 2
    assert len(store.search(["test"], offset=2)) == 1
    for namespace, key, _ in test_data:
        store.delete(namespace, key)


def test_vector_search_edge_cases(vector_store) -> None:
    vector_store.put(("test",), "doc1", {"text": "test document"})
    assert len(vector_store.search(("test",), query="")) == 1
    assert len(vector_store.search(("test",), query=None)) == 1
    assert len(vector_store.search(("test",), query="test " * 100)) == 1
    assert len(vector_store.search(("test",), query="test!@#$%^&*()")) == 1


@pytest.mark.parametrize("vector_type,distance_type", _path_params)
def test_embed_with_path_sync(fake_embeddings, vector_type, distance_type) -> None:
    store = vector_store_of(fake_embeddings, text_fields=["key0", "key1", "key3"],
                            vector_type=vector_type, distance_type=distance_type)
    store.put(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"})
    store.put(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    results = store.search(("test",), query="xxx")
    assert len(results) == 2 and results[0].key != results[1].key
    ascore, bscore = results[0].score, results[1].score
    assert ascore == pytest.approx(bscore, abs=1e-3)
    for query, key in (("uuu", "doc2"), ("zzz", "doc1")):
        results = store.search(("test",), query=query)
        assert len(results) == 2 and results[0].key != results[1].key and results[0].key == key
        assert results[0].score > results[1].score
        assert ascore == pytest.approx(results[0].score, abs=1e-3)
    results = store.search(("test",), query="www")
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score < ascore and results[1].score < ascore


@pytest.mark.parametrize("vector_type,distance_type", _path_params)
def test_embed_with_path_operation_config(fake_embeddings, vector_type, distance_type) -> None:
    store = vector_store_of(fake_embeddings, text_fields=["key17"], vector_type=vector_type,
                            distance_type=distance_type)
    store.put(("test",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"},
              index=["key0", "key1"])
    store.put(("test",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"},
              index=["key1", "key3"])
    results = store.search(("test",), query="aaa")
    assert len(results) == 2 and results[0].key == "doc3" and len({r.key for r in results}) == 2
    assert results[0].score > results[1].score
    results = store.search(("test",), query="ggg")
    assert len(results) == 2 and results[0].key == "doc4" and results[0].score > results[1].score
    results = store.search(("test",), query="bbb")
    assert len(results) == 2 and results[0].key != results[1].key
    assert results[0].score == pytest.approx(results[1].score, abs=1e-3)
    results = store.search(("test",), query="ccc")
    assert len(results) == 2 and all(r.score < 0.9 for r in results)
    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = store.search(("test",))
    assert len(results) == 3 and all(r.score is None for r in results), f"{results}"
    assert any(r.key == "doc5" for r in results)


def _cosine_similarity(X, Y):
    out = []
    for y in Y:
        dot = sum(a * b for a, b in zip(X, y, strict=False))
        n1, n2 = sum(a * a for a in X) ** 0.5, sum(a * a for a in y) ** 0.5
        out.append(dot / (n1 * n2) if n1 > 0 and n2 > 0 else 0.0)
    return out


def _inner_product(X, Y):
    return [sum(a * b for a, b in zip(X, y, strict=False)) for y in Y]


def _neg_l2_distance(X, Y):
    return [-(sum((a - b) ** 2 for a, b in zip(X, y, strict=False)) ** 0.5) for y in Y]


@pytest.mark.parametrize("vector_type,distance_type",
                         [("vector", "cosine"), ("vector", "inner_product"), ("halfvec", "l2")])
@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(fake_embeddings, vector_type, distance_type, query) -> None:
    store = vector_store_of(fake_embeddings, text_fields=["key0"], vector_type=vector_type,
                            distance_type=distance_type)
    doc = {"key0": "aaa"}
    store.put(("test",), "doc", doc, index=["key0", "key1"])
    results = store.search((), query=query)
    vec0 = fake_embeddings.embed_query(doc["key0"])
    vec1 = fake_embeddings.embed_query(query)
    similarities = {"cosine": _cosine_similarity, "inner_product": _inner_product,
                    "l2": _neg_l2_distance}[distance_type](vec1, [vec0])
    assert len(results) == 1
    assert results[0].score == pytest.approx(similarities[0], abs=1e-3)


def test_store_ttl(store) -> None:
    ns = ("foo",)
    store.put(ns, key="item1", value={"foo": "bar"}, ttl=TTL_MINUTES)
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=True) is not None
    time.sleep(TTL_SECONDS - 2)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=False) is not None
    time.sleep(TTL_SECONDS - 1)
    assert len(store.search(ns, query="bar", refresh_ttl=False)) == 0


EXPIRE = 1 / 60  # a one-second TTL: what PostgresStore's suite backdates with SQL expires by itself


def _stored_expires_at(store, ns, key):
    item = store.client.store_get([*store._prefix, *ns], key, refresh_ttl=False)
    return item and item["expires_at"]


def test_omit_expired_filters_read_paths(store) -> None:
    store.stop_ttl_sweeper()
    store.ttl_config["omit_expired"] = True
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=EXPIRE)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    time.sleep(1.5)
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces and control_ns in namespaces


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(store) -> None:
    store.stop_ttl_sweeper()
    store.ttl_config["omit_expired"] = True
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=EXPIRE)
    store.put(ns, "live_get", {"n": 1}, ttl=TTL_MINUTES)
    store.put(ns, "live_search", {"n": 2}, ttl=TTL_MINUTES)
    get_before = _stored_expires_at(store, ns, "live_get")
    search_before = _stored_expires_at(store, ns, "live_search")
    time.sleep(1.5)
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert _stored_expires_at(store, ns, "expired") is None  # still invisible: not resurrected
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert _stored_expires_at(store, ns, "live_get") > get_before
    assert _stored_expires_at(store, ns, "live_search") > search_before


@pytest.mark.parametrize("omit", [None, False], ids=["default", "explicit-false"])
def test_omit_expired_disabled_preserves_expired_rows(store, omit) -> None:
    store.stop_ttl_sweeper()
    if omit is not None:
        store.ttl_config["omit_expired"] = omit
    ns = ("keep",)
    store.put(ns, "k", {"data": "still-here"}, ttl=EXPIRE)
    time.sleep(1.5)
    assert _stored_expires_at(store, ns, "k") is None  # past its TTL (what _expire_now does)
    assert store.get(ns, "k", refresh_ttl=False) is not None
    assert [i.key for i in store.search(ns, refresh_ttl=False)] == ["k"]
    assert ns in store.list_namespaces(prefix=("keep",))


def test_omit_expired_disabled_reads_refresh_an_unswept_item(store) -> None:
    """Not in LangGraph's suite: PostgresStore's refresh of a row past its TTL with omit_expired
    off (its UPDATE then has no expiry clause) gives it its TTL from now, and so does this store."""
    store.stop_ttl_sweeper()
    store.ttl_config["omit_expired"] = False
    ns = ("revive",)
    store.put(ns, "k", {"n": 1}, ttl=EXPIRE)
    time.sleep(1.5)
    assert store.get(ns, "k", refresh_ttl=True) is not None
    assert _stored_expires_at(store, ns, "k") is not None  # live again, for another second


def test_omit_expired_search_pagination(store) -> None:
    store.stop_ttl_sweeper()
    store.ttl_config["omit_expired"] = True
    ns = ("page",)
    # updated_at DESC: a, expired, b, c (theirs sets updated_at with SQL; here the put order)
    for key in ("c", "b"):
        store.put(ns, key, {"k": key}, ttl=TTL_MINUTES)
    store.put(ns, "expired", {"k": "x"}, ttl=EXPIRE)
    store.put(ns, "a", {"k": "a"}, ttl=TTL_MINUTES)
    time.sleep(1.5)
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]


def test_namespace_labels_with_trailing_newline(store) -> None:
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(store.list_namespaces(suffix=["alice"], limit=100)) == {("users", "alice")}
    assert set(store.list_namespaces(prefix=["users", "alice"], limit=100)) == {("users", "alice")}


# ---- the async client: the same store over AsyncContextStore ----------------------------------

async def test_the_async_client_serves_abatch(fake_embeddings) -> None:
    async with AsyncContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"]) as client:
        store = ContextStoreStore(client, namespace=f"lgtest-{uuid.uuid4().hex[:12]}",
                                  index={"dims": fake_embeddings.dims, "embed": fake_embeddings})
        for key, value in FILTER_DOCS:
            await store.aput(("test",), key, value)
        results = await store.asearch(("test",), query="apple", filter={"color": "red"})
        assert [r.key for r in results][0] == "doc1"
        assert await store.alist_namespaces() == [("test",)]
        with pytest.raises(TypeError):
            store.get(("test",), "doc1")


def test_sweep_ttl_sweeps_only_this_store(store) -> None:
    """Not in LangGraph's suite: PostgresStore's sweep_ttl answers the count it deleted; here
    the count of this store's items it turned into deleted versions (another store's stay)."""
    store.stop_ttl_sweeper()
    other = make_store(ttl={"default_ttl": EXPIRE})
    store.put(("s",), "k", {"n": 1}, ttl=EXPIRE)
    other.put(("s",), "k", {"n": 2})
    time.sleep(1.5)
    assert store.get(("s",), "k", refresh_ttl=False) is not None  # past its TTL, not swept
    assert (store.sweep_ttl(), store.sweep_ttl()) == (1, 0)
    assert store.get(("s",), "k") is None
    assert other.get(("s",), "k", refresh_ttl=False).value == {"n": 2}
    assert other.sweep_ttl() == 1
    other.client.close()


async def test_the_async_sweeper_is_a_task_that_sweeps() -> None:
    """Not in LangGraph's suite: AsyncPostgresStore's start_ttl_sweeper (a task of the loop),
    over an AsyncContextStore."""
    async with AsyncContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"]) as c:
        s = ContextStoreStore(c, namespace=f"lgtest-{uuid.uuid4().hex[:12]}",
                              ttl={"default_ttl": EXPIRE, "sweep_interval_minutes": 0.5 / 60})
        await s.aput(("a",), "k", {"v": 1})
        task = await s.astart_ttl_sweeper()
        assert await s.astart_ttl_sweeper() is task
        await asyncio.sleep(2.5)
        assert await s.aget(("a",), "k") is None
        await s.astop_ttl_sweeper()
        assert task.done()
        assert await s.asweep_ttl() == 0
