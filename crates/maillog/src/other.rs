//! Sendmail, Exim, qmail (multilog) and Dovecot lines.

use crate::cols::{Row, C};
use crate::postfix::{reply_in_text, split_host};
use crate::scan::*;
use std::collections::HashMap;

/// `, relay=(.*?)(?:, [a-z]+=|$)`
fn sm_relay(b: &[u8]) -> Option<&[u8]> {
    each_after(b, b", relay=", |r| {
        let mut s = 0;
        while let Some(i) = find(&r[s..], b", ") {
            let p = s + i;
            let n = run(&r[p + 2..], |c| c.is_ascii_lowercase());
            if n > 0 && r.get(p + 2 + n) == Some(&b'=') {
                return Some(&r[..p]);
            }
            s = p + 1;
        }
        Some(r)
    })
    .and_then(nonempty)
}

/// Sendmail `[d+]hh:mm:ss` in seconds (`^(?:(\d+)\+)?(\d+):(\d\d):(\d\d)$`).
fn sm_secs(x: Option<&[u8]>) -> Option<f64> {
    let x = x?;
    let (days, r) = match find_byte(x, b'+') {
        Some(p) => {
            let d = &x[..p];
            if d.is_empty() || !d.iter().all(|&c| is_digit(c)) {
                return None;
            }
            (to_f64(d)?, &x[p + 1..])
        }
        None => (0.0, x),
    };
    let h = run(r, is_digit);
    if h == 0 || r.len() != h + 6 || r[h] != b':' || r[h + 3] != b':' {
        return None;
    }
    let mm = &r[h + 1..h + 3];
    let ss = &r[h + 4..h + 6];
    if !mm.iter().chain(ss).all(|&c| is_digit(c)) {
        return None;
    }
    Some(days * 86400.0 + to_f64(&r[..h])? * 3600.0 + to_f64(mm)? * 60.0 + to_f64(ss)?)
}

/// `lit([\d:+]+)`
fn dur_after<'a>(b: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    each_after(b, lit, |r| {
        let n = run(r, |c| is_digit(c) || c == b':' || c == b'+');
        if n > 0 {
            Some(&r[..n])
        } else {
            None
        }
    })
}

/// `, stat=WORD\b`
fn stat_is(b: &[u8], w: &[u8]) -> bool {
    memchr::memmem::find_iter(b, b", stat=").any(|i| {
        let r = &b[i + 7..];
        r.starts_with(w) && r.get(w.len()).is_none_or(|&c| !is_word(c))
    })
}

pub fn sendmail<'a>(row: &mut Row<'a>, b: &'a [u8]) {
    if b.starts_with(b"from=") {
        // `nrcpts=0`: every RCPT of the transaction was rejected, so no message was accepted
        let nrcpts = digits_after(b, b", nrcpts=").and_then(to_i32);
        row.s(C::kind, if nrcpts == Some(0) { b"from_no_rcpt" } else { b"from" });
        let r = &b[5..];
        let r = r.strip_prefix(b"<").unwrap_or(r);
        row.s(C::sender, &r[..run(r, |c| c != b'>' && c != b',')]);
        row.i(C::size, digits_after(b, b", size=").and_then(to_i64));
        row.i(C::nrcpt, nrcpts);
        row.so(C::message_id, angle_opt_after(b, b", msgid=").and_then(nonempty));
        row.so(C::proto, until_after(b, b", proto=", b',').and_then(nonempty));
        let c = sm_relay(b);
        row.so(C::client, c);
        if let Some(c) = c {
            // a local submission names the user: `relay=root@localhost`
            let c = match find_byte(c, b'@') {
                Some(at) if !c[..at].contains(&b' ') && !c.contains(&b'[') => &c[at + 1..],
                _ => c,
            };
            split_host(row, c, C::client_host, C::client_ip, C::client_port);
        }
    } else if b.starts_with(b"to=") && find(b, b", stat=").is_some() {
        row.s(C::kind, b"delivery");
        // ^to=(.*?), [a-z_]+=
        let r = &b[3..];
        let mut s = 0;
        let mut to = None;
        while let Some(i) = find(&r[s..], b", ") {
            let p = s + i;
            let n = run(&r[p + 2..], |c| c.is_ascii_lowercase() || c == b'_');
            if n > 0 && r.get(p + 2 + n) == Some(&b'=') {
                to = Some(&r[..p]);
                break;
            }
            s = p + 1;
        }
        // a program or file recipient is quoted: `to="|/etc/mail/smrsh/tempfail"`
        let unquoted = |t: &'a [u8]| t.strip_prefix(b"\"").and_then(|x| x.strip_suffix(b"\"")).unwrap_or(t);
        // one delivery to several recipients lists them, `to=<a@x>,<b@y>`: the first (the
        // line's `message` keeps the list)
        let to = to.and_then(nonempty).map(|t| if t.starts_with(b"<") { find(t, b">,<").map_or(t, |p| &t[..p + 1]) } else { t });
        row.so(C::recipient, to.map(trim_angles).map(unquoted));
        // `reply=550 5.1.1 User unknown` (8.15 and up): the reply the delivery got, just before
        // `stat=`, which closes the line
        if let Some(r) = each_after(b, b", reply=", Some) {
            sm_reply(row, find(r, b", stat=").map_or(r, |e| &r[..e]), C::reply_text);
        }
        let relay = until_after(b, b", relay=", b',').and_then(nonempty);
        row.so(C::relay, relay);
        if let Some(r) = relay {
            sm_split_relay(row, r);
        }
        row.so(C::mailer, until_after(b, b", mailer=", b',').and_then(nonempty));
        row.f(C::delay, sm_secs(dur_after(b, b", delay=")));
        row.f(C::delay_transmission, sm_secs(dur_after(b, b", xdelay=")));
        row.so(
            C::dsn,
            each_after(b, b", dsn=", |r| {
                let n = run(r, |c| is_digit(c) || c == b'.');
                if n > 0 {
                    Some(&r[..n])
                } else {
                    None
                }
            }),
        );
        // a `to=` line without `mailer=` delivered nothing: the message was dropped by a
        // DISCARD (`stat=discarded`) or refused at its end by a milter (`stat=<its reply text>`;
        // the `Milter: data, reject=` line counts it), no bounce
        let unrouted = find(b, b", mailer=").is_none();
        let st: &[u8] = if stat_is(b, b"Sent") {
            b"sent"
        } else if stat_is(b, b"Deferred") {
            b"deferred"
        } else if stat_is(b, b"queued") {
            b"queued"
        } else if unrouted && stat_is(b, b"discarded") {
            b"discarded"
        } else if unrouted {
            b"rejected"
        } else {
            b"bounced"
        };
        row.s(C::status, st);
        let stat = each_after(b, b", stat=", Some).and_then(nonempty);
        row.so(C::status_text, stat);
        // `stat=Deferred: 451 4.3.5 text` with no `reply=` (before 8.15): the remote's reply
        if row.get_i(C::smtp_code).is_none() {
            if let Some(r) = stat.and_then(|t| t.strip_prefix(b"Deferred: ")) {
                sm_reply(row, r, C::reply_text);
            }
        }
        // `stat=Sent (2.0.0 Ok: queued as X)`: the remote's reply to the message, its code left
        // out (sendmail logs no `reply=` for a success)
        if let Some(t) = stat.and_then(|t| t.strip_prefix(b"Sent (")).and_then(|t| t.strip_suffix(b")")) {
            if row.get_s(C::reply_text).is_none() && row.get_s(C::enhanced_code).is_none() {
                let n = enh_greedy(t).filter(|&n| matches!(t.get(n), None | Some(b' ')));
                row.so(C::enhanced_code, n.map(|n| &t[..n]));
                row.so(C::reply_text, nonempty(n.map_or(t, |n| t[n..].trim_ascii_start())));
            }
        }
    } else if b.starts_with(b"ruleset=") && b.ends_with(b", discard") {
        // `ruleset=check_rcpt, arg1=<a>, relay=host [ip], discard` (an access map's DISCARD):
        // the message is accepted and dropped (its `to=` line says `stat=discarded`)
        row.s(C::kind, b"discard");
        row.s(C::reject_action, b"discard");
        row.so(C::recipient, angle_opt_after(b, b", arg1=").and_then(nonempty));
        let c = sm_relay(b);
        row.so(C::client, c);
        if let Some(c) = c {
            split_host(row, c, C::client_host, C::client_ip, C::client_port);
        }
    } else if b.starts_with(b"ruleset=") && find(b, b", reject=").is_some() {
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        let ruleset = each_after(b, b"ruleset=", |r| {
            let n = run(r, |c| c != b',');
            if n > 0 {
                Some(&r[..n])
            } else {
                None
            }
        });
        row.so(
            C::reject_stage,
            ruleset.map(|r| match r {
                b"check_rcpt" => b"RCPT".as_slice(),
                b"check_mail" => b"MAIL",
                b"check_relay" => b"CONNECT",
                x => x,
            }),
        );
        let c = sm_relay(b);
        row.so(C::client, c);
        if let Some(c) = c {
            split_host(row, c, C::client_host, C::client_ip, C::client_port);
        }
        let arg1 = angle_opt_after(b, b", arg1=").and_then(nonempty);
        if find(b, b"ruleset=check_mail").is_some() {
            row.so(C::sender, arg1);
        }
        if find(b, b"ruleset=check_rcpt").is_some() {
            row.so(C::recipient, arg1);
        }
        // `, reject=(\d{3})(?: (\d\.\d{1,3}\.\d{1,3}))? ?(.*)$`
        let mut s = 0;
        while let Some(i) = find(&b[s..], b", reject=") {
            let r = &b[s + i + 9..];
            if r.len() >= 3 && r[..3].iter().all(|&c| is_digit(c)) {
                row.i(C::smtp_code, to_i32(&r[..3]));
                let mut t = &r[3..];
                if t.first() == Some(&b' ') {
                    if let Some(n) = enh_greedy(&t[1..]) {
                        row.s(C::enhanced_code, &t[1..1 + n]);
                        t = &t[1 + n..];
                    }
                }
                let t = t.strip_prefix(b" ").unwrap_or(t);
                row.so(C::reason, nonempty(t));
                row.so(C::reply_text, nonempty(t));
                break;
            }
            s += i + 1;
        }
    } else if let Some(side) = b.strip_prefix(b"STARTTLS=") {
        // `STARTTLS=client, relay=mx., version=TLSv1.3, verify=FAIL, cipher=X, bits=256/256`
        row.s(C::kind, b"tls");
        let relay = until_after(b, b", relay=", b',').and_then(nonempty);
        let (h, i, p) = if side.starts_with(b"client") {
            (C::relay_host, C::relay_ip, C::relay_port)
        } else {
            (C::client_host, C::client_ip, C::client_port)
        };
        if let Some(r) = relay {
            split_host(row, r, h, i, p);
        }
        row.so(C::tls_protocol, until_after(b, b", version=", b',').and_then(nonempty));
        row.so(C::tls_level, until_after(b, b", verify=", b',').and_then(nonempty));
        row.so(C::tls_cipher, until_after(b, b", cipher=", b',').and_then(nonempty));
        row.i(C::tls_bits, digits_after(b, b", bits=").and_then(to_i32));
    } else if let Some(r) = b.strip_prefix(b"rejecting commands from ") {
        // greet_pause: `rejecting commands from host [ip] due to pre-greeting traffic after N seconds`
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.s(C::reject_stage, b"CONNECT");
        sm_client(row, r.strip_prefix(b" ").unwrap_or(r));
        row.so(C::reason, find(r, b" due to ").map(|p| &r[p + 8..]).and_then(nonempty));
    } else if b.ends_with(b" [rejected]") && find(b, b"]: ").is_some() {
        // `host [ip]: EXPN root [rejected]`, `[ip]: vrfy info [rejected]`
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        sm_client(row, b);
        let cmd = &b[find(b, b"]: ").unwrap() + 3..];
        let verb = upto(cmd, b' ');
        row.s(C::reject_stage, verb);
    } else if let Some(to) = sm_user_unknown(b) {
        // `<nouser@dom>... User unknown`: a RCPT the local mailer has no user for; the client
        // got `550 5.1.1 <nouser@dom>... User unknown`
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.s(C::reject_stage, b"RCPT");
        row.s(C::recipient, to);
        row.i(C::smtp_code, Some(550));
        row.s(C::enhanced_code, b"5.1.1");
        row.s(C::reason, b"User unknown");
    } else if [b"collect: premature EOM".as_slice(), b"collect: I/O error", b"collect: read timeout"]
        .iter()
        .any(|w| b.starts_with(w))
    {
        // the client went away during DATA: the transaction's `from=` line follows (Aborts)
        row.s(C::kind, b"lost_connection");
        row.s(C::detail, &b[9..]);
    } else if let Some(r) = b.strip_prefix(b"lost input channel from ") {
        // `lost input channel from host [ip] to MTA-v4 after rcpt`: the client went away
        // mid-session; a transaction it began is no message (its `from=` line follows: Aborts)
        row.s(C::kind, b"lost_connection");
        sm_client(row, r);
        row.so(C::detail, find(r, b" after ").map(|p| &r[p + 1..]));
    } else if b.starts_with(b"collect: relay=") {
        // the detail line of a transfer broken off in DATA, after its `collect: premature EOM`:
        // `collect: relay=localhost, from=<u@d>, info=unexpected close` (not counted)
        row.s(C::kind, b"collect_info");
        row.so(C::sender, angle_opt_after(b, b", from=").and_then(nonempty));
        row.so(C::detail, each_after(b, b", info=", Some).and_then(nonempty));
    } else if [
        b"deferring connections on daemon ".as_slice(),
        b"rejecting connections on daemon ",
        b"Saved message in ",
    ]
    .iter()
    .any(|w| b.starts_with(w))
    {
        // ConnectionRateThrottle or a load limit reached (the daemon stops accepting for a
        // moment; the clients wait), MaxDaemonChildren (`N children, max N`: new clients are
        // refused until one ends), or a notice that could not be delivered either, kept in a
        // file (dead.letter)
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, b);
    } else if let Some((id, reason)) = sm_notice(b) {
        // `<qid>: <notice qid>: DSN: <reason>` (a delivery status notice to the sender),
        // `postmaster notify: ...`, `return to sender: ...`, `sender notify: ...`: the notice
        // sendmail queued as a message of its own (savemail.c), as Postfix's `sender
        // non-delivery notification: <qid>`. `Warning: could not send message for past N`
        // tells the sender of a delay (confTO_QUEUEWARN); `Cannot send message for N` returns a
        // message that stayed past confTO_QUEUERETURN: it expired (its last `to=` said Deferred)
        let kind: &[u8] = if reason.starts_with(b"Warning: ") {
            b"defer_notice"
        } else if reason.starts_with(b"Cannot send message for ") {
            b"expired"
        } else {
            b"bounce_notice"
        };
        row.s(C::kind, kind);
        row.s(C::related_queue_id, id);
        row.so(C::reason, nonempty(reason));
    } else if let Some(p) = find(b, b": Possible SMTP RCPT flood, throttling.") {
        // BadRcptThrottle: a client past its limit of refused recipients is slowed down
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, &b[p + 2..]);
        sm_client(row, &b[..p]);
    } else if let Some(r) = b.strip_prefix(b"connect from ") {
        // `NOQUEUE: connect from host [ip]` (LogLevel 14 and up): a client connected
        row.s(C::kind, b"connect");
        sm_client(row, r);
    } else if let Some(r) = b.strip_prefix(b"SMTP outgoing connect on ") {
        // `SMTP outgoing connect on [ip]` (LogLevel 12 and up): sendmail's outbound connection
        // for a delivery, named by the address it connects from
        row.s(C::kind, b"relay_connect");
        row.so(C::detail, nonempty(r));
    } else if let Some(d) = b.strip_prefix(b"done; ") {
        // `done; delay=0:00:00, ntries=1` (LogLevel 12 and up): the queue file is removed, the
        // message is finished (as Postfix's `removed`); one still deferred logs none
        row.s(C::kind, b"removed");
        row.f(C::delay, sm_secs(dur_after(d, b"delay=")));
    } else if let Some((alias, to)) = b.strip_prefix(b"alias <").and_then(|r| {
        let p = find(r, b"> => ")?;
        Some((&r[..p], &r[p + 5..]))
    }) {
        // `alias <flaky@dom> => "|/etc/mail/smrsh/tempfail"` (LogLevel 10 and up): a recipient
        // expanded by the aliases file
        row.s(C::kind, b"alias");
        row.so(C::orig_to, nonempty(alias));
        row.so(C::recipient, nonempty(to.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")).unwrap_or(to)));
    } else if let Some((stage, r)) = b
        .strip_prefix(b"Milter: data, reject=")
        .map(|r| (b"DATA".as_slice(), r))
        .or_else(|| b.strip_prefix(b"Milter: to=").filter(|r| find(r, b", reject=").is_some()).map(|r| (b"RCPT".as_slice(), r)))
    {
        // a milter refused the message at its end (`Milter: data, reject=550 5.7.1 text`; the
        // `to=` lines that follow deliver nothing) or a recipient (`Milter: to=<r>, reject=451
        // 4.7.1 text`; its `milter=NAME, action=rcpt, reject=...` line is the same refusal)
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.s(C::reject_stage, stage);
        let reply = if stage == b"RCPT" {
            row.so(C::recipient, nonempty(trim_angles(&r[..find(r, b", reject=").unwrap()])));
            &r[find(r, b", reject=").unwrap() + 9..]
        } else {
            r
        };
        sm_reply(row, reply, C::reason);
    } else if (b.starts_with(b"Milter") && matches!(b.get(6), Some(b':' | b' '))) || (b.starts_with(b"milter=") && find(b, b", action=").is_some()) {
        // `Milter: no active filter` (LogLevel 10 and up): the milter state of a transaction;
        // `milter=NAME, action=rcpt, reject=...`: the filter's own word on a refusal logged above
        row.s(C::kind, b"milter_notice");
        row.s(C::detail, b);
    } else if b.starts_with(b"AUTH warning: ") || (b.starts_with(b"error: safesasl(") && find(b, b") failed: ").is_some()) {
        // SASL without any mechanism or configuration file: `AUTH warning: no mechanisms` with
        // each connection, `error: safesasl(/etc/sasl2/Sendmail.conf) failed: ...` at the start;
        // the server offers no AUTH, which a server that uses none never needs (no event)
        row.s(C::kind, b"auth_notice");
        row.s(C::severity, if b.starts_with(b"error") { b"error".as_slice() } else { b"warning" });
        row.s(C::detail, b);
    } else if (b.starts_with(b"STARTTLS: ") && b.ends_with(b" missing")) || (b.starts_with(b"gethostbyaddr(") && find(b, b") failed: ").is_some()) {
        // `STARTTLS: ServerCertFile missing`: TLS is not offered (the daemon's start);
        // `gethostbyaddr(192.0.2.2) failed: 1`: a client's address has no name (h_errno 1)
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, b);
    } else if b.starts_with(b"starting daemon (")
        || b.starts_with(b"stopping daemon, reason=")
        || b.starts_with(b"started as: ")
        || (b.starts_with(b"engine=") && find(b, b", initialized=").is_some())
        || b.starts_with(b"accepting connections again for daemon ")
        || b.starts_with(b"alias database ")
        || find(b, b" aliases, longest ").is_some()
    {
        // the daemon's own life: started (its command line, its TLS engine), accepting again
        // after a limit, aliases rebuilt
        row.s(C::kind, b"master");
    } else if b.starts_with(b"<") && find(b, b">... ").is_some() {
        // a recipient refused: `<user@domain>... No such user here`, `<u@d>... User unknown`
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.s(C::reject_stage, b"RCPT");
        let e = find(b, b">... ").unwrap();
        row.so(C::recipient, nonempty(&b[1..e]));
        row.so(C::reason, nonempty(&b[e + 5..]));
    } else if find(b, b" did not issue MAIL/EXPN/VRFY/ETRN during connection to ").is_some() {
        // a client that connected and left without a transaction
        row.s(C::kind, b"idle_connection");
        sm_client(row, b);
    } else if let Some(p) = find(b, b": possible SMTP attack: ") {
        // `host [ip] (may be forged): possible SMTP attack: command=AUTH, count=5`: a client
        // repeating a command past its limit
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, &b[p + 2..]);
        let c = &b[..p];
        let c = c.strip_suffix(b" (may be forged)").unwrap_or(c);
        row.s(C::client, c);
        split_host(row, c, C::client_host, C::client_ip, C::client_port);
    } else if b.starts_with(b"AUTH failure (") {
        // `AUTH failure (LOGIN): authentication failure (-13) SASL(-13): ..., user=u,
        // relay=host [ip] (may be forged)`: the client's AUTH refused. The user name is the
        // client's and may hold `, relay=`: sendmail's own field is the last one
        row.s(C::kind, b"sasl_failed");
        if let Some(p) = memchr::memmem::rfind(b, b"relay=") {
            let c = &b[p + 6..];
            let c = c.strip_suffix(b" (may be forged)").unwrap_or(c);
            row.s(C::client, c);
            split_host(row, c, C::client_host, C::client_ip, C::client_port);
        }
        row.s(C::reason, b);
    } else if b.starts_with(b"forward ") && find(b, b": ").is_some() {
        // `forward /home/u/.forward: Permission denied`: a recipient's .forward file could not
        // be read (the delivery goes on to the mailbox)
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, b);
    } else if b.starts_with(b"SYSERR") {
        row.s(C::kind, b"error");
        row.s(C::severity, b"error");
        row.s(C::detail, b);
    } else {
        row.s(C::kind, b"other");
    }
}

/// A reply at the start of `r`, `NNN[ X.Y.Z] text` (`reply=`, a deferral's `stat=`, a milter's
/// `reject=`): its code, enhanced code, and its text into column `text`.
fn sm_reply<'a>(row: &mut Row<'a>, r: &'a [u8], text: C) {
    if r.len() >= 3 && r[..3].iter().all(|&c| is_digit(c)) && matches!(r.get(3), None | Some(b' ' | b'-')) {
        row.i(C::smtp_code, to_i32(&r[..3]));
        let t = r.get(4..).unwrap_or(b"");
        let n = enh_greedy(t).filter(|&n| matches!(t.get(n), None | Some(b' ')));
        row.so(C::enhanced_code, n.map(|n| &t[..n]));
        row.so(text, nonempty(n.map_or(t, |n| t[n..].trim_ascii_start())));
    }
}

