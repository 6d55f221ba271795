"""Bounded POP3 and IMAP load on a loopback Dovecot, for scripts/record/postfix_variants.sh.

Each round takes the next user of the list and alternates POP3 (STAT, TOP of the first message,
RETR and DELE of every message, QUIT) and IMAP (SELECT, FETCH headers and bodies, STORE
\\Deleted, EXPUNGE, LOGOUT); every tenth round logs in with a wrong password instead. Stops after
`seconds`, at most `rate` rounds a minute. Prints one CSV row per round:
utc,protocol,user,ok,messages.

usage: python3 mailbox_client.py USERS_FILE PASSWORD_FILE SECONDS RATE_PER_MINUTE
"""

from __future__ import annotations

import imaplib
import poplib
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HOST = "127.0.0.1"


def pop3_round(user: str, password: str) -> int:
    c = poplib.POP3(HOST, 110, timeout=10)
    try:
        c.user(user)
        c.pass_(password)
        n, _ = c.stat()
        if n:
            c.top(1, 0)
        for i in range(1, n + 1):
            c.retr(i)
            c.dele(i)
        return n
    finally:
        c.quit()


def imap_round(user: str, password: str) -> int:
    c = imaplib.IMAP4(HOST, 143, timeout=10)
    try:
        c.login(user, password)
        _, data = c.select("INBOX")
        n = int(data[0])
        if n:
            c.fetch("1:*", "(BODY.PEEK[HEADER])")
            c.fetch("1:*", "(BODY[])")
            c.store("1:*", "+FLAGS", "\\Deleted")
            c.expunge()
        c.close()
        return n
    finally:
        c.logout()


def main(users_file: str, password_file: str, seconds: float, rate: float) -> int:
    users = [ln.strip() for ln in Path(users_file).read_text().splitlines() if ln.strip()]
    password = Path(password_file).read_text().strip()
    gap = 60.0 / rate
    end = time.monotonic() + seconds
    print("utc,protocol,user,ok,messages", flush=True)
    i = 0
    while time.monotonic() < end:
        start = time.monotonic()
        user = users[i % len(users)]
        proto = "pop3" if i % 2 == 0 else "imap"
        pw = password if i % 10 != 9 else "wrong-password"
        ok, n = 1, 0
        try:
            n = pop3_round(user, pw) if proto == "pop3" else imap_round(user, pw)
        except (poplib.error_proto, imaplib.IMAP4.error, OSError):
            ok = 0
        print(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ},{proto},{user},{ok},{n}", flush=True)
        i += 1
        time.sleep(max(0.0, gap - (time.monotonic() - start)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])))
