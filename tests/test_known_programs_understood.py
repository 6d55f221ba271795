"""No line of a known mail program in the bundled logs is left as kind `other`.

Every maillog among samples/** and tests/fixtures/** (the files the format sniffer takes
for a maillog, Exim's mainlogs among them) is parsed as `mtabench parse maillog --unknown`
lists it: a line of Postfix, Sendmail, Exim, qmail, Courier, Dovecot, OpenDKIM ... that the
parser files as `other` is a shape it does not understand, and fails this test until the
parser learns it or classifies it as known noise. The real-lines corpus
(tests/fixtures/corpus) is among the fixtures.

The lines are found independently of the listing: the syslog tag of each raw line (or, in
an Exim mainlog, its stamp: every line there is Exim's, those naming no message too, such as
the connections and sessions the `smtp_connection` and other log selectors add) is read by a
regex here, and the parser's kind of that line decides.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES, found

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
# the programs whose lines the parser is meant to understand, read off the syslog tag
KNOWN_TAG = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ "
    r"(postfix[^\s\[:]*|sendmail|sm-[^\s\[:]+|exim4?|qmail[^\s\[:]*|courier[^\s\[:]*|(?:pop3|imap)d(?:-ssl)?"
    r"|dovecot|opendkim|opendmarc|smtpd)(?:\[\d+\])?: "
)
# Exim's own mainlog has no syslog tag: a line with its stamp (`+millisec`, a zone, `[pid]`
# optional) is Exim's, whether or not it names a message
EXIM_MAINLOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [-+]\d{4})?(?: \[\d+\])? \S")


# Exim's test suite masks the ports of its test servers (`[127.0.0.1]:PORT_D`) in the logs it
# compares (the corpus's exim-testsuite.log): no Exim writes such a line, so none is asked of
# the parser
HARNESS_PORT = re.compile(r"\]:PORT_[A-Z0-9]+ ")


def _text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace")


def maillogs() -> list[Path]:
    files = [p for root in (SAMPLES, FIXTURES) for p in root.rglob("*") if p.is_file()]
    return [
        p for p in found(files, "sample and fixture files") if MaillogParser().sniff(_text(p)[:65536], p.name)
    ]


MAILLOGS = maillogs()


def test_the_bundled_maillogs_are_found():
    names = {p.parent.name for p in MAILLOGS}
    assert len(MAILLOGS) >= 20 and {"a-baseline-t5", "courier-pop-imap", "corpus"} <= names, names


@pytest.mark.parametrize("path", MAILLOGS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_no_known_program_line_is_other(path):
    lines = _text(path).splitlines()
    ledger = MaillogParser().parse(((i, t) for i, t in enumerate(lines, 1)), ParseContext(year=2026))
    other = [
        f"{n}: {t}"
        for n, t in enumerate(lines, 1)
        if (KNOWN_TAG.match(t) or EXIM_MAINLOG.match(t))
        and not HARNESS_PORT.search(t)
        and any(i.get("kind") == "other" for i in ledger.items.get(n, []))
    ]
    assert not other, f"{len(other)} line(s) not understood:\n" + "\n".join(other[:30])


def test_unknown_listing_names_the_lines(tmp_path):
    """`mtabench parse maillog --unknown` lists exactly the known programs' `other` lines."""
    log = tmp_path / "maillog"
    log.write_text(
        "Nov 27 10:00:00 mx postfix/smtpd[42]: connect from unknown[192.0.2.1]\n"
        "Nov 27 10:00:01 mx postfix/smtpd[42]: a shape postfix never logged\n"
        "Nov 27 10:00:02 mx CRON[43]: (root) CMD (true)\n"
        "Nov 27 10:00:03 mx dovecot: imap(u)<1><s>: something new\n"
    )
    out = subprocess.run(
        [*MTABENCH, "parse", "maillog", "--unknown", str(log)], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines() == [
        "2: Nov 27 10:00:01 mx postfix/smtpd[42]: a shape postfix never logged",
        "4: Nov 27 10:00:03 mx dovecot: imap(u)<1><s>: something new",
    ]
    assert "2 line(s) of known programs not understood" in out.stderr