/// `<qid>: DSN: reason`, `<qid>: postmaster notify: reason` or `<qid>: return to sender:
/// reason` (after the line's own queue id): the notice's queue id and the reason.
fn sm_notice(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let c = find(b, b": ")?;
    let (id, rest) = (&b[..c], &b[c + 2..]);
    if !crate::parse::is_sendmail_qid(id) {
        return None;
    }
    [b"DSN: ".as_slice(), b"postmaster notify: ", b"return to sender: ", b"sender notify: "]
        .iter()
        .find_map(|w| rest.strip_prefix(*w))
        .map(|reason| (id, reason))
}

/// Sendmail's client `host [ip]` or `[ip]` at the start of `r` (`(may be forged)` after the host allowed).
fn sm_client<'a>(row: &mut Row<'a>, r: &'a [u8]) {
    let Some(lb) = find_byte(r, b'[') else { return };
    let Some(rb) = find_byte(&r[lb..], b']').map(|i| i + lb) else { return };
    let host = trim_ascii_ws(upto(&r[..lb], b' '));
    row.so(C::client_host, nonempty(host));
    let ip = &r[lb + 1..rb];
    let ip = if ip.len() > 5 && ip[..5].eq_ignore_ascii_case(b"ipv6:") { &ip[5..] } else { ip };
    row.so(C::client_ip, nonempty(ip));
    row.s(C::client, &r[..rb + 1]);
}

/// What one chunk's lines say across lines, in order, for sendmail and Exim.
///
/// Sendmail logs a transfer the client broke off during DATA (`QID: collect: premature EOM:
/// ...`) before the transaction's `from=` line, which then reads like an accepted message's
/// (`nrcpts=1`). This remembers such queue ids over one chunk's lines (in order) and makes their
/// `from=` line `from_aborted`: no message was accepted. A pair split by a chunk boundary keeps
/// `from` (the two lines come from one process, microseconds apart: rare).
///
/// Exim logging to syslog with `syslog_duplication` (the default) writes a line meant for both
/// its main and its reject log twice, one call after the other: a reject reaches the file as
/// two identical lines of one pid. The second, the next line of that pid with the same text,
/// is noise `exim_syslog_duplicate`; a pair split by a chunk boundary counts twice (rare).
///
/// A Courier module that logs a delivery's reply as `...,success: TEXT` may log its outcome
/// after it too, `...,status: success` (Courier's ctlfile_append_reply, for
/// COMCTLFILE_DELSUCCESS_NOLOG: courieresmtp's relayed deliveries). That second line of the
/// same queue id and recipient is `delivery_status`: the delivery counts once. courierd logs
/// `completed,id=` after every delivery pass; after a pass with a deferral or a failure it is
/// `pass_completed`, and the message goes on (a retry, the bounce's own pass).
#[derive(Default)]
pub struct AcrossLines {
    ids: Vec<Vec<u8>>,
    /// per Exim pid, the text of its last line if that was a reject
    exim_rejects: HashMap<i64, Vec<u8>>,
    /// Courier deliveries logged with their text, waiting for a `status: success` line
    courier_sent: Vec<(Vec<u8>, Vec<u8>)>,
    /// Courier queue ids with a deferral or a failure in their current delivery pass
    courier_pending: Vec<Vec<u8>>,
    /// a line only Dovecot 2.4 writes was seen (`Logged in: `, `Login aborted: `, mail_log's
    /// `Mailbox <box>: ` prefix)
    dovecot_24: bool,
}

impl AcrossLines {
    pub fn see(&mut self, row: &mut Row) {
        if matches!(row.get_s(C::program), Some(b"exim" | b"exim4")) {
            return self.exim_duplicate(row);
        }
        if row.get_s(C::program) == Some(b"dovecot".as_slice()) {
            return self.dovecot_version(row);
        }
        if row.get_s(C::program).is_some_and(crate::courier::is_mta) {
            return self.courier_outcome(row);
        }
        if !matches!(row.get_s(C::program), Some(b"sendmail" | b"sm-mta")) {
            return;
        }
        let Some(qid) = row.get_s(C::queue_id) else { return };
        match row.get_s(C::kind) {
            Some(b"lost_connection") => {
                if self.ids.len() >= 64 {
                    self.ids.remove(0);
                }
                self.ids.push(qid.to_vec());
            }
            Some(b"from") if !self.ids.is_empty() => {
                if let Some(i) = self.ids.iter().position(|x| x.as_slice() == qid) {
                    self.ids.remove(i);
                    row.s(C::kind, b"from_aborted");
                }
            }
            _ => {}
        }
    }
}

impl AcrossLines {
    /// POP3's logout `del=N/X`: X is the messages the mailbox held up to 2.3 (`del=%d/%m`) and
    /// the bytes deleted from 2.4 (`del=%{deleted_count}/%{deleted_bytes}`), lines of the same
    /// shape. Once a line of 2.4 was seen, X is not a message count (`mbox_msgs` stays empty);
    /// before that it is taken as 2.3's.
    fn dovecot_version(&mut self, row: &mut Row) {
        let m = row.get_s(C::message).unwrap_or(b"");
        match row.get_s(C::kind) {
            Some(b"mailbox_login" | b"mailbox_auth_failed") => {
                self.dovecot_24 |= find(m, b"Logged in: user=<").is_some() || find(m, b"Login aborted: ").is_some();
            }
            Some(b"mail_log") => self.dovecot_24 |= find(m, b": Mailbox ").is_some_and(|p| box_first(&m[p + 2..]).is_some()),
            Some(b"mailbox_logout" | b"mailbox_disconnect") if self.dovecot_24 && row.get_s(C::service) == Some(b"pop3".as_slice()) => {
                row.i(C::mbox_msgs, None);
            }
            _ => {}
        }
    }

    fn courier_outcome(&mut self, row: &mut Row) {
        let Some(id) = row.get_s(C::queue_id) else { return };
        let kind = row.get_s(C::kind);
        if kind == Some(b"removed".as_slice()) {
            // courierd's `completed,id=` ends a delivery pass; after a deferral (a retry
            // follows) or a failure (a pass that sends the bounce follows) not the message
            if let Some(i) = self.courier_pending.iter().position(|x| x.as_slice() == id) {
                self.courier_pending.remove(i);
                row.s(C::kind, b"pass_completed");
            }
            return;
        }
        if kind != Some(b"delivery".as_slice()) {
            return;
        }
        if matches!(row.get_s(C::status), Some(b"deferred" | b"bounced")) {
            if !self.courier_pending.iter().any(|x| x.as_slice() == id) {
                if self.courier_pending.len() >= 1024 {
                    self.courier_pending.remove(0);
                }
                self.courier_pending.push(id.to_vec());
            }
            return;
        }
        if row.get_s(C::status) != Some(b"sent".as_slice()) {
            return;
        }
        let Some(to) = row.get_s(C::recipient) else { return };
        if row.get_s(C::status_text).is_some() {
            if self.courier_sent.len() >= 64 {
                self.courier_sent.remove(0);
            }
            self.courier_sent.push((id.to_vec(), to.to_vec()));
        } else if let Some(i) = self.courier_sent.iter().position(|(a, b)| a.as_slice() == id && b.as_slice() == to) {
            self.courier_sent.remove(i);
            row.s(C::kind, b"delivery_status");
        }
    }

    fn exim_duplicate(&mut self, row: &mut Row) {
        // through syslog only (a host, the tag's pid): Exim's own mainlog writes each line once
        let (Some(pid), Some(_), Some(text)) = (row.get_i(C::pid), row.get_s(C::host), row.get_s(C::message)) else {
            return;
        };
        if row.get_s(C::kind) != Some(b"reject".as_slice()) {
            self.exim_rejects.remove(&pid);
            return;
        }
        if self.exim_rejects.get(&pid).is_some_and(|t| t.as_slice() == text) {
            self.exim_rejects.remove(&pid);
            row.s(C::kind, b"__noise");
            row.s(C::detail, b"exim_syslog_duplicate");
            return;
        }
        if self.exim_rejects.len() >= 1024 {
            self.exim_rejects.clear();
        }
        self.exim_rejects.insert(pid, text.to_vec());
    }
}

/// sendmail's `relay=host [ip]`. A destination given as an address literal (`SMART_HOST
/// esmtp:[127.0.0.1]`, a mailertable entry) is logged with the literal as its name,
/// `relay=[127.0.0.1] [127.0.0.1]`: the host is the address inside the first brackets.
fn sm_split_relay<'a>(row: &mut Row<'a>, r: &'a [u8]) {
    if let Some(x) = r.strip_prefix(b"[") {
        if let Some(e) = find(x, b"] [") {
            split_host(row, &x[e + 2..], C::relay_host, C::relay_ip, C::relay_port);
            row.so(C::relay_host, nonempty(&x[..e]));
            return;
        }
    }
    split_host(row, r, C::relay_host, C::relay_ip, C::relay_port);
}

/// `^<([^>]+)>\.\.\. User unknown$`: the address.
fn sm_user_unknown(b: &[u8]) -> Option<&[u8]> {
    let r = b.strip_prefix(b"<")?;
    let n = find_byte(r, b'>')?;
    (n > 0 && &r[n..] == b">... User unknown").then(|| &r[..n])
}

/// `\d\.\d{1,3}\.\d{1,3}` greedy (no lookahead), its length.
fn enh_greedy(r: &[u8]) -> Option<usize> {
    if r.len() < 5 || !is_digit(r[0]) || r[1] != b'.' {
        return None;
    }
    let a = run(&r[2..], is_digit).min(3);
    if a == 0 || r.get(2 + a) != Some(&b'.') {
        return None;
    }
    let b = run(&r[3 + a..], is_digit).min(3);
    if b == 0 {
        return None;
    }
    Some(3 + a + b)
}

/// ` H=(\S+(?: \([^)]*\))?(?: \[[^\]]*\](?::\d+)?)?)` (with_paren) or without the `(...)` part;
/// `H=` may also open the message (Exim's reject lines: `H=(helo) [ip] F=<s> rejected RCPT ...`)
fn exim_host<'a>(m: &'a [u8], with_paren: bool) -> Option<&'a [u8]> {
    let host = |r: &'a [u8]| exim_host_at(r, with_paren);
    match m.strip_prefix(b"H=") {
        Some(r) => host(r).or_else(|| each_after(m, b" H=", host)),
        None => each_after(m, b" H=", host),
    }
}

fn exim_host_at(r: &[u8], with_paren: bool) -> Option<&[u8]> {
    let mut n = run(r, |c| !is_space(c));
    if n == 0 {
        return None;
    }
    if with_paren && r[n..].starts_with(b" (") {
        if let Some(e) = find_byte(&r[n + 2..], b')') {
            n += 2 + e + 1;
        }
    }
    if r[n..].starts_with(b" [") {
        if let Some(e) = find_byte(&r[n + 2..], b']') {
            n += 2 + e + 1;
            if r.get(n) == Some(&b':') {
                let d = run(&r[n + 1..], is_digit);
                if d > 0 {
                    n += 1 + d;
                }
            }
        }
    }
    Some(&r[..n])
}

/// Exim durations `^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?$` in seconds.
fn exim_secs(x: Option<&[u8]>) -> Option<f64> {
    let mut r = x?;
    let mut total = 0.0;
    for (unit, w) in [(b'd', 86400.0), (b'h', 3600.0), (b'm', 60.0)] {
        let n = run(r, is_digit);
        if n > 0 && r.get(n) == Some(&unit) {
            total += to_f64(&r[..n]).unwrap_or(0.0) * w;
            r = &r[n + 1..];
        }
    }
    let n = run(r, |c| is_digit(c) || c == b'.');
    if n > 0 && r.get(n) == Some(&b's') {
        total += to_f64(&r[..n]).unwrap_or(0.0);
        r = &r[n + 1..];
    }
    if r.is_empty() {
        Some(total)
    } else {
        None
    }
}

/// `^(ID) (<=|=>|...|\S+)(?: (.*))?$`: (id, flag, rest), all '' when no match.
fn exim_id(m: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let none = (&b""[..], &b""[..], &b""[..]);
    let seg = |x: &[u8], lo: usize, hi: usize| {
        let n = run(x, |c| c.is_ascii_alphanumeric());
        if (lo..=hi).contains(&n) {
            Some(n)
        } else {
            None
        }
    };
    let Some(a) = seg(m, 6, 6) else { return none };
    if m.get(a) != Some(&b'-') {
        return none;
    }
    let Some(b) = seg(&m[a + 1..], 6, 11) else { return none };
    let p = a + 1 + b;
    if m.get(p) != Some(&b'-') {
        return none;
    }
    let Some(c) = seg(&m[p + 1..], 2, 4) else { return none };
    let e = p + 1 + c;
    if m.get(e) != Some(&b' ') {
        return none;
    }
    let r = &m[e + 1..];
    let f = run(r, |c| !is_space(c));
    if f == 0 {
        return none;
    }
    let flag = &r[..f];
    let rest = if r.get(f) == Some(&b' ') { &r[f + 1..] } else { &b""[..] };
    if r.len() > f && r[f] != b' ' {
        // a whitespace other than space after the flag: `(?: (.*))?$` cannot end there
        return none;
    }
    (&m[..e], flag, rest)
}

pub fn exim<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    let (id, flag, rest) = exim_id(m);
    row.s(C::queue_id, id);
    match flag {
        b"<=" => {
            row.s(C::kind, b"arrival");
            row.s(C::sender, trim_angles(upto(rest, b' ')));
            // the fields end where the subject (`T="..."`, the `subject` log selector) begins:
            // after it come only `from <sender>` and `for <recipients>`, and the subject's text
            // is the client's, so a ` S=` or ` H=` in it is no field
            let fields = find(rest, b" T=\"").map_or(rest, |e| &rest[..e]);
            let c = exim_host(fields, true);
            row.so(C::client, c);
            if let Some(c) = c {
                exim_client(row, c);
            }
            row.i(C::size, digits_after(fields, b" S=").and_then(to_i64));
            exim_tls(row, fields);
            // `id*=`: the Message-ID Exim made itself (the `msg_id_created` selector)
            row.so(C::message_id, token_after(fields, b" id=").or_else(|| token_after(fields, b" id*=")));
            row.so(C::proto, token_after(fields, b" P="));
            row.so(C::related_queue_id, token_after(fields, b" R="));
        }
        // `>>`: a cutthrough delivery, logged before the message's arrival line
        b"=>" | b"->" | b"*>" | b">>" | b"**" | b"==" => {
            row.s(C::kind, b"delivery");
            // ` F=<sender>`: the `sender_on_delivery` selector
            row.so(C::sender, exim_sender(rest));
            let to = upto(rest, b' ');
            // a failure no router took (`** user@nowhere.invalid: Unrouteable address`): the
            // error follows the address at once
            let to = if matches!(flag, b"**" | b"==") { to.strip_suffix(b":").unwrap_or(to) } else { to };
            row.s(C::recipient, to);
            // ^\S+ (?:\([^)]*\) )?<([^>]+)>
            let t = run(rest, |c| !is_space(c));
            if t > 0 && rest.get(t) == Some(&b' ') {
                let mut r = &rest[t + 1..];
                if r.first() == Some(&b'(') {
                    if let Some(e) = find_byte(r, b')') {
                        if r.get(e + 1) == Some(&b' ') {
                            r = &r[e + 2..];
                        }
                    }
                }
                if let Some(x) = r.strip_prefix(b"<") {
                    let n = run(x, |c| c != b'>');
                    if n > 0 && x.get(n) == Some(&b'>') {
                        row.s(C::orig_to, &x[..n]);
                        // a local delivery names the local part only (`=> user1 <user1@dom>`):
                        // the recipient is the address it was routed from
                        if find_byte(to, b'@').is_none() {
                            row.s(C::recipient, &x[..n]);
                        }
                    }
                }
            }
            // with no `H=`, a failure's text may name the host that answered: `...: SMTP error
            // from remote mail server after MAIL FROM:<a>: host h [ip]: 421 ...`
            let relay = exim_host(rest, false).or_else(|| {
                each_after(rest, b": host ", |r| {
                    exim_host_at(r, false).filter(|h| h.ends_with(b"]"))
                })
            });
            row.so(C::relay, relay);
            if let Some(r) = relay {
                split_host(row, r, C::relay_host, C::relay_ip, C::relay_port);
            }
            // `** a@b R=r T=remote_smtp: error text`: the colon ends the field, not the name
            row.so(C::mailer, token_after(rest, b" T=").map(|t| t.strip_suffix(b":").unwrap_or(t)).and_then(nonempty));
            row.f(C::delay, exim_secs(token_after(rest, b" QT=")));
            // `DT=0.000s: Retry time not yet reached` on a deferral: the time ends at the colon
            row.f(C::delay_transmission, exim_secs(token_after(rest, b" DT=").map(|t| t.strip_suffix(b":").unwrap_or(t))));
            // the fields before the remote's confirmation (`C="..."`, its text the server's)
            let fields = find(rest, b" C=\"").map_or(rest, |e| &rest[..e]);
            row.i(C::size, digits_after(fields, b" S=").and_then(to_i64));
            exim_tls(row, fields);
            let failed = flag == b"**" || flag == b"==";
            row.s(C::status, if flag == b"**" { b"bounced" } else if flag == b"==" { b"deferred" } else { b"sent" });
            if failed {
                // the `deliver_time` selector ends a failure with ` DT=<time>`: not Exim's message
                let text = each_after(rest, b": ", Some).map(|t| exim_strip_dt(t));
                row.so(C::status_text, text.and_then(nonempty));
                // the remote's reply (`...: SMTP error from remote mail server after RCPT
                // TO:<a>: 450 4.2.0 try later`): its code, enhanced code and text
                let reply = leftmost_reply(rest);
                row.i(C::smtp_code, reply.and_then(|r| to_i32(&r[..3])));
                if let Some(r) = reply {
                    reply_in_text(row, exim_strip_dt(r));
                }
            } else {
                // ` C="(.*)"`: the `smtp_confirmation` selector (on by default), the remote's
                // reply to the message (`C="250 2.0.0 Ok: queued as X"`)
                let t = each_after(rest, b" C=\"", |r| rfind_byte(r, b'"').map(|e| &r[..e]));
                row.so(C::status_text, t.and_then(nonempty));
                if let Some(t) = t {
                    reply_in_text(row, t);
                }
            }
        }
        b"Completed" => row.s(C::kind, b"removed"),
        _ if !id.is_empty() && flag.starts_with(b"<") && exim_transport_output(row, flag, rest) => {}
        _ if !id.is_empty() && flag.starts_with(b"H=") && exim_host_error(row, &m[id.len() + 1..]) => {}
        _ if !id.is_empty() && find(rest, b"authenticator failed H=").is_some() => {
            // `<id> <name> authenticator failed H=host [ip] 535 ...`: a remote host refused
            // Exim's own AUTH while delivering (no `for`: the host is the relay, not a client)
            row.s(C::kind, b"warning");
            row.s(C::severity, b"warning");
            row.s(C::detail, &m[id.len() + 1..]);
            let r = &rest[find(rest, b"authenticator failed H=").unwrap_or(0) + 23..];
            if let Some(h) = exim_host_at(r, false) {
                row.s(C::relay, h);
                split_host(row, h, C::relay_host, C::relay_ip, C::relay_port);
                row.so(
                    C::reason,
                    r[h.len()..].strip_prefix(b" ").and_then(nonempty),
                );
            }
        }
        _ => {
            // a session's line may name the message it was in (`<id> SMTP connection from ...
            // closed by DROP in ACL`, `<id> SMTP data timeout ...`)
            let body = if id.is_empty() { m } else { &m[id.len() + 1..] };
            if exim_session(row, body) {
                // a connection's or a session's own line (log selectors `smtp_connection`,
                // `smtp_no_mail`, `smtp_syntax_error`, `smtp_protocol_error`)
            } else if let Some(r) = m.strip_prefix(b"cwd=") {
                // the `arguments` selector: each Exim process logs its working directory and
                // command line as it starts (`cwd=/var/spool/exim4 3 args: /usr/sbin/exim4 -Mc <id>`)
                row.s(C::kind, b"invocation");
                row.so(C::detail, find(r, b" args: ").map(|p| &r[p + 7..]).and_then(nonempty));
            } else if let Some(r) = m.strip_prefix(b"Connection from ").filter(|r| find(r, b" refused").is_some()) {
                // `Connection from [127.0.0.1] refused: too many connections` (smtp_accept_max,
                // _per_host, a reserve): the client got 421 before any transaction, nothing refused
                // a message, so a warning as sendmail's connection throttle
                row.s(C::kind, b"warning");
                row.s(C::severity, b"warning");
                row.i(C::smtp_code, Some(421));
                row.s(C::detail, m);
                if let Some(h) = r.strip_prefix(b"[").and_then(|x| find_byte(x, b']').map(|e| &x[..e])) {
                    row.s(C::client_ip, h);
                }
                row.so(C::reason, find(r, b"refused: ").map(|p| &r[p + 9..]).and_then(nonempty));
            } else if exim_rejected(m)
                || (m.starts_with(b"H=") && find(m, b" dropped by '").is_some())
            {
                // `H=<client> dropped by 'connect' ACL: why`: an ACL's `drop`, a refusal that
                // also ends the session
                row.s(C::kind, b"reject");
                row.s(C::reject_action, b"reject");
                row.so(
                    C::reject_stage,
                    each_after(m, b" rejected ", |r| {
                        if r.starts_with(b"after DATA") {
                            Some(&r[..10])
                        } else {
                            let n = run(r, |c| !is_space(c));
                            if n > 0 {
                                Some(&r[..n])
                            } else {
                                None
                            }
                        }
                    }),
                );
                // `rejected MAIL from [ip]: no HELO/EHLO given`: the client after `from`
                let c = exim_host(m, true).or_else(|| {
                    m.strip_prefix(b"rejected ")
                        .and_then(|r| find(r, b" from ").map(|p| &r[p + 6..]))
                        .filter(|r| r.starts_with(b"["))
                        .and_then(|r| exim_host_at(r, true))
                        .map(|h| h.strip_suffix(b":").unwrap_or(h))
                });
                row.so(C::client, c);
                if let Some(c) = c {
                    exim_client(row, c);
                }
                row.so(C::sender, exim_sender(m));
                row.so(
                    C::recipient,
                    each_after(m, b" rejected RCPT ", |r| {
                        let r = r.strip_prefix(b"<").unwrap_or(r);
                        Some(&r[..run(r, |c| c != b'>' && c != b':' && !is_space(c))])
                    })
                    .and_then(nonempty),
                );
                let reason = exim_reason(m);
                row.so(C::reason, reason.and_then(nonempty));
                let code = each_after(m, b": ", |r| {
                    if r.len() >= 4 && r[..3].iter().all(|&c| is_digit(c)) && r[3] == b' ' {
                        Some(&r[..3])
                    } else {
                        None
                    }
                });
                row.i(C::smtp_code, code.and_then(to_i32).or_else(|| exim_acl_reject_code(m)));
            } else if exim_notice(row, if id.is_empty() { m } else { &m[id.len() + 1..] }, !id.is_empty()) {
                // a warning, an error or a note on a message or a session, which changes no count
            } else if m.starts_with(b"Start queue run") || m.starts_with(b"End queue run") || exim_skipped(flag, rest)
            {
                row.s(C::kind, b"queue_run");
            } else if flag == b"Frozen" {
                // `<id> Frozen` or `<id> Frozen (delivery error message)`: Exim stopped trying the
                // message (a bounce it cannot deliver, a failure it was told to freeze on); it
                // stays in the queue until thawed or removed
                row.s(C::kind, b"warning");
                row.s(C::severity, b"warning");
                row.s(C::detail, m[id.len() + 1..].trim_ascii_end()); // what follows the id
            } else if m.starts_with(b"exim ") && {
                let r = &m[5..];
                let n = run(r, |c| !is_space(c));
                n > 0 && r[n..].starts_with(b" daemon started")
            } {
                row.s(C::kind, b"master");
            } else {
                row.s(C::kind, b"other");
            }
        }
    }
}

