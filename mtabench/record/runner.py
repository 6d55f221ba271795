"""The recording sequence: settings, snapshot, samplers, load, drain, logs, manifest.

Cleanup (children stopped, logs cut, settings restored, manifest written) runs on every path.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mtabench.record import postfix
from mtabench.record.logcut import LogWindow
from mtabench.record.manifest import RunRecord
from mtabench.record.options import OptionError, RecordOptions
from mtabench.record.procs import Child, spawn
from mtabench.record.samplers import QueueSampler, iostat_argv, start_sysstat, utc_now, vmstat_argv
from mtabench.record.target import IGNORES_SIGINT, LINE_BUFFER, LoadTarget, check_loopback, identify

OUTPUT_NAME = {
    "postal": "postal.csv",
    "rabid": "rabid.csv",
    "smtp-source": "smtp-source.out",
    "bhm": "bhm.out",
}


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def seconds_to_next_minute(now: float) -> float:
    """Seconds from `now` (epoch) to the next wall-clock minute boundary, plus a tenth."""
    return 60.0 - now % 60.0 + 0.1


def load_argv(opts: RecordOptions, target: LoadTarget, command: list[str] | None = None) -> list[str]:
    """The command as run: postal/rabid/bhm under stdbuf -oL, or their rows stay in a block buffer."""
    command = list(opts.load if command is None else command)
    if target.tool in LINE_BUFFER and os.path.basename(command[0]) != "stdbuf":
        return ["stdbuf", "-oL", *command]
    return command


def also_targets(opts: RecordOptions) -> list[tuple[LoadTarget, list[str], str]]:
    """The --also commands: (target, argv as run, output file name), names unique within the run."""
    taken = {OUTPUT_NAME.get(identify(opts.load).tool, "load.out")}
    out = []
    for cmd in opts.also:
        target = identify(cmd)
        check_loopback(target, opts.allow_remote)
        name = OUTPUT_NAME.get(target.tool, "load.out")
        stem, dot, ext = name.partition(".")
        n = 2
        while name in taken:
            name, n = f"{stem}-{n}{dot}{ext}", n + 1
        taken.add(name)
        out.append((target, load_argv(opts, target, cmd), name))
    return out


def stop_signal(target: LoadTarget) -> signal.Signals:
    # postal ignores SIGINT; SIGTERM ends it at once, and its completed minute rows are already written
    return signal.SIGTERM if target.tool in IGNORES_SIGINT else signal.SIGINT


def prepare(opts: RecordOptions) -> LoadTarget:
    """Every check that can fail before anything changes on the machine."""
    opts.check()
    target = identify(opts.load)
    check_loopback(target, opts.allow_remote)
    also_targets(opts)  # the --also commands must be loopback too
    return target


def plan_text(opts: RecordOptions) -> str:
    target = prepare(opts)
    out_name = OUTPUT_NAME.get(target.tool, "load.out")
    lines = [f"record {opts.run_id} into {opts.run_dir}"]
    for name, value in opts.settings.items():
        lines.append(f"  1. settings: postconf -e '{name} = {value}' (restored afterwards, also on Ctrl-C)")
    lines.append("     postfix reload" if opts.settings else "  1. settings: none changed")
    lines.append(f"  2. snapshot: postconf -n > {opts.run_dir / 'postconf-n.txt'}")
    lines.append(
        f"  3. samplers every {opts.interval_s} s: {' '.join(vmstat_argv(opts.interval_s))} > vmstat.txt, "
        f"{' '.join(iostat_argv(opts.interval_s))} > iostat.txt, queue counts of {opts.spool} > queue.txt"
    )
    host = target.host or "no host (listens)" if target.tool == "bhm" else target.host
    lines.append(
        f"  4. load ({target.tool}, target {host}): {' '.join(load_argv(opts, target))} > {out_name}, "
        f"stopped with {stop_signal(target).name} after {opts.duration_s:g} s"
    )
    for t, argv, name in also_targets(opts):
        lines.append(
            f"     beside it ({t.tool}, target {t.host}): {' '.join(argv)} > {name}, "
            f"stopped with {stop_signal(t).name} at the same time"
        )
    lines.append(f"  5. drain: wait up to {opts.drain_s:g} s for incoming+active+maildrop to empty")
    logs = f"{opts.maillog} -> maillog.gz"
    if opts.log2:
        logs += f", {opts.log2} -> {opts.log2.name}.gz"
    lines.append(f"  6. logs: cut by byte offset from monitor start to stop: {logs}")
    lines.append(f"  7. manifest: {opts.run_dir / 'run.toml'}")
    return "\n".join(lines)


def tool_version(target: LoadTarget) -> str:
    exe = shutil.which(target.argv[0]) if target.argv else None
    parts = []
    if target.tool in ("postal", "rabid") and exe:  # their usage text ends with "Postal Version: 0.75"
        usage = subprocess.run([exe], capture_output=True, text=True, timeout=10, check=False)
        if m := re.search(r"Version:\s*(\S+)", usage.stdout + usage.stderr):
            parts.append(m.group(1))
    if exe and (pkg := _debian_package(exe)):
        parts.append(f"(Debian package {pkg})")
    return " ".join(parts) or "unknown"


def _debian_package(exe: str) -> str | None:
    owner = subprocess.run(["dpkg", "-S", os.path.realpath(exe)], capture_output=True, text=True, check=False)
    if owner.returncode != 0:
        return None
    pkg = owner.stdout.split(":", 1)[0].strip()
    query = ["dpkg-query", "-W", "-f=${Version}", pkg]
    ver = subprocess.run(query, capture_output=True, text=True, check=False)
    return f"{pkg} {ver.stdout.strip()}" if ver.returncode == 0 else pkg


def _queue_text(counts: dict[str, int]) -> str:
    return " ".join(f"{q}={counts[q]}" for q in postfix.QUEUES)


def record(opts: RecordOptions, say: Callable[[str], None] = print) -> int:
    """Record one run. Returns 0 when complete, 130 when interrupted, 1 on error (manifest says why)."""
    target = prepare(opts)
    also = also_targets(opts)
    for exe in (target.argv[0], *(t.argv[0] for t, _, _ in also), "vmstat", "iostat", "stdbuf", "postconf"):
        if shutil.which(exe) is None:
            raise OptionError(f"{exe} not found: run scripts/setup_postfix_bench.sh (as root)")
    if not opts.maillog.exists():
        raise OptionError(f"maillog {opts.maillog} does not exist (postlogd maillog_file or syslog file)")
    if opts.run_dir.exists() and any(opts.run_dir.iterdir()):
        raise OptionError(f"{opts.run_dir} exists and is not empty: choose another run id")
    settings = postfix.Settings(dict(opts.settings))
    settings.read_previous()  # unknown parameter names fail here, before anything changed
    opts.run_dir.mkdir(parents=True, exist_ok=True)

    out_name = OUTPUT_NAME.get(target.tool, "load.out")
    argv = load_argv(opts, target)
    stop_sig = stop_signal(target)
    rec = RunRecord(
        run_id=opts.run_id,
        hostname=socket.gethostname(),
        kernel=platform.release(),
        cpus=os.cpu_count() or 0,
        label=opts.label,
        tags=list(opts.tags),
        notes=opts.notes,
        tool={
            "name": target.tool,
            "version": tool_version(target),
            "command": " ".join(argv),
            "output_file": out_name,
            "stop": f"{stop_sig.name} after {opts.duration_s:g} s",
            "vmstat_command": " ".join(vmstat_argv(opts.interval_s)),
            "iostat_command": " ".join(iostat_argv(opts.interval_s)),
        },
        mta={
            "name": "postfix",
            "version": postfix.version(),
            "inet_interfaces": postfix.value("inet_interfaces"),
            "config_snapshot": "postconf-n.txt",
        },
        also=[
            {
                "name": t.tool,
                "version": tool_version(t),
                "command": " ".join(argv),
                "output_file": name,
                "stop": f"{stop_signal(t).name} after {opts.duration_s:g} s, with the load",
            }
            for t, argv, name in also
        ],
        changed=dict(opts.settings),
        previous={k: p.value for k, p in settings.previous.items()},
    )
    children: list[Child] = []
    load: Child | None = None
    beside: list[tuple[Child, signal.Signals]] = []  # the --also children, stopped with the load
    sampler: QueueSampler | None = None
    windows: list[tuple[LogWindow, str]] = []
    workdir = Path(tempfile.mkdtemp(prefix=f"mtabench-record-{opts.run_id}-"))  # postal writes postal.log
    phase = "settings"
    failed: BaseException | None = None

    def on_signal(signum, _frame):
        raise Interrupted(signum)

    old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        settings.apply()
        if opts.settings:
            say("settings: " + ", ".join(f"{k} = {v}" for k, v in opts.settings.items()) + "; reloaded")
            time.sleep(1)  # let master re-read main.cf before the snapshot
        (opts.run_dir / "postconf-n.txt").write_text(postfix.postconf_n(), encoding="utf-8")

        phase = "monitor start"
        windows.append((LogWindow.open_at_end(opts.maillog), "maillog.gz"))
        if opts.log2:
            windows.append((LogWindow.open_at_end(opts.log2), opts.log2.name + ".gz"))
        children += start_sysstat(opts.run_dir, opts.interval_s)
        sampler = QueueSampler(opts.run_dir / "queue.txt", opts.spool, opts.interval_s)
        sampler.start()
        rec.monitor_start_utc = utc_now()
        rec.pids = {c.name: c.pid for c in children}
        rec.incomplete_reason = "recording in progress (mtabench record did not finish)"
        rec.write(opts.run_dir)  # a killed recorder leaves a manifest that says so
        say(f"monitor started {rec.monitor_start_utc}")
        time.sleep(opts.interval_s)  # one sample before the load
        if target.tool in LINE_BUFFER:
            # per-minute tools print at wall-clock minute boundaries: started at one, their
            # first row covers a whole minute and counts as one (dbt var postal_full_first_row_seconds)
            time.sleep(seconds_to_next_minute(time.time()))

        phase = "load"
        t0 = time.monotonic()
        rec.start_utc = utc_now()
        load = spawn("load", argv, opts.run_dir / out_name, cwd=workdir)
        children.append(load)
        rec.pids["load"] = load.pid
        for i, (t, a_argv, a_name) in enumerate(also, start=1):
            child = spawn(f"also{i}", a_argv, opts.run_dir / a_name, cwd=workdir)
            children.append(child)
            beside.append((child, stop_signal(t)))
            rec.pids[child.name] = child.pid
            say(f"beside it: {' '.join(a_argv)}")
        rec.write(opts.run_dir)
        say(f"load started {rec.start_utc}: {' '.join(argv)}")
        load.wait(opts.duration_s)
        rec.load_exit_code = load.stop(stop_sig)
        for child, _sig in beside:  # a load that ended early does not cut the others short
            child.wait(max(0.0, t0 + opts.duration_s - time.monotonic()))
        for (child, sig), entry in zip(beside, rec.also, strict=True):
            entry["exit_code"] = str(child.stop(sig))
        rec.end_utc = utc_now()
        rec.duration_s = time.monotonic() - t0
        say(f"load stopped {rec.end_utc}, exit {rec.load_exit_code}")

        phase = "drain"
        deadline = time.monotonic() + opts.drain_s
        while True:
            counts = postfix.queue_counts(opts.spool)
            busy = counts["incoming"] + counts["active"] + counts["maildrop"]
            if busy == 0 or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        rec.queue_drained_utc = utc_now()
        rec.queue_left_at_stop = _queue_text(counts)
        say(f"queue at {rec.queue_drained_utc}: {rec.queue_left_at_stop}")
        time.sleep(opts.interval_s)  # one sample after the drain
        rec.incomplete_reason = None
    except Interrupted as exc:
        failed = exc
        rec.incomplete_reason = f"interrupted by {exc} during {phase}"
    except Exception as exc:  # noqa: BLE001 - recorded in the manifest, re-raised below
        failed = exc
        rec.incomplete_reason = f"error during {phase}: {exc}"
    finally:
        for s in old_handlers:  # a second Ctrl-C must not cut the cleanup short
            signal.signal(s, lambda *_: say("cleaning up: restoring settings and stopping children"))
        cleanup_errors = _cleanup(rec, children, load, sampler, windows, settings, stop_sig, opts, say)
        shutil.rmtree(workdir, ignore_errors=True)
        if cleanup_errors:
            rec.incomplete_reason = "; ".join(filter(None, [rec.incomplete_reason, *cleanup_errors]))
        rec.write(opts.run_dir)
        for s, h in old_handlers.items():
            signal.signal(s, h)
    if rec.incomplete_reason:
        say(f"run {opts.run_id} INCOMPLETE: {rec.incomplete_reason}")
        if failed is not None and not isinstance(failed, Interrupted):
            raise failed
        return 130 if isinstance(failed, Interrupted) else 1
    say(f"recorded {opts.run_dir}")
    return 0


def _cleanup(rec, children, load, sampler, windows, settings, stop_sig, opts, say) -> list[str]:
    """Stop every child, cut the logs, restore the settings. Each step runs even if another failed."""
    errors: list[str] = []
    steps: list[tuple[str, Callable[[], None]]] = []
    if load is not None and load.alive():

        def stop_load() -> None:
            rec.load_exit_code = load.stop(stop_sig)
            rec.end_utc = rec.end_utc or utc_now()

        steps.append(("stop load", stop_load))
    for child in children:
        if child is not load:
            steps.append((f"stop {child.name}", lambda c=child: c.stop(signal.SIGTERM, grace_s=2)))
    if sampler is not None:
        steps.append(("stop queue sampler", sampler.stop))

    def cut_logs() -> None:
        if windows:
            rec.monitor_end_utc = utc_now()
        for i, (window, name) in enumerate(windows):
            window.cut(opts.run_dir / name)
            if i == 0:
                rec.maillog_window = window.describe()
            else:
                rec.log2_window = window.describe()

    steps.append(("cut logs", cut_logs))
    steps.append(("restore settings", settings.restore))
    for name, step in steps:
        try:
            step()
        except Exception as exc:  # noqa: BLE001 - every step must get its chance
            errors.append(f"{name} failed: {exc}")
            say(f"{name} failed: {exc}")
    if settings.previous:
        say("settings restored: " + ", ".join(f"{k} = {p.value}" for k, p in settings.previous.items()))
    return errors
