"""Our three framework adapters over HTTP against the stores a team would otherwise pick: ADK's
DatabaseSessionService, LangGraph's PostgresSaver and the Agents SDK's SQLAlchemySession, each
on this PostgreSQL database, in one run.

    python manage.py bench_peers                     # starts gunicorn on this database
    python manage.py bench_peers --frameworks adk --large 500

For each framework it runs framework_tests/peers.py in the framework's virtualenv
(.venv-<name>, built by scripts/framework-venv; --venv-dir names the folder holding them),
with this checkout's client first on the path. The driver makes the same calls on both stores
in turns and reports p50 latencies and the bytes each store's tables grew by per event; this
prints them side by side with ours/peer. Targets: ours at most the peer's on every write and
every full read at the large size, and on storage.
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper
from django.db import connection

from contextstore.bench.over_http import bench_token, load, start_server

FRAMEWORKS = ("adk", "langgraph", "openai-agents", "openai-conversations", "openai-conversations-sqlite")
# The OpenAI Conversations API is timed through the Agents SDK, in its virtualenv.
VENVS = {"openai-conversations": "openai-agents", "openai-conversations-sqlite": "openai-agents"}


def database_dsn() -> str:
    """This database as a libpq URL (what the peers' drivers connect to)."""
    if connection.vendor != "postgresql":
        raise CommandError("bench_peers compares PostgreSQL stores: "
                           "set DATABASE_URL to a PostgreSQL database.")
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"], safe="")
    return (f"postgresql://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/"
            f"{quote(db['NAME'], safe='')}")


class PeersBench:
    """bench_peers, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, frameworks: list[str], url: str | None, token: str | None, venv_dir: str | None,
            small: int, large: int, samples: int, reads: int) -> list[dict[str, Any]]:
        unknown = set(frameworks) - set(FRAMEWORKS)
        if unknown:
            raise CommandError(f"Unknown framework(s) {sorted(unknown)}: {', '.join(FRAMEWORKS)}.")
        if not 0 < small < large or samples < 1 or reads < 1:
            raise CommandError("Need 0 < --small < --large, --samples >= 1 and --reads >= 1.")
        dsn = database_dsn()
        root = Path(settings.BASE_DIR)
        venvs = Path(venv_dir) if venv_dir else root
        pythons = {name: venvs / f".venv-{VENVS.get(name, name)}" / "bin" / "python" for name in frameworks}
        for name, python in pythons.items():
            if not python.exists():
                raise CommandError(f"{python} is missing: build it with scripts/framework-venv "
                                   f"{VENVS.get(name, name)}.")
        env = {**os.environ, "PEERS_DSN": dsn, "PEERS_SMALL": str(small),
               "PEERS_LARGE": str(large), "PEERS_SAMPLES": str(min(samples, small)),
               "PEERS_READS": str(reads), "CONTEXTSTORE_TOKEN": token or bench_token("bench_peers"),
               # this checkout's client and drivers, not the one the virtualenv was built from
               "PYTHONPATH": os.pathsep.join([str(root / "clients" / "python"), str(root)])}
        server = None
        try:
            if url is None:
                # each answer says what the server spent on it: ours is split by it
                server, url = start_server(self.stdout, 2, settings_env={"SERVER_TIMING": "true"})
            env["CONTEXTSTORE_URL"] = url.rstrip("/")
            self.stdout.write(f"peers on this database vs ours over HTTP at {url}: writes timed "
                              f"{min(samples, small)}x at {small:,} and {large:,} events, reads "
                              f"{reads}x at {large:,}; load average {load()}")
            results = []
            for name in frameworks:
                run = subprocess.run([str(pythons[name]), "-m", "framework_tests.peers", name], cwd=root,
                                     env=env, capture_output=True, text=True, check=False)
                if run.returncode != 0:
                    raise CommandError(f"the {name} driver failed:\n{run.stdout[-2000:]}{run.stderr[-4000:]}")
                results.append(json.loads(run.stdout.strip().splitlines()[-1]))
                self.table(results[-1])
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        missed = [f"{r['framework']} {row['call']}" for r in results for row in r["rows"]
                  if row["target"] and row["ours"] > row["peer"]]
        missed += [f"{r['framework']} bytes/{r['unit']}" for r in results
                   if r["bytes"]["ours"] > r["bytes"]["peer"]]
        self.stdout.write(f"targets missed: {', '.join(missed) or 'none'}; load average after {load()}")
        return results

    def table(self, result: dict[str, Any]) -> None:
        hop, timed = result["hop"], any(row["requests"] for row in result["rows"])
        split = (f"; ours split into the server's time in Django, of it SQL, and the rest: the client "
                 f"and its requests' HTTP hops, each hop at least {hop['round_trip'] - hop['server']:.2f} "
                 f"ms: GET /healthz from this process took {hop['round_trip']:.2f} ms, "
                 f"{hop['server']:.2f} ms of it in Django" if timed else "")
        self.stdout.write(f"\n{result['framework']} (p50 ms; target: ours <= peer where marked *{split})")
        columns = f" {'server':>8} {'sql':>7} {'rest':>7} {'requests':>8}" if timed else ""
        self.stdout.write(f"  {'call':<44} {'peer':>9} {'ours':>9} {'ours/peer':>10}{columns}")
        for row in result["rows"]:
            mark = "*" if row["target"] else " "
            split = (f" {row['server']:8.2f} {row['sql']:7.2f} {row['rest']:7.2f} {row['requests']:8d}"
                     if timed else "")
            self.stdout.write(f"{mark} {row['call']:<44} {row['peer']:9.2f} {row['ours']:9.2f} "
                              f"{row['ours'] / row['peer']:10.2f}{split}")
        if not timed:
            self.stdout.write("  (the server sent no Server-Timing: start it with SERVER_TIMING=true "
                              "to split ours)")
        peer, ours = result["bytes"]["peer"], result["bytes"]["ours"]
        self.stdout.write(f"* {'bytes/' + result['unit'] + ' stored':<44} {peer:9,.0f} {ours:9,.0f} "
                          f"{ours / peer if peer else float('inf'):10.2f}")
        for side, label in (("ours", "ours"), ("peer", "the peer's")):
            mine = {name: size for name, size in result["parts"].items()
                    if name.startswith("peer:") == (side == "peer")}
            if not mine:  # a peer outside this database (SQLiteSession)
                continue
            parts = ", ".join(f"{name.removeprefix('peer:').removeprefix('contextstore_')} {size:,.0f}"
                              for name, size in mine.items() if size >= 1)
            self.stdout.write(f"  {label} by relation (bytes/{result['unit']}, tables and each index, "
                              f"sum {sum(mine.values()):,.0f}): {parts}")
