"""The shape of a session's names (its key, user id, agent and title) and of a person's user
id, as the doors that take them from outside the API's serializers check them: an import's
session (importspec), OpenTelemetry's names (services/otlp), erase_user. The API's serializers
and the admin's forms hold the same rules in their fields; services.sessions trusts them.
"""

import re
from typing import Any

from contextstore.errors import InvalidInput
from contextstore.fields import NUL_IN_NAME

KEY_MAX = 255  # a session's key, and a user id
AGENT_MAX = 200
TITLE_MAX = 500
NOT_BLANK = r"\S"  # a user id to erase holds something besides whitespace


def check_key(name: str, value: Any, *, max_length: int, required: bool = False) -> str:
    """A name-like string (a key, an id, a title): a string, present when required, within its
    length, without NUL; else InvalidInput naming it."""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string.", details={name: "must be a string"})
    if required and not value:
        raise InvalidInput(f"{name} is required.", details={name: "required"})
    if len(value) > max_length:
        raise InvalidInput(f"{name} is longer than {max_length} characters.",
                           details={name: f"at most {max_length} characters"})
    if "\x00" in value:
        raise InvalidInput(f"{name}: {NUL_IN_NAME}.", details={name: NUL_IN_NAME})
    return value


def check_session_names(*, key: Any, user_id: Any = "", agent: Any = "", title: Any = "") -> None:
    """A session's names, as services.sessions.session_ensure stores them."""
    check_key("key", key, max_length=KEY_MAX, required=True)
    check_key("user_id", user_id, max_length=KEY_MAX)
    check_key("agent", agent, max_length=AGENT_MAX)
    check_key("title", title, max_length=TITLE_MAX)


def check_user_id(user_id: Any) -> str:
    """The person an erasure is about: a user id holding more than whitespace."""
    if isinstance(user_id, str) and not re.search(NOT_BLANK, user_id):
        user_id = ""  # only whitespace names no one
    return check_key("user_id", user_id, max_length=KEY_MAX, required=True)