/// `<id> H=host [ip](:port)? <error>`: the smtp transport could not get through to one host of
/// a delivery (`Connection refused`, `Connection timed out`, a timeout or a lost connection),
/// logged before the address's own `==` or `**` line, which alone counts. A warning naming the
/// host; a reject after DATA (`H=... F=<s> rejected after DATA: ...`) is no such line.
fn exim_host_error<'a>(row: &mut Row<'a>, t: &'a [u8]) -> bool {
    let Some(host) = exim_host(t, false).filter(|h| t[2..].starts_with(h)) else { return false };
    // the error follows the host after a space, or after `: ` when it is the remote's
    // (`H=host [ip]:port: SMTP error from remote mail server after ...`)
    let after = t.get(2 + host.len()..).map(|r| r.strip_prefix(b":").unwrap_or(r));
    let Some(error) = after.and_then(|r| r.strip_prefix(b" ")).and_then(nonempty) else {
        return false;
    };
    if !host.contains(&b'[') || error.starts_with(b"F=") || exim_rejected(t) {
        return false;
    }
    row.s(C::kind, b"warning");
    row.s(C::severity, b"warning");
    row.s(C::detail, t.trim_ascii_end());
    row.s(C::reason, error.trim_ascii_end());
    row.s(C::relay, host);
    split_host(row, host, C::relay_host, C::relay_ip, C::relay_port);
    true
}

/// Exim's client as it logs it: `host (helo) [ip]:port`, `(helo) [ip]:port` (no host name:
/// `host_lookup` off or failed) or `[ip]:port`. The name in parentheses is what the client
/// said in HELO/EHLO, not a host name.
fn exim_client<'a>(row: &mut Row<'a>, c: &'a [u8]) {
    let mut r = c;
    let mut host = None;
    if !r.starts_with(b"(") && !r.starts_with(b"[") {
        let n = run(r, |b| !is_space(b));
        host = Some(&r[..n]);
        r = r[n..].trim_ascii_start();
    }
    if let Some(x) = r.strip_prefix(b"(") {
        if let Some(e) = find_byte(x, b')') {
            row.so(C::helo, nonempty(&x[..e]));
            r = x[e + 1..].trim_ascii_start();
        }
    }
    if r.starts_with(b"[") {
        split_host(row, r, C::client_host, C::client_ip, C::client_port);
    }
    row.so(C::client_host, host);
}

/// ` X=TLS1.3:TLS_AES_256_GCM_SHA384:256` (the `tls_cipher` selector, on by default): the
/// protocol, the cipher and its bits.
fn exim_tls<'a>(row: &mut Row<'a>, fields: &'a [u8]) {
    let Some(x) = token_after(fields, b" X=") else { return };
    let Some(a) = find_byte(x, b':') else { return };
    row.so(C::tls_protocol, nonempty(&x[..a]));
    let rest = &x[a + 1..];
    match rfind_byte(rest, b':') {
        Some(z) if rest[z + 1..].iter().all(|c| c.is_ascii_digit()) && z + 1 < rest.len() => {
            row.so(C::tls_cipher, nonempty(&rest[..z]));
            row.i(C::tls_bits, to_i32(&rest[z + 1..]));
        }
        _ => row.so(C::tls_cipher, nonempty(rest)),
    }
}

/// `text DT=<time>` -> `text`
fn exim_strip_dt(t: &[u8]) -> &[u8] {
    match find(t, b" DT=") {
        Some(p) if exim_secs(Some(&t[p + 4..])).is_some() => &t[..p],
        _ => t,
    }
}

/// `<id> <addr>: <transport> transport output: <text>` (a transport's `log_output`): what a
/// pipe or other local transport said for one recipient, as Courier's delivery replies.
fn exim_transport_output<'a>(row: &mut Row<'a>, flag: &'a [u8], rest: &'a [u8]) -> bool {
    let Some(addr) = flag.strip_suffix(b">:").and_then(|f| f.strip_prefix(b"<")) else { return false };
    let Some(p) = find(rest, b" transport output: ") else { return false };
    let transport = &rest[..p];
    if transport.is_empty() || transport.iter().any(|&b| is_space(b)) {
        return false;
    }
    row.s(C::kind, b"delivery_reply");
    row.so(C::recipient, nonempty(addr));
    row.s(C::mailer, transport);
    row.so(C::status_text, nonempty(&rest[p + 19..]));
    true
}

/// The lines of one SMTP session that name no message:
/// `SMTP connection from <client> (TCP/IP connection count = N)` (connect),
/// `SMTP connection from <client> closed by QUIT` (disconnect), `... lost` or
/// `... lost while reading message data` (lost_connection),
/// `no MAIL in SMTP connection from <client> D=<time> C=<commands>` (idle_connection),
/// `SMTP syntax error in "<cmd>" H=<client> <reason>` and `SMTP protocol error in "<cmd>"
/// H=<client> <reason>` (protocol_error: the client got a 5xx for one command), and
/// `H=<client> incomplete transaction (<why>) from <sender>` (a transaction the client left
/// before DATA ended: nothing was received). `<client>` may be followed by `I=[ip]:port` (the
/// `incoming_interface` selector). Returns false for any other line.
fn exim_session<'a>(row: &mut Row<'a>, m: &'a [u8]) -> bool {
    // the client at the start of `r`, and what follows it and its ` I=...`
    fn client_then<'a>(row: &mut Row<'a>, r: &'a [u8]) -> Option<&'a [u8]> {
        let c = exim_host_at(r, true)?;
        row.s(C::client, c);
        exim_client(row, c);
        let mut t = &r[c.len()..];
        if let Some(x) = t.strip_prefix(b" I=") {
            t = &x[run(x, |b| !is_space(b))..];
        }
        Some(t.strip_prefix(b" ").unwrap_or(t))
    }
    // `SMTP connection Ci=<id> from`: the `connection_id` selector of 4.97+
    let conn = m
        .strip_prefix(b"SMTP connection ")
        .and_then(|r| match r.strip_prefix(b"Ci=") {
            Some(x) => x[run(x, |b| !is_space(b))..].strip_prefix(b" from "),
            None => r.strip_prefix(b"from "),
        });
    if let Some(r) = conn {
        let kind: &[u8] = if r.ends_with(b" closed by QUIT")
            || find(r, b" closed by DROP in ACL").is_some()
        {
            b"disconnect"
        } else if find(r, b" (TCP/IP connection count = ").is_some() {
            b"connect"
        } else if r.ends_with(b" lost") || find(r, b" lost while reading message data").is_some() || find(r, b" lost D=").is_some() {
            // `... lost D=0s`: the `smtp_connection` selector with `deliver_time`'s D= of 4.9x
            b"lost_connection"
        } else {
            return false;
        };
        row.s(C::kind, kind);
        // the count after a connect's client is no part of it
        let r = find(r, b" (TCP/IP connection count = ").map_or(r, |p| &r[..p]);
        let t = client_then(row, r);
        if kind == b"lost_connection" {
            row.so(C::detail, t.and_then(nonempty));
        }
        return true;
    }
    // the client's session ended by Exim, by a timeout or by the client
    for (lead, kind) in [
        (b"SMTP call from ".as_slice(), b"protocol_error".as_slice()), // `dropped: too many ...`
        (b"SMTP command timeout on connection from ", b"timeout"),
        (
            b"SMTP data timeout (message abandoned) on connection from ",
            b"timeout",
        ),
        (
            b"unexpected disconnection while reading SMTP command from ",
            b"lost_connection",
        ),
        (b"TLS error on connection from ", b"warning"),
    ] {
        let Some(r) = m.strip_prefix(lead) else {
            continue;
        };
        row.s(C::kind, kind);
        if kind == b"warning" {
            row.s(C::severity, b"warning");
        }
        let t = client_then(row, r);
        row.so(
            C::reason,
            t.map(|t| t.strip_prefix(b": ").unwrap_or(t))
                .and_then(nonempty),
        );
        row.so(C::sender, exim_sender(m));
        return true;
    }
    // `<name> authenticator failed for <client>: 535 Incorrect authentication data (set_id=u)`:
    // the client's AUTH refused, as Postfix's `SASL ... authentication failed`
    if let Some(p) = find(m, b" authenticator failed for ") {
        let r = &m[p + 26..];
        row.s(C::kind, b"sasl_failed");
        let t = client_then(row, r.strip_prefix(b"H=").unwrap_or(r));
        // the client's RFC 1413 ident, when Exim got one: ` U=<ident>: 535 ...`
        let t = t.map(|t| match t.trim_ascii_start().strip_prefix(b"U=") {
            Some(u) => find(u, b": ").map_or(u, |p| &u[p..]),
            None => t,
        });
        if let Some(t) = t.map(|t| t.strip_prefix(b": ").unwrap_or(t)) {
            row.so(C::reason, nonempty(t));
            if code3(t) {
                row.i(C::smtp_code, to_i32(&t[..3]));
            }
        }
        return true;
    }
    // `H=<client> sender verify fail for <a>: why` (the sender's callout or routing failed,
    // the RCPT reject follows); `no IP address found for host h (during SMTP connection from
    // <client>)`, `no host name found for IP address ip` (host_lookup): warnings on a session
    if let Some(p) = find(m, b" sender verify fail for <").filter(|_| m.starts_with(b"H=")) {
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        client_then(row, &m[2..p + 1]);
        row.so(C::sender, angle_after(&m[p..], b" for <"));
        row.so(
            C::reason,
            find(&m[p..], b">: ")
                .map(|q| &m[p + q + 3..])
                .and_then(nonempty),
        );
        return true;
    }
    if let Some(r) = m
        .strip_prefix(b"no IP address found for host ")
        .or_else(|| m.strip_prefix(b"no host name found for IP address "))
    {
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, m);
        const DURING: &[u8] = b" (during SMTP connection from ";
        match find(r, DURING) {
            Some(p) => {
                client_then(row, &r[p + DURING.len()..]);
            }
            None => row.so(
                C::client_ip,
                nonempty(r.trim_ascii_end()).filter(|ip| {
                    ip.iter()
                        .all(|&c| c.is_ascii_hexdigit() || c == b'.' || c == b':')
                }),
            ),
        }
        return true;
    }
    // `SMTP protocol synchronization error (<why>): rejected "<cmd>" H=<client> next input="..."`
    // or `...: rejected connection from H=<client> input="..."`: the client spoke too early
    if let Some(r) = m.strip_prefix(b"SMTP protocol synchronization error (") {
        let at = memchr::memmem::rfind(r, b"\" H=")
            .map(|q| q + 4)
            .or_else(|| find(r, b" from H=").map(|q| q + 8));
        let Some(at) = at else { return false };
        row.s(C::kind, b"protocol_error");
        row.so(
            C::reason,
            find_byte(r, b')').map(|e| &r[..e]).and_then(nonempty),
        );
        client_then(row, &r[at..]);
        return true;
    }
    if let Some(r) = m.strip_prefix(b"no MAIL in SMTP connection from ") {
        row.s(C::kind, b"idle_connection");
        if let Some(t) = client_then(row, r) {
            // `D=<session time> C=<commands>`
            for w in t.split(|&b| b == b' ') {
                if let Some(x) = w.strip_prefix(b"C=") {
                    row.so(C::commands, nonempty(x));
                } else if let Some(x) = w.strip_prefix(b"D=") {
                    row.f(C::delay, exim_secs(Some(x)));
                }
            }
        }
        return true;
    }
    for lead in [b"SMTP syntax error in \"".as_slice(), b"SMTP protocol error in \""] {
        let Some(r) = m.strip_prefix(lead) else { continue };
        // the command is quoted as the client sent it: the last `" H=` ends it; a local
        // caller's session (`exim -bs`) names the user instead: `" U=<user> <reason>`
        if let Some(q) = memchr::memmem::rfind(r, b"\" H=") {
            row.s(C::kind, b"protocol_error");
            row.so(C::detail, nonempty(&r[..q]));
            let t = client_then(row, &r[q + 4..]);
            row.so(C::reason, t.and_then(nonempty));
            return true;
        }
        let Some(q) = memchr::memmem::rfind(r, b"\" U=") else { return false };
        row.s(C::kind, b"protocol_error");
        row.so(C::detail, nonempty(&r[..q]));
        let u = &r[q + 4..];
        let n = run(u, |c| !is_space(c));
        row.so(C::reason, u.get(n + 1..).and_then(nonempty));
        return true;
    }
    if m.starts_with(b"H=") {
        if let Some(p) = find(m, b" incomplete transaction (") {
            row.s(C::kind, b"incomplete_transaction");
            client_then(row, &m[2..p + 1]);
            let r = &m[p + 25..];
            let e = find_byte(r, b')').unwrap_or(r.len());
            row.so(C::reason, nonempty(&r[..e]));
            row.so(C::sender, angle_after(r, b" from <"));
            return true;
        }
    }
    false
}

/// Exim's lines that note something on a message (`t`: what follows its id) or a session and
/// change no count:
/// - `DKIM: d=<domain> s=<selector> ... [verification succeeded]`: a signature checked, kind
///   `dkim` (the verdict in brackets);
/// - `VRFY failed for <a> H=<client>`: a VRFY the ACL refused, kind `vrfy_failed`;
/// - `[H=<client> ][I=... ][U=<user> ]Warning: <text>` (an ACL's `warn` with `log_message`,
///   a TLS set-up note) and `[<ip>] SSL verify error: ...` (a delivery's TLS peer check):
///   warnings;
/// - `spool directory space check failed: ...` (Exim defers incoming mail until the spool
///   has room), `ACL for <where> returned ERROR: ...`, `Spool file <id>-D not found`: errors;
/// - on a message: `error ignored` (a failure its router said to ignore), `sender address
///   changed to <a> by <user>`, `recipient <a> added by <user>`, `no immediate delivery:
///   <why>`, and sa-exim's `SA: Action: <verdict>` (SpamAssassin's score at DATA): notes, kind
///   `message_note`.
fn exim_notice<'a>(row: &mut Row<'a>, t: &'a [u8], has_id: bool) -> bool {
    let (kind, severity): (&[u8], Option<&[u8]>) = if t.starts_with(b"DKIM: d=") {
        row.so(C::verdict, find_byte(t, b'[').map(|p| &t[p + 1..]).map(|r| r.strip_suffix(b"]").unwrap_or(r)));
        (b"dkim", None)
    } else if let Some(r) = t.strip_prefix(b"VRFY failed for <") {
        let e = find_byte(r, b'>').unwrap_or(r.len());
        row.so(C::recipient, nonempty(&r[..e]));
        if let Some(h) = exim_host(r, true) {
            row.s(C::client, h);
            exim_client(row, h);
        }
        (b"vrfy_failed", None)
    } else if let Some(p) = find(t, b"Warning: ").filter(|&p| p == 0 || t.starts_with(b"H=") || t.starts_with(b"U=")) {
        if let Some(h) = exim_host(&t[..p], true) {
            row.s(C::client, h);
            exim_client(row, h);
        }
        row.so(C::reason, nonempty(t[p + 9..].trim_ascii_end()));
        (b"warning", Some(b"warning"))
    } else if let Some(p) = find(t, b"] SSL verify error: ").filter(|_| t.starts_with(b"[")) {
        row.so(C::relay_ip, nonempty(&t[1..p]));
        row.so(C::reason, nonempty(&t[p + 20..]));
        (b"warning", Some(b"warning"))
    } else if t.starts_with(b"spool directory space check failed")
        || (t.starts_with(b"ACL for ") && find(t, b" returned ERROR: ").is_some())
        || (has_id && t.starts_with(b"Spool file ") && t.ends_with(b" not found"))
    {
        (b"error", Some(b"error"))
    } else if has_id
        && (t.ends_with(b": error ignored")
            || t.starts_with(b"sender address changed to <")
            || (t.starts_with(b"recipient <") && find(t, b"> added by ").is_some())
            || t.starts_with(b"no immediate delivery: ")
            || t.starts_with(b"SA: Action: "))
    {
        (b"message_note", None)
    } else {
        return false;
    };
    row.s(C::kind, kind);
    row.so(C::severity, severity);
    row.s(C::detail, t.trim_ascii_end());
    true
}

/// A queue runner passing a message by: `<id> Spool file for <id> is locked (another process
/// is handling this message)` (`Spool file is locked (...)` in older releases) and, with the
/// `skip_delivery` log selector, `<id> Message is frozen`.
fn exim_skipped(flag: &[u8], rest: &[u8]) -> bool {
    match flag {
        b"Spool" => rest.starts_with(b"file ") && find(rest, b" is locked").is_some(),
        b"Message" => rest == b"is frozen",
        _ => false,
    }
}

fn code3(r: &[u8]) -> bool {
    r.len() >= 4 && r[..3].iter().all(|&c| is_digit(c)) && (r[3] == b' ' || r[3] == b'-')
}

/// The leftmost reply after `: `, from its code on: `: (?:SMTP error from remote mail server after
/// [^:]*: )?(\d{3}[ -].*)`
fn leftmost_reply(rest: &[u8]) -> Option<&[u8]> {
    each_after(rest, b": ", |r| {
        if let Some(x) = r.strip_prefix(b"SMTP error from remote mail server after ".as_slice()) {
            let n = run(x, |c| c != b':');
            if let Some(y) = x[n..].strip_prefix(b": ".as_slice()) {
                if code3(y) {
                    return Some(y);
                }
            }
        }
        if code3(r) {
            Some(r)
        } else {
            None
        }
    })
}

/// The code an Exim ACL reject answered when its line names none: Exim logs no code for its
/// own rejects; `deny` or a failed `require` answer 550 and `defer` ("temporarily rejected")
/// 451, unless the ACL's `message` sets another (smtp_in.c: smtp_handle_acl_fail).
fn exim_acl_reject_code(m: &[u8]) -> Option<i64> {
    let code = if find(m, b" temporarily rejected ").is_some() { 451 } else { 550 };
    each_after(m, b" rejected ", |r| {
        [b"RCPT ".as_slice(), b"MAIL ", b"after DATA"].iter().any(|w| r.starts_with(w)).then_some(r)
    })
    .map(|_| code)
}

/// `(?:^| )rejected (?:RCPT|MAIL|EHLO|HELO|VRFY|EXPN|ETRN|DATA|after DATA|connection|during MIME
/// ACL checks|by local_scan\(\)|from <)`: a session's line opens with `rejected` when it names
/// no client fields before (`rejected MAIL FROM:<a> U=...: message too big`, `rejected MAIL from
/// [ip]: no HELO/EHLO given`, `rejected from <s> H=...: ...` after the data came in chunks)
fn exim_rejected(m: &[u8]) -> bool {
    let what = |r: &[u8]| {
        [
            b"RCPT".as_slice(),
            b"MAIL",
            b"EHLO",
            b"HELO",
            b"VRFY",
            b"EXPN",
            b"ETRN",
            b"DATA",
            b"after DATA",
            b"connection",
            b"during MIME ACL checks",
            b"by local_scan()",
            b"by non-SMTP ACL",
            b"from <",
        ]
        .iter()
        .any(|w| r.starts_with(w))
    };
    m.strip_prefix(b"rejected ").is_some_and(what) || memchr::memmem::find_iter(m, b" rejected ").any(|i| what(&m[i + 10..]))
}

/// ` F=<sender>` or, as older releases wrote it, ` F=sender` (also opening the line)
fn exim_sender(m: &[u8]) -> Option<&[u8]> {
    let at = if m.starts_with(b"F=") { Some(2) } else { find(m, b" F=").map(|p| p + 3) }?;
    let r = &m[at..];
    match r.strip_prefix(b"<") {
        Some(x) => find_byte(x, b'>').map(|e| &x[..e]),
        None => Some(&r[..run(r, |c| !is_space(c))]).filter(|a| !a.is_empty()),
    }
}

