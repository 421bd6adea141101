"""Security findings, each reproduced over HTTP as the review found it. The API's and the
dashboard's fixtures (tokens of two workspaces, members with a role) are shared with their own
folders; these tests sit in the fast tier like theirs.

Finding 2 (secrets stored verbatim on the newer write paths) is here for the dashboard
(test_redaction_pages.py); its API and OTLP paths are in tests/api/test_redaction.py and
tests/otlp/test_redaction.py beside the older paths, and tests/test_redaction_columns.py holds
every column of every model to the storage boundary."""

from tests.api.conftest import (  # noqa: F401  (fixtures)
    api_client,
    client_for,
    fresh_throttle_counters,
    other_client,
    thread_url,
)
from tests.otlp.conftest import otlp  # noqa: F401  (fixture)
from tests.views.conftest import (  # noqa: F401  (fixtures)
    editor,
    editor_client,
    viewer,
    viewer_client,
)
