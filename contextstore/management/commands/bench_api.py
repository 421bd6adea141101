"""manage.py bench_api: the agent API measured over HTTP on loopback (contextstore/bench/api.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.api import ApiBench
from contextstore.partitions import bench_schema


class Command(BaseCommand):
    help = "Measure the agent API over HTTP: batch and single appends, context render latency."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", help="A running server; default: start gunicorn here.")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn workers when starting one (default: its config).")
        parser.add_argument("--seconds", type=float, default=5.0,
                            help="Duration of each throughput run.")
        parser.add_argument("--large", type=int, default=100_000,
                            help="Events in the large thread for the context latency test.")
        parser.add_argument("--samples", type=int, default=300,
                            help="GET /context/ requests per thread size.")
        parser.add_argument("--partitions", type=int, default=None,
                            help="Move the event table to N hash partitions first (PostgreSQL; "
                                 "0 or 1: one table; default: as it is).")

    def handle(self, *args: Any, url: str | None, token: str | None, workers: int | None,
               seconds: float, large: int, samples: int, partitions: int | None = None,
               **options: Any) -> None:
        bench_schema(partitions, self.stdout.write)
        ApiBench(self.stdout).run(url=url, token=token, workers=workers, seconds=seconds,
                                  large=large, samples=samples)
