//! One maillog line -> one row. Header (stamp, host, tag), family (Postfix, Sendmail,
//! Exim, qmail, Courier), kind, then the kind's fields. Noise and quarantine lines come out with
//! kind `__noise` / `__quarantine` (detail = noise kind or reason, message = the line).

use crate::cols::{Row, C};
use crate::scan::*;
use crate::time::*;

pub struct Ctx {
    /// epoch microseconds of the 1st of each month of the base year of year-less stamps
    pub month_us: [i64; 12],
    /// and of the 1st of the month after each (a stamp before it is in its own month)
    month_end_us: [i64; 12],
    /// minutes, local = UTC + offset
    pub offset_min: i64,
}

impl Ctx {
    pub fn new(year: i64, offset_min: i64) -> Self {
        let first = |i: i64| days_from_civil(year + i / 12, i % 12 + 1, 1) * DAY_US;
        Ctx { month_us: std::array::from_fn(|i| first(i as i64)), month_end_us: std::array::from_fn(|i| first(i as i64 + 1)), offset_min }
    }
}

const MONTHS: &[u8; 36] = b"JanFebMarAprMayJunJulAugSepOctNovDec";
const TAI64_UNIX: i64 = 4611686018427387914;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fmt {
    Syslog,
    Rfc3339,
    Exim,
    Tai64n,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fam {
    Postfix,
    Sendmail,
    Exim,
    Qmail,
    Dovecot,
    Courier,
    Milter,
    CourierMta,
    Opensmtpd,
    None,
}

/// `^(Jan|...|Dec) [ 0-9]?\d \d\d:\d\d:\d\d \S` ; the 0-based index of the space after the clock.
fn syslog_head(l: &[u8]) -> Option<(usize, usize)> {
    if l.len() < 16 || l[3] != b' ' {
        return None;
    }
    let m = MONTHS.chunks(3).position(|c| c == &l[0..3])?;
    // day: `[ 0-9]?\d` then space
    let slen = if is_digit(l[4]) && l[5] == b' ' {
        14
    } else if (l[4] == b' ' || is_digit(l[4])) && is_digit(l[5]) && l[6] == b' ' {
        15
    } else {
        return None;
    };
    let c = &l[slen - 8..slen];
    if !(is_digit(c[0]) && is_digit(c[1]) && c[2] == b':' && is_digit(c[3]) && is_digit(c[4]) && c[5] == b':')
        || !(is_digit(c[6]) && is_digit(c[7]))
    {
        return None;
    }
    if l.len() < slen + 2 || l[slen] != b' ' || is_space(l[slen + 1]) {
        return None;
    }
    Some((m, slen))
}

/// `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) \S`: stamp length and zone start.
fn rfc3339_head(l: &[u8]) -> Option<(usize, usize)> {
    if !iso_shape(l, b'T') {
        return None;
    }
    let mut i = 19;
    if l.get(i) == Some(&b'.') {
        let n = run(&l[i + 1..], is_digit);
        if n == 0 {
            return None;
        }
        i += 1 + n;
    }
    let z = i;
    match l.get(i) {
        Some(b'Z') => i += 1,
        Some(b'+') | Some(b'-') => {
            let d2 = |j: usize| l.len() > j + 1 && is_digit(l[j]) && is_digit(l[j + 1]);
            if !d2(i + 1) {
                return None;
            }
            i += 3;
            if l.get(i) == Some(&b':') {
                i += 1;
            }
            if !d2(i) {
                return None;
            }
            i += 2;
        }
        _ => return None,
    }
    if l.len() < i + 2 || l[i] != b' ' || is_space(l[i + 1]) {
        return None;
    }
    Some((i, z))
}

fn iso_shape(l: &[u8], sep: u8) -> bool {
    l.len() >= 19
        && l[0..4].iter().all(|&b| is_digit(b))
        && l[4] == b'-'
        && is_digit(l[5])
        && is_digit(l[6])
        && l[7] == b'-'
        && is_digit(l[8])
        && is_digit(l[9])
        && l[10] == sep
        && is_digit(l[11])
        && is_digit(l[12])
        && l[13] == b':'
        && is_digit(l[14])
        && is_digit(l[15])
        && l[16] == b':'
        && is_digit(l[17])
        && is_digit(l[18])
}

fn is_tai64(l: &[u8]) -> bool {
    l.len() >= 25
        && l.starts_with(b"@4000")
        && l[5..25].iter().all(|&b| is_digit(b) || (b'a'..=b'f').contains(&b))
        && (l.len() == 25 || l[25] == b' ')
}

/// splogger's stamp at the front of a syslog message (qmail logging through syslog,
/// `qmail-start ./Maildir/ splogger qmail`): epoch seconds, `.`, six digits of microseconds,
/// then a space, or `+` on the folds of a line longer than splogger's 800 bytes. Returns the
/// epoch microseconds, the message after the stamp and whether it is a fold.
fn splogger_stamp(m: &[u8]) -> Option<(i64, &[u8], bool)> {
    let n = run(m, is_digit);
    if !(9..=11).contains(&n) || m.get(n) != Some(&b'.') || run(&m[n + 1..], is_digit) != 6 {
        return None;
    }
    let fold = match m.get(n + 7) {
        Some(b' ') => false,
        Some(b'+') => true,
        _ => return None,
    };
    let secs = to_i64(&m[..n])?;
    let micros = to_i64(&m[n + 1..n + 7])?;
    Some((secs * US + micros, &m[n + 8..], fold))
}

/// Exim's stamp at the front of `l`: `YYYY-MM-DD HH:MM:SS(.f)?( [+-]hhmm)?( \[pid\])? ?`, in its
/// mainlog or after the syslog tag (`syslog_timestamp`, the default). Returns the UTC time (the
/// zone's offset when it is written, else the context's), the pid and where the text begins.
fn exim_stamp(l: &[u8], ctx: &Ctx) -> (Option<i64>, Option<i64>, usize) {
    let mut i = 19;
    if l.get(i) == Some(&b'.') {
        let n = run(&l[i + 1..], is_digit);
        if n > 0 {
            i += 1 + n;
        }
    }
    let st = &l[..i];
    let mut off = ctx.offset_min;
    if l.len() >= i + 6 && l[i] == b' ' && (l[i + 1] == b'+' || l[i + 1] == b'-') && l[i + 2..i + 6].iter().all(|&b| is_digit(b)) {
        let z = &l[i + 2..i + 6];
        let v = ((z[0] - b'0') as i64 * 10 + (z[1] - b'0') as i64) * 60 + (z[2] - b'0') as i64 * 10 + (z[3] - b'0') as i64;
        off = if l[i + 1] == b'-' { -v } else { v };
        i += 6;
    }
    let mut pid = None;
    if l.len() >= i + 4 && l[i] == b' ' && l[i + 1] == b'[' {
        let n = run(&l[i + 2..], is_digit);
        if n > 0 && l.get(i + 2 + n) == Some(&b']') {
            pid = to_i32(&l[i + 2..i + 2 + n]);
            i += 3 + n;
        }
    }
    if l.get(i) == Some(&b' ') {
        i += 1;
    }
    (iso_to_us(st).map(|t| t - off * 60 * US), pid, i)
}

/// `<host> exim[<pid>]: ` (or `exim4`), then Exim's own `[<pid>] ` if it writes it: the host, the
/// pid and where Exim's text begins.
fn exim_syslog_head(m: &[u8]) -> Option<(&[u8], i64, usize)> {
    let h = run(m, |c| c != b' ');
    let r = m.get(h + 1..)?;
    let r2 = r.strip_prefix(b"exim4[").or_else(|| r.strip_prefix(b"exim["))?;
    let n = run(r2, is_digit);
    if n == 0 || !r2[n..].starts_with(b"]: ") {
        return None;
    }
    let digits = &r2[..n];
    let text = &r2[n + 3..];
    let own = text.strip_prefix(b"[").and_then(|x| x.strip_prefix(digits)).and_then(|x| x.strip_prefix(b"] "));
    let text = own.unwrap_or(text);
    Some((&m[..h], to_i64(digits)?, m.len() - text.len()))
}

/// `[i\N] ` or `[i/N] ` at the front of an Exim syslog line: part i of N of one entry (`\` when
/// the part ended at a newline of the entry, `/` when cut at 870 bytes). Returns i and the text.
fn exim_syslog_part(m: &[u8]) -> Option<(u32, &[u8])> {
    let r = m.strip_prefix(b"[")?;
    let i = run(r, is_digit);
    if i == 0 || i > 6 || !matches!(r.get(i), Some(b'\\' | b'/')) {
        return None;
    }
    let n = run(&r[i + 1..], is_digit);
    if n == 0 || n > 6 || r.get(i + 1 + n) != Some(&b']') || r.get(i + 2 + n) != Some(&b' ') {
        return None;
    }
    Some((to_i64(&r[..i])? as u32, &r[i + 3 + n..]))
}

fn hex(x: &[u8]) -> i64 {
    x.iter().fold(0i64, |a, &b| {
        let d = if b.is_ascii_digit() { b - b'0' } else { b - b'a' + 10 };
        a.wrapping_mul(16).wrapping_add(d as i64)
    })
}

/// `[0-9A-F]{6,}|[0-9B-DF-HJ-NP-TV-Zb-df-hj-np-tv-z]{8,}` as a whole string.
pub(crate) fn is_postfix_qid(x: &[u8]) -> bool {
    (x.len() >= 6 && x.iter().all(|&b| is_digit(b) || (b'A'..=b'F').contains(&b)))
        || (x.len() >= 8
            && x.iter().all(|&b| {
                b.is_ascii_alphanumeric() && !matches!(b, b'A' | b'E' | b'I' | b'O' | b'U' | b'a' | b'e' | b'i' | b'o' | b'u')
            }))
}

/// The word before a line's first `: ` when it may be a queue id (6 to 31 bytes): `QID: `,
/// `NOQUEUE: `; the caller checks it as its MTA's id.
pub(crate) fn id_prefix(m: &[u8]) -> Option<&[u8]> {
    find(m, b": ").filter(|c| (6..=31).contains(c)).map(|c| &m[..c])
}

/// A sendmail queue id: 8 to 20 letters and digits ending in the process id's digits
/// (`6ARLMN3p000524`, `IAA12345` of older releases), so a word such as `STARTTLS` in
/// `STARTTLS: ServerCertFile missing` is none.
pub(crate) fn is_sendmail_qid(x: &[u8]) -> bool {
    (8..=20).contains(&x.len()) && x.iter().all(|b| b.is_ascii_alphanumeric()) && x.last().is_some_and(|b| b.is_ascii_digit())
}

/// Where an RFC 5424 line's stamp begins (after `<PRI>1 `, rsyslog's
/// `RSYSLOG_SyslogProtocol23Format`); 0 for any other line.
fn rfc5424_at(l: &[u8]) -> usize {
    if l.first() != Some(&b'<') {
        return 0;
    }
    let n = run(&l[1..], is_digit);
    if (1..=3).contains(&n) && l[1 + n..].starts_with(b">1 ") {
        n + 4
    } else {
        0
    }
}

/// An RFC 5424 line's `HOST APP-NAME PROCID MSGID STRUCTURED-DATA MSG` after its stamp
/// (`rest`): host, app, the procid when not `-`, and the message (its leading spaces and a
/// UTF-8 BOM left out). None for any other line, or an app of `-`.
fn rfc5424_fields<'a>(line: &[u8], rest: &'a [u8]) -> Option<(&'a [u8], &'a [u8], Option<&'a [u8]>, &'a [u8])> {
    if rfc5424_at(line) == 0 {
        return None;
    }
    let mut parts = rest.splitn(5, |&c| c == b' ');
    let (host, app, pid, _msgid) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let sd_msg = parts.next().unwrap_or(b"");
    // STRUCTURED-DATA: `-` or `[id k="v" ...]...` (`\]` and `\"` escaped inside values)
    let mut i = 0;
    if sd_msg.first() == Some(&b'-') {
        i = 1;
    } else {
        while sd_msg.get(i) == Some(&b'[') {
            let (mut quoted, mut esc) = (false, false);
            i += 1;
            while let Some(&c) = sd_msg.get(i) {
                i += 1;
                match c {
                    _ if esc => esc = false,
                    b'\\' => esc = true,
                    b'"' => quoted = !quoted,
                    b']' if !quoted => break,
                    _ => {}
                }
            }
        }
    }
    let msg = &sd_msg[i.min(sd_msg.len())..];
    let msg = &msg[run(msg, |c| c == b' ')..];
    let msg = msg.strip_prefix("\u{feff}".as_bytes()).unwrap_or(msg);
    (app != b"-").then_some((host, app, (pid != b"-").then_some(pid), msg))
}

