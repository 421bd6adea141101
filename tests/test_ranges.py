"""The one range checker: every service that takes a working-context range refuses a bad one in
the same words, the same details."""

import pytest

from contextstore.errors import InvalidInput
from contextstore.ranges import POSITION_MAX, check_position, check_range


def test_a_range_keeps_its_ends_both_included():
    assert check_range(3, 3) == (3, 3)
    assert check_range(1, POSITION_MAX) == (1, POSITION_MAX)


@pytest.mark.parametrize(("start", "end", "details"), [
    (0, 5, {"start_position": 0}),
    (1, POSITION_MAX + 1, {"end_position": POSITION_MAX + 1}),
    (True, 5, {"start_position": True}),
    ("1", 5, {"start_position": "1"}),
    (None, 5, {"start_position": None}),
    (5, 3, {"start_position": 5, "end_position": 3}),
])
def test_a_bad_range_is_refused_naming_its_ends(start, end, details):
    with pytest.raises(InvalidInput) as info:
        check_range(start, end)
    assert info.value.details == details


def test_open_ends_may_be_none_but_are_checked_when_given():
    assert check_range(None, None, open_ends=True) == (None, None)
    assert check_range(None, 4, open_ends=True) == (None, 4)
    with pytest.raises(InvalidInput, match="start_position must not be after end_position"):
        check_range(9, 4, open_ends=True)
    with pytest.raises(InvalidInput, match="end_position must be an integer between 1 and"):
        check_range(None, -1, open_ends=True)


def test_a_position_names_its_place():
    with pytest.raises(InvalidInput) as info:
        check_position("events[2].seq", 2.5)
    assert info.value.message == f"events[2].seq must be an integer between 1 and {POSITION_MAX}."
    assert info.value.details == {"events[2].seq": 2.5}
