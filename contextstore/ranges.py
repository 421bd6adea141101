"""Working-context positions and ranges, checked in one place: every service that takes a range
(collapse, summarize, fork) or a stored position (import) holds it to the same rules and
refuses it in the same words."""

from typing import Any, overload

from contextstore.errors import InvalidInput

POSITION_MAX = 2**62  # far past any thread, and inside a 64-bit column with room to spare


def positive_int(raw: object, *, zero: bool = False, maximum: int = POSITION_MAX) -> int | None:
    """A whole number written as a query, form or header value writes one: ASCII digits alone
    (no sign, space or underscore), from 1 (0 with `zero`) to `maximum`; None for anything else.

    The one parser of numbers people and clients type: `str.isdigit()` accepts "²" and "١", which
    int() refuses or reads as another number, and an unbounded int() overflows the database's
    64-bit columns."""
    if not isinstance(raw, str) or not raw or len(raw) > 19 or not (raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    return value if (1 if not zero else 0) <= value <= maximum else None


def check_position(name: str, value: Any) -> int:
    """A position (or seq): an integer from 1 to POSITION_MAX; `name` is its place in the input."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= POSITION_MAX:
        raise InvalidInput(f"{name} must be an integer between 1 and {POSITION_MAX}.",
                           details={name: value})
    return value


@overload
def check_range(start_position: Any, end_position: Any) -> tuple[int, int]: ...
@overload
def check_range(start_position: Any, end_position: Any, *,
                open_ends: bool) -> tuple[int | None, int | None]: ...
def check_range(start_position: Any, end_position: Any, *,
                open_ends: bool = False) -> tuple[int | None, int | None]:
    """A working-context range: positions, both ends included, start not after end. With
    open_ends, None at either end means from the start or to the end."""
    ends = {"start_position": start_position, "end_position": end_position}
    for name, value in ends.items():
        if value is not None or not open_ends:
            check_position(name, value)
    if start_position is not None and end_position is not None and start_position > end_position:
        raise InvalidInput("start_position must not be after end_position.", details=ends)
    return start_position, end_position
