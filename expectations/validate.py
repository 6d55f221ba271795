"""Run the Great Expectations suites against a DuckDB file; a failure names what failed."""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from expectations import validate_scope, validate_sql
from expectations.suites import SUITES, Check
from ingest.resources import apply_limits

_log = logging.getLogger("mtabench.validate")  # the log channel name, not a module path


@dataclass
class Failure:
    suite: str
    check: str
    expectation: str
    kwargs: dict
    detail: str
    per_run: bool = False  # the check judges each run's rows on their own
    runs: list[str] = field(default_factory=list)  # folder run ids of the failing rows seen

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
    db_path: Path,
    gx_dir: Path,
    suites: list[str] | None = None,
    changed_only: bool = False,
    record: bool | None = None,
    held: set[str] | None = None,
) -> Path | None:
    """Validate; return the Data Docs index, or None when no check had a failing row for
    Great Expectations to judge. Raises ValidationFailed naming each failure.

    changed_only: per-run checks read only the runs not yet validated at their current state
    (expectations/validate_scope.py).
    record (default: changed_only): a passing suite is recorded as validated for every run at
    its current state. A suite that read every row and passed is that verdict too: unrecorded,
    the validate after `--all-runs` read every row again (9 of the 39 s of adding one run to
    236x the samples after a full rebuild).
    held: folder run ids held back (mtabench/pipeline/hold_back.py): per-run checks skip their rows,
    and nothing is recorded as validated."""
    if record is None:
        record = changed_only
    if held:
        record = False
    site = gx_dir / "gx" / "uncommitted" / "data_docs" / "local_site"
    # Data Docs show the last validate: the site is written anew from this validate's results
    shutil.rmtree(site, ignore_errors=True)
    gx = _Gx(site)
    failures: list[Failure] = []
    passed: list[str] = []
    with duckdb.connect(str(db_path), read_only=True) as con:
        apply_limits(con)
        for suite_name in suites or list(SUITES):
            scope = validate_scope.pending(con, suite_name, SUITES[suite_name]) if changed_only else None
            if held:
                scope = validate_scope.without(con, scope, held)
            before = len(failures)
            for check in SUITES[suite_name]:
                failures += _run_check(gx, con, suite_name, check, scope)
            if len(failures) == before:
                passed.append(suite_name)
    if record and passed:
        with duckdb.connect(str(db_path)) as con:
            for suite_name in passed:
                validate_scope.record(con, suite_name, SUITES[suite_name])
    docs = gx.build_docs()
    if failures:
        raise ValidationFailed(failures, docs)
    return docs


class _Gx:
    """Great Expectations, started when a check first has failing rows for it to judge.

    DuckDB counts every expectation's unexpected rows (validate_sql); GX judges those rows.
    A check with none would hand GX an empty frame, on which every expectation of the suites
    (row-wise or uniqueness) passes whatever the data: 0.2 s per check and the ~7 s import,
    for a verdict known in advance. So GX runs only where DuckDB found failing rows, and the
    Data Docs show those checks."""

    def __init__(self, site: Path):
        self.site = site
        self.ctx = None
        self.source = None
        self.gx = None

    def start(self):
        if self.ctx is None:
            os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
            import great_expectations as gx  # slow import (~7 s): only when judging rows

            self.gx = gx
            self.ctx = _context(gx, self.site)
            self.source = self.ctx.data_sources.add_pandas("mtabench")
        return self.gx, self.ctx, self.source

    def build_docs(self) -> Path | None:
        if self.ctx is None:
            return None
        self.ctx.build_data_docs()
        return self.site / "index.html"


def _context(gx, site: Path):
    """An in-memory GX context whose Data Docs site is written to `site`. Suites, checkpoints
    and results live for one validate only: a file context re-read and re-wrote its project
    YAML for every check (about a third of validate's time with nothing pending)."""
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites={
            "local_site": {
                "class_name": "SiteBuilder",
                "show_how_to_buttons": False,
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(site)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            }
        },
        # one progress bar per expectation floods the CLI's output
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(project_config=config, mode="ephemeral")


# Uniqueness is judged by DuckDB too: GX gets the rows whose key occurs more than once, so an
# empty frame passes and any duplicate fails with its rows.
UNIQUENESS = ("ExpectColumnValuesToBeUnique", "ExpectCompoundColumnsToBeUnique")
MOST_DUPLICATES = 10_000
# failing rows handed to GX per expectation: its verdict, examples and Data Docs; the counts
# are DuckDB's, over every row
MOST_UNEXPECTED = 100
# a per-file aggregate check's batches (_file_parts): lines and files per query
BATCH_LINES = 16_000_000
BATCH_FILES = 2_000
CONTEXT = ("run_id", "baseline_run_id", "run_key", "file_id")  # what `_where` names runs and files by


