"""The shape of a retention rule, as every door that sets one takes it (the API's WholeDays,
the admin's forms): None, or whole days from 1 to DAYS_MAX. services.retention trusts it."""

from typing import Any

from contextstore.errors import InvalidInput

DAYS_MAX = 36500  # a rule's largest number of days (a hundred years)


def check_days(name: str, value: Any) -> int | None:
    """A rule's value: None, or whole days from 1 to DAYS_MAX; InvalidInput otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= DAYS_MAX:
        raise InvalidInput(f"{name} is a number of days from 1 to {DAYS_MAX}, or empty.",
                           details={name: value})
    return value