/// Output of one line: the row and, for syslog stamps, the local month (for year roll-over).
pub fn parse_line<'a>(line: &'a [u8], bad: bool, ctx: &Ctx, row: &mut Row<'a>) -> u8 {
    let mut month_out = 0u8;
    if bad {
        row.s(C::kind, b"__quarantine");
        row.s(C::detail, b"invalid UTF-8 (shown with U+FFFD replacements)");
        row.s(C::message, line);
        return 0;
    }
    // --- stamp
    let mut fmt = None;
    let mut slen = 0usize;
    if let Some((m, sl)) = syslog_head(line) {
        fmt = Some(Fmt::Syslog);
        slen = sl;
        // `[ 0-9]?\d` (syslog_head checked it): one digit, or a space or digit and a digit
        let d = |b: u8| (b - b'0') as i64;
        let day = if slen == 14 { d(line[4]) } else if line[4] == b' ' { d(line[5]) } else { d(line[4]) * 10 + d(line[5]) };
        let c = &line[slen - 8..slen];
        let clock = ((c[0] - b'0') as i64 * 10 + (c[1] - b'0') as i64) * 3600
            + ((c[3] - b'0') as i64 * 10 + (c[4] - b'0') as i64) * 60
            + (c[6] - b'0') as i64 * 10
            + (c[7] - b'0') as i64;
        let local = ctx.month_us[m] + ((day - 1) * 86400 + clock) * US;
        row.i(C::ts, Some(local - ctx.offset_min * 60 * US));
        // a day past the month's end (`Feb 30`) rolls into the next month
        month_out = if local < ctx.month_end_us[m] { m as u8 + 1 } else { month_of(local) };
    } else if let Some((sl, z)) = rfc3339_head(&line[rfc5424_at(line)..]) {
        // RFC 3339 stamps, and RFC 5424's `<PRI>1 ` before theirs
        let at = rfc5424_at(line);
        let (sl, z) = (at + sl, at + z);
        fmt = Some(Fmt::Rfc3339);
        slen = sl;
        let zone = &line[z..sl];
        let off = if zone == b"Z" {
            0
        } else {
            let sign = if zone[0] == b'-' { -1 } else { 1 };
            let d: Vec<u8> = zone[1..].iter().copied().filter(|b| b.is_ascii_digit()).collect();
            sign * (((d[0] - b'0') as i64 * 10 + (d[1] - b'0') as i64) * 60 + (d[2] - b'0') as i64 * 10 + (d[3] - b'0') as i64)
        };
        row.i(C::ts, iso_to_us(&line[at..z]).map(|t| t - off * 60 * US));
    } else if iso_shape(line, b' ') {
        fmt = Some(Fmt::Exim);
    } else if is_tai64(line) {
        fmt = Some(Fmt::Tai64n);
    }
    let fmt = match fmt {
        Some(f) => f,
        None => {
            row.s(C::message, line);
            if trim_zs(line).is_empty() {
                row.s(C::kind, b"__noise");
                row.s(C::detail, b"blank");
            } else if matches!(line[0], b' ' | b'\t') {
                // an indented line continues the entry above it (Exim's warnings at its
                // start: `Warning: purging the environment.` then ` Suggested action: ...`)
                row.s(C::kind, b"__noise");
                row.s(C::detail, b"continuation");
            } else {
                row.s(C::kind, b"__quarantine");
                row.s(C::detail, b"not a mail log line (no syslog, Exim or TAI64N stamp)");
            }
            return 0;
        }
    };
    // --- host, tag, program, pid, message
    let mut program: Option<&[u8]> = None;
    let mut message: Option<&[u8]> = None;
    let mut splogger = false;
    match fmt {
        Fmt::Syslog | Fmt::Rfc3339 => {
            row.s(C::ts_format, if fmt == Fmt::Syslog { b"syslog" } else { b"rfc3339" });
            let rest = &line[slen + 1..];
            // RFC 5424: `HOST APP PROCID MSGID SD MSG` after the stamp
            let rest = match rfc5424_fields(line, rest) {
                Some((host, app, pid, msg)) => {
                    row.s(C::ts_format, b"rfc5424");
                    row.s(C::host, host);
                    row.i(C::pid, pid.and_then(to_i32));
                    program = Some(app);
                    message = Some(msg);
                    b"".as_slice()
                }
                None => rest,
            };
            let own = if fmt == Fmt::Syslog { crate::other::dovecot_own_line(rest) } else { None };
            if own.is_some() {
                // Dovecot's own log_path: neither host nor tag
                program = Some(b"dovecot");
                message = own;
            }
            let own = own.is_some();
            match find_byte(rest, b' ').filter(|_| !own && program.is_none()) {
                Some(sp) => {
                    row.s(C::host, &rest[..sp]);
                    let body = &rest[sp + 1..];
                    message = Some(body);
                    if let Some(colon) = find(body, b": ") {
                        let tag = &body[..colon];
                        if colon > 0 && find_byte(tag, b' ').is_none() {
                            program = Some(upto(tag, b'['));
                            if tag.ends_with(b"]") {
                                if let Some(lb) = find_byte(tag, b'[') {
                                    row.i(C::pid, to_i32(&tag[lb + 1..tag.len() - 1]));
                                }
                            }
                            message = Some(&body[colon + 2..]);
                        }
                    }
                }
                None if !own && program.is_none() => row.s(C::host, rest),
                None => {}
            }
            // Exim logging to syslog writes its own stamp after the tag (`syslog_timestamp`,
            // true by default): Exim's time, with the zone it names, as in its mainlog
            if let (Some(b"exim" | b"exim4"), Some(mut m)) = (program, message) {
                // an entry past 870 bytes, or of several lines (a reject log entry with the
                // message's headers), goes out in numbered parts: the first is the line
                // (as much of it as it holds), the others noise
                if let Some((part, rest)) = exim_syslog_part(m) {
                    if part > 1 {
                        row.s(C::program, b"exim");
                        row.s(C::kind, b"__noise");
                        row.s(C::detail, b"exim_syslog_part");
                        row.s(C::message, line);
                        return month_out;
                    }
                    m = rest;
                    message = Some(rest);
                }
                if iso_shape(m, b' ') {
                    let (ts, _, i) = exim_stamp(m, ctx);
                    if ts.is_some() {
                        row.s(C::ts_format, b"exim");
                        row.i(C::ts, ts);
                        month_out = 0;
                        message = Some(&m[i..]);
                    }
                }
            }
            // qmail's lines through splogger (no pid: it opens syslog without LOG_PID) carry
            // qmail-send's or tcpserver's own text after splogger's stamp, whatever the tag:
            // qmail's family, stamped by splogger to the microsecond and in UTC, as multilog's
            let splogged = if program.is_some() && row.get_i(C::pid).is_none() { message.and_then(splogger_stamp) } else { None };
            if let Some((at, text, fold)) = splogged {
                row.s(C::ts_format, b"splogger");
                row.i(C::ts, Some(at));
                month_out = 0;
                if fold {
                    // the rest of the line before it: its row already holds what qmail's words say
                    row.s(C::program, b"qmail");
                    row.s(C::kind, b"__noise");
                    row.s(C::detail, b"splogger_fold");
                    row.s(C::message, line);
                    return 0;
                }
                splogger = true;
                program = Some(b"qmail");
                message = Some(text);
            }
        }
        Fmt::Exim => {
            row.s(C::ts_format, b"exim");
            program = Some(b"exim");
            let (ts, mut pid, mut i) = exim_stamp(line, ctx);
            // a syslog daemon writing an ISO stamp with the space before the host and tag
            // (`2016-04-01 11:08:00 mail exim[8003]: [8003] SMTP ...`): the host, and Exim's
            // text after its tag and its own `[pid]`
            if let Some((host, tag_pid, at)) = exim_syslog_head(&line[i..]) {
                row.s(C::host, host);
                pid = Some(tag_pid);
                i += at;
            }
            if pid.is_some() {
                row.i(C::pid, pid);
            }
            message = Some(&line[i..]);
            if let Some(m) = crate::other::dovecot_own_line(&line[i..]) {
                program = Some(b"dovecot"); // Dovecot's own log_path with an ISO stamp
                message = Some(m);
            } else if crate::other::dovecot_shaped(&line[i..]) {
                program = Some(b"dovecot");
            } else if crate::other::qmail_send_shaped(&line[i..]) {
                // multilog's stamps made local time by `tai64nlocal`
                row.s(C::ts_format, b"tai64nlocal");
                program = Some(b"qmail");
            }
            row.i(C::ts, ts);
        }
        Fmt::Tai64n => {
            row.s(C::ts_format, b"tai64n");
            program = Some(b"qmail");
            message = Some(if line.len() > 26 { &line[26..] } else { b"" });
            if message.is_some_and(crate::other::dovecot_shaped) {
                program = Some(b"dovecot"); // Dovecot logging through multilog
            }
            let secs = hex(&line[1..17]);
            let nanos = hex(&line[17..25]);
            row.i(C::ts, Some(secs.wrapping_sub(TAI64_UNIX).wrapping_mul(US) + nanos / 1000));
        }
    }
    row.so(C::program, program);
    // noise: syslog lines without a tag
    if program.is_none() {
        let m = message.map(trim_zs);
        if m == Some(b"-- MARK --".as_slice()) || message.is_some_and(is_repeat) {
            row.s(C::kind, b"__noise");
            row.s(C::detail, if m == Some(b"-- MARK --".as_slice()) { b"syslog_mark" } else { b"syslog_repeat" });
            row.s(C::message, line);
            return 0;
        }
    }
    row.so(C::message, message);
    let prog = program.unwrap_or(b"");
    let fam = if program.is_none() {
        Fam::None
    } else if prog.starts_with(b"postfix") {
        Fam::Postfix
    } else if prog == b"sendmail" || prog.starts_with(b"sm-") {
        Fam::Sendmail
    } else if prog == b"dovecot" {
        Fam::Dovecot
    } else if (fmt == Fmt::Exim && prog != b"qmail") || prog == b"exim" || prog == b"exim4" {
        Fam::Exim
    } else if fmt == Fmt::Tai64n || splogger || prog == b"rblsmtpd" || (fmt == Fmt::Exim && prog == b"qmail") {
        Fam::Qmail
    } else if crate::courier::is_mta(prog) {
        Fam::CourierMta
    } else if prog == b"smtpd" {
        Fam::Opensmtpd
    } else if crate::mailbox::courier_service(prog).is_some() {
        Fam::Courier
    } else if prog == b"opendkim" {
        Fam::Milter
    } else {
        Fam::None
    };
    let message = message.unwrap_or(b"");
    match fam {
        Fam::Postfix | Fam::Sendmail => {
            let mut qid = None;
            if let Some(cand) = id_prefix(message) {
                let c2 = cand.len();
                let ok = if fam == Fam::Postfix { is_postfix_qid(cand) } else { is_sendmail_qid(cand) };
                if ok {
                    qid = Some(cand);
                }
                // `NOQUEUE: `: a line of a session before any transaction (Postfix's
                // rejects, sendmail's `connect from`)
                let has_q = ok || cand == b"NOQUEUE";
                if has_q {
                    row.so(C::queue_id, qid);
                    let b = &message[c2 + 2..];
                    if fam == Fam::Postfix {
                        crate::postfix::parse(row, prog, b, qid.is_some(), true);
                    } else {
                        crate::other::sendmail(row, b);
                    }
                    return month_out;
                }
            }
            if fam == Fam::Postfix {
                crate::postfix::parse(row, prog, message, false, false);
            } else {
                crate::other::sendmail(row, message);
            }
        }
        Fam::Exim => crate::other::exim(row, message),
        Fam::Qmail => crate::other::qmail(row, message),
        Fam::Dovecot => crate::other::dovecot(row, message),
        Fam::Milter => crate::milter::opendkim(row, message),
        Fam::Opensmtpd => crate::other::opensmtpd(row, message),
        Fam::Courier => crate::mailbox::courier(row, crate::mailbox::courier_service(prog).unwrap_or(b"pop3"), message),
        Fam::CourierMta => crate::courier::parse(row, prog, message),
        Fam::None => row.s(C::kind, b"other"),
    }
    month_out
}

