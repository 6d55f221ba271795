"""Run the Great Expectations suites against a DuckDB file; a failure names what failed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from expectations.suites import SUITES, Check


@dataclass
class Failure:
    suite: str
    check: str
    expectation: str
    kwargs: dict
    detail: str

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"[{self.suite}] {self.check}: {self.expectation}({args}) failed: {self.detail}"


class ValidationFailed(Exception):
    def __init__(self, failures: list[Failure], docs: Path | None):
        self.failures = failures
        self.docs = docs
        lines = "\n".join(f"  - {f}" for f in failures)
        super().__init__(f"{len(failures)} expectation(s) failed:\n{lines}")


def validate(db_path: Path, gx_dir: Path, suites: list[str] | None = None) -> Path:
    """Validate; return the Data Docs index. Raises ValidationFailed naming each failure."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx  # slow import (~7 s): only when validating

    gx_dir.mkdir(parents=True, exist_ok=True)
    ctx = gx.get_context(mode="file", project_root_dir=str(gx_dir))
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # one progress bar per expectation floods the CLI's output
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    source = ctx.data_sources.add_or_update_pandas("mtabench")
    failures: list[Failure] = []
    with duckdb.connect(str(db_path), read_only=True) as con:
        for suite_name in suites or list(SUITES):
            for check in SUITES[suite_name]:
                failures += _run_check(gx, ctx, source, con, suite_name, check)
    ctx.build_data_docs()
    docs = gx_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    if failures:
        raise ValidationFailed(failures, docs)
    return docs


def _run_check(gx, ctx, source, con, suite_name: str, check: Check) -> list[Failure]:
    df = con.execute(check.sql).df()
    name = f"{suite_name}.{check.name}"
    asset = next((a for a in source.assets if a.name == name), None) or source.add_dataframe_asset(name)
    batch_def = next((b for b in asset.batch_definitions if b.name == "whole"), None) or (
        asset.add_batch_definition_whole_dataframe("whole")
    )
    suite = ctx.suites.add_or_update(gx.ExpectationSuite(name=name))
    for cls_name, kwargs in check.expectations:
        suite.add_expectation(getattr(gx.expectations, cls_name)(**kwargs))
    vd = ctx.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_def, suite=suite)
    )
    cp = ctx.checkpoints.add_or_update(
        gx.Checkpoint(
            name=name, validation_definitions=[vd], actions=[gx.checkpoint.UpdateDataDocsAction(name="docs")]
        )
    )
    result = cp.run(batch_parameters={"dataframe": df})
    failures = []
    for run_result in result.run_results.values():
        for er in run_result.results:
            if er.success:
                continue
            cfg = er.expectation_config
            res = er.result or {}
            detail = (
                f"{res.get('unexpected_count')} of {res.get('element_count', len(df))} rows unexpected, "
                f"e.g. {res.get('partial_unexpected_list', [])[:5]}"
                if "unexpected_count" in res
                else str(er.exception_info.get("exception_message") or res)
            )
            kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id",)}
            detail += _where(con, df, kwargs.get("column"), res.get("partial_unexpected_list"))
            failures.append(Failure(suite_name, check.name, cfg.type, kwargs, detail))
    return failures


def _where(con, df, column: str | None, unexpected: list | None, most: int = 5) -> str:
    """`; runs: ...; files: ...` for the rows holding the unexpected values, so a failure
    points at the archive: the rows' own files (file_id), else their runs' files, files in
    error (an unreadable run.toml) first."""
    if column is None or column not in df.columns or not unexpected:
        return ""
    try:
        values = [v for v in unexpected if v is not None]
        mask = df[column].isin(values) if values else df[column].isna()
        if len(values) < len(unexpected):
            mask |= df[column].isna()
    except TypeError:  # unhashable values (lists, dicts)
        return ""
    rows = df[mask]
    run_col = next((c for c in ("run_id", "baseline_run_id", "run_key") if c in rows.columns), None)
    runs = sorted({str(r) for r in rows[run_col].dropna()}) if run_col else []
    ids = [int(i) for i in rows["file_id"].dropna().unique()] if "file_id" in rows.columns else []
    if ids:
        files = con.execute(
            "select path from raw.files where list_contains(?, file_id) order by path", [ids]
        ).fetchall()
    else:
        files = con.execute(
            """select f.path || case when f.status = 'error' then ' (' || f.status || ': '
                      || coalesce(f.message, '') || ')' else '' end
               from raw.files f join raw.runs r using (run_key)
               where list_contains(?, r.run_id) or list_contains(?, f.run_key)
               order by f.status <> 'error', f.path""",
            [[r.split("#")[0] for r in runs], runs],
        ).fetchall()
    names = [f[0] for f in files]

    def _list(xs: list[str]) -> str:
        return ", ".join(xs[:most]) + (f" (+{len(xs) - most} more)" if len(xs) > most else "")

    out = f"; runs: {_list(runs)}" if runs else ""
    return out + (f"; files: {_list(names)}" if names else "")
