"""pgvector where the PostgreSQL database has it: a copy of each stored vector in a `vector`
column of a side table, ranked in the database with pgvector's distance operators.

Migration 0006 creates the extension and the table `contextstore_storevector_pg` (vector_id ->
contextstore_storevector, ON DELETE CASCADE, so every deletion of a vector takes its copy) only
when the database offers the extension (`pg_available_extensions`) and lets it be created; any
other database keeps the schema it had, and the store ranks by exact cosine over the stored
vectors (vectors.scores). `enabled` asks once per connection alias whether the table is there.
The scan is exact (no ANN index: the store's vectors are of any dimensions, and a namespace's
candidates are a small part of the table), as PostgresStore's search without an index.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.models import QuerySet

from contextstore.models import StoreVector

TABLE = "contextstore_storevector_pg"
_known: dict[str, bool] = {}
_off = False

# pgvector's operator for each of vectors.DISTANCES (ascending: closest first) and the score.
OPERATORS = {"cosine": ("<=>", "1 - {}"), "inner_product": ("<#>", "-({})"), "l2": ("<->", "-({})")}


def available(cursor: Any) -> bool:
    """Whether this PostgreSQL server offers the `vector` extension."""
    cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    return cursor.fetchone() is not None


def enabled(alias: str = "default") -> bool:
    """Whether the database behind `alias` keeps vectors in pgvector's column."""
    if _off:
        return False
    if alias not in _known:
        connection = connections[alias]
        if connection.vendor != "postgresql":
            _known[alias] = False
        else:
            with connection.cursor() as cursor:
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [TABLE])
                _known[alias] = bool(cursor.fetchone()[0])
    return _known[alias]


@contextmanager
def exact() -> Iterator[None]:
    """Rank by exact cosine over the stored vectors even where pgvector is there (the benchmark
    and the tests that compare both paths)."""
    global _off
    before, _off = _off, True
    try:
        yield
    finally:
        _off = before


def literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def add(rows: list[tuple[int, Sequence[float]]], alias: str = "default") -> None:
    """Copy vectors (StoreVector pk, the vector as sent) into pgvector's column."""
    if not rows:
        return
    with connections[alias].cursor() as cursor, \
            cursor.cursor.copy(f"COPY {TABLE} (vector_id, embedding) FROM STDIN") as copy:
        for pk, vector in rows:
            copy.write_row((pk, literal(vector)))


def rank(candidates: QuerySet[Any], query: Sequence[float], distance: str,
         need: int) -> Iterator[tuple[int, float]]:
    """The first `need` candidates by their closest vector of the query's dimensions: (item pk,
    score as vectors.scores gives it), best first, ties by pk."""
    operator, score = OPERATORS[distance]
    inner, params = candidates.values("pk").query.sql_with_params()
    sql = (f"SELECT v.item_id, MIN(p.embedding {operator} %s::vector) AS d "
           f"FROM {TABLE} p JOIN {StoreVector._meta.db_table} v ON v.id = p.vector_id "
           f"WHERE v.dims = %s AND v.item_id IN ({inner}) "
           f"GROUP BY v.item_id ORDER BY d, v.item_id LIMIT %s")
    with connections[candidates.db].cursor() as cursor:
        cursor.execute(f"SELECT item_id, {score.format('d')} FROM ({sql}) ranked ORDER BY d, item_id",
                       [literal(query), len(query), *params, need])
        for pk, value in cursor.fetchall():
            yield pk, float(value)
