"""The deployment's embedder: an OpenAI-compatible `POST {base}/embeddings` endpoint.

Configured by STORE_EMBEDDINGS_URL (unset: no embedder; the store searches by words, or by the
vectors clients send), STORE_EMBEDDINGS_MODEL and STORE_EMBEDDINGS_API_KEY. Texts are embedded
in workers (tasks.embed_store_items) and a search's query in its request (services/store.py).
"""

from typing import Any

import httpx
from django.conf import settings


class EmbedderUnavailable(Exception):
    """The endpoint did not answer with one vector per text."""


def configured() -> bool:
    return bool(settings.STORE_EMBEDDINGS_URL)


def embed(texts: list[str], *, timeout: float | None = None) -> list[list[float]]:
    """One vector per text, in order."""
    if not texts:
        return []
    headers = {"Authorization": f"Bearer {settings.STORE_EMBEDDINGS_API_KEY}"} \
        if settings.STORE_EMBEDDINGS_API_KEY else {}
    try:
        response = httpx.post(
            settings.STORE_EMBEDDINGS_URL.rstrip("/") + "/embeddings",
            json={"model": settings.STORE_EMBEDDINGS_MODEL, "input": texts}, headers=headers,
            timeout=timeout or settings.STORE_EMBEDDINGS_TIMEOUT)
        response.raise_for_status()
        rows: list[dict[str, Any]] = sorted(response.json()["data"], key=lambda r: r.get("index", 0))
        vectors = [list(map(float, row["embedding"])) for row in rows]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise EmbedderUnavailable(str(exc)) from exc
    if len(vectors) != len(texts):
        raise EmbedderUnavailable(f"{len(vectors)} vectors for {len(texts)} texts")
    return vectors
