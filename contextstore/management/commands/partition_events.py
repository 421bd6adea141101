"""manage.py partition_events: the event table hash-partitioned by thread, online
(contextstore/partitions.py; docs/scaling.md, "Partitioning the event table")."""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from contextstore.partitions import abort as abort_move
from contextstore.partitions import move_events, partition_count


class Command(BaseCommand):
    help = "Rebuild contextstore_event with N hash partitions by thread (0 or 1: one table), online."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--partitions", type=int, default=None,
                            help="default: the EVENT_PARTITIONS setting")
        parser.add_argument("--batch", type=int, default=10_000, help="ids copied per transaction")
        parser.add_argument("--keep-old", action="store_true",
                            help="keep the old table as contextstore_event_old (drop it yourself)")
        parser.add_argument("--abort", action="store_true",
                            help="undo an interrupted move: drop the new table and the mirror trigger")

    def handle(self, *args: Any, partitions: int | None, batch: int, keep_old: bool, abort: bool,
               **options: Any) -> None:
        try:
            if abort:
                abort_move()
                self.stdout.write("aborted: the mirror trigger and contextstore_event_new are gone")
                return
            count = settings.EVENT_PARTITIONS if partitions is None else partitions
            if count < 0 or batch < 1:
                raise CommandError("--partitions must be 0 or more and --batch 1 or more")
            copied = move_events(count, batch=batch, keep_old=keep_old,
                                 log=self.stdout.write)
        except RuntimeError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"done: {copied} rows copied, contextstore_event has "
                          f"{partition_count()} partition(s)")
