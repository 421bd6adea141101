"""Vectors beside the text (the long-term store's recall by meaning): packing and exact cosine.

A vector is kept as unit-length float32 (little-endian bytes), so cosine similarity is one dot
product. Search is exact: every stored vector of the candidates is scored with one matrix
product (numpy), which docs/performance.md measures by namespace size.
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


def pack(vector: Sequence[float]) -> bytes:
    """Unit length, float32 little-endian (a zero vector stays zero: it scores 0)."""
    array = np.asarray(vector, dtype="<f4")
    norm = float(np.linalg.norm(array))
    if norm > 0:
        array = array / norm
    return array.astype("<f4").tobytes()


def cosine_scores(query: Sequence[float], packed: list[bytes]) -> list[float]:
    """Cosine similarity of `query` with each packed vector (all of the query's dimensions)."""
    if not packed:
        return []
    q = np.frombuffer(pack(query), dtype="<f4")
    matrix = np.frombuffer(b"".join(packed), dtype="<f4").reshape(len(packed), q.shape[0])
    return [float(x) for x in matrix @ q]
