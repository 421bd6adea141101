"""The store's pgvector path (contextstore/pgvector.py) gives the exact path's ranking and scores.

It runs where the test database has pgvector: `scripts/pgvector-for-tests start DIR`, then
POSTGRES_HOST=DIR POSTGRES_USER=postgres POSTGRES_DB=cs_test pytest tests/services/test_store_pgvector.py
(the machine's PostgreSQL has no pgvector; .ci/run starts one). Elsewhere it checks that the
schema has no trace of it.
"""

import random
import uuid

import pytest
from django.db import connection

from contextstore import pgvector
from contextstore.models import StoreVector
from contextstore.services.common import Actor
from contextstore.services.store import store_batch
from contextstore.storespec import check_ops


def run(workspace, *ops):
    return store_batch(workspace=workspace, actor=Actor.system("test"), ops=check_ops(list(ops)))


def side_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {pgvector.TABLE}")
        return cursor.fetchone()[0]


@pytest.fixture
def with_pgvector(db):
    if not pgvector.enabled():
        pytest.skip("the test database has no pgvector (scripts/pgvector-for-tests starts one)")


def test_without_pgvector_the_schema_has_no_vector_table(db):
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            offered = pgvector.available(cursor)
        assert (pgvector.TABLE in tables) == offered == pgvector.enabled()
    else:
        assert pgvector.TABLE not in tables and not pgvector.enabled()


@pytest.mark.parametrize("distance", ["cosine", "inner_product", "l2"])
def test_pgvector_ranks_as_exact_scoring_does(with_pgvector, workspace, distance):
    rng = random.Random(7)
    ns = [uuid.uuid4().hex]
    dims = 16
    ops = []
    for i in range(60):
        vectors = {"text": [rng.gauss(0, 1) * (1 + i % 3) for _ in range(dims)]}
        if i % 4 == 0:  # a second field: the item's score is its best field's
            vectors["title"] = [rng.gauss(0, 1) for _ in range(dims)]
        ops.append({"op": "put", "namespace": ns, "key": f"k{i}", "value": {"n": i % 5},
                    "vectors": vectors})
    ops.append({"op": "put", "namespace": ns, "key": "plain", "value": {"n": 1}, "index": False})
    run(workspace, *ops)
    assert side_rows() == StoreVector.objects.count()
    for flt, limit, offset in ((None, 10, 0), ({"n": {"$gte": 3}}, 5, 3), ({"n": 1}, 100, 0)):
        query = [rng.gauss(0, 1) for _ in range(dims)]
        search = {"op": "search", "namespace_prefix": ns, "query_vector": query, "distance": distance,
                  "filter": flt, "limit": limit, "offset": offset, "refresh_ttl": False}
        [by_pgvector] = run(workspace, search)
        with pgvector.exact():
            [by_exact] = run(workspace, search)
        assert [r["key"] for r in by_pgvector] == [r["key"] for r in by_exact]
        for a, b in zip(by_pgvector, by_exact, strict=True):
            assert (a["score"] is None) == (b["score"] is None)
            if a["score"] is not None:
                assert a["score"] == pytest.approx(b["score"], rel=1e-4, abs=1e-4)
        if flt == {"n": 1}:  # the item without vectors comes after the scored ones
            assert by_pgvector[-1]["key"] == "plain" and by_pgvector[-1]["score"] is None


def test_moves_edits_and_deletions_keep_the_vector_column_in_step(with_pgvector, workspace):
    ns = ["moves"]
    run(workspace, {"op": "put", "namespace": ns, "key": "a", "value": {"t": 1},
                    "vectors": {"t": [1.0, 0.0]}},
        {"op": "put", "namespace": ns, "key": "b", "value": {"t": 2}, "vectors": {"t": [0.0, 1.0]}})
    assert side_rows() == 2
    run(workspace, {"op": "move", "namespace": ns, "key": "a", "new_key": "c"})
    [found] = run(workspace, {"op": "search", "namespace_prefix": ns, "query_vector": [1.0, 0.1]})
    assert [r["key"] for r in found] == ["c", "b"] and side_rows() == 2
    run(workspace, {"op": "put", "namespace": ns, "key": "c", "value": None},
        {"op": "put", "namespace": ns, "key": "b", "value": {"t": 3}})  # no vectors: dropped
    assert side_rows() == 0
