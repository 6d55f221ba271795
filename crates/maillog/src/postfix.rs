//! Postfix: kind by prefix tests on `b` (the message after the queue id), then its fields.

use crate::cols::{Row, C};
use crate::scan::*;

const REJECT_ACTIONS: &[&[u8]] = &[
    b"reject",
    b"warn",
    b"reject_warning",
    b"milter-reject",
    b"warning",
    b"hold",
    b"discard",
    b"milter-hold",
    b"milter-discard",
];

fn kind_of(prog: &[u8], b: &[u8], has_qid: bool, has_q: bool) -> &'static [u8] {
    if b.starts_with(b"to=") && find(b, b", status=").is_some() {
        return b"delivery";
    }
    if b.starts_with(b"connect from ") {
        return b"connect";
    }
    if b.starts_with(b"disconnect from ") {
        return b"disconnect";
    }
    if b.starts_with(b"client=") {
        return b"client";
    }
    if b.starts_with(b"message-id=") || b.starts_with(b"resent-message-id=") {
        return b"message_id";
    }
    // `removed (canceled)`: Postfix 3.10's cleanup, after a header or body check rejected it
    if b == b"removed" || (b.starts_with(b"removed (") && b.ends_with(b")")) {
        return b"removed";
    }
    // `from=<s>`; some relays and log tools drop the brackets: `from=s, size=N, ...`
    if b.starts_with(b"from=") {
        if find(b, b", size=").is_some() {
            return b"qmgr_from";
        }
        // `status=expired, returned to sender`; `force-expired` after `postsuper -e` (3.7+)
        if find(b, b", status=expired").is_some() || find(b, b", status=force-expired").is_some() {
            return b"expired";
        }
    }
    // Postfix before 2.3 logged smtpd's rejects with neither queue id nor `NOQUEUE`
    let old_reject = !has_q && b.starts_with(b"reject: ") && prog.ends_with(b"/smtpd");
    if has_q || old_reject {
        let head = upto(b, b':');
        if b.len() > head.len() + 1 && b[head.len() + 1] == b' ' && REJECT_ACTIONS.contains(&head) {
            return match head {
                b"reject" | b"milter-reject" => b"reject",
                b"reject_warning" => b"reject_warning",
                b"warning" => {
                    if is_cleanup_check(b) {
                        b"reject_warning"
                    } else {
                        b"warning"
                    }
                }
                b"hold" | b"milter-hold" => b"hold",
                // access(5) WARN: `warn: RCPT from host[ip]: text; from=<s> to=<r> ...`
                b"warn" => b"warn",
                _ => b"discard",
            };
        }
    }
    if has_qid && (b.starts_with(b"uid=") || b.starts_with(b"sender=")) {
        return b"pickup";
    }
    if b.starts_with(b"sender non-delivery notification: ") || b.starts_with(b"postmaster non-delivery notification: ") {
        return b"bounce_notice";
    }
    if b.starts_with(b"sender delay notification: ") {
        return b"defer_notice";
    }
    if b.starts_with(b"sender delivery status notification: ") {
        return b"dsn_notice";
    }
    for w in [b"warning".as_slice(), b"error", b"fatal", b"panic"] {
        if b.starts_with(w) && b[w.len()..].starts_with(b": ") {
            return match w {
                b"warning" => b"warning",
                b"error" => b"error",
                b"fatal" => b"fatal",
                _ => b"panic",
            };
        }
    }
    if b.starts_with(b"lost connection after ") {
        return b"lost_connection";
    }
    if b.starts_with(b"timeout after ") {
        return b"timeout";
    }
    if b.starts_with(b"connect to ") {
        return b"connect_error";
    }
    if let Some(k) = notice_kind(prog, b) {
        return k;
    }
    for (suf, k) in [
        (b"/master".as_slice(), b"master".as_slice()),
        (b"/anvil", b"anvil"),
        (b"/postscreen", b"postscreen"),
        (b"/scache", b"scache"),
        (b"/pickup", b"pickup"),
        (b"/dnsblog", b"dnsblog"),
        (b"/tlsproxy", b"tlsproxy"),
        (b"/postsuper", b"postsuper"),
        (b"/verify", b"verify"),
        (b"/tlsmgr", b"tlsmgr"),
    ] {
        if prog.ends_with(suf) {
            return match k {
                b"master" => b"master",
                b"anvil" => b"anvil",
                b"postscreen" => b"postscreen",
                b"scache" => b"scache",
                b"dnsblog" => b"dnsblog",
                b"tlsproxy" => b"tlsproxy",
                b"postsuper" => b"postsuper",
                b"verify" => b"verify",
                b"tlsmgr" => b"tlsmgr",
                _ => b"pickup",
            };
        }
    }
    if prog.ends_with(b"postfix-script") || prog == b"postfix" {
        return b"script";
    }
    b"other"
}

/// Access and header/body check actions other than reject, hold and discard (access(5),
/// header_checks(5)): `filter: RCPT from ...`, `info: header Subject: ...`, `prepend: ...`,
/// `milter-header-redirect: ...`, smtpd's before-queue filter verdict `proxy-accept: ...`.
const CHECK_ACTIONS: &[&[u8]] =
    &[b"filter", b"redirect", b"prepend", b"replace", b"info", b"proxy-accept", b"milter-header-redirect", b"milter-redirect"];

/// The daemons' notices that are neither a message's event nor a warning: TLS set-up,
/// SMTP protocol slips of a client, the remote's replies and failures on the smtp side,
/// table and cache upkeep.
fn notice_kind(prog: &[u8], b: &[u8]) -> Option<&'static [u8]> {
    let head = upto(b, b':');
    if b.len() > head.len() + 1 && b[head.len() + 1] == b' ' {
        if CHECK_ACTIONS.contains(&head) {
            return Some(b"check_action");
        }
        if head == b"proxy-reject" {
            return Some(b"reject");
        }
    }
    let k: &'static [u8] = if b.starts_with(b"improper command pipelining after ") {
        b"pipelining"
    } else if b.starts_with(b"too many errors after ") {
        b"too_many_errors"
    } else if b.starts_with(b"bare <LF> received after ") {
        b"bare_lf"
    } else if b.starts_with(b"setting up TLS connection ")
        || b.starts_with(b"TLS connection established ")
        || find(b, b" TLS connection established ").is_some_and(|p| !b[..p].contains(&b' '))
    {
        b"tls"
    } else if b.starts_with(b"SSL_accept error from ")
        || b.starts_with(b"SSL_connect error to ")
        || b.starts_with(b"certificate verification failed for ")
        || b.starts_with(b"Cannot start TLS: ")
    {
        b"tls_error"
    } else if b.starts_with(b"host ") && (find(b, b" said: ").is_some() || find(b, b" refused to talk to me: ").is_some()) {
        b"remote_reply"
    } else if b.starts_with(b"SASL authentication failed; server ") {
        b"sasl_failed"
    } else if b.starts_with(b"lost connection with ") || (b.starts_with(b"conversation with ") && find(b, b" timed out ").is_some()) {
        b"conversation_error"
    } else if b.starts_with(b"enabling PIX workarounds: ") {
        b"pix_workaround"
    } else if b.starts_with(b"discarding EHLO keywords: ") {
        b"ehlo_discard"
    } else if b.starts_with(b"table ") && b.ends_with(b" has changed -- restarting") {
        b"table_changed"
    } else if b.starts_with(b"cache ") && find(b, b" cleanup: ").is_some() {
        b"cache_cleanup"
    } else if b.starts_with(b"skipped, still being delivered") {
        b"skipped"
    } else if prog.ends_with(b"/postsuper") {
        b"postsuper"
    } else {
        return None;
    };
    Some(k)
}

