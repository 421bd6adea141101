"""Security findings, each reproduced over HTTP as the review found it. The API's and the
dashboard's fixtures (tokens of two workspaces, members with a role) are shared with their own
folders; these tests sit in the fast tier like theirs."""

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
