"""Deprecated: the client is the `contextstore-client` distribution now (clients/python).

Import from ``contextstore_client`` instead; this module re-exports it for one release.
"""

import warnings

from contextstore_client import *  # noqa: F403 - the whole public API, re-exported
from contextstore_client import __all__  # noqa: F401

warnings.warn("contextstore.client is deprecated: import from contextstore_client "
              "(pip install ./clients/python)", DeprecationWarning, stacklevel=2)