/// The remote named in an smtp-side notice: `host X[ip] said: ...`, `... with X[ip] while
/// ...`, `... to X[ip]:port: ...`, `... for X[ip]:port: ...`, `server X[ip] said: ...`.
fn remote_in_notice(b: &[u8]) -> Option<&[u8]> {
    for lit in [b"host ".as_slice(), b" with ", b" to ", b" for ", b"server "] {
        if let Some(h) = each_after(b, lit, |r| first_bracket_host(r).filter(|h| r.starts_with(h) && is_ip_in_brackets(h))) {
            return Some(h);
        }
    }
    None
}

/// `^[a-z_-]+: (?:header|body|END-OF-MESSAGE) `
fn is_cleanup_check(b: &[u8]) -> bool {
    let n = run(b, |c| c.is_ascii_lowercase() || c == b'_' || c == b'-');
    if n == 0 || !b[n..].starts_with(b": ") {
        return false;
    }
    let r = &b[n + 2..];
    r.starts_with(b"header ") || r.starts_with(b"body ") || r.starts_with(b"END-OF-MESSAGE ")
}

pub fn parse<'a>(row: &mut Row<'a>, prog: &'a [u8], b: &'a [u8], has_qid: bool, has_q: bool) {
    let kind = kind_of(prog, b, has_qid, has_q);
    row.s(C::kind, kind);
    if kind == b"removed" && crate::classify::postfix_daemon(prog) == b"postsuper" {
        row.s(C::status, b"removed"); // `postsuper -d`: deleted from the queue, not delivered
    }
    if kind == b"removed" && b == b"removed (discarded)" {
        row.s(C::status, b"discarded"); // a DISCARD check claimed delivery and dropped it
    }
    match kind {
        b"delivery" => delivery(row, b),
        b"qmgr_from" => qmgr_from(row, b),
        b"reject" | b"reject_warning" | b"hold" | b"discard" | b"warn" => reject(row, b),
        b"client" => {
            let aux = &b[7..];
            row.so(C::client, nonempty(upto(aux, b',')));
        }
        b"message_id" => {
            let mid = find(b, b"message-id=").unwrap() + 11;
            let aux = if b.get(mid) == Some(&b'<') { &b[mid + 1..] } else { &b[mid..] };
            // `message-id=<>` (and a bare `message-id=`) is an empty id, not a missing one
            row.s(C::message_id, upto(aux, b'>'));
        }
        b"connect" => row.s(C::client, &b[13..]),
        b"disconnect" => {
            let aux = &b[16..];
            row.s(C::client, upto(aux, b' '));
            if let Some(sp) = find_byte(aux, b' ') {
                if sp > 0 {
                    row.so(C::commands, nonempty(&aux[sp + 1..]));
                }
            }
            if let Some(p) = find(b, b" commands=") {
                let cs = &b[p + 10..];
                let ok = to_i32(upto(cs, b'/'));
                row.i(C::commands_ok, ok);
                let total = match find_byte(cs, b'/') {
                    Some(s) => nonempty(upto(&cs[s + 1..], b'/')).and_then(to_i32),
                    None => None,
                };
                row.i(C::commands_total, total.or(ok));
            }
        }
        b"expired" => {
            // `from=<>`: the null sender, '' as on qmgr's line
            row.so(C::sender, bare_or_angle(&b[5..], b", "));
            if let Some(p) = find(b, b", status=") {
                let r = &b[p + 9..];
                let n = run(r, |c| c.is_ascii_alphabetic() || c == b'-');
                row.so(C::status, nonempty(&r[..n]));
                row.so(C::status_text, r[n..].strip_prefix(b", ").and_then(nonempty));
            }
        }
        b"pickup" => {
            // (?:from|sender)=<([^>]*)>, leftmost of either; or a bare `from=s` ending the line
            let f = find_angle_either(b).or_else(|| token_after(b, b" from="));
            row.so(C::sender, f.and_then(nonempty));
            // `postsuper -r` gives a requeued message a new queue id: `uid=0 from=<s> orig_id=OLD`
            row.so(C::related_queue_id, token_after(b, b" orig_id=").and_then(nonempty));
        }
        b"bounce_notice" | b"defer_notice" | b"dsn_notice" => {
            let r = each_after(b, b"notification: ", |r| {
                if !r.is_empty() && r.iter().all(|&c| !is_space(c)) {
                    Some(r)
                } else {
                    None
                }
            });
            row.so(C::related_queue_id, r);
        }
        b"warning" => {
            row.s(C::severity, b"warning");
            row.s(C::detail, &b[9..]);
            // a message's warning may name it first: `warning: QID: defer service failure`
            if !has_qid {
                row.so(C::queue_id, crate::parse::id_prefix(&b[9..]).filter(|q| crate::parse::is_postfix_qid(q)));
            }
        }
        b"error" | b"fatal" | b"panic" => {
            row.s(C::severity, kind);
            row.s(C::detail, &b[7..]);
        }
        b"lost_connection" => lost(row, b, 22),
        b"pipelining" => lost(row, b, 35),
        b"too_many_errors" => lost(row, b, 22),
        b"bare_lf" => lost(row, b, 25),
        b"check_action" => reject(row, b),
        b"remote_reply" | b"sasl_failed" | b"conversation_error" | b"pix_workaround" => {
            if let Some(h) = remote_in_notice(b) {
                split_host(row, h, C::relay_host, C::relay_ip, C::relay_port);
            }
            let t = each_after(b, b" said: ", Some).or_else(|| each_after(b, b" refused to talk to me: ", Some));
            if let Some(t) = t {
                reply_in_text(row, t);
            }
        }
        b"tls_error" => {
            if let Some(h) = remote_in_notice(b) {
                split_host(row, h, C::relay_host, C::relay_ip, C::relay_port);
            }
            if let Some(h) = each_after(b, b" error from ", |r| first_bracket_host(r).filter(|h| r.starts_with(h))) {
                split_host(row, h, C::client_host, C::client_ip, C::client_port);
            }
            if let Some(p) = memchr::memmem::rfind(b, b": ") {
                row.so(C::detail, nonempty(&b[p + 2..]));
            }
        }
        b"timeout" => lost(row, b, 14),
        b"connect_error" => {
            let r = &b[11..];
            // the ':' after `host[ip]` (an IPv6 address holds colons of its own)
            let c = match (find_byte(r, b'['), find(r, b"]:")) {
                (Some(lb), Some(rb)) if lb < rb && find(&r[..lb], b": ").is_none() => Some(rb + 1),
                _ => find_byte(r, b':'),
            };
            let relay = c.and_then(|c| {
                let after = &r[c..];
                let n = run(&after[1..], is_digit);
                if n > 0 && after[1 + n..].starts_with(b": ") {
                    Some(&r[..c + 1 + n])
                } else if after.starts_with(b": ") {
                    Some(&r[..c])
                } else {
                    None
                }
            });
            row.so(C::relay, relay.and_then(nonempty));
            if let Some(p) = rfind_byte(b, b':') {
                if b.get(p + 1) == Some(&b' ') {
                    row.so(C::detail, nonempty(&b[p + 2..]));
                }
            }
            if let Some(r) = relay {
                split_host(row, r, C::relay_host, C::relay_ip, C::relay_port);
            }
        }
        _ => {}
    }
    extras(row, prog, kind, b);
}

