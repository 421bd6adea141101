from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from contextstore.bench.store import cosine, peers


def sizes(raw: str) -> list[int]:
    return [int(s) for s in raw.split(",") if s]


class Command(BaseCommand):
    help = ("The long-term store: exact cosine (and pgvector where the database has it) by namespace "
            "size; ContextStoreStore vs PostgresStore.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cosine", type=sizes, default=[], help="namespace sizes, e.g. 1000,10000")
        parser.add_argument("--dims", type=int, default=384)
        parser.add_argument("--peers", type=sizes, default=[], help="namespace sizes, e.g. 1000,10000")
        parser.add_argument("--samples", type=int, default=20)
        parser.add_argument("--url", default=None, help="a running server (default: start gunicorn)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["cosine"]:
            cosine(self.stdout, options["cosine"], options["dims"], options["samples"])
        if options["peers"]:
            peers(self.stdout, options["peers"], options["samples"], options["url"])
