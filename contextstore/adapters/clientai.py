"""Deprecated: moved to ``contextstore_client.adapters.clientai`` (pip install ./clients/python)."""

import sys
import warnings

from contextstore_client.adapters import clientai as _moved
from contextstore_client.adapters.clientai import *  # noqa: F403 - its public names, for type checkers

warnings.warn(f"{__name__} is deprecated: import {_moved.__name__} (pip install ./clients/python)",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved  # the module itself, private names and all