/// ` from (\S+)$` and `^<prefix>(.*?) from \S+$`
fn lost<'a>(row: &mut Row<'a>, b: &'a [u8], prefix: usize) {
    let mut client = None;
    let mut detail = None;
    let mut start = 0;
    while let Some(i) = find(&b[start..], b" from ") {
        let p = start + i;
        let r = &b[p + 6..];
        if !r.is_empty() && r.iter().all(|&c| !is_space(c)) {
            if client.is_none() {
                client = Some(r);
            }
            if p >= prefix && detail.is_none() {
                detail = Some(&b[prefix..p]);
            }
            if detail.is_some() {
                break;
            }
        }
        start = p + 1;
    }
    row.so(C::client, client);
    row.so(C::detail, detail.and_then(nonempty));
}

fn find_angle_either(b: &[u8]) -> Option<&[u8]> {
    let f = memchr::memmem::find_iter(b, b"from=<").find_map(|i| find_byte(&b[i + 6..], b'>').map(|j| (i, &b[i + 6..i + 6 + j])));
    let s = memchr::memmem::find_iter(b, b"sender=<").find_map(|i| find_byte(&b[i + 8..], b'>').map(|j| (i, &b[i + 8..i + 8 + j])));
    match (f, s) {
        (Some(a), Some(c)) => Some(if a.0 <= c.0 { a.1 } else { c.1 }),
        (Some(a), None) => Some(a.1),
        (None, Some(c)) => Some(c.1),
        _ => None,
    }
}

/// `to=<a>, [orig_to=<b>, ]relay=R, [conn_use=N, ]delay=D, [delays=a/b/c/d, ][dsn=X, ]status=S[ (text)]`.
/// Addresses may come without angle brackets (local(8) and pipe(8) of older Postfix), and
/// fields this parser does not read (`tls=dane/requiretls` of Postfix 3.10, ...) may sit
/// among them: every `key=value, ` pair before `status=` is read by its key.
fn delivery<'a>(row: &mut Row<'a>, b: &'a [u8]) {
    #[derive(Default)]
    struct D<'a> {
        to: &'a [u8],
        orig: Option<&'a [u8]>,
        relay: Option<&'a [u8]>,
        conn: Option<&'a [u8]>,
        delay: Option<&'a [u8]>,
        delays: Option<[&'a [u8]; 4]>,
        dsn: Option<&'a [u8]>,
        status: &'a [u8],
        text: Option<&'a [u8]>,
    }
    /// An address value: `<a>` or a bare `a` up to `, `; (value, rest after `, `).
    fn addr(r: &[u8]) -> Option<(&[u8], &[u8])> {
        if let Some(x) = r.strip_prefix(b"<") {
            let e = find_byte(x, b'>')?;
            Some((&x[..e], x[e + 1..].strip_prefix(b", ")?))
        } else {
            let e = find(r, b", ")?;
            Some((&r[..e], &r[e + 2..]))
        }
    }
    fn num(x: &[u8]) -> Option<&[u8]> {
        let n = run(x, |c| is_digit(c) || c == b'.');
        (n > 0 && n == x.len()).then_some(x)
    }
    fn m(b: &[u8]) -> Option<D<'_>> {
        let (to, mut r) = addr(b.strip_prefix(b"to=")?)?;
        let mut d = D { to, ..Default::default() };
        if let Some(o) = r.strip_prefix(b"orig_to=") {
            if let Some((v, x)) = addr(o) {
                d.orig = Some(v);
                r = x;
            }
        }
        loop {
            if let Some(s) = r.strip_prefix(b"status=") {
                let n = run(s, |c| c.is_ascii_alphabetic() || c == b'-');
                if n == 0 {
                    return None;
                }
                // `soft_bounce = yes` logs a bounce it keeps queued as `status=SOFTBOUNCE`:
                // a deferral (postconf(5))
                d.status = if &s[..n] == b"SOFTBOUNCE" { b"deferred" } else { &s[..n] };
                if let Some(t) = s[n..].strip_prefix(b" (") {
                    if let Some(e) = rfind_byte(t, b')') {
                        d.text = Some(&t[..e]);
                    }
                }
                return d.relay.and(d.delay).map(|_| d);
            }
            let eq = find_byte(r, b'=')?;
            let (key, rest) = (&r[..eq], &r[eq + 1..]);
            let e = find(rest, b", ")?;
            let v = &rest[..e];
            r = &rest[e + 2..];
            match key {
                b"relay" => d.relay = Some(v),
                b"conn_use" => d.conn = Some(v).filter(|v| !v.is_empty() && v.iter().all(|&c| is_digit(c))),
                b"delay" => d.delay = Some(num(v)?),
                b"dsn" => d.dsn = num(v),
                b"delays" => {
                    let mut parts = [&b""[..]; 4];
                    let mut it = v.split(|&c| c == b'/');
                    for p in parts.iter_mut() {
                        *p = it.next().and_then(num)?;
                    }
                    d.delays = it.next().is_none().then_some(parts);
                }
                _ => {} // a field this parser does not read
            }
        }
    }
    let Some(d) = m(b) else { return };
    row.so(C::recipient, nonempty(d.to));
    row.so(C::orig_to, d.orig.and_then(nonempty));
    let relay = d.relay.unwrap_or(b"");
    row.so(C::relay, nonempty(relay));
    row.i(C::conn_use, d.conn.and_then(to_i32));
    row.f(C::delay, d.delay.and_then(to_f64));
    if let Some(ds) = d.delays {
        row.f(C::delay_before_qmgr, to_f64(ds[0]));
        row.f(C::delay_in_qmgr, to_f64(ds[1]));
        row.f(C::delay_conn_setup, to_f64(ds[2]));
        row.f(C::delay_transmission, to_f64(ds[3]));
    }
    row.so(C::dsn, d.dsn);
    row.s(C::status, d.status);
    row.so(C::status_text, d.text.and_then(nonempty));
    if !relay.is_empty() {
        split_host(row, relay, C::relay_host, C::relay_ip, C::relay_port);
    }
    if let Some(t) = d.text {
        reply_in_text(row, t);
        // the next hop's queue id: a relay's or content filter's `250 2.0.0 Ok: queued as X`,
        // local(8)'s `forwarded as X`
        let next = memchr::memmem::rfind(t, b"queued as ").map(|p| &t[p + 10..]).or_else(|| t.strip_prefix(b"forwarded as "));
        if let Some(q) = next {
            let n = run(q, |c| c.is_ascii_alphanumeric());
            row.so(C::related_queue_id, nonempty(&q[..n]));
        }
    }
}

