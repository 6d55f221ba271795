"""Terse terminal, full logs in files: one line per stage on stdout, the details in data/logs/."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def warnings_and_logging_to(path: Path) -> Iterator[Path]:
    """Send Python warnings (pandas/PySpark FutureWarnings) and library logging (GX) to `path`
    (a new log)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    warn_log = logging.getLogger("py.warnings")
    old_level, old_propagate = root.level, warn_log.propagate
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    warn_log.addHandler(handler)
    warn_log.propagate = False
    logging.captureWarnings(True)
    try:
        yield path
    finally:
        logging.captureWarnings(False)
        warn_log.removeHandler(handler)
        warn_log.propagate = old_propagate
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()


@contextmanager
def stage_log(path: Path, echo: Callable[[str], bool], label: str) -> Iterator[Callable[[str], None]]:
    """A progress callback that writes every line to `path` and shows only the lines `echo`
    accepts; on a terminal a rich progress bar counts the lines meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as log:
        bar = task = None
        if sys.stdout.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

            bar = Progress(
                SpinnerColumn(), TextColumn(label), BarColumn(), MofNCompleteColumn(), transient=True
            )
            bar.start()
            task = bar.add_task(label, total=None)

        def progress(line: str) -> None:
            log.write(line + "\n")
            log.flush()
            if bar is not None:
                bar.advance(task)
            if not echo(line):
                return
            if bar is not None:
                bar.console.print(line, markup=False, highlight=False)
            else:
                print(line, flush=True)

        try:
            yield progress
        finally:
            if bar is not None:
                bar.stop()
