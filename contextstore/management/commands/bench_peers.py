"""manage.py bench_peers: our adapters over HTTP against the frameworks' own PostgreSQL stores
(contextstore/bench/peers.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.peers import FRAMEWORKS, PeersBench


class Command(BaseCommand):
    help = "Compare the ADK, LangGraph and Agents SDK adapters with the frameworks' PostgreSQL stores."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--frameworks", nargs="+", default=list(FRAMEWORKS), choices=FRAMEWORKS)
        parser.add_argument("--url", help="A running server on this database (default: start one).")
        parser.add_argument("--token", help="A write token for --url (default: create one).")
        parser.add_argument("--venv-dir", help="Folder of the .venv-<framework> (default: this checkout).")
        parser.add_argument("--small", type=int, default=100, help="The small history size.")
        parser.add_argument("--large", type=int, default=2000, help="The large history size.")
        parser.add_argument("--samples", type=int, default=30, help="Writes timed at each size.")
        parser.add_argument("--reads", type=int, default=10, help="Reads of each kind timed.")

    def handle(self, *args: Any, frameworks: list[str], url: str | None, token: str | None,
               venv_dir: str | None, small: int, large: int, samples: int, reads: int,
               **options: Any) -> None:
        PeersBench(self.stdout).run(frameworks=frameworks, url=url, token=token, venv_dir=venv_dir,
                                    small=small, large=large, samples=samples, reads=reads)
