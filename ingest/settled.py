"""When a run dropped into the inbox is whole, so a half-copied one is never ingested.

A run folder is whole once neither it nor any file in it has changed for `settle_s` seconds
(the newest ctime or mtime of the folder and its files: ctime, because a copy that keeps
the source's mtimes, `cp -p` or shutil.copytree, still moves it). A bundle is whole once it
has not changed for `settle_s` and reads to the end (gzip stream to its end marker, zip
central directory and members); one that still does not read to the end once it has not
changed for `broken_after` is broken, not being copied: it is ingested and recorded as an
error. Standard library only: the Airflow inbox watcher (mtabench/airflow/inbox_watch.py)
runs it in the triggerer, the data venv's `ingest --new` in its scan.
"""

from __future__ import annotations

import gzip
import os
import tarfile
import time
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

# a local copy (cp, rsync, shutil) writes without pausing a second; a copy that stalls longer
# than this is taken as whole, and re-ingested as changed when it moves again
DEFAULT_SETTLE_S = 3.0
BROKEN_FACTOR = 6  # a bundle unreadable and unchanged for 6 x settle_s is broken, not copying
BUNDLE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
IGNORED_NAMES = {".DS_Store", "Thumbs.db"}


def settle_from_env(env: dict[str, str] | None = None) -> float:
    env = os.environ if env is None else env
    return float(env.get("MTABENCH_INBOX_SETTLE_S") or DEFAULT_SETTLE_S)


def last_change_ns(paths: Iterable[Path]) -> int | None:
    """The newest ctime or mtime of `paths`; None if one is gone (moved away meanwhile)."""
    newest = 0
    for p in paths:
        try:
            st = p.stat()
        except FileNotFoundError:
            return None
        newest = max(newest, st.st_ctime_ns, st.st_mtime_ns)
    return newest


def quiet_for(paths: Iterable[Path], now_ns: int | None = None) -> float:
    """Seconds since any of `paths` last changed (0 if one is gone)."""
    last = last_change_ns(paths)
    if last is None:
        return 0.0
    return max(0.0, ((now_ns or time.time_ns()) - last) / 1e9)


def reads_to_end(bundle: Path) -> bool:
    """The bundle's compressed stream reads to its end (a truncated copy does not)."""
    try:
        if bundle.name.lower().endswith(".zip"):
            with zipfile.ZipFile(bundle) as z:
                return z.testzip() is None
        with gzip.open(bundle, "rb") as f:
            while f.read(1 << 20):
                pass
        with tarfile.open(bundle, "r:gz") as t:
            for _ in t:
                pass
        return True
    except (OSError, EOFError, zlib.error, tarfile.TarError, zipfile.BadZipFile):
        return False


def folder_whole(folder: Path, files: Iterable[Path], settle_s: float, now_ns: int | None = None) -> bool:
    return quiet_for([folder, *files], now_ns) >= settle_s


def bundle_whole(
    bundle: Path, settle_s: float, readable: bool | None = None, now_ns: int | None = None
) -> bool:
    """Whole: quiet for settle_s and readable to the end, or quiet so long it is broken.
    `readable`: already known (the scan extracted it), else read here."""
    quiet = quiet_for([bundle], now_ns)
    if quiet < settle_s:
        return False
    if quiet >= BROKEN_FACTOR * settle_s:
        return True
    return reads_to_end(bundle) if readable is None else readable


def whole_runs(
    inbox: Path, settle_s: float, readable: dict[tuple, bool] | None = None, now_ns: int | None = None
) -> tuple[dict[str, tuple], list[str]]:
    """(run key -> signature of each whole run, keys of runs still being copied in). A run is a
    folder directly holding files, or a bundle; `readable` caches bundles read to the end."""
    readable = {} if readable is None else readable
    whole: dict[str, tuple] = {}
    copying: list[str] = []
    for folder, dirs, names in os.walk(inbox):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(folder)
        files, bundles = [], []
        for name in sorted(names):
            p = here / name
            if name.startswith(".") or name in IGNORED_NAMES or p.is_symlink():
                continue
            (bundles if name.lower().endswith(BUNDLE_SUFFIXES) else files).append(p)
        if files:
            key = here.relative_to(inbox).as_posix()
            last = last_change_ns([here, *files])
            sizes = sum(_size(p) for p in files)
            if folder_whole(here, files, settle_s, now_ns):
                whole[key] = (last, len(files), sizes)
            else:
                copying.append(key)
        for b in bundles:
            key = b.relative_to(inbox).as_posix()
            sig = (_size(b), last_change_ns([b]))
            if (sig, key) not in readable and quiet_for([b], now_ns) >= settle_s:
                readable[(sig, key)] = reads_to_end(b)
            if bundle_whole(b, settle_s, readable.get((sig, key), False), now_ns):
                whole[key] = sig
            else:
                copying.append(key)
    return whole, copying


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:
        return -1