/// ` rejected (?:after DATA|\S+)[^:]*: (.*)$`
fn exim_reason(m: &[u8]) -> Option<&[u8]> {
    each_after(m, b" rejected ", |r| {
        let mut ends: Vec<usize> = Vec::new();
        if r.starts_with(b"after DATA") {
            ends.push(10);
        }
        let n = run(r, |c| !is_space(c));
        for l in (1..=n).rev() {
            ends.push(l);
        }
        for e in ends {
            let Some(q) = find_byte(&r[e..], b':').map(|q| q + e) else { continue };
            if r.get(q + 1) == Some(&b' ') {
                return Some(&r[q + 2..]);
            }
        }
        None
    })
}

/// `tcpserver -v` (ucspi-tcp) in front of qmail-smtpd, logged through `multilog t` or
/// splogger: `status: 3/40`, `pid P from IP`, `ok P localhost:localip:port
/// remotehost:remoteip:remoteinfo:port` (the rules let the client in), `deny P ...`, `end P
/// status S`.
fn tcpserver<'a>(row: &mut Row<'a>, r: &'a [u8]) {
    row.s(C::program, b"tcpserver");
    let word = &r[..run(r, |c| !is_space(c))];
    let arg = r.get(word.len() + 1..).unwrap_or(b"");
    let pid = &arg[..run(arg, is_digit)];
    let kind: &[u8] = match word {
        b"status:" => b"status",
        b"pid" if arg[pid.len()..].starts_with(b" from ") => {
            let ip = &arg[pid.len() + 6..];
            let ip = nonempty(&ip[..run(ip, |c| !is_space(c))]);
            row.so(C::client, ip);
            row.so(C::client_ip, ip);
            b"connect"
        }
        b"ok" | b"deny" if arg[pid.len()..].starts_with(b" ") => {
            // the remote end: host (empty under -H), address, TCP info (empty under -R), port;
            // an IPv6 address of ucspi-tcp6 holds colons itself, so from both ends
            let remote = arg[pid.len() + 1..].split(|&c| c == b' ').nth(1).unwrap_or(b"");
            if let (Some(a), Some(z)) = (find_byte(remote, b':'), rfind_byte(remote, b':')) {
                let before_port = &remote[..z];
                if let Some(i) = rfind_byte(before_port, b':').filter(|&i| i > a) {
                    row.so(C::client_host, nonempty(&remote[..a]));
                    row.so(C::client_ip, nonempty(&remote[a + 1..i]));
                    row.i(C::client_port, to_i32(&remote[z + 1..]));
                }
            }
            if word == b"deny" {
                b"reject"
            } else {
                b"accepted"
            }
        }
        b"end" if arg[pid.len()..].starts_with(b" status ") => {
            // the child's wait status: 0 a clean end, else the SMTP server failed or was killed
            row.so(C::detail, nonempty(&arg[pid.len() + 1..]));
            b"disconnect"
        }
        b"deny" => b"reject",
        _ => b"other",
    };
    if kind != b"status" && kind != b"other" {
        row.i(C::pid, to_i32(pid));
    }
    row.s(C::kind, kind);
}

pub fn qmail<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    if let Some(r) = m.strip_prefix(b"tcpserver: ") {
        return tcpserver(row, r);
    }
    // rblsmtpd (ucspi-tcp) refusing a listed client before qmail-smtpd runs: `rblsmtpd: <ip>
    // pid <pid> <list>: 451 <text>`; a qmail-smtpd patched to refuse one itself logs `qmail-smtpd:
    // 421 <text>: ip <ip> ...`
    let refusal = m.strip_prefix(b"rblsmtpd: ").and_then(|r| {
        let ip = &r[..run(r, |c| !is_space(c))];
        let p = find(r, b": ")?;
        r[ip.len()..]
            .starts_with(b" pid ")
            .then_some((Some(ip), &r[p + 2..]))
    });
    let refusal = refusal.or_else(|| {
        let r = m.strip_prefix(b"qmail-smtpd: ").filter(|r| code3(r))?;
        Some((token_after(r, b": ip "), r))
    });
    // rblsmtpd under its own syslog tag, as releases before 0.76 logged a refusal: `<list>
    // blocked <ip> <listed name> -`
    if row.get_s(C::program) == Some(b"rblsmtpd".as_slice()) {
        let list = &m[..run(m, |c| !is_space(c))];
        if let Some(r) = m[list.len()..].strip_prefix(b" blocked ") {
            row.s(C::kind, b"reject");
            row.s(C::reject_action, b"reject");
            row.so(C::client_ip, nonempty(&r[..run(r, |c| !is_space(c))]));
            row.so(C::reason, nonempty(list));
        } else {
            row.s(C::kind, b"other");
        }
        return;
    }
    if let Some((ip, reply)) = refusal {
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.so(C::client_ip, ip.and_then(nonempty));
        row.i(C::smtp_code, to_i32(&reply[..3]));
        row.so(C::reason, nonempty(&reply[4.min(reply.len())..]));
        return;
    }
    row.so(C::queue_id, digits_after(m, b"msg "));
    let kind: &[u8] = if m.starts_with(b"new msg ") {
        b"new_msg"
    } else if m.starts_with(b"info msg ") {
        b"from"
    } else if m.starts_with(b"starting delivery ") {
        b"delivery_start"
    } else if m.starts_with(b"delivery ") && {
        let n = run(&m[9..], is_digit);
        n > 0 && m[9 + n..].starts_with(b": ")
    } {
        b"delivery"
    } else if m.starts_with(b"end msg ") {
        b"removed"
    } else if m.starts_with(b"bounce msg ") {
        b"bounce_notice"
    } else if m.starts_with(b"status: ") {
        b"status"
    } else if m.starts_with(b"triple bounce: discarding ") || m.starts_with(b"double bounce: discarding ") {
        // a bounce that could not be delivered either, dropped (qmail-send: a double bounce
        // failed, or no doublebounceto): mail lost without a trace but this line
        b"warning"
    } else {
        b"other"
    };
    row.s(C::kind, kind);
    match kind {
        b"warning" => {
            row.s(C::severity, b"warning");
            row.s(C::detail, m);
        }
        b"from" => {
            row.so(C::sender, angle_after(m, b" from <").and_then(nonempty));
            row.i(C::size, digits_after(m, b": bytes ").and_then(to_i64));
        }
        b"delivery_start" => {
            let to = each_after(m, b" to ", |r| {
                let r = r.strip_prefix(b"local ").or_else(|| r.strip_prefix(b"remote "))?;
                let n = run(r, |c| !is_space(c));
                if n > 0 {
                    Some(&r[..n])
                } else {
                    None
                }
            });
            row.so(C::recipient, to);
            let mailer = each_after(m, b" to ", |r| {
                if r.starts_with(b"local ") {
                    Some(&r[..5])
                } else if r.starts_with(b"remote ") {
                    Some(&r[..6])
                } else {
                    None
                }
            });
            row.so(C::mailer, mailer);
            row.so(C::related_queue_id, digits_after(m, b"delivery "));
        }
        b"delivery" => {
            row.so(C::related_queue_id, digits_after(m, b"delivery "));
            // split_part(split_part(message, ': ', 2), ':', 1)
            let second = find(m, b": ").map(|p| {
                let r = &m[p + 2..];
                match find(r, b": ") {
                    Some(q) => &r[..q],
                    None => r,
                }
            });
            let word = second.map(|s| upto(s, b':'));
            row.so(
                C::status,
                match word {
                    Some(b"success") => Some(b"sent".as_slice()),
                    Some(b"deferral") => Some(b"deferred".as_slice()),
                    Some(b"failure") => Some(b"bounced".as_slice()),
                    _ => None,
                },
            );
            // ^delivery \d+: \w+: (.*)$
            let r = &m[9..];
            let n = run(r, is_digit);
            let r = &r[n + 2..];
            let w = run(r, is_word);
            if w > 0 && r[w..].starts_with(b": ") {
                let text = &r[w + 2..];
                row.so(C::status_text, nonempty(text));
                qmail_codes(row, text);
            }
        }
        _ => {}
    }
}

/// The codes in a qmail delivery's report, as qmail-send logs it (spaces and other unsafe
/// bytes as `_`, the report's lines joined by `/`): qmail's own `(#X.Y.Z)` (qmail-local,
/// qmail-remote, qmail-spawn) is the dsn; a remote reply, `Remote host said: 550 5.1.1 ...`
/// (qmail-remote), gives smtp_code and enhanced_code, and the dsn when qmail's is absent.
fn qmail_codes<'a>(row: &mut Row<'a>, text: &'a [u8]) {
    // qmail-remote names the host it spoke to (qmail-remote.c): `IP_accepted_message.`,
    // `IP_does_not_like_recipient.`, `IP_failed_on_DATA_command.`, `IP_failed_after_I_sent_the_
    // message.`, `Connected_to_IP_but_...`
    let t = text.strip_prefix(b"Connected_to_").unwrap_or(text);
    let ip = &t[..run(t, |c| c.is_ascii_hexdigit() || c == b'.' || c == b':')];
    let after = &t[ip.len()..];
    let named = if text.starts_with(b"Connected_to_") {
        after.starts_with(b"_but_")
    } else {
        [&b"_accepted_message."[..], b"_does_not_like_recipient.", b"_failed_on_DATA_command.", b"_failed_after_I_sent_the_message."]
            .iter()
            .any(|w| after.starts_with(w))
    };
    if named && (ip.contains(&b'.') || ip.contains(&b':')) {
        row.s(C::relay_ip, ip);
    }
    let own = each_after(text, b"(#", |r| enh_greedy(r).filter(|&n| r.get(n) == Some(&b')')).map(|n| &r[..n]));
    let said = each_after(text, b"Remote_host_said:_", Some).or_else(|| each_after(text, b"Remote host said: ", Some));
    let mut remote = None;
    if let Some(r) = said {
        // `550_5.1.1_<u@x>:_...`, `451-...` (a reply of more lines); the enhanced code ends
        // at a space, a line's end or the report's
        if r.len() >= 4 && r[..3].iter().all(|&c| is_digit(c)) && (b'2'..=b'5').contains(&r[0]) && matches!(r[3], b'_' | b' ' | b'-') {
            row.i(C::smtp_code, to_i32(&r[..3]));
            let t = &r[4..];
            remote = enh_greedy(t).filter(|&n| matches!(t.get(n), None | Some(b'_' | b' ' | b'/'))).map(|n| &t[..n]);
            row.so(C::enhanced_code, remote);
        }
    }
    row.so(C::dsn, own.or(remote));
}

/// Dovecot's processes other than the POP3/IMAP sessions: authentication (`auth`,
/// `auth-worker(N)`, `dovecot-auth`), local delivery (`lda(u)`, `deliver(u)`, `lmtp(u)`),
/// the logins of its other services (`managesieve-login`, `submission-login`), and any
/// process's `Warning:`/`Error:`/`Fatal:`/`Panic:` lines.
fn dovecot_process<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    // the master process of 1.x, without a prefix: `Dovecot v1.2.3 starting up ...`,
    // `Fatal: Auth process died too early - shutting down`
    if m.starts_with(b"Dovecot v") {
        row.s(C::kind, b"master");
        return;
    }
    for (lvl, kind) in [(b"Warning: ".as_slice(), b"warning".as_slice()), (b"Error: ", b"error"), (b"Fatal: ", b"fatal"), (b"Panic: ", b"panic")] {
        if let Some(d) = m.strip_prefix(lvl) {
            row.s(C::kind, kind);
            row.s(C::severity, kind);
            row.s(C::detail, d);
            return;
        }
    }
    let name = &m[..run(m, |c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')];
    // `name(...)<...>: ` or `name: `, then an optional level
    let rest = find(m, b": ").map(|p| &m[p + 2..]).unwrap_or(b"");
    for (lvl, kind) in [(b"Warning: ".as_slice(), b"warning".as_slice()), (b"Error: ", b"error"), (b"Fatal: ", b"fatal"), (b"Panic: ", b"panic")] {
        if let Some(d) = rest.strip_prefix(lvl) {
            row.s(C::kind, kind);
            row.s(C::severity, kind);
            row.s(C::detail, d);
            return;
        }
    }
    if name.starts_with(b"auth") || name == b"dovecot-auth" {
        // `auth-worker(1): pam(user,1.2.3.4,<session>): unknown user`, `auth: passwd-file(user,ip): ...`;
        // 2.4 names them in the process's own prefix: `auth(user,ip,sasl:plain)<session>: passwd-file: ...`
        row.s(C::kind, b"auth");
        let own = m[name.len()..].strip_prefix(b"(").and_then(|r| find_byte(r, b')').map(|e| &r[..e])).filter(|w| w.contains(&b','));
        // the passdb/userdb drivers (and the auth policy server) that name `(user,ip...)`
        let who = ["pam(", "passwd-file(", "passwd(", "shadow(", "sql(", "ldap(", "checkpassword(", "static(", "lua(", "oauth2(", "bsdauth(", "policy("]
            .iter()
            .find_map(|lit| each_after(m, lit.as_bytes(), |r| find_byte(r, b')').map(|e| &r[..e])))
            .or(own);
        if let Some(w) = who {
            let mut parts = w.split(|&c| c == b',');
            row.so(C::mailbox_user, parts.next().and_then(nonempty));
            row.so(C::client_ip, parts.next().and_then(nonempty));
        }
    } else if matches!(name, b"lda" | b"deliver" | b"lmtp") {
        // `lmtp(user)<pid><session>: msgid=<..>: saved mail to INBOX` names the user;
        // `lmtp(pid): Connect from local` and `lmtp(pid): Disconnect from local: ...` only the
        // process, and are the LMTP client's connection, not a delivery
        let said = find(m, b": ").map_or(&b""[..], |p| &m[p + 2..]);
        let said = said.strip_prefix(b"Info: ").unwrap_or(said); // a log_path of its own
        let inner = m[name.len()..].strip_prefix(b"(").and_then(|r| find_byte(r, b')').map(|e| &r[..e]));
        let user = inner.filter(|u| !u.iter().all(u8::is_ascii_digit)).and_then(nonempty);
        // the mail_log plugin's `save` of the delivery (`save: box=INBOX, uid=1, ...`; 2.4:
        // `Mailbox INBOX: save: ...`) is an event of the mailbox, not a second delivery
        if mail_log_event(row, said) {
            row.so(C::mailbox_user, user);
            return;
        }
        if let Some(r) = said.strip_prefix(b"Connect from ") {
            row.so(C::client_ip, nonempty(upto(r, b' ')));
        }
        row.s(
            C::kind,
            if said.starts_with(b"Connect from ") {
                b"connect".as_slice()
            } else if said.starts_with(b"Disconnect from ") {
                b"disconnect"
            } else if find(said, b": save failed to ").is_some() {
                // `msgid=<..>: save failed to INBOX: Quota exceeded (mailbox for user is full)`:
                // not delivered (the MTA defers or bounces it)
                b"local_delivery_failed"
            } else {
                b"local_delivery"
            },
        );
        if let Some(p) = find(said, b": save failed to ") {
            let why = &said[p + 17..];
            row.so(C::detail, find(why, b": ").map(|q| &why[q + 2..]).and_then(nonempty));
        }
        row.so(C::mailbox_user, user);
        row.s(C::service, name);
        row.so(C::message_id, angle_after(m, b"msgid=<").and_then(nonempty));
    } else if matches!(name, b"master" | b"anvil" | b"log" | b"config" | b"stats") {
        row.s(C::kind, b"master");
    } else if name.ends_with(b"-login") && m[name.len()..].starts_with(b": ") {
        row.s(C::kind, b"login");
        row.so(C::mailbox_user, angle_after(m, b"user=<").and_then(nonempty));
        row.so(C::client_ip, until_after(m, b"rip=", b',').and_then(nonempty));
        row.so(C::session_id, angle_after(m, b"session=<").and_then(nonempty));
    }
}

/// qmail-send's (or tcpserver's) own words, whatever stamped them: multilog's `current`
/// converted by `tai64nlocal` carries them after a local ISO stamp (`2003-09-27
/// 11:22:07.039237500 delivery 3714: success: did_1+0+0/`), which no Exim line begins with.
pub fn qmail_send_shaped(m: &[u8]) -> bool {
    const HEADS: [&[u8]; 9] = [
        b"new msg ",
        b"info msg ",
        b"starting delivery ",
        b"end msg ",
        b"bounce msg ",
        b"status: ",
        b"triple bounce: discarding ",
        b"double bounce: discarding ",
        b"tcpserver: ",
    ];
    HEADS.iter().any(|h| m.starts_with(h))
        || m.strip_prefix(b"delivery ").is_some_and(|r| {
            let n = run(r, is_digit);
            n > 0 && r[n..].starts_with(b": ")
        })
}

/// A message of Dovecot's own log file (`log_path`, no syslog tag) that another stamp made
/// look like Exim's or qmail's: it starts with a Dovecot process name.
pub fn dovecot_shaped(m: &[u8]) -> bool {
    let name = &m[..run(m, |c| c.is_ascii_alphanumeric() || c == b'-')];
    let after = &m[name.len()..];
    let named = name.ends_with(b"-login") || name.starts_with(b"auth") || name == b"dovecot-auth";
    let session = matches!(name, b"pop3" | b"imap" | b"lda" | b"lmtp" | b"POP3" | b"IMAP"); // 1.x: upper case
    (named && (after.starts_with(b": ") || after.starts_with(b"("))) || (session && after.starts_with(b"("))
}

/// A line of Dovecot's own log file after a syslog-style stamp (`log_path`,
/// `log_timestamp = "%b %d %H:%M:%S "`): no host and no tag; from 2.0 the process's prefix
/// and a level (`lmtp(u)<pid><session>: Info: msgid=<..>: saved mail to INBOX`, `master:
/// Warning: ...`), in 1.x the level first (`Info: imap-login: Login: user=<u>, ...`,
/// `Info: IMAP(u): Disconnected: Logged out`). The Dovecot message (1.x: after its level).
pub fn dovecot_own_line(m: &[u8]) -> Option<&[u8]> {
    // its first word ends in `:` (a process's prefix, or 1.x's level), where a syslog line has
    // its host: the one test most lines take
    let first = find_byte(m, b' ').unwrap_or(m.len());
    if first == 0 || m[first - 1] != b':' {
        return None;
    }
    const LEVELS: [&[u8]; 7] = [b"Info: ", b"Warning: ", b"Warn: ", b"Error: ", b"Fatal: ", b"Panic: ", b"Debug: "];
    if let Some(l) = LEVELS.iter().find(|l| m.starts_with(l)) {
        let r = &m[l.len()..];
        return dovecot_shaped(r).then_some(r);
    }
    let name = &m[..run(m, |c| c.is_ascii_alphanumeric() || c == b'-')];
    let leveled = match find(m, b": ") {
        Some(p) if !m[..p].contains(&b' ') => LEVELS.iter().any(|l| m[p + 2..].starts_with(l)),
        _ => false,
    };
    let process = dovecot_shaped(m) || matches!(name, b"master" | b"lmtp" | b"lda" | b"anvil" | b"log" | b"config" | b"stats" | b"dict");
    (process && leveled).then_some(m)
}

/// A Dovecot process's line with a severity word that is not a login, logout or
/// disconnect: `master: Warning: SIGHUP received - reloading configuration`,
/// `imap(u)<..>: Info: ...`. Kind `dovecot_notice` with the service, the severity and the
/// text; a line without a severity word stays `other`, so a shape the parser does not know
/// is listed (`mtabench parse maillog --unknown`), not hidden.
fn dovecot_notice<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    let n = run(m, |c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    if n == 0 || !(m[n..].starts_with(b": ") || m[n..].starts_with(b"(")) {
        return;
    }
    let Some(c) = find(m, b": ") else { return };
    let text = &m[c + 2..];
    for (word, sev) in [
        (b"Warning: ".as_slice(), b"warning".as_slice()),
        (b"Error: ", b"error"),
        (b"Fatal: ", b"fatal"),
        (b"Panic: ", b"panic"),
        (b"Info: ", b"info"),
        (b"Debug: ", b"debug"),
    ] {
        if let Some(x) = text.strip_prefix(word) {
            row.s(C::kind, b"dovecot_notice");
            if row.get_s(C::service).is_none() {
                row.s(C::service, &m[..n]);
            }
            row.s(C::severity, sev);
            row.s(C::detail, x);
            return;
        }
    }
}

/// What one qmail-send log stream says across lines, in line order. qmail-send names a
/// delivery D with its message N only on `starting delivery D: msg N to ...`; the line that
/// ends it, `delivery D: success|deferral|failure: ...`, names D alone, and D is free for
/// the next delivery once it ended. A bounce that qmail-send itself injects is announced as
/// `bounce msg N qp P` before the bounce's own `info msg M: ... qp P`.
#[derive(Default, Clone)]
pub struct QmailTie {
    deliveries: HashMap<u64, Started>,
    /// per bounce announced (`bounce msg M qp P`), its qp and the message M it returns
    bounce_qps: HashMap<u64, u64>,
    /// a qmail row was seen: the stream's lines tie across lines, so they are parsed in order
    pub seen: bool,
}

/// A delivery under way, as its `starting delivery D` line named it: the message number
/// (the `delivery D:` row's queue_id), the recipient and the channel (its mailer, `local`
/// or `remote`).
#[derive(Clone)]
pub struct Started {
    pub msg: u64,
    pub recipient: Box<[u8]>,
    pub mailer: Option<&'static [u8]>,
    /// a bounce's own message: `msg` is the message it returns, not the row's own
    pub returns: bool,
}

fn num(x: Option<&[u8]>) -> Option<u64> {
    let x = x?;
    if x.is_empty() || x.len() > 19 || !x.iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(x.iter().fold(0u64, |a, &b| a * 10 + (b - b'0') as u64))
}

impl QmailTie {
    /// Update the state with a parsed qmail row. Returns what a `delivery D:` row's line
    /// does not carry: its message number (queue_id), recipient and mailer, as its
    /// `starting delivery D` line named them. An `info msg` row of a message received from
    /// outside becomes kind `arrival`; a bounce's stays `from`.
    pub fn apply(&mut self, row: &mut Row<'_>) -> Option<Started> {
        if row.get_s(C::program) != Some(b"qmail".as_slice()) {
            return None;
        }
        self.seen = true;
        let kind = row.get_s(C::kind)?;
        let message = row.get_s(C::message).unwrap_or(b"");
        match kind {
            b"delivery_start" => {
                let d = num(row.get_s(C::related_queue_id))?;
                let msg = num(row.get_s(C::queue_id))?;
                let recipient = row.get_s(C::recipient).unwrap_or(b"").into();
                let mailer: Option<&'static [u8]> = match row.get_s(C::mailer) {
                    Some(b"local") => Some(b"local"),
                    Some(b"remote") => Some(b"remote"),
                    _ => None,
                };
                self.deliveries.insert(d, Started { msg, recipient, mailer, returns: false });
                None
            }
            b"delivery" => {
                let d = num(row.get_s(C::related_queue_id))?;
                self.deliveries.remove(&d)
            }
            b"bounce_notice" => {
                if let (Some(qp), Some(msg)) = (num(digits_after(message, b" qp ")), num(row.get_s(C::queue_id))) {
                    self.bounce_qps.insert(qp, msg);
                }
                None
            }
            b"from" => {
                // the bounce's own `info msg N: ... qp P`: it returns message M (related_queue_id)
                let qp = num(digits_after(message, b" qp "));
                match qp.and_then(|qp| self.bounce_qps.remove(&qp)) {
                    Some(msg) => Some(Started { msg, recipient: Box::default(), mailer: None, returns: true }),
                    None => {
                        row.s(C::kind, b"arrival");
                        None
                    }
                }
            }
            _ => None,
        }
    }
}

