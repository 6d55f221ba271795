"""Postfix through its own tools: settings applied with postconf -e and restored exactly, queue counts."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

QUEUES = ("incoming", "active", "deferred", "maildrop")


class PostfixError(RuntimeError):
    pass


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PostfixError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def value(name: str) -> str:
    proc = _run("postconf", "-h", name)
    if "unknown parameter" in proc.stderr:
        raise PostfixError(f"{name}: unknown Postfix parameter")
    return proc.stdout.rstrip("\n")


def explicitly_set(name: str) -> bool:
    """Set in main.cf (postconf -n lists it), as opposed to a built-in default."""
    return bool(_run("postconf", "-n", name).stdout.strip())


def postconf_n() -> str:
    return _run("postconf", "-n").stdout


def version() -> str:
    return value("mail_version")


def reload() -> None:
    _run("postfix", "reload")


@dataclass
class Previous:
    value: str
    explicit: bool  # False: it was a default, restore by removing the line (postconf -X)


@dataclass
class Settings:
    """Applies --set values; restore() puts main.cf back so `postconf -n` is identical."""

    wanted: dict[str, str]
    previous: dict[str, Previous] = field(default_factory=dict)

    def read_previous(self) -> None:
        for name in self.wanted:
            self.previous[name] = Previous(value(name), explicitly_set(name))

    def apply(self) -> None:
        if not self.wanted:
            return
        if not self.previous:
            self.read_previous()
        for name, new in self.wanted.items():
            _run("postconf", "-e", f"{name} = {new}")
        reload()

    def restore(self) -> None:
        if not self.previous:
            return
        for name, old in self.previous.items():
            if old.explicit:
                _run("postconf", "-e", f"{name} = {old.value}")
            else:
                _run("postconf", "-X", name)
        reload()


def queue_counts(spool: Path) -> dict[str, int]:
    """Files under each queue directory (what `find $spool/q -type f | wc -l` counts)."""
    counts = {}
    for q in QUEUES:
        n = 0
        for _root, _dirs, files in os.walk(spool / q):
            n += len(files)
        counts[q] = n
    return counts
