"""mkdocs hook: bench/RESULTS.md, the one home of the benchmarks' current figures, as the
site's "Benchmark results" page (results.md), read at build time rather than copied."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "RESULTS.md"


def on_files(files, config):
    files.append(File.generated(config, "results.md", content=RESULTS.read_text()))
    return files
