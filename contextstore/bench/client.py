"""The light client's cost per call, against bare urllib3 (the floor) and bare httpx.

    python manage.py bench_client                        # starts gunicorn on this database
    python manage.py bench_client --other ../base        # and another checkout's client, A/B

Each round runs contextstore/bench/client_calls.py in a process of its own (this checkout's
client first on the path; with --other, the other checkout's in the next process, which side
goes first alternating), which times five clients making the same calls in turns: wall p50 and
CPU time per call of the client's process. Prints each round, then the median over rounds with
each client's CPU as a ratio to urllib3's in the same process and, with --other, ours / other.
The server's time is in the wall figures only: the CPU is the client's.
"""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, OutputWrapper

from contextstore.bench.client_calls import CALLS, CLIENTS
from contextstore.bench.over_http import bench_token, load, start_server


class ClientBench:
    """bench_client, written to `stdout` (the command's)."""

    def __init__(self, stdout: OutputWrapper) -> None:
        self.stdout = stdout

    def run(self, *, other: str | None, url: str | None, token: str | None, samples: int,
            rounds: int) -> dict[str, list[dict[str, Any]]]:
        if samples < 1 or rounds < 1:
            raise CommandError("Need --samples >= 1 and --rounds >= 1.")
        root = Path(settings.BASE_DIR)
        sides = {"ours": root / "clients" / "python"}
        if other:
            sides["other"] = Path(other).resolve() / "clients" / "python"
            if not (sides["other"] / "contextstore_client").is_dir():
                raise CommandError(f"{other} has no clients/python/contextstore_client.")
        token = token or bench_token("bench_client")
        server = None
        try:
            if url is None:
                server, url = start_server(self.stdout, 1)
            self.stdout.write(f"client cost per call at {url}: {samples} calls of each kind a round, "
                              f"{rounds} rounds; load average {load()}")
            results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for number in range(rounds):
                order = list(sides) if number % 2 == 0 else list(reversed(sides))
                for side in order:
                    result = self.driver(root, sides[side], url, token, samples, side)
                    results[side].append(result)
                    self.table(f"round {number + 1}, {side} ({result['client']})", [result])
            for side in sides:
                self.table(f"{side}: median of {rounds} rounds", results[side])
            if other:
                self.versus(results)
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        self.stdout.write(f"load average after {load()}")
        return results

    def driver(self, root: Path, client: Path, url: str, token: str, samples: int,
               side: str) -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(client), str(root)])}
        run = subprocess.run([sys.executable, "-m", "contextstore.bench.client_calls", url, token,
                              str(samples), side], cwd=root, env=env, capture_output=True, text=True,
                             check=False)
        if run.returncode != 0:
            raise CommandError(f"the driver failed:\n{run.stdout[-2000:]}{run.stderr[-4000:]}")
        return json.loads(run.stdout.strip().splitlines()[-1])

    @staticmethod
    def medians(results: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
        """Per (client, call): the median over rounds of wall p50, CPU and CPU / urllib3's."""
        out = {}
        for client in CLIENTS:
            for name in CALLS:
                rows = [({(r["client"], r["call"]): r for r in result["rows"]}, client, name)
                        for result in results]
                out[client, name] = {
                    "wall": statistics.median(by[c, n]["wall_p50"] for by, c, n in rows),
                    "cpu": statistics.median(by[c, n]["cpu"] for by, c, n in rows),
                    "ratio": statistics.median(by[c, n]["cpu"] / by["urllib3", n]["cpu"]
                                               for by, c, n in rows),
                }
        return out

    def table(self, title: str, results: list[dict[str, Any]]) -> None:
        figures = self.medians(results)
        self.stdout.write(f"\n{title} (ms a call; cpu/floor: CPU over urllib3's)")
        self.stdout.write(f"  {'client':<18}" + "".join(
            f" {name + ' p50':>12} {name + ' cpu':>11} {'cpu/floor':>9}" for name in CALLS))
        for client in CLIENTS:
            self.stdout.write(f"  {client:<18}" + "".join(
                f" {figures[client, name]['wall']:12.3f} {figures[client, name]['cpu']:11.3f}"
                f" {figures[client, name]['ratio']:9.2f}" for name in CALLS))

    def versus(self, results: dict[str, list[dict[str, Any]]]) -> None:
        """Ours against the other's CPU, raw and as ratios to each process's own urllib3 floor
        (steadier: one process can run slower than the next on a shared machine)."""
        ours, other = self.medians(results["ours"]), self.medians(results["other"])
        self.stdout.write("\nours / other, CPU a call (medians of the rounds): raw, and of cpu/floor")
        for client in ("ContextStore", "AsyncContextStore"):
            self.stdout.write(f"  {client:<18}" + "".join(
                f"   {name} {ours[client, name]['cpu'] / other[client, name]['cpu']:.2f}"
                f" {ours[client, name]['ratio'] / other[client, name]['ratio']:.2f}" for name in CALLS))