/// A remote reply in a delivery's status text: `250 2.0.0 Ok: queued as X` or
/// `host mx[1.2.3.4] said: 550 5.1.1 <u@x>: Recipient address rejected (in reply to RCPT TO command)`.
pub(crate) fn reply_in_text<'a>(row: &mut Row<'a>, t: &'a [u8]) {
    let r = match find(t, b" said: ") {
        Some(p) => &t[p + 7..],
        None => t,
    };
    if r.len() < 4 || !r[..3].iter().all(|&c| is_digit(c)) || !(r[3] == b' ' || r[3] == b'-') || !(b'2'..=b'5').contains(&r[0]) {
        return;
    }
    row.i(C::smtp_code, to_i32(&r[..3]));
    let mut rest = &r[4..];
    if let Some(n) = enhanced_len(rest) {
        row.s(C::enhanced_code, &rest[..n]);
        rest = rest[n..].strip_prefix(b" ").unwrap_or(&rest[n..]);
    }
    if let Some(p) = find(rest, b" (in reply to ") {
        rest = &rest[..p];
    }
    row.so(C::reply_text, nonempty(rest));
}

/// `\d\.\d{1,3}\.\d{1,3}` at the start, followed by a space or the end: its length.
fn enhanced_len(r: &[u8]) -> Option<usize> {
    if r.len() < 5 || !is_digit(r[0]) || r[1] != b'.' {
        return None;
    }
    let a = run(&r[2..], is_digit);
    if !(1..=3).contains(&a) || r.get(2 + a) != Some(&b'.') {
        return None;
    }
    let b = run(&r[3 + a..], is_digit);
    if !(1..=3).contains(&b) {
        return None;
    }
    let n = 3 + a + b;
    if r.len() == n || r[n] == b' ' {
        Some(n)
    } else {
        None
    }
}

/// `<s>` or a bare `s` at the start of `r`, up to `end` (None when neither ends there).
fn bare_or_angle<'a>(r: &'a [u8], end: &[u8]) -> Option<&'a [u8]> {
    match r.strip_prefix(b"<") {
        Some(x) => find_byte(x, b'>').filter(|&g| x[g + 1..].starts_with(end)).map(|g| &x[..g]),
        None => find(r, end).map(|e| &r[..e]),
    }
}

/// qmgr `from=<..>, size=N, nrcpt=N (queue active)` (or a bare `from=s, size=...`)
fn qmgr_from<'a>(row: &mut Row<'a>, b: &'a [u8]) {
    let Some(sender) = bare_or_angle(&b[5..], b", size=") else {
        row.s(C::sender, b"");
        return;
    };
    row.s(C::sender, sender);
    // the size follows the sender's `, size=`
    let brackets = if b[5] == b'<' { 2 } else { 0 };
    let z = 5 + sender.len() + brackets + 7;
    // `, nrcpt=N` since Postfix 2.x; before it the size ends at ` (queue active)`
    match find(b, b", nrcpt=") {
        Some(n) => {
            row.i(C::size, if n >= z { to_i64(&b[z..n]) } else { None });
            row.i(C::nrcpt, to_i32(upto(&b[n + 8..], b' ')));
        }
        None => row.i(C::size, to_i64(upto(&b[z..], b' '))),
    }
}

/// smtpd/postscreen/cleanup reject, reject_warning, hold, discard
fn reject<'a>(row: &mut Row<'a>, b: &'a [u8]) {
    let action = upto(b, b':');
    row.s(C::reject_action, action);
    // ^[a-z_-]+: (\S+)
    let n = run(b, |c| c.is_ascii_lowercase() || c == b'_' || c == b'-');
    if n > 0 && b[n..].starts_with(b": ") {
        let r = &b[n + 2..];
        row.so(C::reject_stage, nonempty(&r[..run(r, |c| !is_space(c))]));
    }
    // ` from ([^\s\[\];]*\[[^\]]*\](?::\d+)?)`
    let client = each_after(b, b" from ", |r| {
        let h = run(r, |c| !is_space(c) && c != b'[' && c != b']' && c != b';');
        if r.get(h) != Some(&b'[') {
            return None;
        }
        let e = find_byte(&r[h + 1..], b']')? + h + 1;
        let mut end = e + 1;
        if r.get(end) == Some(&b':') {
            let d = run(&r[end + 1..], is_digit);
            if d > 0 {
                end += 1 + d;
            }
        }
        Some(&r[..end])
    });
    row.so(C::client, client);
    // `: (\d{3})(?: (\d\.\d{1,3}\.\d{1,3}))? ([^;]*)`
    let mut start = 0;
    let mut coded = false;
    while let Some(i) = find(&b[start..], b": ") {
        let p = start + i + 2;
        let r = &b[p..];
        if r.len() >= 4 && r[..3].iter().all(|&c| is_digit(c)) && r[3] == b' ' {
            coded = true;
            row.i(C::smtp_code, to_i32(&r[..3]));
            let mut t = &r[4..];
            if let Some(n) = enhanced_len(t) {
                if t.get(n) == Some(&b' ') {
                    row.s(C::enhanced_code, &t[..n]);
                    t = &t[n + 1..];
                }
            }
            let text = upto(t, b';');
            row.so(C::reason, nonempty(text));
            row.so(C::reply_text, nonempty(text));
            break;
        }
        start = start + i + 1;
    }
    if !coded {
        // cleanup's refusals carry no SMTP code (smtpd adds it to its reply), only an enhanced
        // code and the text: a header or body check's `... helo=<h>: 5.7.1 text`, a milter's
        // `... from host[ip]: 5.7.1 text; from=<s> to=<r> ...`; the last `: ` so followed
        let coded_text = memchr::memmem::find_iter(b, b": ").filter_map(|p| {
            let t = &b[p + 2..];
            let n = enhanced_len(t)?;
            (t.get(n) == Some(&b' ')).then(|| (&t[..n], &t[n + 1..]))
        });
        if let Some((code, text)) = coded_text.last() {
            row.s(C::enhanced_code, code);
            let text = upto(text, b';');
            row.so(C::reason, nonempty(text));
            row.so(C::reply_text, nonempty(text));
        }
    }
    // `from=<>`: the null sender (a bounce), '' as qmgr's `from=<>` gives it
    row.so(C::sender, angle_after(b, b"; from=<").or_else(|| angle_after(b, b" from=<")));
    row.so(C::recipient, angle_after(b, b" to=<").and_then(nonempty));
    row.so(C::proto, token_after(b, b" proto="));
    row.so(C::helo, angle_after(b, b" helo=<").and_then(nonempty));
}

