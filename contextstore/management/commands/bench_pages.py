"""manage.py bench_pages: server time of the dashboard's thread page against history length
(contextstore/bench/pages.py)."""

from django.core.management.base import BaseCommand

from contextstore.bench.pages import PagesBench


class Command(BaseCommand):
    help = "Benchmark the thread page (full page, older page, live tail) for 1k vs 100k events."

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default="1000,100000")
        parser.add_argument("--repeat", type=int, default=30)
        parser.add_argument("--fresh", action="store_true")

    def handle(self, *args, sizes: str, repeat: int, fresh: bool, **options):
        PagesBench(self.stdout).run(sizes=sizes, repeat=repeat, fresh=fresh)
