"""manage.py bench_trends: the analytics' server time (the trends page and query, the cache
totals) over 30 days of 13.7k model calls (contextstore/bench/trends.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.trends import TrendsBench


class Command(BaseCommand):
    help = "Benchmark the trends page and the analytics queries over 30 days of model calls."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--calls", type=int, default=13_700)
        parser.add_argument("--repeat", type=int, default=5)
        parser.add_argument("--fresh", action="store_true")
        parser.add_argument("--force-jit", action="store_true",
                            help="JIT thresholds at 0, as the planner chooses on a large workspace.")

    def handle(self, *args: Any, calls: int, repeat: int, fresh: bool, force_jit: bool,
               **options: Any) -> None:
        TrendsBench(self.stdout).run(calls=calls, repeat=repeat, fresh=fresh, force_jit=force_jit)