/// `host[ip]:port`, `[ip]:port`, `host [ip]`, `none`, `local`, `private/dovecot`
pub fn split_host<'a>(row: &mut Row<'a>, s: &'a [u8], ch: C, ci: C, cp: C) {
    match find_byte(s, b'[') {
        Some(lb) => {
            let Some(rb) = find_byte(&s[lb..], b']').map(|i| i + lb) else {
                row.s(ch, s);
                return;
            };
            let mut ip = &s[lb + 1..rb];
            if ip.contains(&b'/') {
                // a UNIX-domain socket: LMTP to `lmtp:unix:private/dovecot-lmtp` is logged as
                // `relay=myhostname[private/dovecot-lmtp]`; the socket is the relay, no address
                row.s(ch, ip);
                return;
            }
            let host = trim_ascii_ws(first_field(&s[..lb], b' '));
            row.so(ch, nonempty(host));
            if ip.len() > 5 && ip[..5].eq_ignore_ascii_case(b"ipv6:") {
                ip = &ip[5..];
            }
            row.so(ci, nonempty(ip));
            if s.get(rb + 1) == Some(&b':') {
                let d = run(&s[rb + 2..], is_digit);
                if d > 0 {
                    row.i(cp, to_i32(&s[rb + 2..rb + 2 + d]));
                }
            }
        }
        None => row.so(ch, nonempty(s)),
    }
}

/// First `host[ip]:port` (host optional) in `t`, as client fields.
fn first_bracket_host<'a>(t: &'a [u8]) -> Option<&'a [u8]> {
    let lb = find_byte(t, b'[')?;
    let rb = find_byte(&t[lb..], b']')? + lb;
    let start = t[..lb].iter().rposition(|&c| c == b' ' || c == b'(').map_or(0, |i| i + 1);
    let mut end = rb + 1;
    if t.get(end) == Some(&b':') {
        let d = run(&t[end + 1..], is_digit);
        if d > 0 {
            end += 1 + d; // a port; a bare ':' ends the address
        }
    }
    Some(&t[start..end])
}

/// `host[ip]...`: the bracket holds an address (hex digits, `.` and `:`, or `IPv6:...`).
fn is_ip_in_brackets(h: &[u8]) -> bool {
    let Some(lb) = find_byte(h, b'[') else { return false };
    let Some(rb) = find_byte(&h[lb..], b']').map(|i| i + lb) else { return false };
    let ip = &h[lb + 1..rb];
    let ip = if ip.len() > 5 && ip[..5].eq_ignore_ascii_case(b"ipv6:") { &ip[5..] } else { ip };
    ip.len() >= 2 && ip.iter().all(|&c| c.is_ascii_hexdigit() || c == b'.' || c == b':') && ip.iter().any(|&c| c == b'.' || c == b':')
}

/// The typed fields of daemons the old parser kept as text: client/relay split, TLS,
/// postscreen, dnsblog, anvil.
fn extras<'a>(row: &mut Row<'a>, prog: &'a [u8], kind: &[u8], b: &'a [u8]) {
    if let Some(c) = row.get_s(C::client) {
        split_host(row, c, C::client_host, C::client_ip, C::client_port);
    }
    if kind == b"tls" && b.starts_with(b"setting up TLS connection ") {
        // `setting up TLS connection from host[ip]` / `... to host[ip]:port`
        let r = &b[26..];
        if let Some(h) = r.strip_prefix(b"from ") {
            split_host(row, h, C::client_host, C::client_ip, C::client_port);
        } else if let Some(h) = r.strip_prefix(b"to ") {
            split_host(row, h, C::relay_host, C::relay_ip, C::relay_port);
        }
        return;
    }
    if kind == b"other" || kind == b"postscreen" || kind == b"tls" {
        // `Anonymous TLS connection established from host[ip]:port: TLSv1.3 with cipher X (256/256 bits)`
        // (Postfix before 2.11 logs no level: `TLS connection established from ...`)
        let at = if b.starts_with(b"TLS connection established ") { Some(0) } else { find(b, b" TLS connection established ").map(|p| p + 1) };
        if let Some(p) = at {
            row.so(C::tls_level, nonempty(trim_ascii_ws(&b[..p])));
            let r = &b[p + 27..];
            let (to, r) = match (r.strip_prefix(b"from "), r.strip_prefix(b"to ")) {
                (Some(x), _) => (false, x),
                (_, Some(x)) => (true, x),
                _ => return,
            };
            if let Some(e) = find(r, b": ") {
                let who = &r[..e];
                if to {
                    split_host(row, who, C::relay_host, C::relay_ip, C::relay_port);
                } else {
                    split_host(row, who, C::client_host, C::client_ip, C::client_port);
                }
                let t = &r[e + 2..];
                row.so(C::tls_protocol, nonempty(upto(t, b' ')));
                row.so(C::tls_cipher, token_after(t, b" with cipher "));
                if let Some(q) = find(t, b" (") {
                    let n = run(&t[q + 2..], is_digit);
                    if n > 0 {
                        row.i(C::tls_bits, to_i32(&t[q + 2..q + 2 + n]));
                    }
                }
            }
            return;
        }
    }
    if prog.ends_with(b"/postscreen") || prog.ends_with(b"/tlsproxy") {
        // verdict: the leading upper-case words (PASS NEW, DNSBL, PREGREET, HANGUP, COMMAND PIPELINING ...)
        let mut n = 0;
        while n < b.len() {
            let w = run(&b[n..], |c| c.is_ascii_uppercase() || c == b'-');
            if w == 0 || !(n + w == b.len() || b[n + w] == b' ') {
                break;
            }
            n += w;
            if n < b.len() && b.get(n + 1).is_some_and(|c| c.is_ascii_uppercase()) {
                n += 1;
            } else {
                break;
            }
        }
        let v = trim_ascii_ws(&b[..n]);
        if v.len() >= 3 && kind != b"reject" {
            row.s(C::verdict, v);
            if v == b"DNSBL" {
                if let Some(r) = digits_after(b, b"DNSBL rank ") {
                    row.i(C::dnsbl_rank, to_i32(r));
                }
            }
        }
        if row.get_s(C::client_ip).is_none() {
            if let Some(h) = first_bracket_host(b) {
                split_host(row, h, C::client_host, C::client_ip, C::client_port);
            }
        }
    } else if prog.ends_with(b"/dnsblog") {
        // addr 1.2.3.4 listed by domain zen.spamhaus.org as 127.0.0.2
        if let Some(r) = b.strip_prefix(b"addr ") {
            let ip = upto(r, b' ');
            row.so(C::client_ip, nonempty(ip));
            row.so(C::dnsbl_domain, token_after(r, b" listed by domain "));
            row.so(C::dnsbl_reply, token_after(r, b" as "));
            row.s(C::verdict, b"listed");
        }
    } else if prog.ends_with(b"/anvil") {
        // statistics: max connection rate 1/60s for (smtp:1.2.3.4) at Nov 21 22:04:34
        if let Some(r) = b.strip_prefix(b"statistics: ") {
            let name_end = r.iter().position(|c| c.is_ascii_digit()).unwrap_or(r.len());
            row.so(C::stat_name, nonempty(trim_ascii_ws(&r[..name_end])));
            row.so(C::stat_value, nonempty(upto(&r[name_end..], b' ')));
            if let Some(x) = each_after(r, b" for (", |x| find_byte(x, b')').map(|e| &x[..e])) {
                if let Some(c) = find_byte(x, b':') {
                    row.so(C::service, nonempty(&x[..c]));
                    row.so(C::client_ip, nonempty(&x[c + 1..]));
                }
            }
        }
    } else if kind == b"warning" && prog.ends_with(b"/smtpd") && row.get_s(C::client).is_none() {
        // `warning: host[ip]:port: SASL LOGIN authentication failed: ...`,
        // `warning: non-SMTP command from host[ip]: GET / HTTP/1.1`
        let d = &b[9..];
        let at = match first_bracket_host(d) {
            Some(h) if d.starts_with(h) && d[h.len()..].starts_with(b": ") => Some(h),
            _ => each_after(d, b" from ", |r| first_bracket_host(r).filter(|h| r.starts_with(h))),
        };
        if let Some(h) = at.filter(|h| is_ip_in_brackets(h)) {
            split_host(row, h, C::client_host, C::client_ip, C::client_port);
        }
    } else if matches!(kind, b"other" | b"pipelining" | b"too_many_errors" | b"bare_lf")
        && (prog.ends_with(b"/smtpd") || prog.ends_with(b"/smtp") || prog.ends_with(b"/lmtp"))
    {
        // e.g. `SSL_accept error from host[ip]:port: -1`, `improper command pipelining after CONNECT from host[ip]:port`
        if let Some(x) = each_after(b, b" from ", |r| if find_byte(r, b'[').is_some() { Some(r) } else { None }) {
            if let Some(h) = first_bracket_host(x) {
                split_host(row, h, C::client_host, C::client_ip, C::client_port);
            }
        }
    }
}

