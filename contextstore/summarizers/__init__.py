"""Summarizer backends: pure text-in/text-out functions, no ORM.

The services layer turns events into `Item`s and stores what comes back; a backend only sees
plain text, so it can be tested (and benchmarked) without a database.
"""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Item:
    """One event as a summarizer sees it."""

    seq: int
    type: str
    text: str
    role: str = ""
    name: str = ""  # step, tool or function name when the event has one
    is_error: bool = False


@dataclass
class Summary:
    text: str
    backend: str
    model: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    cost: float | None = None


class SummarizerError(Exception):
    """A backend could not produce a summary (after its own retries)."""


BACKENDS = ("extractive", "openai")
