"""Shared setup for the framework adapter tests: everything offline, a live contextstore."""

import json
import os
import tempfile
from pathlib import Path

import pytest
from contextstore_client.adapters.offline import use_offline_cl100k

# Set before any framework is imported (test modules import them at collection time). One folder
# per pytest-xdist worker: each writes its files here at import.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
_config_dir = Path(tempfile.gettempdir()) / f"contextstore-adapter-tests-{_worker}"
_config_dir.mkdir(exist_ok=True)
_peteos_config = _config_dir / "peteos.json"
_peteos_config.write_text(json.dumps({}))
os.environ.setdefault("PETEOS_CONFIG", str(_peteos_config))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
use_offline_cl100k(_config_dir / "tiktoken")


@pytest.fixture
def store(live_server, token):
    """A contextstore client talking HTTP to the live test server."""
    from contextstore_client import ContextStore

    client = ContextStore(live_server.url, token[1])
    yield client
    client.close()