@dataclass
class _Outcome:
    """One expectation's result: DuckDB's counts over every row, GX's verdict on the failing rows."""

    type: str
    kwargs: dict
    element_count: int = 0
    unexpected_count: int = 0
    partial: list = field(default_factory=list)
    where: str = ""
    runs: list[str] = field(default_factory=list)
    error: str | None = None  # GX raised instead of counting
    failed: bool = False


def _outcomes(expectations: list, element_count: int = 0) -> list[_Outcome]:
    """One passing outcome per expectation, in the order given (GX's verdict may follow)."""
    return [_Outcome(validate_sql.snake(c), dict(kw), element_count=element_count) for c, kw in expectations]


def _referenced(kwargs: dict) -> list[str]:
    cols = [kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs]
    return cols + list(kwargs.get("column_list", []))


def _quoted(cols: list[str]) -> str:
    return ", ".join(validate_sql.quoted(c) for c in dict.fromkeys(cols))


def _file_parts(con, check: Check, scope: validate_scope.Scope | None) -> list[str]:
    """A per-file check whose query aggregates inside (`{files}`: the line accounting's
    distinct line numbers over every landing table) as queries over batches of files of at
    most BATCH_LINES lines: over every file at once its hash tables outgrew the 1GB memory
    limit at 236x the samples (82 M maillog lines). Rows are per file, so batches change
    nothing but memory."""
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
    return [check.scoped(validate_scope.Scope([], ids).predicate("file_id")) for ids in batches]


def _rowwise(gx: _Gx, con, name: str, expectations: list, parts: list[str], context: list[str]):
    """Row-wise expectations: DuckDB counts each one's unexpected rows over every part (one
    aggregate per part), GX judges the failing rows (at most MOST_UNEXPECTED each). A
    failure either side fails: a count GX does not confirm means the SQL form and GX disagree."""
    cols = _quoted(context + [c for _, kw in expectations for c in _referenced(kw)])
    types = {d[0]: str(d[1]) for d in con.execute(f"select {cols} from ({parts[0]}) limit 0").description}
    preds = [validate_sql.unexpected(t, kw, types) for t, kw in expectations]
    total, counts = 0, [0] * len(preds)
    failing: list = []
    for sql in parts:
        row = con.execute(
            f"select count(*), {', '.join(f'count(*) filter (where {p})' for p in preds)} from ({sql})"
        ).fetchone()
        total += row[0]
        for i, n in enumerate(row[1:]):
            if n and counts[i] < MOST_UNEXPECTED:
                failing.append(
                    con.execute(f"select {cols} from ({sql}) where {preds[i]} limit {MOST_UNEXPECTED}").df()
                )
            counts[i] += n
    if not any(counts):  # no failing row: nothing for GX to judge (_Gx)
        return _outcomes(expectations, total)
    frame = _frame(con, cols, parts[0], failing)
    outcomes = _validate(gx, con, name, expectations, frame)
    for o, n in zip(outcomes, counts, strict=True):
        o.element_count = total
        if n and not o.failed:
            o.failed = True
            o.error = (
                f"{n} of {total} rows unexpected in DuckDB that Great Expectations passed "
                f"(expectations/validate_sql.py disagrees with GX on this expectation)"
            )
        o.unexpected_count = n or o.unexpected_count
    return outcomes


def _frame(con, cols: str, sql: str, frames: list):
    """The failing rows as one DataFrame (the columns' dtypes as DuckDB hands them over, also
    when no row fails)."""
    import pandas as pd

    if not frames:
        return con.execute(f"select {cols} from ({sql}) limit 0").df()
    rows = pd.concat(frames, ignore_index=True)
    try:  # a row failing two expectations was fetched for each
        return rows.drop_duplicates(ignore_index=True)
    except TypeError:  # unhashable values (lists, structs): GX sees such a row twice
        return rows


