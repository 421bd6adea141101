"""Several processes at once against the test database (PostgreSQL: SQLite's tests use OS threads)."""

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections

FORK = multiprocessing.get_context("fork")


@contextmanager
def forked(target: Callable[..., None], args: Sequence[tuple[Any, ...]], *,
           timeout: float = 120) -> Iterator[list[Any]]:
    """Start `target(*a)` in a forked process for each `a` in `args` (the parent's connections are
    closed first: each child opens its own); the block runs while they do, and leaving it waits
    until every process has exited 0."""
    connections.close_all()
    procs = [FORK.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    yield procs
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0, f"{target.__name__}{p.name} exited with {p.exitcode}"


def run_forked(target: Callable[..., None], args: Sequence[tuple[Any, ...]], *, timeout: float = 120) -> None:
    """`forked` with nothing to do meanwhile."""
    with forked(target, args, timeout=timeout):
        pass
