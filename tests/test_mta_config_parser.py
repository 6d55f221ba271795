"""The MTAs' configuration files beside the recorded runs (samples/mtas): recognised, every line
a setting or noise, and the setting each pair of runs changed reads as its run.toml says."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from conftest import found

from ingest.detect import detect
from ingest.parsers.base import ParseContext
from ingest.parsers.mta_config import MtaConfigParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = found(
    [
        p
        for pat in (
            "*/exim4.conf",
            "*/sendmail.mc",
            "*/smtpd.conf",
            "*/control.txt",
            "*/courier-settings.txt",
        )
        for p in (ROOT / "samples" / "mtas").glob(pat)
    ],
    "MTA configuration files",
)


def settings(path: Path) -> tuple[dict[str, list[str]], object]:
    lines = list(enumerate(path.read_text().splitlines(keepends=True), start=1))
    ledger = MtaConfigParser().parse(lines, ParseContext())
    out: dict[str, list[str]] = {}
    for row in ledger.rows["postconf_settings"]:
        out.setdefault(row["name"], []).append(row["value"])
    return out, ledger.counts(len(lines))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_is_recognised_and_every_line_accounted_for(path):
    assert detect(FileSource(path, path.name)).format == "mta_config"
    got, counts = settings(path)
    assert counts.quarantined == 0
    assert counts.parsed + counts.noise == counts.total
    assert counts.parsed == sum(len(v) for v in got.values()) > 0


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_changed_setting_reads_as_the_manifest_says(path):
    changed = tomllib.loads((path.parent / "run.toml").read_text())["mta"]["changed_settings"]
    got, _ = settings(path)
    if path.name == "exim4.conf":
        assert got["queue_only"] == [changed["queue_only"]]
    elif path.name == "sendmail.mc":
        assert got["confCONNECTION_RATE_THROTTLE"] == [changed["confCONNECTION_RATE_THROTTLE"]]
    elif path.name == "control.txt":  # qmail's control files
        assert got["concurrencylocal"] == [changed["concurrencylocal"]]
    elif path.name == "courier-settings.txt":  # /etc/courier/esmtpd
        assert got["esmtpd.MAXDAEMONS"] == [changed["MAXDAEMONS"]]
    else:
        assert ("compression" in got.get("queue", [])) == (changed["queue_compression"] == "on")


def test_mailbox_client_record_lands_every_session():
    """The POP3/IMAP client's per-session CSV beside the Dovecot variants: recognised, one row per
    session, counts as the raw lines say (awk-style, here in Python)."""
    from ingest.parsers.mailbox_client import MailboxClientParser

    for path in found(list((ROOT / "samples" / "variants").glob("*/mailbox_client.csv")), "client records"):
        assert detect(FileSource(path, path.name)).format == "mailbox_client"
        raw = path.read_text().splitlines()
        ledger = MailboxClientParser().parse(
            list(enumerate((x + "\n" for x in raw), start=1)), ParseContext()
        )
        rows = ledger.rows["mailbox_client_sessions"]
        data = [x.split(",") for x in raw[1:] if x.strip()]
        assert len(rows) == len(data)
        assert sum(r["messages"] for r in rows) == sum(int(d[4]) for d in data)
        assert sum(not r["ok"] for r in rows) == sum(d[3] == "0" for d in data)
        assert {r["protocol"] for r in rows} == {d[1] for d in data}


DOVECOT_CONFIGS = [
    ROOT / "tests" / "fixtures" / "mailbox" / "dovecot-bench" / "doveconf-n.txt",  # 2.3, `doveconf -n`
    ROOT / "tests" / "fixtures" / "recorded" / "dovecot-24-default" / "dovecot.conf",  # 2.4
    ROOT / "tests" / "fixtures" / "recorded" / "dovecot-mail-log" / "d24-own-log-iso" / "doveconf-n.txt",
]


@pytest.mark.parametrize("path", DOVECOT_CONFIGS, ids=lambda p: p.parent.name)
def test_dovecot_config_is_recognised_and_every_line_accounted_for(path):
    assert detect(FileSource(path, path.name)).format == "mta_config"
    got, counts = settings(path)
    assert counts.quarantined == 0
    assert counts.parsed + counts.noise == counts.total
    # every `name = value` line is a setting; block lines and comments are not
    raw = [x.strip() for x in path.read_text().splitlines()]
    assert counts.parsed == sum(1 for x in raw if " = " in x or x.endswith(" =") or x.startswith("!include"))


def test_dovecot_settings_are_named_by_their_blocks():
    v23, _ = settings(DOVECOT_CONFIGS[0])
    assert v23["protocols"] == ["pop3 imap"]
    assert v23["passdb.driver"] == ["passwd-file"]  # a block without a name
    assert v23["userdb.driver"] == ["static"]
    assert v23["namespace.inbox.inbox"] == ["yes"]
    assert v23["namespace.inbox.mailbox.Sent Messages.special_use"] == ["\\Sent"]  # a quoted name
    assert v23["namespace.inbox.prefix"] == [""]
    v24, _ = settings(DOVECOT_CONFIGS[1])
    assert v24["dovecot_config_version"] == ["2.4.0"]
    assert v24["passdb.passwd-file.passwd_file_path"] == ["/etc/dovecot/users"]
    assert v24["mail_driver"] == ["maildir"]
    assert not any(name.startswith("namespace.inbox.namespace") for name in v24)  # a block closed
    # a quoted value is the text inside the quotes, its trailing space kept
    own_log, _ = settings(DOVECOT_CONFIGS[2])
    assert own_log["log_timestamp"] == ["%Y-%m-%d %H:%M:%S "]


def test_exim_named_lists_and_acl_modifiers_on_their_own_lines():
    """Exim's named lists (`domainlist local_domains = bench.test`) are settings named by their
    kind and name; an ACL statement's modifier on a line of its own (`message = ...`) is the
    modifier's value, without its `=`."""
    path = ROOT / "tests" / "fixtures" / "recorded" / "exim-494-mainlog" / "exim4.conf"
    assert detect(FileSource(path, path.name)).format == "mta_config"
    got, counts = settings(path)
    assert counts.quarantined == 0 and counts.parsed + counts.noise == counts.total
    assert got["domainlist.local_domains"] == ["bench.test"]
    messages = [
        ln.split("=", 1)[1].strip()
        for ln in path.read_text().splitlines()
        if ln.strip().startswith("message =")
    ]
    assert messages and got["acl.acl_check_rcpt.message"] == messages
    assert not any(v.startswith("=") for vs in got.values() for v in vs)


def test_sendmail_defines_without_a_value_or_with_it_on_the_next_line():
    """Debian's sendmail.mc: `define(`_USE_ETC_MAIL_')dnl` (a flag, no value) and
    `define(`confPRIVACY_FLAGS',dnl` whose value is the next line (`` `needmailhelo,...')dnl``)."""
    path = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-815-queue-return" / "sendmail.mc"
    got, counts = settings(path)
    assert counts.quarantined == 0 and counts.parsed + counts.noise == counts.total
    assert got["_USE_ETC_MAIL_"] == [""]
    lines = path.read_text().splitlines()
    at = lines.index("define(`confPRIVACY_FLAGS',dnl")
    assert got["confPRIVACY_FLAGS"] == [lines[at + 1].removesuffix("')dnl").removeprefix("`")]
    assert "m4_continued" not in got and "define" not in got
