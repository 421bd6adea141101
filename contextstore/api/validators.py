"""DRF's surrogate check on every CharField, made cheap.

DRF refuses a surrogate in any CharField value by looking at it one character at a time in
Python: an eighth of a commit's CPU with five base64 blobs. The same check (the first
surrogate refused with DRF's message and code) as one regex search, installed by the app's
ready(). The JSON parser refuses lone surrogates already (api.parsers) and a query string
cannot hold one (api.guard); this keeps DRF's check as the second line it was.
"""

import re
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.validators import ProhibitSurrogateCharactersValidator

_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_surrogates(self: ProhibitSurrogateCharactersValidator, value: Any) -> None:
    found = _SURROGATE.search(str(value))
    if found is not None:
        raise ValidationError(self.message.format(code_point=ord(found.group())), code=self.code)


def surrogate_check_by_search() -> None:
    ProhibitSurrogateCharactersValidator.__call__ = _refuse_surrogates  # type: ignore[method-assign]
