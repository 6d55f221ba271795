"""Line accounting from the landed rows themselves, not from any parser's counters.

Per loaded file: the line numbers found across every per-file landing table (parsed rows,
the Parquet-backed raw.maillog view, raw.noise, raw.quarantine) must be exactly
1..lines_total. A parser whose counters say "all accounted for" while its rows miss a line
fails here.
"""

from __future__ import annotations

from ingest.landing import bulk_tables, derived_tables, per_file_tables


def landed_lines_sql(files: str = "true") -> str:
    """One row per loaded file: lines_total, landed_lines, min/max line and lost_lines.
    `files`: a predicate on file_id, put into every branch (DuckDB does not push a filter on
    the result down through the union and aggregate), so checking a few files reads only theirs.

    A line of the per-file tables can hold several rows (items), so their line numbers are
    counted once each (a distinct union). The Parquet-landed line tables (raw.maillog) hold
    one row per line, unique per file (dbt's `(file_id, line_no)` test on stg_maillog__lines,
    which gates publishing), and their lines are no other table's (the parser sends a line
    to its rows, or to noise or quarantine): their rows are counted, not made distinct. A
    distinct over 86 M maillog lines took 22 s of validate at 236x the samples. A row counted
    twice would make landed_lines exceed lines_total: the check fails then too."""
    derived = derived_tables()
    counted = [t for t in bulk_tables() if t not in derived]
    union = "\n        union ".join(
        f"select file_id, line_no from raw.{t} where line_no is not null and ({files})"
        for t in per_file_tables()
    )
    counts = "".join(
        f"""
        union all
        select file_id, count(*) as landed_lines, min(line_no) as first_line, max(line_no) as last_line
        from raw.{t}
        where line_no is not null and ({files})
        group by file_id"""
        for t in counted
    )
    return f"""
    with landed as (
        {union}
    ),
    per_table as (
        select file_id, count(*) as landed_lines, min(line_no) as first_line, max(line_no) as last_line
        from landed
        group by file_id{counts}
    ),
    per_file as (
        select
            file_id,
            cast(sum(landed_lines) as bigint) as landed_lines,
            min(first_line) as first_line,
            max(last_line) as last_line
        from per_table
        group by file_id
    )
    select
        f.file_id,
        f.path,
        f.format,
        f.lines_total,
        coalesce(p.landed_lines, 0) as landed_lines,
        p.first_line,
        p.last_line,
        f.lines_total - coalesce(p.landed_lines, 0) as lost_lines,
        coalesce(p.last_line, 0) - f.lines_total as lines_beyond_end
    from raw.files f
    left join per_file p using (file_id)
    where f.status = 'loaded' and f.format <> 'manifest' and ({files})
    """