#[cfg(test)]
mod variant_lines {
    //! Real lines of Postfix 3.7 (Debian 12) from samples/variants.
    use crate::cols::C;
    use crate::test_util::{i, parsed as parse, s};


    #[test]
    fn kinds_of_daemons_only_the_variants_produce() {
        for (line, kind) in [
            (&b"Nov 27 03:08:02 vm postfix/tlsproxy[19761]: CONNECT from [127.0.0.2]:60489"[..], "tlsproxy"),
            (b"Nov 27 03:08:02 vm postfix/tlsproxy[19761]: DISCONNECT [127.0.0.2]:60489", "tlsproxy"),
            (b"Nov 27 03:01:57 vm postfix/verify[15117]: cache btree:/var/lib/postfix/verify_cache full cleanup: retained=0 dropped=0 entries", "cache_cleanup"),
            (b"Nov 27 03:00:54 vm postfix/postsuper[30297]: Deleted: 2 messages", "postsuper"),
            (b"Nov 27 03:09:08 vm postfix/anvil[24935]: statistics: max connection rate 58/60s for (smtp:127.0.0.1) at Nov 27 03:09:05", "anvil"),
        ] {
            assert_eq!(s(&parse(line), C::kind), Some(kind), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn tls_established_from_smtpd_and_tlsproxy() {
        let r = parse(b"Nov 27 03:08:02 vm postfix/tlsproxy[19761]: Anonymous TLS connection established from [127.0.0.2]:60489: TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits) key-exchange X25519 server-signature RSA-PSS (2048 bits) server-digest SHA256");
        assert_eq!(s(&r, C::kind), Some("tls"));
        assert_eq!(s(&r, C::tls_level), Some("Anonymous"));
        assert_eq!(s(&r, C::tls_protocol), Some("TLSv1.3"));
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.2"));
        let r = parse(b"Nov 27 02:58:35 vm postfix/smtpd[565]: Anonymous TLS connection established from unknown[127.0.0.1]: TLSv1.2 with cipher ADH-AES256-GCM-SHA384 (256/256 bits)");
        assert_eq!(s(&r, C::kind), Some("tls"));
        assert_eq!(s(&r, C::tls_cipher), Some("ADH-AES256-GCM-SHA384"));
    }

    #[test]
    fn improper_pipelining_keeps_its_client() {
        let r = parse(b"Nov 27 03:07:50 vm postfix/smtpd[1]: improper command pipelining after EHLO from unknown[127.0.0.1]: MAIL FROM:<a@b.example>\\r\\n");
        assert_eq!(s(&r, C::kind), Some("pipelining"));
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
    }

    #[test]
    fn lmtp_over_a_unix_socket_names_the_socket_as_relay() {
        let r = parse(b"Nov 27 21:48:46 vm postfix/lmtp[1299]: 9D143C2DFC: to=<user88@bench.test>, relay=vm[private/dovecot-lmtp], delay=0.05, delays=0.04/0/0/0, dsn=2.0.0, status=sent (250 2.0.0 <user88@bench.test> CADoKL76CWsfBQAAg+zDdQ Saved)");
        assert_eq!(s(&r, C::kind), Some("delivery"));
        assert_eq!(s(&r, C::status), Some("sent"));
        assert_eq!(s(&r, C::relay_host), Some("private/dovecot-lmtp"));
        assert_eq!(s(&r, C::relay_ip), None);
        assert_eq!(s(&r, C::enhanced_code), Some("2.0.0"));
    }

    #[test]
    fn saturation_and_queue_administration_lines() {
        // Postfix 3.7 with default_process_limit 5 and anvil rate limits; postsuper and
        // postfix(1) under load
        for (line, kind) in [
            (&b"Nov 27 21:38:20 vm postfix/smtpd[3744]: warning: Connection concurrency limit exceeded: 5 from unknown[127.0.0.1] for service smtp"[..], "warning"),
            (b"Nov 27 21:46:10 vm postfix/smtpd[3744]: warning: Connection rate limit exceeded: 61 from unknown[127.0.0.1] for service smtp", "warning"),
            (b"Nov 27 21:46:10 vm postfix/smtpd[3744]: warning: Message delivery request rate limit exceeded: 151 from unknown[127.0.0.1] for service smtp", "warning"),
            (b"Nov 27 21:38:28 vm postfix/smtpd[3742]: too many errors after RCPT from unknown[127.0.0.5]", "too_many_errors"),
            (b"Nov 27 21:38:38 vm postfix/smtpd[3740]: timeout after EHLO from unknown[127.0.0.5]", "timeout"),
            (b"Nov 27 21:47:18 vm postfix/postsuper[30383]: Placed on hold: 30 messages", "postsuper"),
            (b"Nov 27 21:47:21 vm postfix/postsuper[30613]: Released from hold: 30 messages", "postsuper"),
            (b"Nov 27 21:47:23 vm postfix/postsuper[30791]: Requeued: 46 messages", "postsuper"),
            (b"Nov 27 21:47:21 vm postfix/postsuper[30626]: 30C68C29ED: removed", "removed"),
            (b"Nov 27 21:47:23 vm postfix/pickup[30785]: A74ABC2B38: uid=102 from=<user35@bench.test> orig_id=48685C2A8A", "pickup"),
            (b"Nov 27 21:47:23 vm postfix/master[9360]: reload -- version 3.7.11, configuration /etc/postfix", "master"),
            (b"Nov 27 21:47:38 vm postfix/postfix-script[31765]: stopping the Postfix mail system", "script"),
        ] {
            assert_eq!(s(&parse(line), C::kind), Some(kind), "{}", String::from_utf8_lossy(line));
        }
        let r = parse(b"Nov 27 21:38:20 vm postfix/smtpd[3744]: warning: Connection concurrency limit exceeded: 5 from unknown[127.0.0.1] for service smtp");
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
        // a message requeued with `postsuper -r` names the queue id it had
        let r = parse(b"Nov 27 21:47:23 vm postfix/pickup[30785]: A74ABC2B38: uid=102 from=<user35@bench.test> orig_id=48685C2A8A");
        assert_eq!(s(&r, C::queue_id), Some("A74ABC2B38"));
        assert_eq!(s(&r, C::sender), Some("user35@bench.test"));
        assert_eq!(s(&r, C::related_queue_id), Some("48685C2A8A"));
        let r = parse(b"Nov 27 21:47:23 vm postfix/pickup[30785]: A74ABC2B38: uid=102 from=<user35@bench.test>");
        assert_eq!(s(&r, C::related_queue_id), None);
    }

    #[test]
    fn a_header_check_reject_and_the_message_it_removes() {
        // Postfix 3.10 (Debian 13), header_checks `REJECT header rejected by bench rule`
        let r = parse(b"2026-11-28T03:30:08.415951+00:00 vm postfix/cleanup[292]: 6553254068D: reject: header Subject: BENCHREJECT 0 from localhost[127.0.0.1]; from=<hdr0@client.test> to=<user1@bench.test> proto=ESMTP helo=<hdr.client.test>: 5.7.1 header rejected by bench rule");
        assert_eq!(s(&r, C::kind), Some("reject"));
        assert_eq!(s(&r, C::reject_stage), Some("header"));
        assert_eq!(s(&r, C::enhanced_code), Some("5.7.1"));
        assert_eq!(s(&r, C::reason), Some("header rejected by bench rule"));
        assert_eq!(i(&r, C::smtp_code), None);
        assert_eq!(s(&r, C::sender), Some("hdr0@client.test"));
        assert_eq!(s(&r, C::helo), Some("hdr.client.test"));
        let r = parse(b"2026-11-28T03:30:08.416005+00:00 vm postfix/cleanup[292]: 6553254068D: removed (canceled)");
        assert_eq!(s(&r, C::kind), Some("removed"));
        assert_eq!(s(&r, C::queue_id), Some("6553254068D"));
        // a milter's refusal at the end of the data, in cleanup
        let r = parse(b"2026-11-28T03:51:40.134511+00:00 vm postfix/cleanup[281]: 50BF555E355: milter-reject: END-OF-MESSAGE from localhost[127.0.0.1]: 5.7.1 Message rejected by bench milter; from=<user5@bench.test> to=<user1@sink.test> proto=ESMTP helo=<localhost>");
        assert_eq!((s(&r, C::kind), s(&r, C::reject_stage)), (Some("reject"), Some("END-OF-MESSAGE")));
        assert_eq!((s(&r, C::enhanced_code), s(&r, C::reason)), (Some("5.7.1"), Some("Message rejected by bench milter")));
        assert_eq!((s(&r, C::sender), s(&r, C::recipient)), (Some("user5@bench.test"), Some("user1@sink.test")));
        // smtpd's own rejects keep their code and text
        let r = parse(b"Nov 27 21:38:28 vm postfix/smtpd[3744]: NOQUEUE: reject: RCPT from unknown[127.0.0.1]: 550 5.1.1 <nouser1@bench.test>: Recipient address rejected: User unknown in local recipient table; from=<a@b> to=<nouser1@bench.test> proto=ESMTP helo=<x>");
        assert_eq!(i(&r, C::smtp_code), Some(550));
        assert_eq!(s(&r, C::reason), Some("<nouser1@bench.test>: Recipient address rejected: User unknown in local recipient table"));
    }

    #[test]
    fn null_sender_is_empty_on_rejects_and_an_old_qmgr_line_keeps_its_size() {
        let r = parse(b"Nov 27 14:10:16 vm postfix/smtpd[2568]: C34ED1432B: reject: RCPT from relay.test[192.0.2.4]: 450 <ann@bench.test>: User unknown in local recipient table; from=<> proto=ESMTP helo=<relay.test>");
        assert_eq!((s(&r, C::kind), s(&r, C::sender), i(&r, C::smtp_code)), (Some("reject"), Some(""), Some(450)));
        let r = parse(b"Nov 27 14:10:16 vm postfix/cleanup[2569]: C34ED1432B: warning: header Subject: hi from relay.test[192.0.2.4]; from=<> to=<ann@bench.test> proto=ESMTP helo=<relay.test>");
        assert_eq!(s(&r, C::sender), Some(""));
        let r = parse(b"Nov 27 14:10:16 vm postfix/qmgr[2570]: C34ED1432B: from=<>, size=2048, nrcpt=1 (queue active)");
        assert_eq!(s(&r, C::sender), Some(""));
        // Postfix before 2.3: smtpd's reject names no queue id and no NOQUEUE
        let r = parse(b"Jan 01 12:00:00 vm postfix/smtpd[9245]: reject: RCPT from unknown[192.0.2.33]: 554 <ann@x.test>: Recipient address rejected: Relay access denied; from=<bob@y.test> to=<ann@x.test>");
        assert_eq!((s(&r, C::kind), s(&r, C::reject_stage), i(&r, C::smtp_code)), (Some("reject"), Some("RCPT"), Some(554)));
        assert_eq!((s(&r, C::client_ip), s(&r, C::sender), s(&r, C::recipient)), (Some("192.0.2.33"), Some("bob@y.test"), Some("ann@x.test")));
        // Postfix before 2.x: no `nrcpt=`
        let r = parse(b"Sep 24 14:45:15 vm postfix/qmgr[22331]: 7E0E6196: from=<ann@bench.test>, size=1141 (queue active)");
        assert_eq!((s(&r, C::kind), s(&r, C::sender), i(&r, C::size), i(&r, C::nrcpt)), (Some("qmgr_from"), Some("ann@bench.test"), Some(1141), None));
    }

    #[test]
    fn soft_bounce_warn_discard_and_an_unnamed_daemon() {
        let r = parse(b"Nov 28 07:40:00 vm postfix/smtp[300]: 4C0F1A2B3C: to=<r1@sink.test>, relay=127.0.0.1[127.0.0.1]:2526, delay=0.1, delays=0/0/0/0, dsn=5.1.1, status=SOFTBOUNCE (host 127.0.0.1[127.0.0.1] said: 550 5.1.1 no such user (in reply to RCPT TO command))");
        assert_eq!((s(&r, C::kind), s(&r, C::status), crate::classify::counts_as(&r)), (Some("delivery"), Some("deferred"), Some(b"deferred".as_slice())));
        let r = parse(b"Nov 28 07:40:00 vm postfix/submission/smtpd[301]: NOQUEUE: warn: RCPT from localhost[127.0.0.1]: submission client policy: loopback seen; from=<a@b.test> to=<c@d.test> proto=SMTP helo=<vm>");
        assert_eq!((s(&r, C::kind), s(&r, C::reject_action), s(&r, C::client_ip), crate::classify::counts_as(&r)), (Some("warn"), Some("warn"), Some("127.0.0.1"), None));
        assert_eq!(s(&r, C::recipient), Some("c@d.test"));
        let r = parse(b"Nov 28 07:40:00 vm postfix/cleanup[302]: 597425F29C5: removed (discarded)");
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("removed"), Some("discarded")));
        // rsyslog's default RFC 5424 template: `postfix` alone, the daemon lost
        let r = parse(b"<22>1 2026-11-28T07:40:00.1+00:00 vm postfix 220 - -  A09D85F29C4: client=localhost[127.0.0.1]");
        assert_eq!((s(&r, C::program), s(&r, C::kind), crate::classify::counts_as(&r)), (Some("postfix"), Some("client"), Some(b"received".as_slice())));
        let r = parse(b"<22>1 2026-11-28T07:40:00.1+00:00 vm postfix 220 - -  NOQUEUE: reject: RCPT from localhost[127.0.0.1]: 550 5.1.1 <n@bench.test>: Recipient address rejected: User unknown; from=<a@b> to=<n@bench.test> proto=ESMTP helo=<x>");
        assert_eq!((s(&r, C::kind), crate::classify::counts_as(&r)), (Some("reject"), Some(b"rejected".as_slice())));
    }

    #[test]
    fn verify_probe_status_with_hyphens_and_long_queue_id() {
        let r = parse(b"Nov 27 03:02:00 vm postfix/virtual[15131]: C52D6C2A38: to=<nouser3@bench.test>, relay=virtual, delay=0, delays=0/0/0/0, dsn=5.1.1, status=undeliverable-but-not-cached (unknown user: \"nouser3@bench.test\")");
        assert_eq!(s(&r, C::status), Some("undeliverable-but-not-cached"));
        assert_eq!(s(&r, C::status_text), Some("unknown user: \"nouser3@bench.test\""));
        let r = parse(b"Nov 27 02:55:50 vm postfix/qmgr[31938]: 4jbJ2G3bhNz608R: from=<user76@bench.test>, size=3526, nrcpt=1 (queue active)");
        assert_eq!(s(&r, C::queue_id), Some("4jbJ2G3bhNz608R"));
        assert_eq!(s(&r, C::kind), Some("qmgr_from"));
    }

    // public log lines (msimerson/postfix-parser, Feandil/maillog, lightmeter ControlCenter
    // tests); the expected values are their sources' labels
    #[test]
    fn bare_senders_warnings_that_name_a_message_and_the_next_hops_queue_id() {
        let r = parse(b"Sep 25 12:07:56 rory-dev postfix/qmgr[1626]: ED373F8043E: from=rory@rory-dev.localdomain, size=270, nrcpt=1 (queue active)");
        assert_eq!((s(&r, C::kind), s(&r, C::sender)), (Some("qmgr_from"), Some("rory@rory-dev.localdomain")));
        assert_eq!((i(&r, C::size), i(&r, C::nrcpt)), (Some(270), Some(1)));
        let r = parse(b"Sep 24 14:45:15 vm postfix/qmgr[22331]: 7E0E6196: from=ann@bench.test, size=1141 (queue active)");
        assert_eq!((s(&r, C::sender), i(&r, C::size)), (Some("ann@bench.test"), Some(1141)));
        let r = parse(b"Sep  3 00:00:03 yuuai postfix/pickup[12797]: 12C172090B: uid=1024 from=root@example.com");
        assert_eq!((s(&r, C::kind), s(&r, C::sender)), (Some("pickup"), Some("root@example.com")));
        let r = parse(b"Jul 25 00:08:51 yuuai postfix/qmgr[4146]: BB3B220B19: from=<>, status=expired, returned to sender");
        assert_eq!((s(&r, C::kind), s(&r, C::sender), s(&r, C::status)), (Some("expired"), Some(""), Some("expired")));
        let r = parse(b"Nov 27 10:00:00 corpus postfix/pickup[4242]: warning: 3mCqcj5HR1z2xDW: message has been queued for 2 days");
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id)), (Some("warning"), Some("3mCqcj5HR1z2xDW")));
        let r = parse(b"Nov 27 10:00:00 vm postfix/smtpd[4242]: warning: hostname example.test does not resolve to address 192.0.2.1");
        assert_eq!(s(&r, C::queue_id), None);
        let r = parse(b"Jul 25 00:00:01 yuuai postfix/smtp[3703]: 0345620AE4: to=<xxxx@melix.net>, orig_to=<yyy@melix.net>, relay=127.0.0.1[127.0.0.1]:10024, conn_use=2, delay=0.57, delays=0.4/0/0.04/0.13, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as 60F6120AF9)");
        assert_eq!(s(&r, C::related_queue_id), Some("60F6120AF9"));
        let r = parse(b"May  5 00:00:00 mail postfix/smtp[17709]: AB5501855DA0: to=<to@mail.com>, orig_to=<orig_to@example.com>, relay=127.0.0.1[127.0.0.1]:10024, delay=0.87, delays=0.68/0.01/0/0.18, dsn=2.0.0, status=sent (250 2.0.0 from MTA(smtp:[127.0.0.1]:10025): 250 2.0.0 Ok: queued as 2F01D1855DB2)");
        assert_eq!(s(&r, C::related_queue_id), Some("2F01D1855DB2"));
        let r = parse(b"Nov 27 10:00:00 vm postfix/local[4242]: 3mLQKJ5xWdz7sVL: to=<a@b.test>, relay=local, delay=0.1, delays=0.1/0/0/0, dsn=2.0.0, status=sent (forwarded as 3mLQKK4rDdz7sVS)");
        assert_eq!(s(&r, C::related_queue_id), Some("3mLQKK4rDdz7sVS"));
        let r = parse(b"Nov 27 10:00:00 vm postfix/smtp[4242]: 3mLQKJ5xWdz7sVL: Cannot start TLS: handshake failure");
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id), s(&r, C::detail)), (Some("tls_error"), Some("3mLQKJ5xWdz7sVL"), Some("handshake failure")));
    }
}
