"""manage.py bench_peteos_render: a peteos thread's render at two history lengths
(contextstore/bench/peteos_render.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.peteos_render import PeteosRenderBench


class Command(BaseCommand):
    help = "Time a peteos thread's render at several history lengths (imports one thread per size)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--sizes", default="1000,50000", help="Messages per thread, comma-separated.")
        parser.add_argument("--samples", type=int, default=5, help="Renders timed per size and kind.")
        parser.add_argument("--max-tokens", type=int, default=8000, help="The render's budget.")

    def handle(self, *args: Any, sizes: str, samples: int, max_tokens: int, **options: Any) -> None:
        PeteosRenderBench(self.stdout).run(sizes=[int(s) for s in sizes.split(",")], samples=samples,
                                           max_tokens=max_tokens)
