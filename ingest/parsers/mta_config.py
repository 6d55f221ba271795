"""An MTA's configuration file captured beside a run (Exim's `exim4.conf`, sendmail's `.mc`,
OpenSMTPD's `smtpd.conf`, a dump of qmail's control files, Courier's settings, Dovecot's
`dovecot.conf` or `doveconf -n`): one setting
row per statement, in the table `postconf -n` fills (`name`, `value`), so a run's settings
read the same whatever its MTA.

Names: Exim `name = value` (inside a `begin` section prefixed with the section and the
driver instance: `routers.bench_users.driver`; an ACL statement is `acl.<acl>.<verb>`);
sendmail m4 `define(`name', `value')` and `MACRO(args)` (a call's later lines `m4_continued`);
OpenSMTPD the statement's first word; qmail `control-file: value` (the dump `head
/var/qmail/control/*` style recorders write) the control file's name; Courier
`config-file: NAME=value` as `config-file.NAME`; Dovecot `name = value`, inside `kind [name] {`
... `}` blocks prefixed with each enclosing block (`service.pop3-login.process_limit`,
`namespace.inbox.mailbox.Sent Messages.special_use`; a block without a name: `passdb.driver`).
Comments (`#`, m4 `dnl`) and blank lines are noise; section and instance headers too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

EXIM = re.compile(r"^begin (?:acl|routers|transports|retry|rewrite|authenticators)\s*$", re.M)
SENDMAIL_MC = re.compile(r"^(?:include\(`[^']*cf\.m4'\)|OSTYPE\(|DOMAIN\(|MAILER\()", re.M)
SMTPD_CONF = re.compile(r'^(?:listen on |action "[^"]+" |match (?:from|for) )', re.M)

# qmail's control files by name (qmail-control(5), qmail-send(8), qmail-smtpd(8)): a dump of
# them is `name: value` lines
QMAIL_CONTROL = re.compile(
    r"^(?:me|concurrency(?:local|remote)|defaultdomain|plusdomain|locals|rcpthosts|virtualdomains"
    r"|databytes|queuelifetime|timeoutsmtpd|smtpgreeting|defaulthost|helohost|bouncefrom): ",
    re.M,
)
# Courier's config files (/etc/courier/<file>) as `file: NAME=value`
COURIER = re.compile(
    r"^(?:esmtpd|courierd|module\.\w+|imapd|pop3d|esmtpd-msa|esmtpd-ssl): [A-Z][A-Z0-9_]*=", re.M
)
# Dovecot: `doveconf -n`'s first line, or a setting only Dovecot has, or its passdb/userdb block
DOVECOT = re.compile(
    r"^(?:# \d+\.\d+[\w.]* \([0-9a-f]+\): \S*dovecot\.conf$|dovecot_config_version = "
    r"|(?:passdb|userdb)(?: \S+)? \{$|mail_(?:location|driver) = |protocols = )",
    re.M,
)
# a Dovecot block's opening line, `kind {` or `kind name {` (a name may be quoted)
BLOCK = re.compile(r'^(?P<kind>[A-Za-z_][\w-]*)(?:\s+(?P<name>"[^"]*"|[^\s{}"]+))?\s*\{$')
QMAIL_LINE = re.compile(r"^(?P<name>[a-z][a-z0-9]*): ?(?P<value>.*?)\s*$")
# `file: NAME=value`, `file: name="value"` and a sourced file, `file: . /etc/environment`
COURIER_LINE = re.compile(r"^(?P<file>[\w.-]+): (?:(?P<name>[A-Za-z_]\w*)=(?P<value>.*)|\. (?P<source>\S+))$")

SETTING = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.-]*)\s*=\s*(?P<value>.*)$")
# Exim's named lists: `domainlist local_domains = bench.test` (the spec's "Named lists")
NAMED_LIST = re.compile(
    r"^(?P<kind>(?:domain|host|address|localpart)list)\s+(?P<name>\S+)\s*=\s*(?P<value>.*)$"
)
# `define(`confX', `value')dnl`, or a flag with no value: `define(`_USE_ETC_MAIL_')dnl`
M4_DEFINE = re.compile(r"^define\(`(?P<name>[^']*)'(?:,\s*`?(?P<value>.*?)'?)?\)(?:dnl\b.*)?$")
# a define whose value is on the next line (Debian's `define(`confPRIVACY_FLAGS',dnl`)
M4_DEFINE_OPEN = re.compile(r"^define\(`(?P<name>[^']*)',\s*(?:dnl\b.*)?$")
M4_CALL = re.compile(r"^(?P<name>[A-Za-z_]\w*)\((?P<value>.*)\)(?:dnl\b.*)?$")
# a macro call whose arguments go on over the next lines (`define(`confX',dnl` then `` `value')dnl``)
M4_OPEN = re.compile(r"^(?P<name>[A-Za-z_]\w*)\((?P<value>[^)]*?)(?:dnl)?$")
SECTION = re.compile(r"^begin (?P<section>\w+)\s*$")
INSTANCE = re.compile(r"^(?P<name>[\w.-]+):\s*$")


def _unquote(args: str) -> str:
    return re.sub(r"`([^']*)'", r"\1", args).strip()


class MtaConfigParser(Parser):
    format = "mta_config"
    version = "1.3.0"
    tables = {"postconf_settings": "name VARCHAR, value VARCHAR"}

    def sniff(self, head: str, name: str) -> int:
        if EXIM.search(head) or SENDMAIL_MC.search(head) or SMTPD_CONF.search(head) or DOVECOT.search(head):
            return 85
        # a qmail control dump, maybe with the `tcpserver ...` line that runs qmail-smtpd
        qmail = (QMAIL_LINE.match(x) or x.startswith("tcpserver ") for x in head.splitlines() if x.strip())
        if QMAIL_CONTROL.search(head) and all(qmail):
            return 85
        if COURIER.search(head) and all(COURIER_LINE.match(x) for x in head.splitlines() if x.strip()):
            return 85
        return 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        section = instance = None
        blocks: list[str] = []  # Dovecot's open blocks, outermost first
        pending = None  # a sendmail define whose value is on the next line
        for line_no, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            text = raw.rstrip("\r\n")
            stripped = text.strip()
            if not stripped:
                L.add_noise(line_no, 0, "blank", text)
            elif stripped.startswith("#") or stripped.startswith("dnl"):
                L.add_noise(line_no, 0, "comment", text)
            elif not section and (m := M4_DEFINE_OPEN.match(stripped)):
                pending = m["name"]
                L.add_noise(line_no, 0, "m4_define_open", text)
            elif pending and stripped.startswith("`"):
                value = _unquote(re.sub(r"\)(?:dnl\b.*)?$", "", stripped))
                L.add("postconf_settings", line_no, 1, name=pending, value=value)
                pending = None
            elif m := SECTION.match(stripped):
                section, instance = m["section"], None
                L.add_noise(line_no, 0, "section", text)
            elif section and (m := INSTANCE.match(stripped)):
                instance = m["name"]
                L.add_noise(line_no, 0, "section", text)
            elif not section and (m := BLOCK.match(stripped)):
                blocks.append(".".join(x.strip('"') for x in (m["kind"], m["name"]) if x))
                L.add_noise(line_no, 0, "section", text)
            elif stripped == "}" and blocks:
                blocks.pop()
                L.add_noise(line_no, 0, "section", text)
            else:
                name, value = self._setting(text, stripped, section, instance or ".".join(blocks) or None)
                L.add("postconf_settings", line_no, 1, name=name, value=value)
        yield L

    @staticmethod
    def _setting(text: str, stripped: str, section: str | None, instance: str | None) -> tuple[str, str]:
        prefix = ".".join(p for p in (section, instance) if p)
        if m := COURIER_LINE.match(stripped):
            if m["source"]:
                return f"{m['file']}.source", m["source"]
            return f"{m['file']}.{m['name']}", m["value"].strip('"')
        if not section and (m := QMAIL_LINE.match(stripped)) and QMAIL_CONTROL.match(stripped):
            return m["name"], m["value"]
        if m := M4_DEFINE.match(stripped):
            return m["name"], m["value"] or ""
        if m := M4_CALL.match(stripped) or M4_OPEN.match(stripped):
            return m["name"], _unquote(m["value"])
        if stripped.startswith("`"):  # the rest of a macro call begun on a line above
            return "m4_continued", _unquote(re.sub(r"\)(?:dnl\b.*)?$", "", stripped))
        if not section and (m := NAMED_LIST.match(stripped)):
            return f"{m['kind']}.{m['name']}", m["value"].strip()
        if section == "acl" and (m := SETTING.match(text)):
            # an ACL statement's condition or modifier on a line of its own: `message = ...`
            return f"{prefix}.{m['name']}", m["value"].strip()
        if section != "acl" and (m := SETTING.match(text)):
            # a value in double quotes is the text inside them (doveconf quotes one that ends
            # in a space: `log_timestamp = "%Y-%m-%d %H:%M:%S "`)
            value = m["value"].strip()
            if len(value) >= 2 and value[0] == value[-1] == '"' and '"' not in value[1:-1]:
                value = value[1:-1]
            return (f"{prefix}.{m['name']}" if prefix else m["name"]), value
        word, _, rest = stripped.partition(" ")
        return (f"{prefix}.{word}" if prefix else word), rest.strip()
