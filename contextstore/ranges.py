"""Working-context positions and ranges, checked in one place: every service that takes a range
(collapse, summarize, fork) or a stored position (import) holds it to the same rules and
refuses it in the same words."""

from dataclasses import asdict, dataclass
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


@dataclass(frozen=True)
class Exchange:
    """A tool exchange a range would split: its calls (ids as renders give them) and results,
    by working-context position (selectors/exchanges.py finds them)."""

    first_position: int
    last_position: int
    call_ids: list[str]
    call_positions: list[int]
    result_positions: list[int]


SPLITS_TOOL_EXCHANGE = "splits_tool_exchange"


def widened(start_position: int | None, end_position: int | None,
            exchanges: list[Exchange]) -> tuple[int | None, int | None]:
    """The range grown to hold every exchange it splits whole (an open end stays open)."""
    if start_position is not None:
        start_position = min([start_position] + [x.first_position for x in exchanges])
    if end_position is not None:
        end_position = max([end_position] + [x.last_position for x in exchanges])
    return start_position, end_position


def respect_exchanges(start_position: int | None, end_position: int | None,
                      exchanges: list[Exchange], *, widen: bool) -> tuple[int | None, int | None]:
    """The range to use: as given when it splits no tool exchange, else widened to the whole
    exchanges (`widen`), else refused naming them: a boundary between a call and its results
    would leave one side to every render without the other."""
    if not exchanges:
        return start_position, end_position
    wide = widened(start_position, end_position, exchanges)
    if widen:
        return wide
    shown = "; ".join(f"calls {', '.join(x.call_ids) or '(none named)'} at "
                      f"{', '.join(map(str, x.call_positions))} with results at "
                      f"{', '.join(map(str, x.result_positions)) or '(none yet)'}" for x in exchanges)
    raise InvalidInput(
        f"The range {_ends(start_position, end_position)} splits a tool call from its results "
        f"({shown}). Take the whole exchange, {_ends(*wide)}, or send widen=true.",
        code=SPLITS_TOOL_EXCHANGE,
        details={"start_position": start_position, "end_position": end_position,
                 "exchanges": [asdict(x) for x in exchanges],
                 "widened": {"start_position": wide[0], "end_position": wide[1]}})


def _ends(start: int | None, end: int | None) -> str:
    return f"{'start' if start is None else start}-{'end' if end is None else end}"
