"""Python client for the contextstore agent API (v1).

Needs httpx and tenacity only; it never imports Django or anything of the server, so agents
can use it anywhere::

    from contextstore_client import ContextStore

    with ContextStore("https://contextstore.example", token="cs_...") as cs:
        thread = cs.thread("conversation-42", user_id="ann", agent="helper")
        thread.append([{"type": "Message", "role": "user", "content": "Hi"}])
        prompt = thread.context(max_tokens=8000).messages
        state = thread.state()
        thread.patch_state({"plan": ["research"]}, if_match=state.revision)

`AsyncContextStore` is the asyncio twin; `SyncTracker` keeps a framework adapter's saves small.
"""

from contextstore_client._version import __version__
from contextstore_client.async_client import AsyncContextStore, AsyncThreadHandle
from contextstore_client.client import ContextStore, ThreadHandle, local_now
from contextstore_client.errors import (
    Conflict,
    ConnectionFailed,
    ContextStoreError,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    ServerError,
    StaleRevision,
    Throttled,
    Unauthorized,
)
from contextstore_client.results import (
    AppendedEvent,
    Block,
    Clear,
    Collapse,
    Context,
    Event,
    Job,
    Memory,
    ProviderState,
    Run,
    Session,
    State,
    StateRevision,
    SyncItem,
    SyncLoad,
    Thread,
    Window,
)
from contextstore_client.sync import AsyncSyncTracker, SyncTracker, item_digest

__all__ = [
    "AppendedEvent", "AsyncContextStore", "AsyncSyncTracker", "AsyncThreadHandle", "Block", "Clear",
    "Collapse", "Conflict",
    "ConnectionFailed", "Context", "ContextStore", "ContextStoreError", "Event", "Forbidden",
    "InvalidInput", "Job", "Memory", "NotFound", "PayloadTooLarge", "ProviderState", "Run",
    "ServerError", "Session", "StaleRevision", "State", "StateRevision", "SyncItem", "SyncLoad",
    "SyncTracker", "Thread", "ThreadHandle", "Throttled", "Unauthorized", "Window", "__version__",
    "item_digest", "local_now",
]
