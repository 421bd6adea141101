"""manage.py bench_core: the hot paths against history length (contextstore/bench/core.py)."""

from django.core.management.base import BaseCommand

from contextstore.bench.core import CoreBench
from contextstore.partitions import bench_schema


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
        parser.add_argument("--partitions", type=int, default=None,
                            help="move the event table to N hash partitions first (PostgreSQL; "
                                 "0 or 1: one table; default: as it is)")

    def handle(self, *args, sizes: str, fresh: bool, repeat: int, revisions: int,
               state_sizes: str, partitions: int | None = None, **options):
        bench_schema(partitions, self.stdout.write)
        CoreBench(self.stdout).run(sizes=sizes, fresh=fresh, repeat=repeat, revisions=revisions,
                                  state_sizes=state_sizes)
