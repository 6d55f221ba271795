//! Courier POP3/IMAP lines (courier-pop, courier-imap), into the same `mailbox_*` kinds and
//! columns as Dovecot's. Shapes from Courier's pop3d/imapd logging (syslog tag `pop3d`,
//! `pop3d-ssl`, `imapd`, `imapd-ssl`):
//!
//! `LOGIN, user=u, ip=[::ffff:127.0.0.1], port=[41477]`
//! `LOGOUT, user=u, ip=[...], port=[...], top=0, retr=496, rcvd=32, sent=672, time=0, stls=1`
//! `LOGOUT, user=u, ip=[...], headers=0, body=0, rcvd=635, sent=1872, time=4477, starttls=1`
//! `LOGIN FAILED, user=u, ip=[...]`, `DISCONNECTED, user=u, ...`, `TIMEOUT, user=u, ...`,
//! `Connection, ip=[...]` (kind `mailbox_connect`: a connection before any login).
//!
//! Courier counts bytes, not messages: pop3d's `top`/`retr` and imapd's `headers`/`body` are
//! the bytes sent for TOP/RETR (header/body fetches), so they fill `top_bytes`/`retr_bytes` and
//! the `*_msgs` columns stay null; `rcvd`/`sent` are the session's bytes in and out.

use crate::cols::{Row, C};
use crate::scan::*;

/// The Courier programs this parser takes, and the service each one serves.
pub fn courier_service(prog: &[u8]) -> Option<&'static [u8]> {
    match prog {
        b"pop3d" | b"pop3d-ssl" | b"courierpop3login" | b"courierpop3d" => Some(b"pop3"),
        b"imapd" | b"imapd-ssl" | b"imaplogin" => Some(b"imap"),
        _ => None,
    }
}

/// `key=N` up to the next `,` (None when absent or not a number).
fn num(m: &[u8], key: &[u8]) -> Option<i64> {
    until_after(m, key, b',').and_then(|v| to_i64(trim_ascii_ws(v)))
}

/// `ip=[::ffff:1.2.3.4]` -> `1.2.3.4`; a real IPv6 address is kept as it is.
fn client_ip(m: &[u8]) -> Option<&[u8]> {
    let ip = until_after(m, b"ip=[", b']')?;
    let v4 = ip.strip_prefix(b"::ffff:").filter(|r| !r.is_empty() && r.iter().all(|c| c.is_ascii_digit() || *c == b'.'));
    nonempty(v4.unwrap_or(ip))
}

pub fn courier<'a>(row: &mut Row<'a>, svc: &'static [u8], m: &'a [u8]) {
    row.s(C::kind, b"other");
    row.s(C::service, svc);
    let kind: &[u8] = if m.starts_with(b"LOGIN FAILED,") {
        b"mailbox_auth_failed"
    } else if m.starts_with(b"LOGIN,") {
        b"mailbox_login"
    } else if m.starts_with(b"LOGOUT,") {
        b"mailbox_logout"
    } else if m.starts_with(b"DISCONNECTED,") || m.starts_with(b"TIMEOUT,") || m.starts_with(b"Disconnected,") {
        b"mailbox_disconnect"
    } else if m.starts_with(b"Connection,") {
        b"mailbox_connect"
    } else {
        b"other"
    };
    row.s(C::kind, kind);
    // `user=` is the first key after the verb; it ends at `, ip=`
    if let Some(u) = each_after(m, b"user=", |r| find(r, b", ip=").map(|e| &r[..e])) {
        row.so(C::mailbox_user, nonempty(u));
    }
    row.so(C::client_ip, client_ip(m));
    if let Some(p) = until_after(m, b"port=[", b']') {
        row.i(C::client_port, to_i64(p));
    }
    if kind == b"mailbox_logout" || kind == b"mailbox_disconnect" {
        let (top, retr) = if svc == b"pop3" { (b"top=".as_slice(), b"retr=".as_slice()) } else { (b"headers=".as_slice(), b"body=".as_slice()) };
        row.i(C::top_bytes, num(m, top));
        row.i(C::retr_bytes, num(m, retr));
        row.i(C::bytes_in, num(m, b"rcvd="));
        row.i(C::bytes_out, num(m, b"sent="));
    }
}