/// OpenSMTPD `key=value` (a value in double quotes may hold spaces).
fn osmtpd_kv<'a>(m: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    memchr::memmem::find_iter(m, key).find_map(|i| {
        if i == 0 || m[i - 1] != b' ' || m.get(i + key.len()) != Some(&b'=') {
            return None;
        }
        let r = &m[i + key.len() + 1..];
        match r.strip_prefix(b"\"") {
            Some(q) => find_byte(q, b'"').map(|e| &q[..e]),
            None => Some(&r[..run(r, |c| c != b' ')]),
        }
    })
}

/// A remote's reply as OpenSMTPD's `mta delivery` gives it in `stat=`: `550 5.1.1 no such user`.
fn osmtpd_reply<'a>(row: &mut Row<'a>, stat: &'a [u8]) {
    if !(stat.len() >= 4 && matches!(stat[0], b'2' | b'4' | b'5') && stat[1..3].iter().all(|&c| is_digit(c)) && stat[3] == b' ') {
        return;
    }
    row.i(C::smtp_code, to_i32(&stat[..3]));
    let t = &stat[4..];
    if let Some(e) = enh_greedy(t) {
        row.s(C::enhanced_code, &t[..e]);
        row.s(C::dsn, &t[..e]);
    }
    row.so(C::reply_text, nonempty(t));
}

/// OpenSMTPD's message id: an envelope id's first 8 hex digits (`evpid=beb899ffd97d5ffb` is
/// of `msgid=beb899ff`).
fn osmtpd_msgid(evpid: Option<&[u8]>) -> Option<&[u8]> {
    evpid.filter(|e| e.len() == 16).map(|e| &e[..8])
}

/// OpenSMTPD (6.x) `smtpd` lines: `<session> smtp|mda|mta <event> key=value ...`, plus
/// `info:` / `warn:` lines. The message id is the queue id; `smtp message` is the arrival
/// (one per accepted message), `smtp envelope` one of its recipients (kind `from`), `mda|mta delivery` a
/// delivery attempt, `smtp failed-command` a command the server refused.
pub fn opensmtpd<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    row.s(C::kind, b"other");
    if let Some(r) = m.strip_prefix(b"info: ") {
        if r.starts_with(b"OpenSMTPD ") && r.ends_with(b" starting") {
            row.s(C::kind, b"master");
        }
        return;
    }
    if let Some(r) = m.strip_prefix(b"warn: ") {
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, r);
        return;
    }
    // `relay: Remove for <evpid>: from=<s>, to=<r>, rcpt=<->, delay=23s, stat=Removed by
    // administrator`: an envelope `smtpctl remove` took out of the queue (not counted);
    // `relay: Expire for <evpid>: ..., delay=3m, stat=Envelope expired`: one past its queue
    // lifetime, returned to its sender and deleted (queue.c: queue_bounce, then this line)
    let ended = m.strip_prefix(b"relay: Remove for ").map(|r| (r, b"removed")).or_else(|| m.strip_prefix(b"relay: Expire for ").map(|r| (r, b"expired")));
    if let Some((r, status)) = ended {
        row.s(C::kind, b"delivery");
        row.s(C::status, status);
        row.f(C::delay, exim_secs(each_after(r, b", delay=", |t| Some(upto(t, b',')))));
        let evpid = upto(r, b':');
        row.so(C::queue_id, osmtpd_msgid(Some(evpid)));
        row.so(C::sender, angle_opt_after(r, b" from=").and_then(nonempty));
        row.so(C::recipient, angle_opt_after(r, b", to=").and_then(nonempty));
        row.so(C::status_text, each_after(r, b", stat=", Some).and_then(nonempty));
        return;
    }
    if let Some(r) = m.strip_prefix(b"smtp-out: ") {
        // the relay's routes to a next hop (mta.c): `Disabling route [] <-> 127.0.0.1
        // (localhost) for 15s` after errors, `Enabling route ...` again; `No valid route for
        // [connector:...]` when every one is down
        let down = r.starts_with(b"No valid route ");
        if down || r.starts_with(b"Enabling route ") || r.starts_with(b"Disabling route ") {
            row.s(C::kind, if down { b"warning".as_slice() } else { b"route" });
            if down {
                row.s(C::severity, b"warning");
            }
            row.s(C::detail, r);
            if let Some(x) = each_after(r, b" <-> ", Some) {
                let ip = upto(x, b' ');
                row.so(C::relay_ip, nonempty(ip));
                row.so(C::relay_host, find_byte(x, b'(').and_then(|i| find_byte(&x[i..], b')').map(|e| &x[i + 1..i + e])).and_then(nonempty));
            }
        }
        return;
    }
    let n = run(m, |c| c.is_ascii_hexdigit());
    if n != 16 || m.get(16) != Some(&b' ') {
        return;
    }
    row.s(C::session_id, &m[..16]);
    let r = &m[17..];
    if let Some(c) = r.strip_prefix(b"smtp connected ") {
        // `smtp connected address=127.0.0.1 host=mx.example`: a session's start
        row.s(C::kind, b"connect");
        row.so(C::client_ip, osmtpd_kv(c, b"address").and_then(nonempty));
        row.so(C::client_host, osmtpd_kv(c, b"host").and_then(nonempty));
    } else if let Some(c) = r.strip_prefix(b"smtp disconnected ") {
        // `smtp disconnected reason=quit`
        row.s(C::kind, b"disconnect");
        row.so(C::reason, osmtpd_kv(c, b"reason").and_then(nonempty));
    } else if r.starts_with(b"smtp message ") {
        row.s(C::kind, b"arrival");
        row.so(C::queue_id, osmtpd_kv(r, b"msgid").and_then(nonempty));
        row.i(C::size, osmtpd_kv(r, b"size").and_then(to_i64));
        row.i(C::nrcpt, osmtpd_kv(r, b"nrcpt").and_then(to_i32));
        row.so(C::proto, osmtpd_kv(r, b"proto").and_then(nonempty));
    } else if r.starts_with(b"smtp envelope ") {
        // a `from` line as sendmail's: the message's sender (and here one recipient), not
        // counted as received (that is sendmail's `from` only)
        row.s(C::kind, b"from");
        row.so(C::queue_id, osmtpd_msgid(osmtpd_kv(r, b"evpid")));
        row.so(C::sender, osmtpd_kv(r, b"from").map(trim_angles).and_then(nonempty));
        row.so(C::recipient, osmtpd_kv(r, b"to").map(trim_angles).and_then(nonempty));
    } else if r.starts_with(b"mda delivery ") || r.starts_with(b"mta delivery ") {
        row.s(C::kind, b"delivery");
        row.s(C::mailer, &r[..3]);
        row.so(C::queue_id, osmtpd_msgid(osmtpd_kv(r, b"evpid")));
        row.so(C::sender, osmtpd_kv(r, b"from").map(trim_angles).and_then(nonempty));
        row.so(C::recipient, osmtpd_kv(r, b"to").map(trim_angles).and_then(nonempty));
        // `rcpt=<->`: no original recipient
        let rcpt = osmtpd_kv(r, b"rcpt").map(trim_angles).filter(|x| *x != b"-").and_then(nonempty);
        if rcpt != row.get_s(C::recipient) {
            row.so(C::orig_to, rcpt);
        }
        row.so(C::relay, osmtpd_kv(r, b"relay").and_then(nonempty));
        row.f(C::delay, exim_secs(osmtpd_kv(r, b"delay")));
        let status: Option<&[u8]> = match osmtpd_kv(r, b"result") {
            Some(b"Ok") => Some(b"sent"),
            Some(b"TempFail") => Some(b"deferred"),
            Some(b"PermFail") | Some(b"Loop") => Some(b"bounced"),
            _ => None,
        };
        row.so(C::status, status);
        // `stat=` closes the line, spaces and all; quoted by 7.x (`stat="550 5.1.1 no such user"`)
        let stat = each_after(r, b" stat=", Some).map(|t| t.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")).unwrap_or(t));
        row.so(C::status_text, stat.and_then(nonempty));
        if r.starts_with(b"mta ") {
            // the remote's reply and where it was: `relay="127.0.0.1 (localhost)"`
            osmtpd_reply(row, stat.unwrap_or(b""));
            if let Some(rl) = osmtpd_kv(r, b"relay") {
                let ip = upto(rl, b' ');
                row.so(C::relay_ip, nonempty(ip));
                let host = rl[ip.len()..].trim_ascii().strip_prefix(b"(").and_then(|h| h.strip_suffix(b")"));
                row.so(C::relay_host, host.and_then(nonempty));
            }
        }
    } else if let Some(c) = r.strip_prefix(b"mta connecting ") {
        // a relay session to the next hop: `mta connecting address=smtp://127.0.0.1:2526
        // host=localhost`, `mta connected`, `mta disconnected reason=quit messages=31`
        row.s(C::kind, b"relay_connect");
        row.so(C::relay, osmtpd_kv(c, b"address").and_then(nonempty));
        row.so(C::relay_host, osmtpd_kv(c, b"host").and_then(nonempty));
    } else if r == b"mta connected" {
        row.s(C::kind, b"relay_connect");
    } else if let Some(c) = r.strip_prefix(b"mta disconnected ") {
        row.s(C::kind, b"relay_disconnect");
        row.so(C::reason, osmtpd_kv(c, b"reason").and_then(nonempty));
    } else if let Some(why) = r.strip_prefix(b"mta error reason=") {
        // the relay session could not reach the next hop: `mta error reason=IO Error:
        // Connection refused`, as Postfix's `connect to ...: Connection refused`
        row.s(C::kind, b"connect_error");
        row.so(C::reason, nonempty(why));
    } else if r.starts_with(b"mta ") && run(&r[4..], |c| c.is_ascii_lowercase() || c == b'-') == r.len() - 4 {
        // `mta host-rejects-all-mails`, `mta error-...`: the relay session's verdict on the host
        row.s(C::kind, b"warning");
        row.s(C::severity, b"warning");
        row.s(C::detail, &r[4..]);
    } else if r.starts_with(b"smtp failed-command ") {
        let reply = osmtpd_kv(r, b"result").unwrap_or(b"");
        if !(reply.len() >= 4 && matches!(reply[0], b'4' | b'5') && reply[1..3].iter().all(|&c| is_digit(c)) && reply[3] == b' ') {
            return;
        }
        row.s(C::kind, b"reject");
        row.s(C::reject_action, b"reject");
        row.i(C::smtp_code, to_i32(&reply[..3]));
        let mut t = &reply[4..];
        if let Some(e) = enh_greedy(t) {
            row.s(C::enhanced_code, &t[..e]);
            t = t[e..].strip_prefix(b" ").unwrap_or(&t[e..]);
        }
        row.so(C::reason, nonempty(t));
        row.so(C::reply_text, nonempty(&reply[4..]));
        let command = osmtpd_kv(r, b"command").unwrap_or(b"");
        let verb = upto(command, b' ');
        let stage: &[u8] = match verb.to_ascii_lowercase().as_slice() {
            b"rcpt" => b"RCPT",
            b"mail" => b"MAIL",
            b"data" => b"DATA",
            b"ehlo" => b"EHLO",
            b"helo" => b"HELO",
            _ => b"",
        };
        row.so(C::reject_stage, nonempty(stage).or(nonempty(verb)));
        let addr = find_byte(command, b'<').and_then(|i| {
            let x = &command[i + 1..];
            find_byte(x, b'>').map(|e| &x[..e])
        });
        match stage {
            b"RCPT" => row.so(C::recipient, addr.and_then(nonempty)),
            b"MAIL" => row.so(C::sender, addr.and_then(nonempty)),
            _ => {}
        }
    }
}

/// Dovecot POP3/IMAP: logins, logouts with their counters, auth failures, disconnects.
pub fn dovecot<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    dovecot_session(row, m);
    if row.get_s(C::kind) == Some(b"other".as_slice()) {
        dovecot_notice(row, m);
    }
}

fn dovecot_session<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    row.s(C::kind, b"other");
    // `pop3-login: Login: user=<u>, method=PLAIN, rip=1.2.3.4, lip=..., mpid=1, secured, session=<id>`
    // `pop3-login: Logged in: user=<u>, ...` (2.4)
    // `pop3(u)<pid><session>: Disconnected: Logged out top=0/0, retr=5/16511, del=5/44, size=133287`
    // `imap(u)<pid><session>: Logged out in=123 out=456 ...`
    // `pop3: Disconnected: Logged out top=0/0, ...` (2.3 with a log prefix that names no user)
    // `POP3(u): Disconnected: Logged out ...`, `IMAP(u): Disconnected in IDLE bytes=1/2` (1.x)
    let m = m.strip_prefix(b"dovecot: ").unwrap_or(m); // a syslog tag repeated by Dovecot's own prefix
    let svc_end = run(m, |c| c.is_ascii_alphanumeric());
    let svc: &'static [u8] = match &m[..svc_end] {
        x if x.eq_ignore_ascii_case(b"pop3") => b"pop3",
        x if x.eq_ignore_ascii_case(b"imap") => b"imap",
        _ => return dovecot_process(row, m),
    };
    let r = &m[svc_end..];
    if let Some(r) = r.strip_prefix(b"-login: ") {
        row.s(C::service, svc);
        let r = r.strip_prefix(b"Info: ").unwrap_or(r); // a log_path of its own adds the level
        let failed = find(r, b"(auth failed").is_some();
        let body;
        // `Login: ` up to 2.3, `Logged in: ` from 2.4
        if let Some(x) = r.strip_prefix(b"Login: ").or_else(|| r.strip_prefix(b"Logged in: ")) {
            row.s(C::kind, b"mailbox_login");
            body = x;
        } else if let Some(x) = r.strip_prefix(b"Aborted login") {
            row.s(C::kind, b"mailbox_auth_failed");
            body = x;
        } else if r.starts_with(b"Disconnected") || r.starts_with(b"Login aborted") || r.starts_with(b"Maximum number of connections") {
            // a pre-login connection that ended (2.4 says `Login aborted`), or was refused
            row.s(C::kind, if failed { b"mailbox_auth_failed" } else { b"mailbox_disconnect" });
            body = r;
        } else {
            body = r;
        }
        row.so(C::mailbox_user, angle_after(body, b"user=<").and_then(nonempty));
        row.so(C::client_ip, until_after(body, b"rip=", b',').and_then(nonempty));
        row.i(C::client_port, until_after(body, b"rport=", b',').and_then(to_i32)); // login_log_format_elements
        row.so(C::session_id, angle_after(body, b"session=<").and_then(nonempty));
        return;
    }
    // svc(user)<pid><session>: ... or svc: ...
    let mut t = r;
    if let Some(r) = r.strip_prefix(b"(") {
        let Some(e) = find(r, b")") else { return };
        row.s(C::service, svc);
        row.so(C::mailbox_user, nonempty(&r[..e]));
        t = &r[e + 1..];
        // `<pid><session>` by default; a `mail_log_prefix` of its own may add `[%r]` (the
        // client's address) and drop the pid: `pop3(u)[192.0.2.4]<session>: `
        let mut angles = Vec::new();
        loop {
            if let Some(x) = t.strip_prefix(b"<") {
                let Some(c) = find_byte(x, b'>') else { break };
                angles.push(&x[..c]);
                t = &x[c + 1..];
            } else if let Some(x) = t.strip_prefix(b"[") {
                let Some(c) = find_byte(x, b']') else { break };
                let ip = &x[..c];
                if !ip.is_empty() && ip.iter().all(|&b| b.is_ascii_hexdigit() || b == b'.' || b == b':') {
                    row.s(C::client_ip, ip);
                }
                t = &x[c + 1..];
            } else {
                break;
            }
        }
        match angles[..] {
            [_, s, ..] => row.s(C::session_id, s),
            [s] if !s.iter().all(u8::is_ascii_digit) => row.s(C::session_id, s),
            _ => {}
        }
    }
    let Some(t) = t.strip_prefix(b": ") else { return };
    row.s(C::service, svc);
    let t = t.strip_prefix(b"Info: ").unwrap_or(t);
    if mail_log_event(row, t) {
        return;
    }
    let pair = |lit: &[u8]| -> (Option<i64>, Option<i64>) {
        match until_after(t, lit, b',') {
            Some(v) => {
                let v = upto(v, b' ');
                match find_byte(v, b'/') {
                    Some(s) => (to_i64(&v[..s]), to_i64(&v[s + 1..])),
                    None => (to_i64(v), None),
                }
            }
            None => (None, None),
        }
    };
    if find(t, b"Logged out").is_some() || t.starts_with(b"Disconnected") || t.starts_with(b"Connection closed") {
        let logout = find(t, b"Logged out").is_some();
        row.s(C::kind, if logout { b"mailbox_logout" } else { b"mailbox_disconnect" });
        let (a, b) = pair(b"top=");
        row.i(C::top_msgs, a);
        row.i(C::top_bytes, b);
        let (a, b) = pair(b"retr=");
        row.i(C::retr_msgs, a);
        row.i(C::retr_bytes, b);
        let (a, b) = pair(b"del=");
        row.i(C::del_msgs, a);
        row.i(C::mbox_msgs, b);
        row.i(C::mbox_size, pair(b"size=").0);
        row.i(C::bytes_in, pair(b" in=").0);
        row.i(C::bytes_out, pair(b" out=").0);
        if let (Some(i), o) = pair(b" bytes=") {
            // 1.x imap: `bytes=in/out`
            row.i(C::bytes_in, Some(i));
            row.i(C::bytes_out, o);
        }
        if svc == b"imap" {
            // imap_logout_format (2.3 default): `in=.. out=.. deleted=.. expunged=.. trashed=..
            // hdr_count=.. hdr_bytes=.. body_count=.. body_bytes=..`: header fetches are IMAP's TOP,
            // body fetches its RETR, expunged messages its deletes
            row.i(C::top_msgs, pair(b"hdr_count=").0);
            row.i(C::top_bytes, pair(b"hdr_bytes=").0);
            row.i(C::retr_msgs, pair(b"body_count=").0);
            row.i(C::retr_bytes, pair(b"body_bytes=").0);
            row.i(C::del_msgs, pair(b"expunged=").0);
        }
    }
}

/// The mail_log plugin's lines (`mail_plugins = $mail_plugins mail_log`), after a session's
/// prefix: `expunge: box=INBOX, uid=19, msgid=<...>, size=2331`, likewise `delete`,
/// `undelete`, `autoexpunge`, `save`, `flag_change` and `copy from <box>`, each with the
/// `mail_log_fields` it was given (none or several of box, uid, msgid, size, vsize, from,
/// subject, flags); `Mailbox created: X`, `Mailbox deleted: X`, `Mailbox renamed: X -> Y`.
/// Kind `mail_log`: `detail` is the event as `mail_log_events` names it, with the
/// message's `message_id` and `size` when logged.
const MAILBOX_EVENTS: [(&[u8], &[u8]); 3] =
    [(b"Mailbox created", b"mailbox_create"), (b"Mailbox deleted", b"mailbox_delete"), (b"Mailbox renamed", b"mailbox_rename")];

/// Dovecot 2.4's mail_log line names its box first (`Mailbox INBOX: expunge: uid=1, ...`,
/// `Mailbox tmp: Mailbox deleted`; 2.3: `expunge: box=INBOX, uid=1, ...`, `Mailbox deleted:
/// tmp`): the event after it.
fn box_first(t: &[u8]) -> Option<&[u8]> {
    if MAILBOX_EVENTS.iter().any(|(lit, _)| t.strip_prefix(*lit).is_some_and(|x| x.starts_with(b": "))) {
        return None; // 2.3's own
    }
    t.strip_prefix(b"Mailbox ").and_then(|r| find(r, b": ").map(|p| &r[p + 2..]))
}

