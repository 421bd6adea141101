"""Vectors beside the text (the long-term store's recall by meaning): packing and exact cosine.

A vector is kept as float32 (little-endian bytes). Search is exact: every stored vector of the
candidates is scored with one matrix product (numpy), which docs/performance.md measures by
namespace size; where the PostgreSQL database has pgvector, contextstore/pgvector.py ranks in
the database instead.
"""

import math
from collections.abc import Sequence

import numpy as np

MAX_DIMS = 8192


def check_vector(vector: object) -> list[float] | None:
    """The vector as floats, or None when it is not a non-empty list of finite numbers."""
    if not isinstance(vector, list) or not vector or len(vector) > MAX_DIMS:
        return None
    out: list[float] = []
    for x in vector:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            return None
        out.append(float(x))
    return out


DISTANCES = ("cosine", "inner_product", "l2")


def pack(vector: Sequence[float]) -> bytes:
    """float32 little-endian, as sent (vectors kept before scoring by inner product and l2 came
    were stored at unit length, which cosine, the only distance then, does not tell apart)."""
    return np.asarray(vector, dtype="<f4").tobytes()


def scores(query: Sequence[float], packed: list[bytes], distance: str = "cosine") -> list[float]:
    """The similarity of `query` with each packed vector (all of the query's dimensions), as
    LangGraph's PostgresStore scores: cosine similarity, the inner product, or the negated
    Euclidean (l2) distance; higher is closer."""
    if not packed:
        return []
    q = np.asarray(query, dtype="<f4")
    matrix = np.frombuffer(b"".join(packed), dtype="<f4").reshape(len(packed), q.shape[0])
    dots = matrix @ q
    if distance == "inner_product":
        out = dots
    else:
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        q_norm = float(np.linalg.norm(q))
        if distance == "l2":
            out = -np.sqrt(np.maximum(norms * norms + q_norm * q_norm - 2 * dots, 0.0))
        else:
            scale = norms * q_norm
            out = np.divide(dots, scale, out=np.zeros_like(dots), where=scale > 0)
    return [float(x) for x in out]
