"""manage.py bench_client: the light client's cost per call against bare urllib3 and httpx
(contextstore/bench/client.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.client import ClientBench


class Command(BaseCommand):
    help = "Time the Python client's calls (wall and CPU) against bare urllib3 and httpx, in turns."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--other", help="Another checkout whose client to compare (A/B in turns).")
        parser.add_argument("--url", help="A running server (default: start gunicorn on this database).")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--samples", type=int, default=300, help="Calls of each kind a round.")
        parser.add_argument("--rounds", type=int, default=3, help="Rounds (processes) per side.")

    def handle(self, *args: Any, other: str | None, url: str | None, token: str | None, samples: int,
               rounds: int, **options: Any) -> None:
        ClientBench(self.stdout).run(other=other, url=url, token=token, samples=samples, rounds=rounds)
