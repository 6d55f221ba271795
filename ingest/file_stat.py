"""When a file's stat can stand for its content: the mtime recorded with its hash, and whether
a recorded hash still holds without reading the file (as git's index decides)."""

from __future__ import annotations

import os
import time

# A file modified this close to when its stat was taken may be rewritten again within the
# same timestamp tick (git's "racily clean" entries): its mtime is not recorded, so the next
# ingest hashes it once more.
RACY_NS = 2_000_000_000


def recorded_mtime_ns(st: os.stat_result) -> int | None:
    """The mtime_ns to record with a file's hash: None (unknown: hash next time) if racy."""
    return None if time.time_ns() - st.st_mtime_ns < RACY_NS else st.st_mtime_ns


def known_sha(prev_size: int | None, prev_mtime_ns: int | None, st: os.stat_result) -> bool:
    """A file's recorded hash still holds without reading it: same size and mtime_ns as when it
    was hashed. NULL mtime_ns (a landing from before the column, or a racy stat) is unknown: hash."""
    return prev_mtime_ns is not None and prev_size == st.st_size and prev_mtime_ns == st.st_mtime_ns
