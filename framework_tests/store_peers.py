"""ContextStoreStore over HTTP against LangGraph's PostgresStore on the same PostgreSQL, the
same calls in turns (run by `manage.py bench_store` in the langgraph virtualenv).

Env: PEERS_DSN (the database PostgresStore uses), CONTEXTSTORE_URL / CONTEXTSTORE_TOKEN,
STORE_SIZES ("1000,10000": items in the namespace measured), STORE_SAMPLES. Prints one JSON line.
"""

import json
import os
import random
import statistics
import time
import uuid

from contextstore_client import ContextStore
from contextstore_client.adapters.langgraph import ContextStoreStore
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore


def p50(call, samples: int) -> float:
    times = []
    for i in range(samples):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fill(store, ns: tuple[str, ...], size: int) -> None:
    for start in range(0, size, 500):
        store.batch([PutOp(ns, f"k{i}", {"text": f"memory number {i} about topic {i % 97}", "n": i % 50})
                     for i in range(start, min(size, start + 500))])


def calls_of(ns: tuple[str, ...], keys: list[str]) -> dict:
    return {
        "put (a new item)": lambda s, i: s.put(ns, f"new-{uuid.uuid4().hex}", {"text": "x", "n": i}),
        "put (update an item)": lambda s, i: s.put(ns, keys[i], {"text": "y", "n": i % 50}),
        "get": lambda s, i: s.get(ns, keys[i]),
        "search newest 10": lambda s, i: s.search(ns, limit=10),
        "search filter {n: k}, 10": lambda s, i: s.search(ns, filter={"n": i % 50}, limit=10),
        "list_namespaces": lambda s, i: s.list_namespaces(prefix=("bench",), limit=100),
    }


def main() -> None:
    sizes = [int(s) for s in os.environ.get("STORE_SIZES", "1000,10000").split(",")]
    samples = int(os.environ.get("STORE_SAMPLES", "50"))
    rows = []
    client = ContextStore(os.environ["CONTEXTSTORE_URL"], os.environ["CONTEXTSTORE_TOKEN"])
    with PostgresStore.from_conn_string(os.environ["PEERS_DSN"]) as peer:
        peer.setup()
        for size in sizes:
            run = uuid.uuid4().hex[:8]
            ns = ("bench", run, "memories")
            ours = ContextStoreStore(client, namespace=f"bench-{run}")
            stores = {"peer": peer, "ours": ours}
            for store in stores.values():
                fill(store, ns, size)
            rng = random.Random(7)
            keys = [f"k{rng.randrange(size)}" for _ in range(samples)]
            for name, call in calls_of(ns, keys).items():
                figures = {who: p50(lambda i, s=store, c=call: c(s, i), samples)  # one store, then the other
                           for who, store in stores.items()}
                rows.append({"size": size, "call": name, **figures})
            with peer._cursor() as cur:
                cur.execute("DELETE FROM store WHERE prefix LIKE %s", (f"bench.{run}.%",))
    client.close()
    print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
