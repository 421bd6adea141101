"""A deterministic offline embedding for the store tests: each character of the text pulls the
vector towards a fixed random direction of its own, by its share of the text; the result is
unit length. Texts sharing characters score close, as the store tests of LangGraph expect of
their fake embeddings (the same kind of function, written here)."""

import hashlib
import math
import random
from collections import Counter

from langchain_core.embeddings import Embeddings


class CharacterEmbeddings(Embeddings):
    def __init__(self, dims: int = 50, seed: int = 42) -> None:
        self.dims = dims
        self.seed = seed
        self._directions: dict[str, list[float]] = {}

    def _direction(self, char: str) -> list[float]:
        if char not in self._directions:
            digest = hashlib.sha256(f"{self.seed}:{char}".encode()).digest()
            rng = random.Random(int.from_bytes(digest[:8], "big"))
            self._directions[char] = [rng.gauss(0.0, 1.0) for _ in range(self.dims)]
        return self._directions[char]

    def embed_query(self, text: str) -> list[float]:
        counts = Counter(text)
        vector = [0.0] * self.dims
        for char, count in counts.items():
            share = count / len(text)
            for i, x in enumerate(self._direction(char)):
                vector[i] += share * x
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]
