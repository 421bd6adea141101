"""manage.py bench_otlp_fairness: a quiet workspace's trace beside another's OTLP flood
(contextstore/bench/otlp_fairness.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.otlp_fairness import FairnessBench


class Command(BaseCommand):
    help = "Seconds until a quiet workspace's 2-call trace is readable while another floods OTLP."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", help="A running server and worker on this database; "
                                          "default: start gunicorn and a worker here.")
        parser.add_argument("--spans", type=int, default=50_000, help="Spans of the flood (50,000).")
        parser.add_argument("--derive-workers", type=int, default=1,
                            help="Processes of the worker started here (default 1).")
        parser.add_argument("--no-drain", action="store_true",
                            help="Stop once the quiet trace is readable; the flood's rest stays queued.")

    def handle(self, *args: Any, url: str | None, spans: int, derive_workers: int, no_drain: bool,
               **options: Any) -> None:
        FairnessBench(self.stdout).run(url=url, spans=spans, derive_workers=derive_workers,
                                       drain=not no_drain)
