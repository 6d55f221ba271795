"""Cut the postal outputs of seed 000 into one sample run folder per test section.

Text is copied exactly as printed (pasted rows, errors, annotations, prompts);
only the choice of lines is ours. Re-run to regenerate samples/seed000/.
Usage: python scripts/cut_seed000.py ../shared/seeds/000_*.txt samples/seed000
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# The seed prints its postal wrapper once (`cat do.sh`, host ns1-bjcnc). A section whose
# rows follow a `./do.sh` prompt on that host ran it: its manifest gets the command with
# the shell variables expanded, so the rate cap (`-r $MSGPERMIN`) is in the manifest.
DO_SH_PROMPT = "@ns1-bjcnc postal-0.61]# ./do.sh"


def do_sh_command(seed_text: str) -> str:
    """The postal command line of the printed do.sh, variables expanded."""
    body = seed_text.split("# cat do.sh", 1)[1].splitlines()[1]
    assigns = dict(re.findall(r"([A-Z_]+)=(\S+)", body))
    cmd = body[body.index("./postal") :].replace("\\ ", "")
    return re.sub(r"\$([A-Z_]+)", lambda m: assigns[m.group(1)], cmd)


# slug: (first line, last line, label, mta version, changed settings, note)
SECTIONS = {
    "s4-ldap-2000-addresses": (
        11,
        11,
        "LDAP users, 2000 addresses",
        "2.0.0.1",
        {"default_process_limit": "500", "transport_maps": "fixed text (only virtual_mailbox_maps in LDAP)"},
        "在ldap里存放50万条用户记录 ... 2000地址的结果 (500k LDAP users, 2000 recipient addresses). "
        "After 10:32 the rate drops: incoming/ grows.",
    ),
    "s5-50conc-3msgs": (
        14,
        14,
        "50 connections, 3 messages per connection",
        "2.0.0.1",
        {"default_destination_concurrency_limit": "10"},
        "50个并发2000地址 ... 每个连接3封信. ^^* marks where qmgr_message_active_limit was reached.",
    ),
    "s6-dest-concurrency-100": (
        23,
        23,
        "default_destination_concurrency_limit = 100",
        "2.0.0.1",
        {"default_destination_concurrency_limit": "100"},
        "改成100, 速度提升了一些, 但很多出现了很多lookup failure (faster, many lookup failures).",
    ),
    "s6-dest-concurrency-50": (
        27,
        27,
        "default_destination_concurrency_limit = 50",
        "2.0.0.1",
        {"default_destination_concurrency_limit": "50"},
        "并发降至50 (concurrency lowered to 50).",
    ),
    "s7-ldap-cache": (
        30,
        30,
        "openLDAP cache, 50 connections x 1 message",
        "2.0.0.1",
        {"ldap_cache": "on"},
        "打开了openLDAP cache支持. Two runs pasted back to back (23:06 then 23:33).",
    ),
    "s8-active-limit-50000": (
        33,
        33,
        "qmgr_messages_active_limit=50000, one hour",
        "2.0.0.1",
        {"qmgr_messages_active_limit": "50000", "ldap_cache": "on"},
        "测试持续了近一个小时 ... 队列里积压了13万封信,70多分钟内注入了22万封信 (about an hour; "
        "130k messages left queued). Setting spelled as in the seed.",
    ),
    "s9-proxymap": (
        38,
        44,
        "Postfix snapshot 2.0.2 with proxymap",
        "2.0.2-snapshot",
        {"proxymap": "on"},
        "打开proxymap daemon后, SMTP注入速度明显提高 10%-15%. Several do.sh runs.",
    ),
    "s10-virtual-concurrency-20": (
        47,
        58,
        "virtual delivery concurrency 20",
        "2.0.2-snapshot",
        {"virtual_destination_concurrency_limit": "20"},
        "final_destination 限制在20个并发virtual.",
    ),
    "s10-virtual-concurrency-10": (
        80,
        139,
        "virtual delivery concurrency 10 (full printout)",
        "2.0.2-snapshot",
        {"virtual_destination_concurrency_limit": "10"},
        "完整结果如下 (the full result; the seed first printed its first 16 rows, lines 60-78, "
        "which are left out here to keep one copy of the run). Active queue near its limit from 21:10.",
    ),
    "s11-elvtune": (
        143,
        143,
        "elvtune write latency tuned",
        "2.0.2-snapshot",
        {"elvtune": "write latency lowered"},
        "通过elvtune调整了磁盘write操作的延时.",
    ),
    "s11-multiplex-peaks": (
        145,
        149,
        "repeated runs, peaks of 63xx/min",
        "2.0.2-snapshot",
        {"elvtune": "write latency lowered"},
        "有些时段可达到峰值63xx封/分. Five do.sh runs.",
    ),
    "s12-disk-rw-8192-4096": (
        154,
        154,
        "queue disk r/w latency 8192/4096",
        "2.0.2-snapshot",
        {"elvtune_sda3": "r=8192 w=4096"},
        "没调整磁盘R/W延迟之前的结果 (before tuning).",
    ),
    "s12-disk-rw-4096-2048": (
        156,
        156,
        "queue disk r/w latency 4096/2048",
        "2.0.2-snapshot",
        {"elvtune_sda3": "r=4096 w=2048"},
        "调整为r/w -> 4096/2048, 结果连续出现了6次6xxx/分.",
    ),
}


def toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(seed: Path, out: Path) -> None:
    text = seed.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    command = do_sh_command(text)
    for slug, (first, last, label, version, settings, note) in SECTIONS.items():
        d = out / slug
        d.mkdir(parents=True, exist_ok=True)
        section = "".join(lines[first - 1 : last])
        (d / "postal.out").write_text(section, encoding="utf-8")
        tool_command = f"command = {toml_str(command)}\n" if DO_SH_PROMPT in section else ""
        changed = "\n".join(f"{k} = {toml_str(v)}" for k, v in settings.items())
        (d / "run.toml").write_text(
            f"""run_id = "seed000-{slug}"
label = {toml_str(label)}
tags = ["seed000", "postfix-2.0", "ldap"]
timezone = "Asia/Shanghai"
# The write-up's date; the test dates are not printed. Clock labels are local time.
date = "2009-06-08"

[tool]
name = "postal"
version = "0.61"
output_file = "postal.out"
{tool_command}
[mta]
name = "postfix"
version = {toml_str(version)}
delivery = "virtual(8), users in OpenLDAP 2.0.11"

[mta.changed_settings]
{changed}

[notes]
text = {toml_str(f"Seed 000 lines {first}-{last}. {note}")}
source = "shared/seeds/000_4cf40d3f19dd5896.txt"
""",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
