"""Which load tool a command runs, and the host it loads: only loopback unless --allow-remote."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

# Wrappers whose own options come before the real command (skipped to find the tool).
WRAPPERS = {"stdbuf", "timeout", "nice", "env", "ionice", "taskset", "chrt"}
# Option letters that take a value, per tool (from each tool's usage text).
VALUED = {
    "postal": set("mMtcrbpzZsfl"),
    "rabid": set("rplcisdbzZ"),
    "smtp-source": set("CfFlmMrRsStTw"),
    "bhm": set("mtpzZsal"),
}
# Tools that ignore SIGINT (measured: postal keeps running after SIGINT and SIGQUIT, and exits at once
# on SIGTERM; its rows are printed at minute boundaries, so with stdbuf -oL none is lost).
IGNORES_SIGINT = {"postal", "rabid", "bhm"}
LINE_BUFFER = {"postal", "rabid", "bhm"}  # block-buffer stdout into a file: run them under stdbuf -oL


class RemoteTarget(ValueError):
    pass


@dataclass(frozen=True)
class LoadTarget:
    tool: str  # basename of the tool's executable
    argv: list[str]  # the command without wrappers
    host: str | None  # None: the tool takes no host (bhm listens) or it is unknown


def identify(command: list[str]) -> LoadTarget:
    argv = list(command)
    while argv and os.path.basename(argv[0]) in WRAPPERS:
        argv = _skip_wrapper(argv)
    tool = os.path.basename(argv[0]) if argv else ""
    return LoadTarget(tool, argv, _host(tool, argv[1:]))


def _skip_wrapper(argv: list[str]) -> list[str]:
    name, rest = os.path.basename(argv[0]), argv[1:]
    while rest and (rest[0].startswith("-") or (name == "env" and "=" in rest[0])):
        opt = rest.pop(0)
        if name in ("timeout", "nice", "taskset", "chrt", "ionice") and opt in ("-s", "-k", "-n", "-c", "-p"):
            rest = rest[1:]
    if name in ("timeout", "taskset", "chrt") and rest:
        rest = rest[1:]  # the duration / cpu mask / priority
    return rest


def _positionals(tool: str, args: list[str]) -> list[str]:
    valued, out, i = VALUED.get(tool, set()), [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1:
            if a[1] in valued and len(a) == 2:
                i += 1  # value in the next word
        else:
            out.append(a)
        i += 1
    return out


def _host(tool: str, args: list[str]) -> str | None:
    pos = _positionals(tool, args)
    if tool in ("postal", "rabid"):
        return pos[0] if pos else None  # postal|rabid [opts] server user-list
    if tool == "smtp-source":
        return _strip_endpoint(pos[-1]) if pos else None  # [inet:]host[:port] | unix:path
    return None


def _strip_endpoint(s: str) -> str:
    if s.startswith("unix:"):
        return "unix"
    s = s.removeprefix("inet:")
    if s.startswith("["):
        return s[1 : s.index("]")] if "]" in s else s[1:]
    return s.rsplit(":", 1)[0] if s.count(":") == 1 else s


def is_loopback(host: str) -> bool:
    h = host.strip().strip("[]").lower()
    if h in ("localhost", "localhost.localdomain", "unix"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback  # 127.0.0.0/8, ::1
    except ValueError:
        return False


def check_loopback(target: LoadTarget, allow_remote: bool) -> None:
    if allow_remote:
        return
    if target.tool == "bhm":
        return  # bhm is the sink: it listens, it sends nowhere
    if target.host is None:
        raise RemoteTarget(
            f"cannot tell which host {target.tool or 'the load command'} sends to "
            "(known: postal, rabid, smtp-source, bhm); pass --allow-remote if you are sure"
        )
    if not is_loopback(target.host):
        raise RemoteTarget(
            f"load target {target.host!r} is not loopback (127.0.0.0/8, ::1, localhost); "
            "pass --allow-remote to load another machine"
        )
