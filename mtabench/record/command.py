"""The `mtabench record` subcommand: arguments and the call into the runner."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from mtabench.record.options import OptionError, RecordOptions, parse_settings
from mtabench.record.postfix import PostfixError
from mtabench.record.target import RemoteTarget

USAGE = (
    "mtabench record RUN_ID [--archive DIR] [--duration S] [--drain S] [--set param=value ...] "
    "[--label L] [--tag T ...] [--notes N] [--maillog PATH] [--log2 PATH] [--also CMD ...] "
    "[--allow-remote] [--dry-run] "
    "-- LOAD COMMAND..."
)


def split_load(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`record ... -- LOAD...`: everything after the first `--` is the load command, options included."""
    if argv and argv[0] == "record" and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, None


def add_parser(sub) -> None:
    p = sub.add_parser(
        "record",
        help="record a benchmark run against the local Postfix into an archive folder",
        usage=USAGE,
        description="Apply settings, start vmstat/iostat/queue samplers, run the load (bounded), "
        "wait for the queue to drain, cut the maillog window, write run.toml; settings restored "
        "and children stopped on every exit path, Ctrl-C included.",
    )
    p.add_argument("run_id", metavar="RUN_ID")
    p.add_argument("--archive", default="archive", help="archive folder; the run goes to ARCHIVE/RUN_ID")
    p.add_argument("--duration", type=float, default=60.0, help="load time limit in seconds (default 60)")
    p.add_argument("--drain", type=float, default=60.0, help="max seconds to wait for the queue (default 60)")
    p.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="main.cf setting")
    p.add_argument("--label")
    p.add_argument("--tag", action="append", default=[])
    p.add_argument("--notes", help="free text for [notes] in run.toml")
    p.add_argument("--maillog", default="/srv/bench/log/maillog", help="Postfix log (postlogd/syslog)")
    p.add_argument("--log2", help="a second log to cut for the same window (e.g. Dovecot's)")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="CMD",
        help="another load command (one quoted string) run beside the first for the same time, "
        "e.g. --also 'rabid -r 600 127.0.0.1 /srv/bench/pop-users.txt'; its output goes to TOOL.csv",
    )
    p.add_argument("--allow-remote", action="store_true", help="allow a load target that is not loopback")
    p.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    p.set_defaults(func=run, db=None, load=[])


def run(args: argparse.Namespace, _paths=None) -> int:
    from mtabench.record.runner import plan_text, record

    try:
        opts = RecordOptions(
            run_id=args.run_id,
            load=list(args.load),
            archive=Path(args.archive),
            duration_s=args.duration,
            drain_s=args.drain,
            settings=parse_settings(args.set),
            label=args.label,
            tags=args.tag,
            notes=args.notes,
            maillog=Path(args.maillog),
            log2=Path(args.log2) if args.log2 else None,
            also=[shlex.split(c) for c in args.also],
            allow_remote=args.allow_remote,
        )
        if args.dry_run:
            print(plan_text(opts))
            return 0
        return record(opts, say=lambda m: print(m, flush=True))
    except (OptionError, RemoteTarget, PostfixError) as exc:
        print(f"record: {exc}", file=sys.stderr)
        return 2
