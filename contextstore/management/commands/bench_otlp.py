"""manage.py bench_otlp: OTLP end to end beside the plain API's batch append, per worker count
(contextstore/bench/otlp.py)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from contextstore.bench.otlp import OtlpBench


class Command(BaseCommand):
    help = ("Measure OTLP traces becoming events (accepted and derived) beside the API storing as many "
            "events in batches of 100 from 4 clients, per worker count.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url",
                            help="A running server and worker; default: start gunicorn and a worker.")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--workers", type=int, default=None,
                            help="gunicorn workers when starting one (default: its config).")
        parser.add_argument("--traces", type=int, default=200, help="Traces of 10 chat calls a row.")
        parser.add_argument("--derive-workers", default="1",
                            help="Worker processes, one row each: a comma-separated list (default 1).")
        parser.add_argument("--before", type=Path, default=None,
                            help="Another checkout whose rows run first in the same run (its code).")

    def handle(self, *args: Any, url: str | None, token: str | None, workers: int | None, traces: int,
               derive_workers: str, before: Path | None, **options: Any) -> None:
        try:
            counts = [int(n) for n in derive_workers.split(",")]
        except ValueError as exc:
            raise CommandError("--derive-workers takes numbers separated by commas.") from exc
        OtlpBench(self.stdout).run(url=url, token=token, workers=workers, traces=traces,
                                   derive_workers=counts, before=before)
