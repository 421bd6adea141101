"""manage.py bench_summarize: a worker bringing long threads under their token budget
(contextstore/bench/summarize.py)."""

from django.core.management.base import BaseCommand, CommandParser

from contextstore.bench.summarize import SummarizeBench


class Command(BaseCommand):
    help = "Benchmark the extractive summarizer bringing 10k and 100k-event threads under budget."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000])
        parser.add_argument("--budget", type=int, default=8000)
        parser.add_argument("--preserve-recent", type=int, default=10)
        parser.add_argument("--keep", action="store_true", help="keep the scratch workspaces")

    def handle(self, *args: object, events: list[int], budget: int, preserve_recent: int,
               keep: bool, **options: object) -> None:
        SummarizeBench(self.stdout).run(events=events, budget=budget, preserve_recent=preserve_recent,
                                       keep=keep)
