"""Run the Great Expectations suites against a DuckDB file; a failure names what failed."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from expectations.suites import SUITES, Check
from ingest.resources import apply_limits
from mtabench import validate_scope


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


def validate(
    db_path: Path, gx_dir: Path, suites: list[str] | None = None, changed_only: bool = False
) -> Path:
    """Validate; return the Data Docs index. Raises ValidationFailed naming each failure.

    changed_only: per-run checks read only the runs not yet validated at their current state
    (mtabench/validate_scope.py); a passing suite is recorded as validated for every run."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx  # slow import (~7 s): only when validating

    gx_dir.mkdir(parents=True, exist_ok=True)
    ctx = gx.get_context(mode="file", project_root_dir=str(gx_dir))
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # one progress bar per expectation floods the CLI's output
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    source = ctx.data_sources.add_or_update_pandas("mtabench")
    # Data Docs show the last validate: older results would be rendered again every time
    # (the site builder renders every stored result; it grew by ~50 pages per validate)
    uncommitted = gx_dir / "gx" / "uncommitted"
    for old in (uncommitted / "validations", uncommitted / "data_docs" / "local_site" / "validations"):
        shutil.rmtree(old, ignore_errors=True)
    failures: list[Failure] = []
    passed: list[str] = []
    with duckdb.connect(str(db_path), read_only=True) as con:
        apply_limits(con)
        for suite_name in suites or list(SUITES):
            scope = validate_scope.pending(con, suite_name, SUITES[suite_name]) if changed_only else None
            before = len(failures)
            for check in SUITES[suite_name]:
                failures += _run_check(gx, ctx, source, con, suite_name, check, scope)
            if len(failures) == before:
                passed.append(suite_name)
    if changed_only and passed:
        with duckdb.connect(str(db_path)) as con:
            for suite_name in passed:
                validate_scope.record(con, suite_name, SUITES[suite_name])
    ctx.build_data_docs()
    docs = gx_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    if failures:
        raise ValidationFailed(failures, docs)
    return docs


# Rows per DataFrame handed to GX: a check streams its query in chunks, so validate's memory
# stays flat however big the marts grow (a whole-mart DataFrame needed 11 GB at 10 M messages).
CHUNK_VECTORS = 512  # x 2048 rows per DuckDB vector = 1,048,576 rows (~0.3 s of GX per chunk)
# Uniqueness cannot be judged chunk by chunk: GX gets the rows whose key occurs more than once
# (found by DuckDB), so an empty frame passes and any duplicate fails with its rows.
UNIQUENESS = ("ExpectColumnValuesToBeUnique", "ExpectCompoundColumnsToBeUnique")
MOST_DUPLICATES = 10_000
# a per-file aggregate check's batches (_file_batches): lines and files per query
BATCH_LINES = 16_000_000
BATCH_FILES = 2_000
CONTEXT = ("run_id", "baseline_run_id", "run_key", "file_id")  # what `_where` names runs and files by


@dataclass
class _Outcome:
    """One expectation's result, summed over the chunks it was run on."""

    type: str
    kwargs: dict
    element_count: int = 0
    unexpected_count: int = 0
    partial: list = field(default_factory=list)
    where: str = ""
    error: str | None = None  # GX raised instead of counting
    failed: bool = False


def _referenced(kwargs: dict) -> list[str]:
    cols = [kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs]
    return cols + list(kwargs.get("column_list", []))


def _quoted(cols: list[str]) -> str:
    return ", ".join('"' + c.replace('"', '""') + '"' for c in dict.fromkeys(cols))


def _chunks(con, sql: str) -> Iterator:
    """DataFrames of at most CHUNK_VECTORS * 2048 rows (at least one, maybe empty), converted
    as `.df()` converts, from a cursor of their own so `_where` can query meanwhile."""
    cur = con.cursor()
    try:
        cur.execute(sql)
        first = True
        while True:
            df = _vectorizable(cur.fetch_df_chunk(CHUNK_VECTORS))
            if len(df) == 0 and not first:
                return
            yield df
            first = False
            if len(df) == 0:
                return
    finally:
        cur.close()


