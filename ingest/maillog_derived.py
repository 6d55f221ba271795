"""Tables computed from a maillog file's landed lines by the ingest's derive step
(ingest/derive.py; raw.maillog_messages, raw.maillog_minutes): per-file aggregates the dbt
models would otherwise compute from every line of the archive at each full build (issue 18,
"Scale").

Each is one Parquet part per file (`<table>/file_id=<id>/`), written by DuckDB from the
file's maillog parts and listed in raw.parquet_files beside them: a changed or removed file
drops its parts with its lines (arrow_landing.forget), at no cost that grows with the
landing. A file without rows for a table still gets a part (with no rows), so "has a part"
means "computed"; a file without (its derive failed, or not run yet) has its rows computed
from its lines by the models (macros/maillog.sql).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from ingest import arrow_landing

_DAEMON = "regexp_replace(program, '^postfix[^/]*/((smtps|submission)/)?', '')"


def classified_lines(parts: list[str]) -> str:
    """The file's lines with int_maillog__lines' classification (pflogsumm's counting; NULL
    and false count alike)."""
    files = ", ".join(arrow_landing._lit(p) for p in parts)
    return f"""
    select
        cast(line_no as integer) as line_no,
        cast(ts as timestamp) as logged_at,
        queue_id, kind, client, message_id, sender, size, nrcpt, status,
        delay, delay_before_qmgr, delay_in_qmgr, delay_conn_setup, delay_transmission,
        relay, dsn, relay_host,
        case
            when kind = 'client' then pid is not null and {_DAEMON} in ('smtpd', 'postscreen')
            when kind = 'pickup' then queue_id is not null and {_DAEMON} = 'pickup'
            when kind = 'arrival' then true
            when kind = 'from' then program in ('sendmail', 'sm-mta')
            when kind is not null then false
        end as is_received,
        case
            when kind = 'delivery' then
                status = 'sent' and coalesce(status_text not like '%forwarded as %', true)
            when kind is not null then false
        end as is_delivered,
        kind = 'delivery' and status = 'deferred' as is_deferral,
        kind = 'delivery' and status = 'bounced' as is_bounced,
        kind = 'expired' or (kind = 'delivery' and status = 'expired') as is_expired,
        case
            when kind = 'reject' then
                not (program like 'postfix%')
                or ({_DAEMON} in ('smtpd', 'postscreen') and reject_action = 'reject')
                or ({_DAEMON} = 'cleanup' and reject_stage in ('header', 'body', 'END-OF-MESSAGE'))
            when kind is not null then false
        end as is_rejected
    from read_parquet([{files}])"""


def land(
    con,
    file_id: int,
    table: str,
    columns: str,
    sql: Callable[[list[str]], str],
    order: str,
    view: bool = True,
) -> int:
    """Write `table`'s part of the file from its landed maillog parts (in the caller's
    transaction): `sql(parts)` selects its rows. Returns the rows."""
    parts = [
        r[0]
        for r in con.execute(
            f"select path from raw.parquet_files where file_id = {int(file_id)} "
            f"and table_name = {arrow_landing._lit('maillog')} order by path"
        ).fetchall()
    ]
    d = arrow_landing.store_dir(con)
    final = arrow_landing.part_path(d, table, file_id, f"{uuid.uuid4().hex[:12]}-000000.parquet")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name("." + final.name + ".tmp")
    cols = arrow_landing._columns(columns)
    typed = ", ".join(f"cast({n} as {t}) as {n}" for n, t in cols)
    empty = "select " + ", ".join(f"cast(null as {t}) as {n}" for n, t in cols) + " where false"
    body = f"select {typed} from ({sql(parts)})" if parts else empty
    try:
        to = arrow_landing._lit(str(tmp))
        copy = f"copy ({body} order by {order}) to {to} (format parquet, compression lz4)"
        n = con.execute(copy).fetchone()[0]
        Path(tmp).replace(final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        final.unlink(missing_ok=True)
        raise
    lit = arrow_landing._lit
    con.execute(f"delete from raw.parquet_files where file_id = {int(file_id)} and table_name = {lit(table)}")
    con.execute(
        "insert into raw.parquet_files (file_id, table_name, path, all_columns, rows) values "
        f"({int(file_id)}, {lit(table)}, {lit(str(final))}, true, {int(n)})"
    )
    if view:
        arrow_landing.rebuild_view(con, table, columns)
    return int(n)
