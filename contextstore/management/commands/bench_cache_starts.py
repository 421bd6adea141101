"""manage.py bench_cache_starts: the share of input tokens a provider's prompt cache could serve,
over generated sessions replayed call by call, for each render start_chunk
(contextstore/bench/cache_starts.py)."""

from typing import Any

from django.core.management.base import BaseCommand

from contextstore.bench.cache_starts import measure


class Command(BaseCommand):
    help = "Replay generated sessions call by call and report the prompt-cache share per start_chunk."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--sessions", type=int, default=120, help="Sessions generated (half each shape).")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--chunks", default="0,0.1,0.25,0.5",
                            help="start_chunk values, comma-separated (0: the start slides).")

    def handle(self, *args: Any, sessions: int, seed: int, chunks: str, **options: Any) -> None:
        values = [float(c) for c in chunks.split(",")]
        results = measure(values, sessions, seed)
        self.stdout.write(f"{sessions} sessions, {next(iter(results.values())).calls} model calls each run")
        self.stdout.write("start_chunk  cached share  history fill  starts moved back")
        for chunk, r in results.items():
            self.stdout.write(f"{chunk:>11}  {r.cached_share:>12.1%}  {r.fill:>12.1%}  {r.backward:>17}")
