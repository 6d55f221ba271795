//! Courier MTA (courier-mta) lines: courierd, the scheduler; courieresmtpd, the SMTP
//! server; the delivery modules (courierlocal, courieresmtp, courierdsn, ...), which all log
//! a delivery in one format (Courier's libs/comctlfile.c):
//!
//! - `id=ID,from=<s>,addr=<a>,size=N,success: TEXT` a delivery with its reply
//! - `id=ID,from=<s>,addr=<a>: TEXT` a reply or connection note, then
//!   `id=ID,from=<s>,addr=<a>[,size=N],status: success|failure|deferred` its outcome

use crate::cols::{Row, C};
use crate::scan::*;

/// Courier MTA programs (the POP3/IMAP servers are mailbox.rs's).
pub fn is_mta(prog: &[u8]) -> bool {
    matches!(
        prog,
        b"courierd" | b"courierlocal" | b"courieresmtp" | b"courieresmtpd" | b"courierdsn" | b"courieruucp" | b"courierfax"
    )
}

/// `key` (with its `=`) up to the next `,` or `: `, at the start or after a `,`.
fn field<'a>(m: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = if m.starts_with(key) {
        key.len()
    } else {
        let mut want = Vec::with_capacity(key.len() + 1);
        want.push(b',');
        want.extend_from_slice(key);
        find(m, &want)? + want.len()
    };
    let r = &m[at..];
    let mut end = r.len();
    for (i, &b) in r.iter().enumerate() {
        if b == b',' || (b == b':' && r.get(i + 1) == Some(&b' ')) {
            end = i;
            break;
        }
    }
    Some(&r[..end])
}

fn angle(x: Option<&[u8]>) -> Option<&[u8]> {
    let x = x?;
    let x = x.strip_prefix(b"<").unwrap_or(x);
    nonempty(x.strip_suffix(b">").unwrap_or(x))
}

/// The SMTP code that starts `text` (`550 ...`).
fn code(text: &[u8]) -> Option<i64> {
    if text.len() >= 3 && text[..3].iter().all(|&c| is_digit(c)) && text.get(3).is_none_or(|&c| c == b' ' || c == b'-') {
        to_i32(&text[..3])
    } else {
        None
    }
}

pub fn parse<'a>(row: &mut Row<'a>, prog: &'a [u8], m: &'a [u8]) {
    match prog {
        b"courierd" => courierd(row, m),
        b"courieresmtpd" => esmtpd(row, m),
        _ => delivery(row, prog, m),
    }
}

fn courierd<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    let id = field(m, b"id=");
    let kind: &[u8] = if m.starts_with(b"newmsg,") {
        // `newmsg,id=ID: dns; localhost ([::ffff:127.0.0.1])`: how it came in
        let how = find(m, b": ").map(|p| &m[p + 2..]);
        let client = how.map(|h| h.strip_prefix(b"dns; ").unwrap_or(h));
        row.so(C::client, client.and_then(nonempty));
        if let Some(c) = client {
            if let (Some(a), Some(b)) = (find_byte(c, b'['), find_byte(c, b']')) {
                if a < b {
                    row.so(C::client_ip, nonempty(&c[a + 1..b]));
                }
            }
        }
        b"arrival"
    } else if m.starts_with(b"started,") {
        // a delivery attempt handed to a module: `started,id=ID,from=<s>,module=local,host=...,addr=<a>`
        row.so(C::sender, angle(field(m, b"from=")));
        row.so(C::mailer, field(m, b"module=").and_then(nonempty));
        row.so(C::recipient, angle(field(m, b"addr=")));
        b"qmgr_from"
    } else if m.starts_with(b"completed,") {
        b"removed"
    } else if m.starts_with(b"Waiting.") {
        b"status"
    } else if m.starts_with(b"id=") && find(m, b",addr=<").is_some() {
        // courierd refusing a recipient itself (`...,addr=<nouser1@dom>: 550 User <nouser1>
        // unknown`, then `...,status: failure`): the delivery modules' format
        return delivery(row, b"courierd", m);
    } else if is_daemon_note(m) {
        b"master"
    } else {
        b"other"
    };
    if kind != b"status" && kind != b"other" {
        row.so(C::queue_id, id.and_then(nonempty));
    }
    row.s(C::kind, kind);
}

/// courierd's own start and stop: its modules loaded, installed, initialised and started,
/// its queue's limits and purges (`Started ./courierlocal, pid=276, maxdels=10, ...`,
/// `SHUTDOWN: Stopping...`).
fn is_daemon_note(m: &[u8]) -> bool {
    [
        b"Loading STATIC transport module".as_slice(),
        b"Installing ",
        b"Installed: module.",
        b"Initializing ",
        b"Started ./courier",
        b"Purging /",
        b"queuelo=",
        b"SHUTDOWN: ",
        b"Courier ",
    ]
    .iter()
    .any(|w| m.starts_with(w))
}

