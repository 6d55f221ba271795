"""What Superset may do with the serving DuckDB file: read its tables, nothing else.

Two independent layers, each enough to keep the published file intact:

* The connection (`connect_args`, then `lock` right after DuckDB opens the file). DuckDB's
  `enable_external_access = false` is not enough on its own: it still allows writing the open
  database file and its `.wal` (`COPY (select 1) TO '<serving file>'` turns it into CSV). So once
  the file is open, the local file system is switched off altogether (`disabled_filesystems`,
  which DuckDB only accepts after start-up) and the configuration is locked, so SQL cannot undo
  either. Reading the open file needs no new file handle; spilling to disk would, so there is no
  temp directory (a query past the memory limit fails as out of memory).
* The statement (`refusal`, run by Superset's SQL_QUERY_MUTATOR on every query it sends). DuckDB's
  own parser reads the SQL exactly as it will run (`json_serialize_sql` serializes SELECT
  statements only: COPY, EXPORT, ATTACH, INSTALL, LOAD, SET, PRAGMA, CALL, CHECKPOINT, EXPLAIN
  and any script holding one are refused whatever comments, case or statements surround them),
  then every table, table function and function it names is checked: no settings, paths,
  environment, catalog internals or file readers.

Imported by dashboards/superset_config.py (Superset's venv) and by the tests (the project's venv).
"""

from __future__ import annotations

import json
import threading

import duckdb

# Settings DuckDB takes when it opens the file (the same for every connection: DuckDB shares one
# instance per file within a process and refuses a connection whose settings differ).
CONNECT_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    # a table name that matches a Python variable of the caller would read that object
    "python_enable_replacements": False,
    # no spilling: the temp directory is the one place a query could still write
    "temp_directory": "",
}
# set by `lock`, after the file is open; a connection asking for them up front is stripped of them
AFTER_OPEN = ("disabled_filesystems", "lock_configuration")


def connect_args(args: dict | None) -> dict:
    """A DuckDB engine's connect_args made read-only with the settings above, whatever they held."""
    args = dict(args or {})
    config = {k: v for k, v in (args.get("config") or {}).items() if k not in AFTER_OPEN}
    args["config"] = {**config, **CONNECT_CONFIG}
    args["read_only"] = True
    return args


class UnlockedConnection(RuntimeError):
    """A serving connection whose file system could not be switched off."""


def lock(con) -> None:
    """Switch off the local file system of an open connection and lock its configuration.

    DuckDB shares one database instance between the connections of a process, so the instance
    may already be locked by an earlier connection: then it is checked, not set. A connection
    that cannot be proven locked is refused."""
    try:
        con.execute("set disabled_filesystems = 'LocalFileSystem'")
        con.execute("set lock_configuration = true")
    except duckdb.InvalidInputException:  # locked already (a shared instance)
        pass
    locked = con.execute("select current_setting('lock_configuration')").fetchone()[0]
    # disabled_filesystems does not report its value: try a file operation DuckDB allows
    # with external access off (a glob of the database's own path) and see it refused
    path = con.execute("select path from duckdb_databases() where database_name = current_database()")
    path = path.fetchone()[0]
    try:
        con.execute("select count(*) from glob(?)", [path]).fetchall()
        reachable = True
    except duckdb.PermissionException as exc:
        reachable = "LocalFileSystem" not in str(exc)
    if not locked or reachable:
        raise UnlockedConnection(f"DuckDB connection to {path} still reaches the file system; refused")


# Table functions a query may read from: the serving file's own table macro (compare_runs,
# mtabench/stats/compare_sql.py) and row generators. Everything else (read_*, glob, duckdb_*, pragma_*,
# query, sniff_csv, parquet_*, checkpoint, enable_logging, ...) touches files or the catalog.
TABLE_FUNCTIONS = {"compare_runs", "range", "generate_series", "unnest", "json_each", "json_tree"}
# Scalar functions and tables that reveal settings, paths or the environment.
FUNCTIONS = {"current_setting", "getenv", "version", "glob", "query", "query_table"}
PREFIXES = ("duckdb_", "pragma_", "read_", "parquet_", "sqlite_", "pg_", "json_execute")
SYSTEM_CATALOGS = {"system", "temp"}
SYSTEM_SCHEMAS = {"pg_catalog"}
# a table name DuckDB would resolve as a file (replacement scan: 'x.csv', '/etc/passwd', 's3://')
PATH_CHARS = set("/\\:.*?~$")

_parser: duckdb.DuckDBPyConnection | None = None
_parser_lock = threading.Lock()


def _parse(sql: str) -> dict:
    global _parser
    with _parser_lock:  # made on first use: nothing DuckDB runs in a process before it forks
        if _parser is None:
            _parser = duckdb.connect(":memory:", config={"enable_external_access": False})
        cur = _parser.cursor()
    try:
        return json.loads(cur.execute("select json_serialize_sql(?::varchar)", [sql]).fetchone()[0])
    finally:
        cur.close()


def _nodes(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _named(name: str) -> bool:
    name = name.lower()
    return name in FUNCTIONS or name.startswith(PREFIXES)


def refusal(sql: str) -> str | None:
    """Why `sql` may not run on the serving file, or None when it only reads its tables."""
    tree = _parse(sql)
    if tree.get("error"):
        kind = tree.get("error_type", "")
        message = tree.get("error_message", "")
        if kind == "not implemented":  # json_serialize_sql's word for "not a SELECT"
            return "only SELECT statements run on the serving database"
        return f"refused: {message or kind}"
    for node in _nodes(tree):
        if node.get("type") == "TABLE_FUNCTION":
            fn = node.get("function") or {}
            name = str(fn.get("function_name", "")).lower()
            if name not in TABLE_FUNCTIONS or fn.get("catalog") or fn.get("schema") not in ("", "main"):
                return f"table function {name or '?'}() is not allowed on the serving database"
        elif "function_name" in node:
            name = str(node["function_name"])
            if _named(name) or str(node.get("catalog", "")).lower() in SYSTEM_CATALOGS:
                return f"function {name}() is not allowed on the serving database"
        elif node.get("type") == "BASE_TABLE":
            name = str(node.get("table_name", ""))
            catalog = str(node.get("catalog_name", "")).lower()
            schema = str(node.get("schema_name", "")).lower()
            system = catalog in SYSTEM_CATALOGS or schema in SYSTEM_SCHEMAS
            if PATH_CHARS & set(name) or _named(name) or system:
                return f"table {name!r} is not allowed on the serving database"
    return None


class RefusedStatement(PermissionError):
    """A statement the serving database does not run (the message says why)."""


def check(sql: str) -> str:
    """`sql` unchanged when it only reads the serving tables; else RefusedStatement."""
    reason = refusal(sql)
    if reason:
        raise RefusedStatement(reason)
    return sql
