"""manage.py bench_core: the hot paths against history length (contextstore/bench/core.py)."""

from django.core.management.base import BaseCommand

from contextstore.bench.core import CoreBench


class Command(BaseCommand):
    help = "Benchmark append, render and search against history length; prints ratios."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="1000,10000,100000")
        parser.add_argument("--fresh", action="store_true")
        parser.add_argument("--repeat", type=int, default=30)
        parser.add_argument("--revisions", type=int, default=100,
                            help="one-key merge patches per state size (0 skips that part)")
        parser.add_argument("--state-sizes", default="1000,1000000",
                            help="state sizes in bytes for the revision figures")

    def handle(self, *args, sizes: str, fresh: bool, repeat: int, revisions: int,
               state_sizes: str, **options):
        CoreBench(self.stdout).run(sizes=sizes, fresh=fresh, repeat=repeat, revisions=revisions,
                                  state_sizes=state_sizes)