fn esmtpd<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    if m.starts_with(b"started,") {
        // `started,ip=[::ffff:127.0.0.1],port=[40004]`
        let ip = field(m, b"ip=").map(|x| x.strip_prefix(b"[").unwrap_or(x)).map(|x| x.strip_suffix(b"]").unwrap_or(x));
        row.so(C::client, ip.and_then(nonempty));
        row.so(C::client_ip, ip.and_then(nonempty));
        row.s(C::kind, b"connect");
        return;
    }
    if m.starts_with(b"error,") {
        // `error,relay=IP,port=N,from=<s>,to=<r>: 550 User <r> unknown`: the client got that
        // reply; `error,relay=IP,port=N,msg="...",cmd: ...` is a session error
        row.so(C::client, field(m, b"relay=").and_then(nonempty));
        row.so(C::client_ip, field(m, b"relay=").and_then(nonempty));
        row.i(C::client_port, field(m, b"port=").and_then(to_i32));
        let reply = find(m, b": ").map(|p| &m[p + 2..]);
        let smtp = reply.and_then(code);
        let to = field(m, b"to=");
        let from = field(m, b"from=");
        if smtp.is_some() && (to.is_some() || from.is_some()) {
            row.s(C::kind, b"reject");
            row.s(C::reject_action, b"reject");
            row.s(C::reject_stage, if to.is_some() { b"RCPT" } else { b"MAIL" });
            // `from=<>`: the null sender (a bounce), as Exim's `<= <>`
            row.so(C::sender, from.map(|f| angle(Some(f)).unwrap_or_default()));
            row.so(C::recipient, to.map(|t| angle(Some(t)).unwrap_or_default()));
            row.i(C::smtp_code, smtp);
            row.so(C::reason, reply.map(|r| &r[4.min(r.len())..]).and_then(nonempty));
        } else {
            row.s(C::kind, b"error");
            let msg = field(m, b"msg=");
            row.so(C::reason, msg.and_then(nonempty));
            // `msg="535 Authentication failed."`: the reply the session error got
            row.i(
                C::smtp_code,
                msg.map(|x| x.strip_prefix(b"\"").unwrap_or(x))
                    .and_then(code),
            );
        }
        return;
    }
    // couriertcpd's notes on its limit: `2 maximum active connections.`, `2 active connections.`
    let n = run(m, is_digit);
    if n > 0 && (m[n..] == *b" maximum active connections." || m[n..] == *b" active connections.") {
        row.s(C::kind, b"status");
        return;
    }
    row.s(C::kind, b"other");
}

fn delivery<'a>(row: &mut Row<'a>, prog: &'a [u8], m: &'a [u8]) {
    let Some(addr_at) = m.starts_with(b"id=").then(|| find(m, b",addr=<")).flatten() else {
        row.s(C::kind, b"other");
        return;
    };
    row.so(C::queue_id, field(m, b"id=").and_then(nonempty));
    row.so(C::sender, angle(field(m, b"from=")));
    let a = &m[addr_at + 7..];
    let Some(close) = find_byte(a, b'>') else {
        row.s(C::kind, b"other");
        return;
    };
    row.so(C::recipient, nonempty(&a[..close]));
    // the module (`local`, `esmtp`, `dsn`, ...); none when courierd refused the address itself
    row.so(C::mailer, prog.strip_prefix(b"courier").filter(|&x| x != b"d").and_then(nonempty));
    let mut r = &a[close + 1..];
    if let Some(s) = r.strip_prefix(b",size=") {
        let n = run(s, is_digit);
        row.i(C::size, to_i64(&s[..n]));
        r = &s[n..];
    }
    if let Some(text) = r.strip_prefix(b",success: ") {
        row.s(C::kind, b"delivery");
        row.s(C::status, b"sent");
        row.so(C::status_text, nonempty(text));
        row.i(C::smtp_code, code(text));
    } else if let Some(w) = r.strip_prefix(b",status: ") {
        row.s(C::kind, b"delivery");
        row.so(
            C::status,
            match w {
                b"success" => Some(b"sent".as_slice()),
                b"failure" => Some(b"bounced".as_slice()),
                b"deferred" => Some(b"deferred".as_slice()),
                _ => None,
            },
        );
    } else if let Some(text) = r.strip_prefix(b": ") {
        // the reply (or connection note) the `,status:` line after it concludes
        row.s(C::kind, b"delivery_reply");
        row.so(C::reply_text, nonempty(text));
        row.i(C::smtp_code, code(text));
    } else {
        row.s(C::kind, b"other");
    }
}
