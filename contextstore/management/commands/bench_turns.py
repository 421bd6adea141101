"""manage.py bench_turns: two versions of the agent API side by side, request by request in
turns (contextstore/bench/turns.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.turns import TurnsBench


class Command(BaseCommand):
    help = "Compare two versions of the agent API: the same requests to both, in turns."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--other", help="A checkout of the other version, started here.")
        parser.add_argument("--url", help="This version, running (default: start gunicorn here).")
        parser.add_argument("--other-url", help="The other version, running.")
        parser.add_argument("--token", help="A write token valid on both (default: create one).")
        parser.add_argument("--samples", type=int, default=300, help="Requests of each kind per side.")
        parser.add_argument("--size", type=int, default=1000, help="Events in each side's thread.")

    def handle(self, *args: Any, other: str | None, url: str | None, other_url: str | None,
               token: str | None, samples: int, size: int, **options: Any) -> None:
        TurnsBench(self.stdout).run(other=other, url=url, other_url=other_url, token=token,
                                    samples=samples, size=size)
