"""The ingest's derive step: after the files of an ingest have landed, each landed maillog
file that lacks its computed tables gets them (ingest/maillog_derived.py), one file per
transaction.

A step of its own, not part of landing a file: a file's lines land as fast as they parse
(bench/maillog_bench.py times both), and a failure here costs the file nothing, its lines
stay landed and the models count its messages and minutes from them (macros/maillog.sql).
A file changed or removed lost its parts with its lines, so it is derived again, or not at
all; a file whose parts exist is not read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ingest import maillog_messages, maillog_minutes
from ingest.arrow_landing import _lit

log = logging.getLogger(__name__)

STEPS = (maillog_messages, maillog_minutes)


def pending(con) -> list[int]:
    """Files with landed maillog parts that lack a part of a computed table."""
    tables = ", ".join(_lit(m.TABLE) for m in STEPS)
    return [
        r[0]
        for r in con.execute(
            f"""
            select file_id
            from (select distinct file_id from raw.parquet_files where table_name = 'maillog') as lines
            where (
                select count(distinct table_name) from raw.parquet_files as p
                where p.file_id = lines.file_id and p.table_name in ({tables})
            ) < {len(STEPS)}
            order by file_id
            """
        ).fetchall()
    ]


def derive(con, progress: Callable[[str], None] = lambda _: None) -> tuple[int, list[str]]:
    """Compute the missing tables of every pending file; the caller rebuilds the views
    (landing.refresh_views). Returns (files derived, errors)."""
    done, errors = 0, []
    for file_id in pending(con):
        con.execute("begin")
        try:
            for step in STEPS:
                step.land(con, file_id, view=False)
            con.execute("commit")
            done += 1
        except Exception as exc:  # the file keeps its lines; its rows come from them
            con.execute("rollback")
            path = con.execute(f"select path from raw.files where file_id = {int(file_id)}").fetchone()
            msg = f"{path[0] if path else file_id}: messages and minutes not computed ({exc})"
            log.warning(msg)
            errors.append(msg)
            progress(f"  ! {msg}")
    return done, errors
