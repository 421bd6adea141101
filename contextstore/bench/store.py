"""bench_store: the long-term store's search by vectors by namespace size (in process): exact
cosine, and pgvector beside it where the database has it (contextstore/pgvector.py); and
ContextStoreStore over HTTP against LangGraph's PostgresStore on this PostgreSQL database
(framework_tests/store_peers.py in the langgraph virtualenv).

    python manage.py bench_store --cosine 1000,10000,100000 --dims 384
    python manage.py bench_store --peers 1000,10000
"""

import json
import os
import random
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from django.db import connection
from django.utils import timezone

from contextstore import pgvector
from contextstore.bench.over_http import bench_token, load, start_server
from contextstore.bench.peers import database_dsn
from contextstore.models import StoreItem, StoreVector
from contextstore.models.store import namespace_path
from contextstore.services.common import Actor
from contextstore.services.store import store_batch
from contextstore.services.workspaces import workspace_ensure
from contextstore.storespec import check_ops
from contextstore.vectors import pack


def cosine(stdout: OutputWrapper, sizes: list[int], dims: int, samples: int) -> None:
    workspace, _ = workspace_ensure(slug="bench", name="Benchmarks")
    actor = Actor.system("bench_store")
    rng = random.Random(3)
    with_pgvector = pgvector.enabled()
    stdout.write(f"by vectors (cosine), {dims} dimensions, limit 10, in process"
                 f"{'' if with_pgvector else ' (this database has no pgvector)'}; load average {load()}")
    stdout.write(f"  {'items':>8} {'exact p50 ms':>13} {'pgvector p50 ms':>16} {'by words p50 ms':>16} "
                 f"{'newest 10 ms':>13}")
    for size in sizes:
        ns = ["bench", "cosine", uuid.uuid4().hex[:8]]
        # seeded in bulk (the put path is measured below, against PostgresStore)
        now = timezone.now()
        path = namespace_path(ns)
        for start in range(0, size, 5000):
            items = StoreItem.objects.bulk_create([
                StoreItem(workspace=workspace, path=path, depth=len(ns), key=f"k{i}",
                          value={"text": f"memory {i}"}, text=f"memory {i}", version=1,
                          created_at=now, updated_at=now)
                for i in range(start, min(size, start + 5000))])
            if connection.vendor != "postgresql":  # bulk_create sets pks on PostgreSQL only
                items = list(StoreItem.objects.filter(workspace=workspace, path=path,
                                                      vectors__isnull=True))
            drawn = [[rng.gauss(0, 1) for _ in range(dims)] for _ in items]
            rows = StoreVector.objects.bulk_create([
                StoreVector(item=item, field="text", dims=dims, data=pack(vector))
                for item, vector in zip(items, drawn, strict=True)])
            if with_pgvector:
                pgvector.add([(row.pk, vector) for row, vector in zip(rows, drawn, strict=True)])

        def timed(op: dict) -> float:
            times = []
            for _ in range(samples):
                query = {**op}
                if "query_vector" in query:
                    query["query_vector"] = [rng.gauss(0, 1) for _ in range(dims)]
                begin = time.perf_counter()
                store_batch(workspace=workspace, actor=actor, ops=check_ops([query]))
                times.append((time.perf_counter() - begin) * 1000)
            return statistics.median(times)

        base = {"op": "search", "namespace_prefix": ns, "limit": 10, "refresh_ttl": False}
        with pgvector.exact():
            exact = timed({**base, 'query_vector': []})
        by_pgvector = f"{timed({**base, 'query_vector': []}):16.1f}" if with_pgvector else f"{'-':>16}"
        stdout.write(f"  {size:>8,} {exact:>13.1f} {by_pgvector} "
                     f"{timed({**base, 'query': 'memory 42'}):>16.1f} {timed(base):>13.1f}")
        StoreItem.objects.filter(workspace=workspace, path__startswith="\x1fbench\x1fcosine\x1f").delete()


def peers(stdout: OutputWrapper, sizes: list[int], samples: int, url: str | None) -> None:
    dsn = database_dsn()
    root = Path(settings.BASE_DIR)
    python = root / ".venv-langgraph" / "bin" / "python"
    if not python.exists():
        raise CommandError(f"{python} is missing: build it with scripts/framework-venv langgraph.")
    env = {**os.environ, "PEERS_DSN": dsn, "STORE_SIZES": ",".join(map(str, sizes)),
           "STORE_SAMPLES": str(samples), "CONTEXTSTORE_TOKEN": bench_token("bench_store"),
           "PYTHONPATH": os.pathsep.join([str(root / "clients" / "python"), str(root)])}
    server = None
    try:
        if url is None:
            server, url = start_server(stdout, 2)
        env["CONTEXTSTORE_URL"] = url.rstrip("/")
        stdout.write(f"\nContextStoreStore over HTTP at {url} vs PostgresStore on this database, "
                     f"p50 of {samples} calls each; load average {load()}")
        run = subprocess.run([str(python), "-m", "framework_tests.store_peers"], cwd=root, env=env,
                             capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise CommandError(f"the driver failed:\n{run.stdout[-2000:]}{run.stderr[-4000:]}")
        rows = json.loads(run.stdout.strip().splitlines()[-1])["rows"]
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    stdout.write(f"  {'items':>7} {'call':<28} {'peer ms':>8} {'ours ms':>8} {'ours/peer':>9}")
    for row in rows:
        stdout.write(f"  {row['size']:>7,} {row['call']:<28} {row['peer']:8.2f} {row['ours']:8.2f} "
                     f"{row['ours'] / row['peer']:9.2f}")
    stdout.write(f"load average after {load()}")
