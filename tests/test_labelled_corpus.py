# ruff: noqa: E501  (log lines read best unwrapped)
"""Field recall of the maillog parser on public log lines whose expected fields are their
sources' own labels (tests/fixtures/corpus/labelled, sources and licences in the corpus
README): the golden outputs of other parsers' test suites (msimerson/postfix-parser,
lightmeter's ControlCenter, zentyal's MailLogHelper, maillogger, Parse::Syslog::Mail, grok
pattern specs, DataDog's log pipeline tests, ...). The values come from those projects, not
from this parser: a line's sender, recipient, queue id, status, relay, client, codes, size,
message-id as the source's test expects them.

Compared as the sources mean them: strings without surrounding `<>`, numbers as numbers,
status case-insensitive, a bare `relay=local` as its relay host, an `IPv6:` prefix dropped.
Where a source's convention differs from the parser's documented one (docs/formats.md) the
line still counts as a miss; the floors leave room for those few:
- a multi-instance Postfix's `syslog_name` (`postfix-10.20.30.40/smtp`) stays the program;
- LMTP over a UNIX socket (`relay=host[private/dovecot-lmtp]`) keeps the socket as the relay host;
- Exim's local delivery `=> user <user@dom>` keeps the address routed from as the recipient;
- a quoted local part keeps its quotes.
"""

from __future__ import annotations

import json

from test_real_corpus import CORPUS, parsed

LABELLED = CORPUS / "labelled"
RECALL_FLOOR = 0.97  # labelled fields over every source
SOURCE_FLOOR = 0.90  # labelled fields of one source
KIND_FLOOR = 0.98  # lines a source expects as a mail event that land with a known kind
NOT_A_KIND = {None, "", "other"}


def _norm(v):
    if isinstance(v, str):
        v = v.strip()
        if v.startswith("<") and v.endswith(">"):
            v = v[1:-1]
    return v


def equal(field: str, want, row: dict) -> bool:
    got = row.get(field)
    if field == "relay_host" and got is None and row.get("relay") and "[" not in row["relay"]:
        got = row["relay"]  # relay=local / virtual / dovecot: a name and no address
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        try:
            return got is not None and abs(float(got) - float(want)) < 1e-9
        except (TypeError, ValueError):
            return False
    if field == "status":
        return isinstance(got, str) and got.lower() == str(want).lower()
    if field in ("client_ip", "relay_ip") and isinstance(got, str) and got.lower().startswith("ipv6:"):
        got = got[5:]
    return _norm(got) == _norm(want)


def test_labelled_public_lines_give_their_sources_fields(tmp_path):
    files = sorted(LABELLED.glob("*.jsonl"))
    assert len(files) >= 10
    by_file = {f: [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines()] for f in files}
    rows = iter(parsed([r["line"] for recs in by_file.values() for r in recs], tmp_path))
    total = ok = kind_total = kind_ok = 0
    misses: list[str] = []
    low: list[str] = []
    for f, recs in by_file.items():
        n = k = 0
        for rec in recs:
            row = next(rows)
            if rec["expect_kind"]:
                kind_total += 1
                kind_ok += row.get("kind") not in NOT_A_KIND
            for field, want in rec["expected"].items():
                n += 1
                if equal(field, want, row):
                    k += 1
                else:
                    misses.append(f"{f.stem}: {field} {want!r} got {row.get(field)!r}: {rec['line']}")
        assert n, f"{f.name}: no labelled field"
        if k / n < SOURCE_FLOOR:
            low.append(f"{f.stem} {k}/{n}")
        total, ok = total + n, ok + k
    report = "\n".join(misses)
    print(f"labelled recall {ok}/{total} = {ok / total:.1%}, known kinds {kind_ok}/{kind_total}")
    assert total >= 700
    assert ok / total >= RECALL_FLOOR, f"labelled recall {ok}/{total}:\n{report}"
    assert not low, f"sources under {SOURCE_FLOOR:.0%}: {low}\n{report}"
    assert kind_ok / kind_total >= KIND_FLOOR, f"known kinds {kind_ok}/{kind_total}"
