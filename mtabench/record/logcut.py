"""Cut a growing log (postlogd maillog_file or a syslog file) by byte offset, gzip the window."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path


@dataclass
class LogWindow:
    path: Path
    start: int  # size at monitor start
    inode: int | None = None  # a new inode at cut time means the file was rotated
    end: int | None = None
    rotated: bool = False  # the file shrank: the window is read from offset 0 of the new file

    @classmethod
    def open_at_end(cls, path: Path) -> LogWindow:
        if not path.exists():
            return cls(path, 0)
        st = path.stat()
        return cls(path, st.st_size, st.st_ino)

    def cut(self, out: Path) -> Path:
        """Copy bytes start..end (the size now) into out, gzipped (postlogd and syslog write whole lines)."""
        st = self.path.stat() if self.path.exists() else None
        size = st.st_size if st else 0
        start = self.start
        if size < start or (st and self.inode is not None and st.st_ino != self.inode):
            # rotated (or truncated) since monitor start: lines written to the old file after `start`
            # are in the rotated file; the new file holds everything from its offset 0.
            self.rotated, start = True, 0
            rotated_old = _rotated_sibling(self.path)
            if rotated_old is not None and rotated_old.stat().st_size >= self.start:
                self._copy(out, [(rotated_old, self.start, rotated_old.stat().st_size), (self.path, 0, size)])
                self.end = size
                return out
        self._copy(out, [(self.path, start, size)])
        self.end = size
        return out

    def describe(self) -> str:
        how = " (file rotated during the run: old file's tail + new file)" if self.rotated else ""
        return f"bytes {self.start}..{self.end} of {self.path}{how}"

    @staticmethod
    def _copy(out: Path, parts: list[tuple[Path, int, int]]) -> None:
        with gzip.open(out, "wb", compresslevel=6) as dst:
            for path, start, end in parts:
                with open(path, "rb") as src:
                    src.seek(start)
                    _copy_n(src, dst, end - start)


def _copy_n(src, dst, n: int) -> None:
    while n > 0:
        chunk = src.read(min(1 << 20, n))
        if not chunk:
            break
        dst.write(chunk)
        n -= len(chunk)


def _rotated_sibling(path: Path) -> Path | None:
    """logrotate's first generation (maillog.1), if uncompressed."""
    old = path.with_name(path.name + ".1")
    return old if old.exists() else None
