"""Publishing: copy a validated DuckDB file to the serving path atomically.

Readers (Superset, ad-hoc SQL) open the serving file read-only. os.replace swaps
the directory entry in one step: open readers keep the old snapshot, the next
query sees the new file, nobody sees a half-written one or a lock.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def publish(db: Path, serving: Path) -> Path:
    serving.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".publishing-", suffix=".duckdb", dir=serving.parent)
    os.close(fd)
    try:
        shutil.copyfile(db, tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; readers may run as another user
        os.replace(tmp, serving)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return serving
