"""manage.py bench_otlp: OTLP ingest beside the plain API's batch append (contextstore/bench/otlp.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.otlp import OtlpBench


class Command(BaseCommand):
    help = "Measure OTLP span ingest (512-span batches, 4 exporters) beside the API's batch append."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", help="A running server; default: start gunicorn here.")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn workers when starting one (default: its config).")
        parser.add_argument("--seconds", type=float, default=10.0, help="Duration of each run.")
        parser.add_argument("--derive-workers", type=int, default=1,
                            help="Processes of the worker started beside gunicorn (default 1).")

    def handle(self, *args: Any, url: str | None, token: str | None, workers: int | None,
               seconds: float, derive_workers: int, **options: Any) -> None:
        OtlpBench(self.stdout).run(url=url, token=token, workers=workers, seconds=seconds,
                                   derive_workers=derive_workers)