EXACT_IN_FLOAT = 2**53


def _vectorizable(df):
    """Columns in the dtypes GX's pandas metrics compare vectorized. For any other dtype
    (int32, nullable Int64, datetime64[us] as DuckDB and pandas 3 hand them over)
    ExpectColumnValuesToBeBetween calls a Python function per value: 9 s of a 60 s validate
    at 236x the samples. The values do not change: NA becomes NaN (both are null to GX) only
    where a float holds every value exactly, timestamps go to nanoseconds only within its range."""
    import numpy as np
    import pandas as pd

    for name in df.columns:
        col = df[name]
        dtype = col.dtype
        if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_integer_dtype(dtype):
            if not col.hasnans:
                df[name] = col.astype("int64")
            elif col.isna().all() or col.abs().max() < EXACT_IN_FLOAT:
                df[name] = col.astype("float64")
                df.attrs.setdefault("ints_as_floats", set()).add(name)  # reported as ints
        elif isinstance(dtype, np.dtype) and dtype.kind in "iu" and dtype != np.int64:
            if dtype.kind == "i" or (len(col) == 0 or col.max() < 2**63):
                df[name] = col.astype("int64")
        elif isinstance(dtype, np.dtype) and dtype.kind == "M" and dtype != np.dtype("datetime64[ns]"):
            with contextlib.suppress(pd.errors.OutOfBoundsDatetime, OverflowError):
                df[name] = col.astype("datetime64[ns]")
    return df


def _file_batches(con, check: Check, scope: validate_scope.Scope | None, cols: str) -> Iterator:
    """A per-file check whose query aggregates inside (`{files}`: the line accounting's
    distinct line numbers over every landing table), run on batches of files of at most
    BATCH_LINES lines: over every file at once its hash tables outgrew the 1GB memory limit
    at 236x the samples (82 M maillog lines). Rows are per file, so batches change nothing
    but memory."""
    rows = con.execute("select file_id, coalesce(lines_total, 0) from raw.files order by file_id").fetchall()
    if scope:
        pending = set(scope.file_ids)
        rows = [r for r in rows if r[0] in pending]
    batches: list[list[int]] = [[]]
    lines = 0
    for file_id, total in rows:
        if batches[-1] and (lines + total > BATCH_LINES or len(batches[-1]) >= BATCH_FILES):
            batches.append([])
            lines = 0
        batches[-1].append(file_id)
        lines += total
    for ids in batches:  # one (maybe empty) batch at least: GX sees every check run
        predicate = validate_scope.Scope([], ids).predicate("file_id")
        yield from _chunks(con, f"select {cols} from ({check.scoped(predicate)})")