fn mail_log_event<'a>(row: &mut Row<'a>, t: &'a [u8]) -> bool {
    // a box created, deleted or renamed: `Mailbox deleted: tmp` (2.3), `Mailbox deleted` after
    // 2.4's box
    for (lit, event) in MAILBOX_EVENTS {
        if t.strip_prefix(lit).is_some_and(|x| x.is_empty() || x.starts_with(b":")) {
            row.s(C::kind, b"mail_log");
            row.s(C::detail, event);
            return true;
        }
    }
    if let Some(r) = box_first(t) {
        return mail_log_event(row, r);
    }
    let word = &t[..run(t, |c| c.is_ascii_lowercase() || c == b'_')];
    let event: &'static [u8] = match word {
        b"delete" => b"delete",
        b"undelete" => b"undelete",
        b"expunge" => b"expunge",
        b"autoexpunge" => b"autoexpunge",
        b"save" => b"save",
        b"flag_change" => b"flag_change",
        b"copy" if t.starts_with(b"copy from ") => b"copy",
        _ => return false,
    };
    // the event ends at `: ` (a copy's source box may hold spaces); then the fields, if any
    let fields = if event == b"copy" {
        match find(t, b": ") {
            Some(p) => &t[p + 2..],
            None => return false,
        }
    } else if t.len() == word.len() {
        b"".as_slice()
    } else if let Some(f) = t[word.len()..].strip_prefix(b": ") {
        f
    } else {
        return false;
    };
    row.s(C::kind, b"mail_log");
    row.s(C::detail, event);
    row.so(C::message_id, angle_after(fields, b"msgid=<").and_then(nonempty));
    let size = match fields.strip_prefix(b"size=") {
        Some(r) => Some(upto(r, b',')),
        None => until_after(fields, b", size=", b','),
    };
    if let Some(n) = size.and_then(to_i64) {
        row.i(C::size, Some(n));
    }
    true
}

#[cfg(test)]
mod dovecot_tests {
    use crate::cols::{Row, C};
    use crate::test_util::i;

    fn run(m: &'static [u8]) -> Row<'static> {
        let mut row = Row::new();
        super::dovecot(&mut row, m);
        row
    }


    #[test]
    fn logout_without_user_pid_session_prefix() {
        // mail_log_prefix = "%s: " (Dovecot 2.3)
        let r = run(b"pop3: Disconnected: Logged out top=0/0, retr=5/14008, del=5/11, size=26517");
        assert_eq!(r.get_s(C::kind), Some(&b"mailbox_logout"[..]));
        assert_eq!(r.get_s(C::service), Some(&b"pop3"[..]));
        assert_eq!(r.get_s(C::mailbox_user), None);
        assert_eq!(i(&r, C::retr_msgs), Some(5));
        assert_eq!(i(&r, C::retr_bytes), Some(14008));
        assert_eq!(i(&r, C::mbox_msgs), Some(11));
        assert_eq!(i(&r, C::mbox_size), Some(26517));
    }

    #[test]
    fn dovecot_24_login_is_logged_in() {
        // Dovecot 2.4 (Debian 13) says `Logged in:` where 2.3 said `Login:`
        let r = run(b"pop3-login: Logged in: user=<user9@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=61, secured, session=<IqzY7UhhRKF/AAAB>");
        assert_eq!(r.get_s(C::kind), Some(&b"mailbox_login"[..]));
        assert_eq!(r.get_s(C::service), Some(&b"pop3"[..]));
        assert_eq!(r.get_s(C::mailbox_user), Some(&b"user9@bench.test"[..]));
        assert_eq!(r.get_s(C::client_ip), Some(&b"127.0.0.1"[..]));
        assert_eq!(r.get_s(C::session_id), Some(&b"IqzY7UhhRKF/AAAB"[..]));
        let r = run(b"imap-login: Logged in: user=<user8@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=59, secured, session=<FzPP7UhhIuV/AAAB>");
        assert_eq!(r.get_s(C::kind), Some(&b"mailbox_login"[..]));
        assert_eq!(r.get_s(C::service), Some(&b"imap"[..]));
        // a wrong password: `Login aborted` with the reason twice
        let r = run(b"imap-login: Login aborted: Logged out (auth failed, 1 attempts in 2 secs) (auth_failed): user=<user10@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, secured, session=<Vlzf7UhhJOV/AAAB>");
        assert_eq!(r.get_s(C::kind), Some(&b"mailbox_auth_failed"[..]));
        assert_eq!(r.get_s(C::mailbox_user), Some(&b"user10@bench.test"[..]));
    }

    #[test]
    fn lmtp_process_id_is_not_a_user() {
        let r = run(b"lmtp(116): Connect from local");
        assert_eq!(r.get_s(C::kind), Some(&b"connect"[..]));
        assert_eq!(r.get_s(C::mailbox_user), None);
        let r = run(b"lmtp(116): Disconnect from local: Logged out (state=READY)");
        assert_eq!(r.get_s(C::kind), Some(&b"disconnect"[..]));
        assert_eq!(r.get_s(C::mailbox_user), None);
        let r = run(b"lmtp(user5@bench.test)<116><NrKyKEn5CWt0AAAA0J78UA>: msgid=<20261127214233.016122@vm>: saved mail to INBOX");
        assert_eq!(r.get_s(C::kind), Some(&b"local_delivery"[..]));
        assert_eq!(r.get_s(C::mailbox_user), Some(&b"user5@bench.test"[..]));
        assert_eq!(r.get_s(C::message_id), Some(&b"20261127214233.016122@vm"[..]));
    }

    #[test]
    fn mail_log_plugin_events() {
        // Dovecot 2.3.19 with mail_log_events = delete undelete expunge copy mailbox_delete
        // mailbox_rename and mail_log_fields = uid box msgid size
        let r = run(b"pop3(user1@bench.test)<11333><Gs/R6EhhiNN/AAAB>: expunge: box=INBOX, uid=19, msgid=<20261127214029.A1CDD2E8040@vm>, size=2331");
        assert_eq!(r.get_s(C::kind), Some(&b"mail_log"[..]));
        assert_eq!(r.get_s(C::service), Some(&b"pop3"[..]));
        assert_eq!(r.get_s(C::mailbox_user), Some(&b"user1@bench.test"[..]));
        assert_eq!(r.get_s(C::session_id), Some(&b"Gs/R6EhhiNN/AAAB"[..]));
        assert_eq!(r.get_s(C::detail), Some(&b"expunge"[..]));
        assert_eq!(r.get_s(C::message_id), Some(&b"20261127214029.A1CDD2E8040@vm"[..]));
        assert_eq!(i(&r, C::size), Some(2331));
        let r = run(b"imap(user7@bench.test)<12001><LwNlNUhhmtJ/AAAB>: delete: box=INBOX, uid=4, msgid=<x@y>, size=977");
        assert_eq!(r.get_s(C::kind), Some(&b"mail_log"[..]));
        assert_eq!(r.get_s(C::detail), Some(&b"delete"[..]));
        assert_eq!(i(&r, C::size), Some(977));
        // the default fields (uid, msgid, size), a copy, mailbox events, the custom prefix
        let r = run(b"imap(u@x)<1><s>: copy from INBOX: uid=3, msgid=<a@b>, size=12");
        assert_eq!((r.get_s(C::kind), r.get_s(C::detail)), (Some(&b"mail_log"[..]), Some(&b"copy"[..])));
        assert_eq!(i(&r, C::size), Some(12));
        let r = run(b"imap(u@x)<1><s>: Mailbox renamed: Old -> New");
        assert_eq!(r.get_s(C::detail), Some(&b"mailbox_rename"[..]));
        let r = run(b"pop3: expunge: uid=5, msgid=<a@b>, size=40");
        assert_eq!((r.get_s(C::kind), r.get_s(C::service)), (Some(&b"mail_log"[..]), Some(&b"pop3"[..])));
        // not an event word: left to the other shapes
        let r = run(b"imap(u@x)<1><s>: deleted something odd");
        assert_ne!(r.get_s(C::kind), Some(&b"mail_log"[..]));
    }

    #[test]
    fn service_notices() {
        // a process's warning is a warning event
        let r = run(b"master: Warning: SIGHUP received - reloading configuration");
        assert_eq!(r.get_s(C::kind), Some(&b"warning"[..]));
        assert_eq!(r.get_s(C::severity), Some(&b"warning"[..]));
        assert_eq!(r.get_s(C::detail), Some(&b"SIGHUP received - reloading configuration"[..]));
        let r = run(b"pop3-login: Login: user=<u@x>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=4, secured");
        assert_eq!(r.get_s(C::kind), Some(&b"mailbox_login"[..]));
        assert_eq!(r.get_s(C::detail), None);
    }
}

#[cfg(test)]
mod tests {
    //! Real lines from the recorded runs in samples/mtas (Exim 4.96, sendmail 8.17.1.9) and
    //! tests/fixtures/recorded (Exim 4.96, sendmail 8.17.1.9, notqmail 1.09).
    use crate::cols::{C, V};
    use crate::test_util::{i, parsed, s};


    #[test]
    fn exim_rcpt_reject_is_a_550_with_its_client() {
        let r = parsed(
            b"2026-11-27 02:52:55 H=(localhost) [127.0.0.1] F=<user105@bench.test> rejected RCPT <nouser4@bench.test>: Unrouteable address",
        );
        assert_eq!(s(&r, C::kind), Some("reject"));
        assert_eq!(s(&r, C::reject_stage), Some("RCPT"));
        assert_eq!(s(&r, C::recipient), Some("nouser4@bench.test"));
        assert_eq!(s(&r, C::sender), Some("user105@bench.test"));
        assert_eq!(s(&r, C::reason), Some("Unrouteable address"));
        assert_eq!(i(&r, C::smtp_code), Some(550));
        assert_eq!(s(&r, C::client), Some("(localhost) [127.0.0.1]"));
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
    }

    #[test]
    fn exim_temporary_reject_is_exims_default_451() {
        // smtp_in.c: `smtp_code = rc == FAIL ? acl_wherecodes[where] : US"451"`
        let r = parsed(
            b"2026-11-27 02:52:55 H=(localhost) [127.0.0.1] F=<a@b.test> temporarily rejected RCPT <c@b.test>: lookup deferred",
        );
        assert_eq!(s(&r, C::kind), Some("reject"));
        assert_eq!(i(&r, C::smtp_code), Some(451));
    }

    #[test]
    fn exim_local_delivery_recipient_is_the_address() {
        let r = parsed(b"2026-11-27 02:52:55 1xWm50-00000V-2w => user105 <user105@bench.test> R=bench_users T=bench_maildir");
        assert_eq!(s(&r, C::kind), Some("delivery"));
        assert_eq!(s(&r, C::status), Some("sent"));
        assert_eq!(s(&r, C::recipient), Some("user105@bench.test"));
        assert_eq!(s(&r, C::orig_to), Some("user105@bench.test"));
        assert_eq!(s(&r, C::mailer), Some("bench_maildir"));
    }

    #[test]
    fn exim_remote_delivery_keeps_its_own_recipient() {
        let r = parsed(b"2026-11-27 02:52:55 1xWm50-00000V-2w => x@r.test <alias@bench.test> R=dnslookup T=remote_smtp H=mx.r.test [192.0.2.1]");
        assert_eq!(s(&r, C::recipient), Some("x@r.test"));
        assert_eq!(s(&r, C::orig_to), Some("alias@bench.test"));
        assert_eq!(s(&r, C::relay_ip), Some("192.0.2.1"));
    }

