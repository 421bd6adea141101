"""manage.py bench_wal: WAL and storage per event on PostgreSQL (contextstore/bench/wal.py)."""

from django.core.management.base import BaseCommand

from contextstore.bench.wal import WalBench


class Command(BaseCommand):
    help = "WAL bytes and storage per event, single appends and batches of 100 (PostgreSQL)."

    def add_arguments(self, parser):
        parser.add_argument("--events", type=int, default=1000,
                            help="events per round of each kind (rounded to a multiple of 100)")
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--chars", type=int, default=400, help="characters per message")

    def handle(self, *args, events: int, rounds: int, chars: int, **options):
        WalBench(self.stdout).run(events=events, rounds=rounds, chars=chars)