/// A program whose lines this parser is meant to understand: the MTAs, the mailbox servers
/// and the mail filters logging beside them. A line of one of them that comes out as kind
/// `other` is a shape the parser misses (counted per file, listed by `mtabench parse
/// maillog --unknown`); `other` lines of any other program are simply not mail lines.
pub fn known_program(prog: &[u8]) -> bool {
    prog.starts_with(b"postfix")
        || prog == b"sendmail"
        || prog.starts_with(b"sm-")
        || prog == b"exim"
        || prog == b"exim4"
        || prog == b"qmail"
        || prog.starts_with(b"qmail-")
        || prog == b"dovecot"
        || prog.starts_with(b"courier")
        || crate::mailbox::courier_service(prog).is_some()
        || prog == b"opendkim"
        || prog == b"opendmarc"
        || prog == b"smtpd" // OpenSMTPD
}

/// A parsed row of a known program the parser did not understand (kind `other`).
#[inline]
pub fn is_unknown(row: &Row) -> bool {
    row.get_s(C::kind) == Some(b"other".as_slice()) && row.get_s(C::program).is_some_and(known_program)
}

/// `^(?:last message repeated \d+ times|message repeated \d+ times)`
fn is_repeat(m: &[u8]) -> bool {
    let r = if let Some(r) = m.strip_prefix(b"last message repeated ") {
        r
    } else if let Some(r) = m.strip_prefix(b"message repeated ") {
        r
    } else {
        return false;
    };
    let n = run(r, is_digit);
    n > 0 && r[n..].starts_with(b" times")
}