    // tests/fixtures/recorded/exim-relay-smarthost: a manualroute smarthost to an SMTP sink
    #[test]
    fn exim_smarthost_delivery_takes_the_remote_reply() {
        let r = parsed(
            "2026-11-27 22:18:38 1xX4H8-00004C-1x => user119@relay.test R=smarthost T=remote_smtp H=127.0.0.1 [127.0.0.1] C=\"250 2.0.0 Ok: queued as S0000003A\"",
        );
        assert_eq!(s(&r, C::kind), Some("delivery"));
        assert_eq!(s(&r, C::status), Some("sent"));
        assert_eq!(s(&r, C::recipient), Some("user119@relay.test"));
        assert_eq!(s(&r, C::mailer), Some("remote_smtp"));
        assert_eq!(s(&r, C::relay), Some("127.0.0.1 [127.0.0.1]"));
        assert_eq!((s(&r, C::relay_host), s(&r, C::relay_ip), i(&r, C::relay_port)), (Some("127.0.0.1"), Some("127.0.0.1"), None));
        assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(250), Some("2.0.0")));
        assert_eq!(s(&r, C::reply_text), Some("Ok: queued as S0000003A"));
        assert_eq!(s(&r, C::status_text), Some("250 2.0.0 Ok: queued as S0000003A"));
        assert_eq!(s(&r, C::dsn), None); // Exim logs no DSN status
    }

    #[test]
    fn exim_smarthost_deferral_and_failure_take_the_remote_reply() {
        for (line, status, code, enh, text, rcpt) in [
            (
                "2026-11-27 22:18:32 1xX4H2-000015-04 == tempfail2@relay.test R=smarthost T=remote_smtp defer (-44) H=127.0.0.1 [127.0.0.1]: SMTP error from remote mail server after RCPT TO:<tempfail2@relay.test>: 450 4.2.0 try later",
                "deferred", 450, "4.2.0", "try later", "tempfail2@relay.test",
            ),
            (
                "2026-11-27 22:19:06 1xX4Ha-0000Eu-2a ** reject3@relay.test R=smarthost T=remote_smtp H=127.0.0.1 [127.0.0.1]: SMTP error from remote mail server after RCPT TO:<reject3@relay.test>: 550 5.1.1 no such user",
                "bounced", 550, "5.1.1", "no such user", "reject3@relay.test",
            ),
        ] {
            let r = parsed(line);
            assert_eq!(s(&r, C::status), Some(status), "{line}");
            assert_eq!(s(&r, C::recipient), Some(rcpt), "{line}");
            assert_eq!((s(&r, C::relay_host), s(&r, C::relay_ip)), (Some("127.0.0.1"), Some("127.0.0.1")), "{line}");
            assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(code), Some(enh)), "{line}");
            assert_eq!(s(&r, C::reply_text), Some(text), "{line}");
        }
        // a queue runner's skip before the retry time names no host and no reply
        let r = parsed("2026-11-27 22:18:54 1xX4HD-000068-28 == tempfail3@relay.test routing defer (-52): retry time not reached");
        assert_eq!((s(&r, C::status), s(&r, C::recipient)), (Some("deferred"), Some("tempfail3@relay.test")));
        assert_eq!((s(&r, C::relay), i(&r, C::smtp_code), s(&r, C::enhanced_code)), (None, None, None));
        assert_eq!(s(&r, C::status_text), Some("retry time not reached"));
    }

    const SM: &str = "2026-11-27T03:01:17.253785+00:00 vm sendmail[118]: ";

    fn sm(rest: &str) -> Vec<u8> {
        format!("{SM}{rest}").into_bytes()
    }

    #[test]
    fn sendmail_recipient_list_gives_its_first_and_old_deferral_gives_the_reply() {
        // one delivery to two recipients of the same host
        let l = sm("7AB12cd3004512: to=<ann@x.test>,<bob@x.test>, delay=00:00:01, xdelay=00:00:01, mailer=esmtp, pri=120000, relay=mx.x.test. [192.0.2.9], dsn=2.0.0, stat=Sent (ok)");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::recipient)), (Some("delivery"), Some("ann@x.test")));
        // before 8.15 a deferral's reply is in `stat=` only
        let l = sm("7AB12cd3004513: to=<carl@x.test>, delay=00:00:15, xdelay=00:00:15, mailer=esmtp, pri=34527, relay=[192.0.2.9] [192.0.2.9], dsn=4.3.5, stat=Deferred: 451 4.3.5 Server configuration problem");
        let r = parsed(&l);
        assert_eq!((s(&r, C::status), i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some("deferred"), Some(451), Some("4.3.5")));
        assert_eq!(s(&r, C::reply_text), Some("Server configuration problem"));
        // a deferral without a reply keeps none
        let l = sm("7AB12cd3004514: to=<dan@x.test>, delay=00:00:15, mailer=esmtp, pri=34527, relay=mx.x.test., dsn=4.0.0, stat=Deferred: Connection refused by mx.x.test.");
        let r = parsed(&l);
        assert_eq!((s(&r, C::status), i(&r, C::smtp_code)), (Some("deferred"), None));
    }

    #[test]
    fn dovecot_own_log_file_lines_are_dovecots() {
        for (line, kind, user) in [
            ("Nov 28 06:34:32 lmtp(user7@bench.test)<235><SKKlFfh1CmvrAAAAg+zDdQ>: Info: msgid=<6B0A75F8.4A1@bench.test>: saved mail to INBOX", "local_delivery", Some("user7@bench.test")),
            ("Nov 28 06:35:45 lmtp(user3@bench.test)<244><6XigK0F2Cmv0AAAAg+zDdQ>: Info: msgid=<6B0A7641.408@bench.test>: save failed to INBOX: Quota exceeded (mailbox for user is full)", "local_delivery_failed", Some("user3@bench.test")),
            ("Nov 28 06:34:30 lmtp(235): Info: Connect from 127.0.0.1", "connect", None),
            ("Nov 28 06:34:40 pop3-login: Info: Logged in: user=<user9@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=250, session=<wBWNZFBhuJB/AAAB>", "mailbox_login", Some("user9@bench.test")),
            ("Nov 28 06:34:41 pop3(user9@bench.test)<250><wBWNZFBhuJB/AAAB>: Info: Disconnected: Logged out top=1/760, retr=4/12004, del=4/11968, size=11968", "mailbox_logout", Some("user9@bench.test")),
            ("Nov 28 06:38:41 master: Warning: Killed with signal 15 (by pid=1 uid=0 code=kill)", "warning", None),
            // 1.x: the level first
            ("Jun 23 15:04:06 Info: IMAP(ann): Disconnected: Logged out bytes=59/566", "mailbox_logout", Some("ann")),
            ("May 31 09:43:57 Info: pop3-login: Aborted login (1 authentication attempts): user=<ann>, method=PLAIN, rip=192.0.2.4, lip=192.0.2.5, secured", "mailbox_auth_failed", Some("ann")),
        ] {
            let r = parsed(line.as_bytes());
            assert_eq!((s(&r, C::program), s(&r, C::host)), (Some("dovecot"), None), "{line}");
            assert_eq!((s(&r, C::kind), s(&r, C::mailbox_user)), (Some(kind), user), "{line}");
        }
        // a host named like a Dovecot process is still a host
        let r = parsed(b"Nov 28 06:34:32 imap dovecot: imap-login: Login: user=<ann>, method=PLAIN, rip=192.0.2.4");
        assert_eq!((s(&r, C::host), s(&r, C::kind)), (Some("imap"), Some("mailbox_login")));
    }

    #[test]
    fn sendmail_milter_refusals_discards_and_expiry_notices() {
        let at = "2026-11-28T06:53:39.818749+00:00 vm sm-mta[102]: ";
        let p = |rest: &str| format!("{at}{rest}");
        let l = p("6AS6rdCR000102: Milter: data, reject=550 5.7.1 Message rejected by bench milter");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::reject_stage), i(&r, C::smtp_code)), (Some("reject"), Some("DATA"), Some(550)));
        assert_eq!((s(&r, C::enhanced_code), s(&r, C::reason)), (Some("5.7.1"), Some("Message rejected by bench milter")));
        let l = p("6AS6rdCR000102: to=<user6@bench.test>, delay=00:00:00, pri=30971, stat=Message rejected by bench milter");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some("rejected")));
        let l = p("6AS71mNE000094: Milter: to=<milterrej1@bench.test>, reject=451 4.7.1 Recipient deferred by bench milter");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::reject_stage), s(&r, C::recipient)), (Some("reject"), Some("RCPT"), Some("milterrej1@bench.test")));
        assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(451), Some("4.7.1")));
        let l = p("6AS71mNE000094: milter=bench, action=rcpt, reject=550 5.7.1 Recipient refused by bench milter");
        assert_eq!(s(&parsed(&l), C::kind), Some("milter_notice"));
        let l = p("6AS6rYGo000084: ruleset=check_rcpt, arg1=<user1@bench.test>, relay=localhost [127.0.0.1], discard");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::recipient), s(&r, C::client_ip)), (Some("discard"), Some("user1@bench.test"), Some("127.0.0.1")));
        let l = p("6AS6rYGo000084: to=<user1@bench.test>, delay=00:00:00, pri=30139, stat=discarded");
        assert_eq!(s(&parsed(&l), C::status), Some("discarded"));
        let l = p("6AS6sgAb000386: 6AS6tf0o001173: sender notify: Warning: could not send message for past 1 minute");
        assert_eq!(s(&parsed(&l), C::kind), Some("defer_notice"));
        let l = p("6AS6sHDl000078: 6AS6ufAf001962: sender notify: Cannot send message for 2 minutes");
        let r = parsed(&l);
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id), s(&r, C::related_queue_id)), (Some("expired"), Some("6AS6sHDl000078"), Some("6AS6ufAf001962")));
        let l = p("6AS737VY000441: from=root, size=83, class=0, nrcpts=2, msgid=<6AS737VY000441@vm>, relay=root@localhost");
        let r = parsed(&l);
        assert_eq!((s(&r, C::client), s(&r, C::client_host)), (Some("root@localhost"), Some("localhost")));
        let l = p("NOQUEUE: stopping daemon, reason=signal");
        assert_eq!(s(&parsed(&l), C::kind), Some("master"));
        // a local mailer's failure is still a bounce
        let l = p("6AS6rdCR000103: to=<nouser@bench.test>, delay=00:00:00, mailer=local, pri=30742, dsn=5.1.1, stat=User unknown");
        assert_eq!(s(&parsed(&l), C::status), Some("bounced"));
    }

    #[test]
    fn rfc_5424_lines_read_as_their_syslog_shape() {
        let r = parsed(b"<22>1 2026-11-28T07:07:40.402589+00:00 vm exim 36 - -  2026-11-28 07:07:40 1xXCX6-00000a-18 <= user111@relay.test H=(localhost) [127.0.0.1] P=esmtp S=3428 id=6B0A7DBC.1A1@relay.test");
        assert_eq!((s(&r, C::ts_format), s(&r, C::host), s(&r, C::program), i(&r, C::pid)), (Some("exim"), Some("vm"), Some("exim"), Some(36)));
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id), s(&r, C::sender)), (Some("arrival"), Some("1xXCX6-00000a-18"), Some("user111@relay.test")));
        let r = parsed(b"<22>1 2026-11-28T07:07:40.5+01:00 mx postfix/smtpd 812 - [timeQuality tzKnown=\"1\" x=\"a\\]b\"] 4C0F1A2B3C: client=localhost[127.0.0.1]");
        assert_eq!((s(&r, C::ts_format), s(&r, C::host), s(&r, C::program), i(&r, C::pid)), (Some("rfc5424"), Some("mx"), Some("postfix/smtpd"), Some(812)));
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id), s(&r, C::client_ip)), (Some("client"), Some("4C0F1A2B3C"), Some("127.0.0.1")));
        assert_eq!(i(&r, C::ts), Some(1_795_846_060_500_000)); // 06:07:40.5 UTC
        // Exim's session lines
        let r = parsed(b"2026-11-28 07:07:40 SMTP connection from (client.test) [127.0.0.2]:51855 lost D=0s");
        assert_eq!((s(&r, C::kind), s(&r, C::client_ip)), (Some("lost_connection"), Some("127.0.0.2")));
        let r = parsed(b"2026-11-28 07:07:40 SMTP connection from [127.0.0.1]:34492 (TCP/IP connection count = 1)");
        assert_eq!((s(&r, C::kind), s(&r, C::client), i(&r, C::client_port)), (Some("connect"), Some("[127.0.0.1]:34492"), Some(34492)));
    }

    #[test]
    fn exim_tls_size_and_deferral_time() {
        let r = parsed(b"2026-11-28 07:07:41 1xXCX6-00000a-18 => user111@relay.test R=smarthost T=remote_smtp H=127.0.0.1 [127.0.0.1]:2526 X=TLS1.3:ECDHE_X25519__RSA_PSS_RSAE_SHA256__AES_256_GCM:256 CV=no S=3484 C=\"250 2.0.0 Ok: queued as S1 S=9\"");
        assert_eq!((s(&r, C::tls_protocol), s(&r, C::tls_cipher), i(&r, C::tls_bits)), (Some("TLS1.3"), Some("ECDHE_X25519__RSA_PSS_RSAE_SHA256__AES_256_GCM"), Some(256)));
        assert_eq!(i(&r, C::size), Some(3484));
        let r = parsed(b"2026-11-28 07:07:40 1xXCX6-00000a-18 <= user111@relay.test H=(localhost) [127.0.0.1] P=esmtps X=TLS1.3:TLS_AES_256_GCM_SHA384:256 S=3428 id=a@b");
        assert_eq!((s(&r, C::tls_protocol), s(&r, C::tls_cipher), i(&r, C::tls_bits), i(&r, C::size)), (Some("TLS1.3"), Some("TLS_AES_256_GCM_SHA384"), Some(256), Some(3428)));
        let r = parsed(b"2026-11-27 21:18:24.866 [658] 1xX3Kn-000088-12 == flaky1@bench.test R=flaky_users T=tempfail_pipe defer (-53) DT=0.012s: Retry time not yet reached");
        assert!(matches!(r.get(C::delay_transmission), crate::cols::V::F(x) if x == 0.012));
    }

    #[test]
    fn exim_auth_failure_with_ident_keeps_its_code() {
        let r = parsed(b"2026-11-27 10:00:00 plain authenticator failed for (client.test) [192.0.2.5] U=joe: 535 Incorrect authentication data (set_id=joe)");
        assert_eq!((s(&r, C::kind), s(&r, C::client_ip), i(&r, C::smtp_code)), (Some("sasl_failed"), Some("192.0.2.5"), Some(535)));
        assert_eq!(s(&r, C::reason), Some("535 Incorrect authentication data (set_id=joe)"));
    }

    #[test]
    fn qmail_lines_made_local_by_tai64nlocal_are_qmail() {
        for (line, kind, qid) in [
            ("2026-11-27 11:22:07.039237500 new msg 163844", "new_msg", Some("163844")),
            ("2026-11-27 11:22:07.039237500 starting delivery 3714: msg 163844 to local ann@bench.test", "delivery_start", Some("163844")),
            ("2026-11-27 11:22:07.070367500 delivery 3714: success: did_1+0+0/", "delivery", None),
            ("2026-11-27 11:22:07.070367500 end msg 163844", "removed", Some("163844")),
        ] {
            let r = parsed(line.as_bytes());
            assert_eq!((s(&r, C::program), s(&r, C::ts_format)), (Some("qmail"), Some("tai64nlocal")), "{line}");
            assert_eq!((s(&r, C::kind), s(&r, C::queue_id)), (Some(kind), qid), "{line}");
            assert!(i(&r, C::ts).is_some(), "{line}");
        }
        // an Exim line with the same stamp shape stays Exim's
        let r = parsed(b"2026-11-27 11:22:07.039 1vOBnw-000000002Ll-2Bqz Completed");
        assert_eq!((s(&r, C::program), s(&r, C::kind)), (Some("exim"), Some("removed")));
    }

    // tests/fixtures/recorded/sendmail-relay-smarthost: SMART_HOST esmtp:[127.0.0.1], port 2526
    #[test]
    fn sendmail_smart_host_delivery_relay_and_reply() {
        let sent = sm("6ARMKClQ000221: to=<user134@relay.test>, delay=00:00:00, xdelay=00:00:00, mailer=esmtp, pri=31635, relay=[127.0.0.1] [127.0.0.1], dsn=2.0.0, stat=Sent (2.0.0 Ok: queued as S0000003A)");
        let deferred = sm("6ARMKg13000737: to=<tempfail3@relay.test>, delay=00:00:00, xdelay=00:00:00, mailer=esmtp, pri=32751, relay=[127.0.0.1] [127.0.0.1], dsn=4.2.0, reply=450 4.2.0 try later, stat=Deferred: 450 4.2.0 try later");
        let bounced = sm("6ARMKM3E000334: to=<reject3@relay.test>, delay=00:00:00, xdelay=00:00:00, mailer=esmtp, pri=31630, relay=[127.0.0.1] [127.0.0.1], dsn=5.1.1, reply=550 5.1.1 no such user, stat=User unknown");
        for (line, status, code, enh, text, rcpt) in [
            (&sent, "sent", None, "2.0.0", "Ok: queued as S0000003A", "user134@relay.test"),
            (&deferred, "deferred", Some(450), "4.2.0", "try later", "tempfail3@relay.test"),
            (&bounced, "bounced", Some(550), "5.1.1", "no such user", "reject3@relay.test"),
        ] {
            let r = parsed(line);
            let l = String::from_utf8_lossy(line);
            assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some(status)), "{l}");
            assert_eq!(s(&r, C::recipient), Some(rcpt), "{l}");
            assert_eq!(s(&r, C::mailer), Some("esmtp"), "{l}");
            assert_eq!(s(&r, C::relay), Some("[127.0.0.1] [127.0.0.1]"), "{l}");
            // the destination's name is the address literal: its address
            assert_eq!((s(&r, C::relay_host), s(&r, C::relay_ip), i(&r, C::relay_port)), (Some("127.0.0.1"), Some("127.0.0.1"), None), "{l}");
            // a success logs no code, only the reply's text
            assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code), s(&r, C::dsn)), (code, Some(enh), Some(enh)), "{l}");
            assert_eq!(s(&r, C::reply_text), Some(text), "{l}");
        }
        // a named relay and a local delivery keep their shapes
        let named = sm("6AR31G6J000054: to=<a@b.test>, delay=00:00:01, xdelay=00:00:01, mailer=esmtp, pri=120000, relay=mx.b.test. [192.0.2.7], dsn=2.0.0, stat=Sent (Ok)");
        let r = parsed(&named);
        assert_eq!((s(&r, C::relay_host), s(&r, C::relay_ip)), (Some("mx.b.test."), Some("192.0.2.7")));
        assert_eq!((s(&r, C::enhanced_code), s(&r, C::reply_text)), (None, Some("Ok")));
        let local = sm("6AR31G6J000054: to=<user30@bench.test>, ctladdr=<user30@bench.test> (5030/5000), delay=00:00:00, xdelay=00:00:00, mailer=local, pri=32360, dsn=2.0.0, stat=Sent");
        let r = parsed(&local);
        assert_eq!((s(&r, C::relay), s(&r, C::enhanced_code), s(&r, C::reply_text)), (None, None, None));
    }

    #[test]
    fn sendmail_from_without_recipients_is_no_message() {
        let line = sm("6AR31HwM000118: from=<user82@bench.test>, size=0, class=0, nrcpts=0, proto=ESMTP, daemon=MTA-v4, relay=localhost [127.0.0.1]");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("from_no_rcpt"));
        assert_eq!(i(&r, C::nrcpt), Some(0));
        assert_eq!(s(&r, C::queue_id), Some("6AR31HwM000118"));
        let line = sm("6AR31G6J000054: from=<user30@bench.test>, size=2360, class=0, nrcpts=1, msgid=<6B08F27C.551.002.user30@bench.test>, proto=ESMTP, daemon=MTA-v4, relay=localhost [127.0.0.1]");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("from"));
        assert_eq!(i(&r, C::nrcpt), Some(1));
        assert_eq!(i(&r, C::size), Some(2360));
    }

    #[test]
    fn sendmail_user_unknown_is_a_rcpt_reject() {
        let line = sm("6AR31HwM000118: <nouser4@bench.test>... User unknown");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("reject"));
        assert_eq!(s(&r, C::reject_stage), Some("RCPT"));
        assert_eq!(s(&r, C::recipient), Some("nouser4@bench.test"));
        assert_eq!(i(&r, C::smtp_code), Some(550));
        assert_eq!(s(&r, C::enhanced_code), Some("5.1.1"));
        assert_eq!(s(&r, C::queue_id), Some("6AR31HwM000118"));
    }

    #[test]
    fn sendmail_connection_throttle_is_a_warning() {
        let line = sm("deferring connections on daemon MTA-v4: 15 per second");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("warning"));
        assert_eq!(s(&r, C::severity), Some("warning"));
        assert_eq!(s(&r, C::detail), Some("deferring connections on daemon MTA-v4: 15 per second"));
    }

    #[test]
    fn sendmail_from_after_premature_eom_is_aborted() {
        let lines = [
            sm("6AR31xob002481: collect: premature EOM: unexpected close"),
            sm("6AR31xob002481: collect: relay=localhost, from=<user61@bench.test>, info=unexpected close"),
            sm("6AR31G6J000054: from=<user30@bench.test>, size=2360, class=0, nrcpts=1, msgid=<6B08F27C.551.002.user30@bench.test>, proto=ESMTP, daemon=MTA-v4, relay=localhost [127.0.0.1]"),
            sm("6AR31xob002481: from=<user61@bench.test>, size=329, class=0, nrcpts=1, proto=ESMTP, daemon=MTA-v4, relay=localhost [127.0.0.1]"),
        ];
        let mut across = super::AcrossLines::default();
        let kinds: Vec<String> = lines
            .iter()
            .map(|l| {
                let mut r = parsed(l);
                across.see(&mut r);
                s(&r, C::kind).unwrap().to_string()
            })
            .collect();
        assert_eq!(kinds, ["lost_connection", "collect_info", "from", "from_aborted"]);
    }

    #[test]
    fn sendmail_from_after_a_lost_input_channel_is_aborted() {
        // sendmail 8.17 (Debian 12), MaxDaemonChildren 3 under load: the client dropped after
        // RCPT; its transaction's `from=` line follows, with no msgid and size 0
        let lines = [
            sm("6AS3WSt0000144: lost input channel from localhost [127.0.0.1] to MTA-v4 after rcpt"),
            sm("6AS3WSt0000144: from=<user15@bench.test>, size=0, class=0, nrcpts=1, proto=ESMTP, daemon=MTA-v4, relay=localhost [127.0.0.1]"),
        ];
        let mut across = super::AcrossLines::default();
        let rows: Vec<_> = lines
            .iter()
            .map(|l| {
                let mut r = parsed(l);
                across.see(&mut r);
                r
            })
            .collect();
        assert_eq!(s(&rows[0], C::kind), Some("lost_connection"));
        assert_eq!((s(&rows[0], C::client_host), s(&rows[0], C::client_ip)), (Some("localhost"), Some("127.0.0.1")));
        assert_eq!(s(&rows[0], C::detail), Some("after rcpt"));
        assert_eq!(s(&rows[1], C::kind), Some("from_aborted"));
        let line = sm("6AS3QAC7000167: lost input channel from localhost [127.0.0.1] to MTA-v4 after mail");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id)), (Some("lost_connection"), Some("6AS3QAC7000167")));
    }

    const OS: &str = "2026-11-27T03:09:28.584579+00:00 vm smtpd[32]: ";

    fn os(rest: &str) -> Vec<u8> {
        format!("{OS}{rest}").into_bytes()
    }

    #[test]
    fn opensmtpd_message_is_an_arrival_keyed_by_its_msgid() {
        let line = os("31fc2ec41be2f176 smtp message msgid=165cb98a size=1496 nrcpt=1 proto=ESMTP");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("arrival"));
        assert_eq!(s(&r, C::queue_id), Some("165cb98a"));
        assert_eq!((i(&r, C::size), i(&r, C::nrcpt)), (Some(1496), Some(1)));
        assert_eq!(s(&r, C::session_id), Some("31fc2ec41be2f176"));
        let line = os("31fc2ec41be2f176 smtp envelope evpid=165cb98a6ae7764e from=<user166@bench.test> to=<user39@bench.test>");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("from"));
        assert_eq!(s(&r, C::queue_id), Some("165cb98a"));
        assert_eq!((s(&r, C::sender), s(&r, C::recipient)), (Some("user166@bench.test"), Some("user39@bench.test")));
    }

    #[test]
    fn opensmtpd_mda_delivery() {
        let line = os("31fc2ec5fb6055f0 mda delivery evpid=2695ac89649cc965 from=<nouser2@bench.test> to=<user105@bench.test> rcpt=<user105@bench.test> user=vmail delay=0s result=Ok stat=Delivered");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("delivery"));
        assert_eq!(s(&r, C::queue_id), Some("2695ac89"));
        assert_eq!(s(&r, C::status), Some("sent"));
        assert_eq!(s(&r, C::recipient), Some("user105@bench.test"));
        assert_eq!(s(&r, C::status_text), Some("Delivered"));
        let line = os("31fc2ec5fb6055f0 mda delivery evpid=2695ac89649cc965 from=<a@b.test> to=<c@b.test> rcpt=<c@b.test> user=vmail delay=1m2s result=TempFail stat=Error (temporary failure)");
        let r = parsed(&line);
        assert_eq!(s(&r, C::status), Some("deferred"));
        assert_eq!(s(&r, C::status_text), Some("Error (temporary failure)"));
        assert!(matches!(r.get(C::delay), V::F(x) if x == 62.0));
    }

    #[test]
    fn opensmtpd_refused_rcpt_is_a_reject() {
        let line = os("31fc2edf8b199e67 smtp failed-command command=\"RCPT TO: <nouser3@bench.test>\" result=\"524 5.2.4 Mailing list expansion problem: <nouser3@bench.test>\"");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("reject"));
        assert_eq!(s(&r, C::reject_stage), Some("RCPT"));
        assert_eq!(i(&r, C::smtp_code), Some(524));
        assert_eq!(s(&r, C::enhanced_code), Some("5.2.4"));
        assert_eq!(s(&r, C::recipient), Some("nouser3@bench.test"));
        assert_eq!(s(&r, C::queue_id), None);
    }

    #[test]
    fn opensmtpd_7_relay_sessions_replies_and_removed_envelopes() {
        // OpenSMTPD 7.6 (Debian 13) relaying to an SMTP sink; `smtpctl remove` of an envelope
        let line = os("86c57dc1b194302a mta delivery evpid=086d758652c6c900 from=<tempfail1@sink.test> to=<reject1@sink.test> rcpt=<-> source=\"127.0.0.1\" relay=\"127.0.0.1 (localhost)\" delay=1s result=\"PermFail\" stat=\"550 5.1.1 no such user\"");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some("bounced")));
        assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(550), Some("5.1.1")));
        assert_eq!(s(&r, C::status_text), Some("550 5.1.1 no such user"));
        assert_eq!((s(&r, C::relay_ip), s(&r, C::relay_host)), (Some("127.0.0.1"), Some("localhost")));
        assert_eq!(s(&r, C::queue_id), Some("086d7586"));
        for (rest, kind) in [
            ("86c57dc1b194302a mta connecting address=smtp://127.0.0.1:2526 host=localhost", "relay_connect"),
            ("86c57dc1b194302a mta connected", "relay_connect"),
            ("86c57dc1b194302a mta disconnected reason=quit messages=31", "relay_disconnect"),
            ("86c57dc1b194302a mta host-rejects-all-mails", "warning"),
        ] {
            let line = os(rest);
            assert_eq!(s(&parsed(&line), C::kind), Some(kind), "{rest}");
        }
        let line = os("relay: Remove for 070cacfe860fae41: from=<user1@sink.test>, to=<tempfail2@sink.test>, rcpt=<->, delay=23s, stat=Removed by administrator");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some("removed")));
        assert_eq!(crate::classify::counts_as(&r), None);
        assert_eq!((s(&r, C::queue_id), s(&r, C::recipient)), (Some("070cacfe"), Some("tempfail2@sink.test")));
        // an mda delivery's `stat=` stays as it is
        let line = os("86c57db99363091c mda delivery evpid=340a620a6bb2900e from=<user37@bench.test> to=<user19@bench.test> rcpt=<user19@bench.test> user=vmail delay=0s result=Ok stat=Delivered");
        let r = parsed(&line);
        assert_eq!((s(&r, C::status_text), i(&r, C::smtp_code)), (Some("Delivered"), None));
    }

    #[test]
    fn sendmail_unreadable_forward_file_is_a_warning() {
        // sendmail 8.18 (Debian 13), users whose home is /nonexistent
        let line = sm("6AS3qZsA000113: forward /nonexistent/.forward.vm: Permission denied");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id)), (Some("warning"), Some("6AS3qZsA000113")));
        assert_eq!(s(&r, C::detail), Some("forward /nonexistent/.forward.vm: Permission denied"));
    }

    #[test]
    fn exim_connection_refused_is_a_421_warning() {
        let r = parsed(b"2026-11-27 02:52:55 Connection from [127.0.0.1] refused: too many connections");
        assert_eq!(s(&r, C::kind), Some("warning"));
        assert_eq!(i(&r, C::smtp_code), Some(421));
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
        assert_eq!(s(&r, C::reason), Some("too many connections"));
    }

    // from runs recorded on loopback to provoke each MTA's rarer lines (tests/fixtures/recorded)
    #[test]
    fn exim_queue_runner_skips_are_queue_run_lines() {
        // a queue runner passing a message another process holds (the newer and the older
        // wording) or, with the `skip_delivery` log selector, a frozen one
        for line in [
            "2026-11-27 02:55:48 1xWm7n-0001hz-35 Spool file for 1xWm7n-0001hz-35 is locked (another process is handling this message)",
            "2011-08-25 15:34:34 1QwRdV-0002Fc-Dm Spool file is locked (another process is handling this message)",
            "2016-01-06 20:14:11 1aGsub-0000Aw-2w Message is frozen",
        ] {
            let r = parsed(line);
            assert_eq!(s(&r, C::kind), Some("queue_run"), "{line}");
            assert!(s(&r, C::queue_id).is_some_and(|q| line.contains(q)), "{line}");
        }
    }

    #[test]
    fn exim_frozen_message_is_a_warning() {
        // Exim gave up trying the message (it stays in the queue): worth an event
        let r = parsed("2014-08-05 07:44:15 1XEZPr-0000T9-Hk Frozen (delivery error message)");
        assert_eq!(s(&r, C::kind), Some("warning"));
        assert_eq!(s(&r, C::severity), Some("warning"));
        assert_eq!(s(&r, C::queue_id), Some("1XEZPr-0000T9-Hk"));
        assert_eq!(s(&r, C::detail), Some("Frozen (delivery error message)"));
        let r = parsed("2014-08-05 07:44:15 1XE5ec-0000Ov-4m Frozen");
        assert_eq!(s(&r, C::kind), Some("warning"));
        assert_eq!(s(&r, C::detail), Some("Frozen"));
        let r = parsed("2014-08-05 07:44:15 1XE5ec-0000Ov-4m Frozen ");
        assert_eq!(s(&r, C::detail), Some("Frozen"));
    }

    #[test]
    fn exim_failure_without_a_router_keeps_a_clean_recipient() {
        // no router took the address: the error follows it at once
        let r = parsed("2026-11-27 19:17:01 1xX1QR-00000g-2U ** nobody@nowhere.invalid: Unrouteable address");
        assert_eq!(s(&r, C::kind), Some("delivery"));
        assert_eq!(s(&r, C::status), Some("bounced"));
        assert_eq!(s(&r, C::recipient), Some("nobody@nowhere.invalid"));
        assert_eq!(s(&r, C::status_text), Some("Unrouteable address"));
        let r = parsed("2026-11-27 19:17:01 1xX1QR-00000g-2U ** nouser1@bench.test R=unknown_users: no such user here");
        assert_eq!(s(&r, C::recipient), Some("nouser1@bench.test"));
    }

    // tests/fixtures/recorded/exim-log-selector-all: `log_selector = +all`
    #[test]
    fn exim_every_selector_arrival_fields() {
        // milliseconds and [pid] in the stamp, I=, RT=, a subject holding field-like text
        let r = parsed(
            "2026-11-27 21:18:01.873 [32] 1xX3KT-00000W-2f <= user4@bench.test H=(localhost) [127.0.0.1]:50696 I=[127.0.0.1]:25 P=esmtp L.- S=3837 M8S=0 RT=0.043s id=6B09F389.0F2.002.user4@bench.test T=\"$AT0 S=9 R=x H=y id=z\" from <user4@bench.test> for user66@bench.test",
        );
        assert_eq!(s(&r, C::kind), Some("arrival"));
        assert_eq!(i(&r, C::pid), Some(32));
        assert_eq!(s(&r, C::sender), Some("user4@bench.test"));
        assert_eq!(i(&r, C::size), Some(3837));
        assert_eq!(s(&r, C::message_id), Some("6B09F389.0F2.002.user4@bench.test"));
        assert_eq!(s(&r, C::client), Some("(localhost) [127.0.0.1]:50696"));
        assert_eq!((s(&r, C::client_host), s(&r, C::helo)), (None, Some("localhost")));
        assert_eq!((s(&r, C::client_ip), i(&r, C::client_port)), (Some("127.0.0.1"), Some(50696)));
        assert_eq!(s(&r, C::proto), Some("esmtp"));
        assert_eq!(s(&r, C::related_queue_id), None);
        // a bounce Exim made: its own Message-ID (`id*=`) and the message it returns (`R=`)
        let r = parsed(
            "2026-11-27 21:18:24.229 [611] 1xX3Kq-00009r-0i <= <> R=1xX3Kq-00009j-0Y U=Debian-exim P=local S=2426 M8S=0 RT=0.005s id*=E1xX3Kq-00009r-0i@mx-exim.bench.test T=\"Mail delivery failed: returning message to sender\" from <> for user6@bench.test",
        );
        assert_eq!(s(&r, C::sender), Some(""));
        assert_eq!(s(&r, C::message_id), Some("E1xX3Kq-00009r-0i@mx-exim.bench.test"));
        assert_eq!(s(&r, C::related_queue_id), Some("1xX3Kq-00009j-0Y"));
        assert_eq!(s(&r, C::client), None);
        // a host name before the HELO name
        let r = parsed("2026-11-27 21:18:01 1xX3KT-00000W-2f <= a@b.test H=mx.b.test (helo.b.test) [192.0.2.7]:4025 P=esmtp S=10 id=x@b");
        assert_eq!((s(&r, C::client_host), s(&r, C::helo), s(&r, C::client_ip)), (Some("mx.b.test"), Some("helo.b.test"), Some("192.0.2.7")));
    }

    #[test]
    fn exim_every_selector_deliveries() {
        let r = parsed(
            "2026-11-27 21:18:01.925 [35] 1xX3KT-00000X-2f => user185 <user185@bench.test> F=<user182@bench.test> P=<user182@bench.test> R=bench_users T=bench_maildir S=1154 QT=0.056s DT=0.012s",
        );
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some("sent")));
        assert_eq!(s(&r, C::recipient), Some("user185@bench.test"));
        assert_eq!(s(&r, C::relay), None);
        let r = parsed(
            "2026-11-27 21:18:24.206 [605] 1xX3Kq-00009j-0Y ** hard1@bench.test F=<user6@bench.test> P=<user6@bench.test> R=hard_users T=hardfail_pipe: Child process of hardfail_pipe transport returned 69 (could mean service or program unavailable) from command: /bin/sh DT=0.011s",
        );
        assert_eq!((s(&r, C::status), s(&r, C::recipient)), (Some("bounced"), Some("hard1@bench.test")));
        assert_eq!(
            s(&r, C::status_text),
            Some("Child process of hardfail_pipe transport returned 69 (could mean service or program unavailable) from command: /bin/sh")
        );
        let r = parsed("2026-11-27 21:18:24.866 [658] 1xX3Kn-000088-12 == flaky1@bench.test R=flaky_users T=tempfail_pipe defer (-53) DT=0.000s: Retry time not yet reached");
        assert_eq!((s(&r, C::status), s(&r, C::recipient)), (Some("deferred"), Some("flaky1@bench.test")));
        assert_eq!(s(&r, C::status_text), Some("Retry time not yet reached"));
        // what the transport said (`log_output`)
        let r = parsed("2026-11-27 21:18:21.335 [505] 1xX3Kn-000088-12 <flaky1@bench.test>: tempfail_pipe transport output: mailbox busy");
        assert_eq!(s(&r, C::kind), Some("delivery_reply"));
        assert_eq!(s(&r, C::queue_id), Some("1xX3Kn-000088-12"));
        assert_eq!(s(&r, C::recipient), Some("flaky1@bench.test"));
        assert_eq!(s(&r, C::mailer), Some("tempfail_pipe"));
        assert_eq!(s(&r, C::status_text), Some("mailbox busy"));
    }

    #[test]
    fn exim_every_selector_session_and_process_lines() {
        let p = "2026-11-27 21:18:01.823 [27] ";
        for (rest, kind, ip, port) in [
            ("SMTP connection from [127.0.0.1]:50692 I=[127.0.0.1]:25 (TCP/IP connection count = 1)", "connect", "127.0.0.1", 50692),
            ("SMTP connection from (localhost) [127.0.0.1]:50702 I=[127.0.0.1]:25 closed by QUIT", "disconnect", "127.0.0.1", 50702),
            ("SMTP connection from [127.0.0.1]:58876 I=[127.0.0.1]:25 closed by QUIT", "disconnect", "127.0.0.1", 58876),
            ("SMTP connection from (x) [192.0.2.1]:4000 I=[127.0.0.1]:25 lost while reading message data", "lost_connection", "192.0.2.1", 4000),
            ("SMTP connection from [192.0.2.1]:4000 lost", "lost_connection", "192.0.2.1", 4000),
            ("no MAIL in SMTP connection from (side.client.test) [127.0.0.1]:40462 I=[127.0.0.1]:25 D=0.301s C=EHLO,QUIT", "idle_connection", "127.0.0.1", 40462),
            ("SMTP syntax error in \"FOO bar\" H=(side.client.test) [127.0.0.1]:40462 I=[127.0.0.1]:25 unrecognized command", "protocol_error", "127.0.0.1", 40462),
            ("SMTP syntax error in \"MAIL FROM:<bad address@x>\" H=(side.client.test) [127.0.0.1]:58408 I=[127.0.0.1]:25 \"@\" or \".\" expected after \"bad\"", "protocol_error", "127.0.0.1", 58408),
            ("H=(localhost) [127.0.0.1]:50844 I=[127.0.0.1]:25 incomplete transaction (QUIT) from <user44@bench.test>", "incomplete_transaction", "127.0.0.1", 50844),
        ] {
            let line = format!("{p}{rest}");
            let r = parsed(&line);
            assert_eq!(s(&r, C::kind), Some(kind), "{rest}");
            assert_eq!((s(&r, C::client_ip), i(&r, C::client_port)), (Some(ip), Some(port)), "{rest}");
            assert_eq!(s(&r, C::queue_id).unwrap_or(""), "", "{rest}");
        }
        let l1 = format!("{p}no MAIL in SMTP connection from (side.client.test) [127.0.0.1]:40462 I=[127.0.0.1]:25 D=0.301s C=EHLO,QUIT");
        let r = parsed(&l1);
        assert_eq!((s(&r, C::commands), s(&r, C::helo)), (Some("EHLO,QUIT"), Some("side.client.test")));
        let l2 = format!("{p}SMTP syntax error in \"MAIL FROM:<bad address@x>\" H=(side.client.test) [127.0.0.1]:58408 I=[127.0.0.1]:25 \"@\" or \".\" expected after \"bad\"");
        let r = parsed(&l2);
        assert_eq!(s(&r, C::detail), Some("MAIL FROM:<bad address@x>"));
        assert_eq!(s(&r, C::reason), Some("\"@\" or \".\" expected after \"bad\""));
        let l3 = format!("{p}H=(localhost) [127.0.0.1]:50844 I=[127.0.0.1]:25 incomplete transaction (QUIT) from <user44@bench.test>");
        let r = parsed(&l3);
        assert_eq!((s(&r, C::sender), s(&r, C::reason)), (Some("user44@bench.test"), Some("QUIT")));
        // an ACL's `drop` closes the session too
        let l4 = format!("{p}SMTP connection from [127.0.0.1]:1 I=[127.0.0.1]:25 closed by DROP in ACL");
        let r = parsed(&l4);
        assert_eq!(s(&r, C::kind), Some("disconnect"));
        // the `arguments` selector: each process's command line
        let r = parsed("2026-11-27 21:18:01.900 [34] cwd=/var/spool/exim4 3 args: /usr/sbin/exim4 -Mc 1xX3KT-00000W-2f");
        assert_eq!(s(&r, C::kind), Some("invocation"));
        assert_eq!(s(&r, C::detail), Some("/usr/sbin/exim4 -Mc 1xX3KT-00000W-2f"));
    }

    #[test]
    fn qmail_discarded_bounce_is_a_warning() {
        for line in [
            "@400000006b09d8c50406ec04 triple bounce: discarding bounce/11984924",
            "@400000006b09d8c50406ec04 double bounce: discarding bounce/11984924",
        ] {
            let r = parsed(line);
            assert_eq!(s(&r, C::kind), Some("warning"), "{line}");
            assert_eq!(s(&r, C::severity), Some("warning"));
            assert!(s(&r, C::detail).is_some_and(|d| d.ends_with("bounce: discarding bounce/11984924")));
            // not a line of message 11984924's own life (its number is a reused inode)
            assert_eq!(s(&r, C::queue_id), None);
        }
    }

    /// A qmail-send result line (multilog stamp) of delivery D with its report `rest`.
    fn qd(rest: &str) -> String {
        format!("@400000006b08f122344589d4 delivery {rest}")
    }

    #[test]
    fn qmail_own_status_code_is_the_dsn() {
        // qmail-local, qmail-remote and qmail-spawn end their reports in `(#X.Y.Z)`; a
        // report qmail-send gives up on gets a line of its own after it
        for (rest, status, dsn) in [
            ("79: failure: Sorry,_no_mailbox_here_by_that_name._(#5.1.1)/", "bounced", "5.1.1"),
            ("3: deferral: Sorry,_I_couldn't_find_any_host_by_that_name._(#4.1.2)/", "deferred", "4.1.2"),
            ("8: deferral: Unable_to_chdir_to_maildir._(#4.2.1)/", "deferred", "4.2.1"),
            (
                "9: failure: Sorry,_I_wasn't_able_to_establish_an_SMTP_connection._(#4.4.1)/I'm_not_going_to_try_again;_this_message_has_been_in_the_queue_too_long./",
                "bounced",
                "4.4.1",
            ),
            ("11: deferral: Connected_to_192.0.2.7_but_connection_died._Possible_duplicate!_(#4.4.2)/", "deferred", "4.4.2"),
        ] {
            let line = qd(rest);
            let r = parsed(&line);
            assert_eq!(s(&r, C::kind), Some("delivery"), "{rest}");
            assert_eq!(s(&r, C::status), Some(status), "{rest}");
            assert_eq!(s(&r, C::dsn), Some(dsn), "{rest}");
            assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (None, None), "{rest}");
            // the message, recipient and mailer come from the delivery's start (QmailTie)
            assert_eq!((s(&r, C::queue_id), s(&r, C::recipient), s(&r, C::mailer)), (None, None, None));
        }
    }

    #[test]
    fn qmail_remote_reply_gives_smtp_code_and_dsn() {
        for (rest, code, enhanced, dsn) in [
            (
                "12: success: 127.0.0.1_accepted_message./Remote_host_said:_250_2.0.0_Ok:_queued_as_FAKE1/",
                Some(250),
                Some("2.0.0"),
                Some("2.0.0"),
            ),
            (
                "40: failure: 127.0.0.1_does_not_like_recipient./Remote_host_said:_550_5.1.1_<reject9@relay.test>:_Recipient_address_rejected:_User_unknown/Giving_up_on_127.0.0.1./",
                Some(550),
                Some("5.1.1"),
                Some("5.1.1"),
            ),
            (
                "41: failure: 127.0.0.1_does_not_like_recipient./Remote_host_said:_451_4.3.0_<tempfail1@relay.test>:_Temporary_lookup_failure/Giving_up_on_127.0.0.1./I'm_not_going_to_try_again;_this_message_has_been_in_the_queue_too_long./",
                Some(451),
                Some("4.3.0"),
                Some("4.3.0"),
            ),
            // a reply of more lines, joined by `/`
            ("42: failure: 192.0.2.7_does_not_like_recipient./Remote_host_said:_550-5.7.1_first/550_5.7.1_second/Giving_up_on_192.0.2.7./", Some(550), Some("5.7.1"), Some("5.7.1")),
            // a reply without an enhanced code
            ("43: deferral: Connected_to_192.0.2.7_but_greeting_failed./Remote_host_said:_421_mx.example_closing/", Some(421), None, None),
            // a qmail-smtpd peer's reply carries qmail's own form: that is the dsn
            (
                "44: failure: Connected_to_192.0.2.7_but_sender_was_rejected./Remote_host_said:_553_sorry,_that_domain_isn't_in_my_list_of_allowed_rcpthosts_(#5.7.1)/",
                Some(553),
                None,
                Some("5.7.1"),
            ),
            // the report with its spaces (qmail-remote's own words, not through qmail-send's log)
            ("45: failure: Remote host said: 550 5.1.1 <x@y>... User unknown", Some(550), Some("5.1.1"), Some("5.1.1")),
        ] {
            let line = qd(rest);
            let r = parsed(&line);
            assert_eq!(s(&r, C::kind), Some("delivery"), "{rest}");
            assert_eq!(i(&r, C::smtp_code), code, "{rest}");
            assert_eq!(s(&r, C::enhanced_code), enhanced, "{rest}");
            assert_eq!(s(&r, C::dsn), dsn, "{rest}");
        }
    }

    #[test]
    fn qmail_remote_names_its_host_and_tcpserver_its_client() {
        for (rest, ip) in [
            ("12: success: 127.0.0.1_accepted_message./Remote_host_said:_250_2.0.0_Ok:_queued_as_FAKE1/", Some("127.0.0.1")),
            ("13: failure: 192.0.2.7_does_not_like_recipient./Remote_host_said:_550_5.1.1_no_such_user/Giving_up_on_192.0.2.7./", Some("192.0.2.7")),
            ("14: deferral: Connected_to_192.0.2.7_but_greeting_failed./Remote_host_said:_421_busy/", Some("192.0.2.7")),
            ("15: success: did_1+0+0/", None),
        ] {
            let line = format!("@400000006b09d8c50406ec04 delivery {rest}");
            let r = parsed(line.as_bytes());
            assert_eq!(s(&r, C::relay_ip), ip, "{rest}");
        }
        let r = parsed(b"@400000006b09d8c50406ec04 tcpserver: pid 35 from 127.0.0.1");
        assert_eq!((s(&r, C::kind), s(&r, C::client_ip)), (Some("connect"), Some("127.0.0.1")));
        let r = parsed(b"@400000006b09d8c50406ec04 tcpserver: deny 36 mx.bench.test:127.0.0.1:25 :127.0.0.2::33227");
        assert_eq!((s(&r, C::kind), s(&r, C::client_ip), i(&r, C::client_port)), (Some("reject"), Some("127.0.0.2"), Some(33227)));
        let r = parsed(b"@400000006b09d8c50406ec04 tcpserver: end 3388 status 256");
        assert_eq!((s(&r, C::kind), s(&r, C::detail)), (Some("disconnect"), Some("status 256")));
    }

    #[test]
    fn qmail_report_without_codes() {
        for rest in [
            "5: success: did_1+0+0/",
            "6: success: did_1+1+0/qp_122/",
            "7: deferral: Mailbox_is_temporarily_locked,_try_later./",
            "8: failure: This_address_no_longer_accepts_mail./",
            // not a code: no `)` after it, a reply word that is not a code
            "9: deferral: see_(#4.2.1_and_more/Remote_host_said:_hello/",
            "10: report mangled, will defer",
        ] {
            let line = qd(rest);
            let r = parsed(&line);
            assert_eq!(s(&r, C::kind), Some("delivery"), "{rest}");
            assert_eq!((s(&r, C::dsn), i(&r, C::smtp_code), s(&r, C::enhanced_code)), (None, None, None), "{rest}");
        }
        assert_eq!(s(&parsed(&qd("10: report mangled, will defer")), C::status), None);
    }

    // tests/fixtures/recorded/sendmail-loglevel-14: `confLOG_LEVEL` 14
    #[test]
    fn sendmail_delivery_reply_and_program_recipient() {
        let line = sm("6ARLNVKb001752: to=<nouser6@bench.test>, delay=00:00:00, mailer=local, pri=30742, dsn=5.1.1, reply=550 5.1.1 User unknown, stat=User unknown");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::status)), (Some("delivery"), Some("bounced")));
        assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(550), Some("5.1.1")));
        assert_eq!(s(&r, C::reply_text), Some("User unknown"));
        assert_eq!(s(&r, C::status_text), Some("User unknown"));
        // a reply with commas in its text, and one without an enhanced code
        let line = sm("6ARLNVKb001753: to=<a@b.test>, delay=00:00:01, xdelay=00:00:01, mailer=esmtp, pri=120000, relay=mx.b.test. [192.0.2.7], dsn=4.0.0, reply=451 greylisted, try again, stat=Deferred: 451 greylisted, try again");
        let r = parsed(&line);
        assert_eq!((i(&r, C::smtp_code), s(&r, C::enhanced_code)), (Some(451), None));
        assert_eq!(s(&r, C::reply_text), Some("greylisted, try again"));
        // a program recipient, quoted in the log
        let line = sm("6ARLNVKb001754: to=\"|/etc/mail/smrsh/tempfail\", ctladdr=<flaky@bench.test> (8/0), delay=00:00:00, xdelay=00:00:00, mailer=prog, pri=30742, dsn=4.0.0, stat=Deferred: prog mailer (/bin/sh) exited with EX_TEMPFAIL");
        let r = parsed(&line);
        assert_eq!(s(&r, C::recipient), Some("|/etc/mail/smrsh/tempfail"));
        assert_eq!((s(&r, C::status), i(&r, C::smtp_code)), (Some("deferred"), None));
    }

    #[test]
    fn sendmail_loglevel_14_lines_are_understood() {
        // a connection, before any queue id
        let line = sm("NOQUEUE: connect from localhost [127.0.0.1]");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("connect"));
        assert_eq!(s(&r, C::queue_id), None);
        assert_eq!((s(&r, C::client_host), s(&r, C::client_ip)), (Some("localhost"), Some("127.0.0.1")));
        // the message is finished: its queue file removed
        let line = sm("6ARLMN3p000524: done; delay=00:00:00, ntries=1");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("removed"));
        assert_eq!(s(&r, C::queue_id), Some("6ARLMN3p000524"));
        let line = sm("6ARLMN3p000524: done; delay=1+02:03:04, ntries=9");
        assert!(matches!(parsed(&line).get(C::delay), V::F(x) if x == 93784.0));
        // an alias expansion; the alias database line is still the daemon's
        let line = sm("6ARLMN3p000524: alias <flaky@bench.test> => \"|/etc/mail/smrsh/tempfail\"");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("alias"));
        assert_eq!((s(&r, C::orig_to), s(&r, C::recipient)), (Some("flaky@bench.test"), Some("|/etc/mail/smrsh/tempfail")));
        let line = sm("alias database /etc/mail/aliases rebuilt by root");
        assert_eq!(s(&parsed(&line), C::kind), Some("master"));
        // each session's milter and SASL state: notices, no events
        let line = sm("6ARLMN3p000524: Milter: no active filter");
        assert_eq!(s(&parsed(&line), C::kind), Some("milter_notice"));
        for (rest, severity) in [
            ("AUTH warning: no mechanisms", "warning"),
            ("error: safesasl(/etc/sasl2/Sendmail.conf) failed: No such file or directory", "error"),
        ] {
            let line = sm(rest);
            let r = parsed(&line);
            assert_eq!((s(&r, C::kind), s(&r, C::severity)), (Some("auth_notice"), Some(severity)), "{rest}");
        }
        // the daemon's start: TLS not offered (a warning, and STARTTLS is no queue id), its
        // TLS engine and its command line
        let line = sm("STARTTLS: ServerCertFile missing");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::queue_id)), (Some("warning"), None));
        assert_eq!(s(&r, C::detail), Some("STARTTLS: ServerCertFile missing"));
        for rest in ["engine=(null), path=(null), ispre=1, pre=0, initialized=0", "started as: /usr/sbin/sendmail -bd -q30s"] {
            let line = sm(rest);
            assert_eq!(s(&parsed(&line), C::kind), Some("master"), "{rest}");
        }
    }

    #[test]
    fn sendmail_notices_limits_and_daemon_lines_are_understood() {
        // a delivery status notice queued as a message of its own
        for (rest, reason) in [
            ("6ARJNufY000288: 6ARJNufY000290: DSN: User unknown", "User unknown"),
            ("6ARJNu8J000298: 6ARJNu8J000300: postmaster notify: User unknown", "User unknown"),
            ("6ARJNu8J000300: 6ARJNu8K000300: return to sender: User unknown", "User unknown"),
            ("6ARJNuN4000246: 6ARJNuN4000247: DSN: unknown mailer error 127", "unknown mailer error 127"),
        ] {
            let line = sm(rest);
            let r = parsed(&line);
            assert_eq!(s(&r, C::kind), Some("bounce_notice"), "{rest}");
            assert_eq!(s(&r, C::queue_id), Some(&rest[..14]));
            assert_eq!(s(&r, C::related_queue_id), Some(&rest[16..30]));
            assert_eq!(s(&r, C::reason), Some(reason));
        }
        // limits: MaxDaemonChildren, BadRcptThrottle; a notice kept in dead.letter
        let line = sm("rejecting connections on daemon MTA-v4: 10 children, max 10");
        let r = parsed(&line);
        assert_eq!((s(&r, C::kind), s(&r, C::severity)), (Some("warning"), Some("warning")));
        let line = sm("6ARJO1MY000311: localhost [127.0.0.1]: Possible SMTP RCPT flood, throttling.");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("warning"));
        assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
        assert_eq!(s(&r, C::detail), Some("Possible SMTP RCPT flood, throttling."));
        let line = sm("6ARJNu8J000300: Saved message in /var/lib/sendmail/dead.letter");
        let r = parsed(&line);
        assert_eq!(s(&r, C::kind), Some("warning"));
        // the daemon's own life
        for rest in [
            "starting daemon (8.17.1.9): SMTP+queueing@00:01:00",
            "accepting connections again for daemon MTA-v4",
            "alias database /etc/mail/aliases rebuilt by root",
            "/etc/mail/aliases: 3 aliases, longest 27 bytes, 81 bytes total",
        ] {
            let line = sm(rest);
            assert_eq!(s(&parsed(&line), C::kind), Some("master"), "{rest}");
        }
        // a line that only looks like a notice is not one
        let line = sm("6ARJNufY000288: not-a-qid: DSN: x");
        assert_ne!(s(&parsed(&line), C::kind), Some("bounce_notice"));
    }
}