def _run_check(
    gx: _Gx, con, suite_name: str, check: Check, scope: validate_scope.Scope | None = None
) -> list[Failure]:
    # the pending runs' rows only, for a per-run check (validate_scope); else every row
    scoped = check.scoped(scope.predicate(check.per_run)) if scope and check.per_run else check.scoped()
    names = [d[0] for d in con.execute(f"select * from ({scoped}) limit 0").description]
    context = [c for c in CONTEXT if c in names]
    rowwise = [e for e in check.expectations if e[0] not in UNIQUENESS]
    unique = [e for e in check.expectations if e[0] in UNIQUENESS]
    outcomes: list[_Outcome] = []
    if rowwise:
        batched = check.per_run == "file_id" and "{files}" in check.sql
        parts = _file_parts(con, check, scope) if batched else [scoped]
        outcomes += _rowwise(gx, con, f"{suite_name}.{check.name}", rowwise, parts, context)
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
        dup_rows = con.execute(sql).df()
        if dup_rows.empty:  # no duplicate: nothing for GX to judge (_Gx)
            outcomes += _outcomes(unique, total)
        else:
            for o in _validate(gx, con, f"{suite_name}.{check.name}.unique", unique, dup_rows):
                o.element_count = total  # GX saw only the duplicated rows
                outcomes.append(o)
    # validate.log: what each check read and found (the terminal gets one line)
    _log.info(
        "%s.%s: %d expectation(s), %d row(s) read%s, %d unexpected, %d failed",
        suite_name,
        check.name,
        len(outcomes),
        max((o.element_count for o in outcomes), default=0),
        " (pending runs)" if scope and check.per_run else "",
        sum(o.unexpected_count for o in outcomes),
        sum(o.failed for o in outcomes),
    )
    return [
        Failure(
            suite_name, check.name, o.type, o.kwargs, o.error or _detail(o), check.per_run is not None, o.runs
        )
        for o in outcomes
        if o.failed
    ]


def _plain(value):
    """numpy scalars as Python values, so messages read `[-7]`, not `[np.int64(-7)]`."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.item() if hasattr(value, "item") and not isinstance(value, str | bytes) else value


def _detail(o: _Outcome) -> str:
    return f"{o.unexpected_count} of {o.element_count} rows unexpected, e.g. {o.partial[:5]}" + o.where


def _validate(gx_: _Gx, con, name: str, expectations: list, df) -> list[_Outcome]:
    """GX's verdict on `df`, one outcome per expectation in the order given."""
    gx, ctx, source = gx_.start()
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
    # no UpdateDataDocsAction: it re-renders the whole site on every run (0.6 s each);
    # validate() builds the docs once from the stored results
    cp = ctx.checkpoints.add_or_update(gx.Checkpoint(name=name, validation_definitions=[vd], actions=[]))
    outcomes = _outcomes(expectations)
    result = cp.run(batch_parameters={"dataframe": df})
    for run_result in result.run_results.values():
        for er in run_result.results:
            cfg = er.expectation_config
            o = next(
                o
                for o in outcomes
                if o.type == cfg.type and all(cfg.kwargs.get(k) == v for k, v in o.kwargs.items())
            )
            res = er.result or {}
            o.element_count = int(res.get("element_count") or len(df))
            o.unexpected_count = int(res.get("unexpected_count") or 0)
            if er.success:
                continue
            o.failed = True
            if "unexpected_count" not in res:
                o.error = str(er.exception_info.get("exception_message") or res)
                continue
            unexpected = [_plain(u) for u in res.get("partial_unexpected_list") or []]
            o.partial = unexpected[:5]
            o.where, o.runs = _where(con, df, o.kwargs.get("column"), unexpected)
    return outcomes


def _where(con, df, column: str | None, unexpected: list | None, most: int = 5) -> tuple[str, list[str]]:
    """`; runs: ...; files: ...` for the rows holding the unexpected values, so a failure
    points at the archive: the rows' own files (file_id), else their runs' files, files in
    error (an unreadable run.toml) first; and the folder run ids of those rows."""
    if column is None or column not in df.columns or not unexpected:
        return "", []
    try:
        values = [v for v in unexpected if v is not None]
        mask = df[column].isin(values) if values else df[column].isna()
        if len(values) < len(unexpected):
            mask |= df[column].isna()
    except TypeError:  # unhashable values (lists, dicts)
        return "", []
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
    folders = sorted({r.split("#")[0] for r in runs}) if run_col in ("run_id", "run_key") else []
    if not run_col and ids:  # a landing check: the runs of the rows' files
        folders = [
            r[0]
            for r in con.execute(
                "select distinct r.run_id from raw.files f join raw.runs r using (run_key) "
                "where list_contains(?, f.file_id) order by 1",
                [ids],
            ).fetchall()
        ]
    return out + (f"; files: {_list(names)}" if names else ""), folders