def _run_check(
    gx, ctx, source, con, suite_name: str, check: Check, scope: validate_scope.Scope | None = None
) -> list[Failure]:
    # the pending runs' rows only, for a per-run check (validate_scope); else every row
    scoped = check.scoped(scope.predicate(check.per_run)) if scope and check.per_run else check.scoped()
    names = [d[0] for d in con.execute(f"select * from ({scoped}) limit 0").description]
    context = [c for c in CONTEXT if c in names]
    rowwise = [e for e in check.expectations if e[0] not in UNIQUENESS]
    unique = [e for e in check.expectations if e[0] in UNIQUENESS]
    outcomes: list[_Outcome] = []
    if rowwise:
        cols = _quoted(context + [c for _, kw in rowwise for c in _referenced(kw)])
        if check.per_run == "file_id" and "{files}" in check.sql:
            frames = _file_batches(con, check, scope, cols)
        else:
            frames = _chunks(con, f"select {cols} from ({scoped})")
        outcomes += _validate(gx, ctx, source, con, f"{suite_name}.{check.name}", rowwise, frames)
    if unique:
        keysets = [_referenced(kw) for _, kw in unique]
        # a duplicate's rows share every key column: if the keys hold the scope's column, all
        # of a duplicate's rows are in the pending runs or none are; else read every row
        sql = scoped if all(check.per_run in keys for keys in keysets) else check.scoped()
        total = con.execute(f"select count(*) from ({sql})").fetchone()[0]
        cols = _quoted(context + [c for keys in keysets for c in keys])
        dups = [
            f"""exists (select 1 from d{i} where {
                " and ".join(f't."{k}" is not distinct from d{i}."{k}"' for k in keys)
            })"""
            for i, keys in enumerate(keysets)
        ]
        ctes = "".join(
            f", d{i} as (select {_quoted(keys)} from t group by all having count(*) > 1)"
            for i, keys in enumerate(keysets)
        )
        sql = (
            f"with t as (select {cols} from ({sql})){ctes} "
            f"select * from t where {' or '.join(dups)} "
            f"order by {_quoted(keysets[0])} limit {MOST_DUPLICATES}"
        )
        frames = _chunks(con, sql)
        for o in _validate(gx, ctx, source, con, f"{suite_name}.{check.name}.unique", unique, frames):
            o.element_count = total  # GX saw only the duplicated rows
            outcomes.append(o)
    return [
        Failure(suite_name, check.name, o.type, o.kwargs, o.error or _detail(o)) for o in outcomes if o.failed
    ]


def _plain(value):
    """numpy scalars as Python values, so messages read `[-7]`, not `[np.int64(-7)]`."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.item() if hasattr(value, "item") and not isinstance(value, str | bytes) else value


def _detail(o: _Outcome) -> str:
    return f"{o.unexpected_count} of {o.element_count} rows unexpected, e.g. {o.partial[:5]}" + o.where


def _validate(gx, ctx, source, con, name: str, expectations: list, frames: Iterator) -> list[_Outcome]:
    asset = next((a for a in source.assets if a.name == name), None) or source.add_dataframe_asset(name)
    batch_def = next((b for b in asset.batch_definitions if b.name == "whole"), None) or (
        asset.add_batch_definition_whole_dataframe("whole")
    )
    # the expectations go in with the suite: suite.add_expectation saves the suite (and
    # re-reads the context's YAML) once per expectation, ~4 s of validate's CPU
    suite = ctx.suites.add_or_update(
        gx.ExpectationSuite(
            name=name, expectations=[getattr(gx.expectations, c)(**kw) for c, kw in expectations]
        )
    )
    vd = ctx.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=name, data=batch_def, suite=suite)
    )
    # no UpdateDataDocsAction: it re-rendered the whole site after every chunk (0.6 s each,
    # about half of validate at 8x); validate() builds the docs once from the stored results
    cp = ctx.checkpoints.add_or_update(gx.Checkpoint(name=name, validation_definitions=[vd], actions=[]))
    outcomes: dict[str, _Outcome] = {}
    for df in frames:
        result = cp.run(batch_parameters={"dataframe": df})
        for run_result in result.run_results.values():
            for er in run_result.results:
                cfg = er.expectation_config
                kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id",)}
                o = outcomes.setdefault(repr((cfg.type, sorted(kwargs.items()))), _Outcome(cfg.type, kwargs))
                res = er.result or {}
                o.element_count += int(res.get("element_count") or len(df))
                o.unexpected_count += int(res.get("unexpected_count") or 0)
                if er.success:
                    continue
                o.failed = True
                if "unexpected_count" not in res:
                    o.error = o.error or str(er.exception_info.get("exception_message") or res)
                    continue
                unexpected = [_plain(u) for u in res.get("partial_unexpected_list") or []]
                if kwargs.get("column") in df.attrs.get("ints_as_floats", ()):
                    unexpected = [
                        int(u) if isinstance(u, float) and u.is_integer() else u for u in unexpected
                    ]
                if len(o.partial) < 5:
                    o.partial += unexpected[: 5 - len(o.partial)]
                if not o.where:
                    o.where = _where(con, df, kwargs.get("column"), unexpected)
    return list(outcomes.values())


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
