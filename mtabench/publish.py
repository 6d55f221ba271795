"""Publishing: copy a validated DuckDB file to the serving path atomically.

Readers (Superset, ad-hoc SQL) open the serving file read-only. os.replace swaps
the directory entry in one step: open readers keep the old snapshot, the next
query sees the new file, nobody sees a half-written one or a lock.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = ".publishing-"
# a temp copy without a readable pid (older releases) counts as stale after this long
STALE_AFTER_S = 3600


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_copies(folder: Path) -> list[Path]:
    """Delete `.publishing-<pid>-*.duckdb` left by a publish that was killed mid-copy."""
    removed = []
    for tmp in folder.glob(f"{PREFIX}*.duckdb"):
        pid_text = tmp.name[len(PREFIX) :].split("-", 1)[0]
        try:
            stale = not _alive(int(pid_text)) if pid_text.isdigit() else None
            if stale is None:
                stale = time.time() - tmp.stat().st_mtime > STALE_AFTER_S
            if stale:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # another publish cleaned it meanwhile
            continue
    return removed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(db: Path, serving: Path) -> Path:
    serving.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(serving.parent)
    fd, tmp = tempfile.mkstemp(prefix=f"{PREFIX}{os.getpid()}-", suffix=".duckdb", dir=serving.parent)
    os.close(fd)
    try:
        shutil.copyfile(db, tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; readers may run as another user
        # the data must be on disk before the name points at it, or a crash can serve a torn file
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, serving)
        _fsync_dir(serving.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return serving
