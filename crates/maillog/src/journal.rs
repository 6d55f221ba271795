//! systemd journal export `journalctl -o json`: one JSON object per line. The fields a mail
//! log line needs (_SOURCE_REALTIME_TIMESTAMP or __REALTIME_TIMESTAMP, _HOSTNAME, SYSLOG_IDENTIFIER, _PID / SYSLOG_PID,
//! MESSAGE) are rewritten as an RFC 3339 syslog line, which the line parser then reads.

use crate::time::{civil_from_days, DAY_US, US};

/// A line that opens as a journal export object: `{` and a `"__REALTIME_TIMESTAMP"` key.
pub fn is_journal_json(l: &[u8]) -> bool {
    l.first() == Some(&b'{') && crate::scan::find(l, b"\"__REALTIME_TIMESTAMP\"").is_some()
}

/// `STAMP HOST IDENT[PID]: MESSAGE` with STAMP `YYYY-MM-DDTHH:MM:SS.ffffffZ`; None when the
/// object has no realtime stamp or no MESSAGE (then it is not a log line).
pub fn to_syslog(l: &[u8]) -> Option<Vec<u8>> {
    let fields = top_level_fields(l)?;
    let get = |k: &[u8]| fields.iter().find(|(n, _)| n.as_slice() == k).map(|(_, v)| v.as_slice());
    // journalctl's own choice: when the sender's time is known, that one (`-o short-iso` shows it)
    let stamp_field = get(b"_SOURCE_REALTIME_TIMESTAMP").or_else(|| get(b"__REALTIME_TIMESTAMP"))?;
    let us: i64 = std::str::from_utf8(stamp_field).ok()?.parse().ok()?;
    let message = get(b"MESSAGE")?;
    let host = get(b"_HOSTNAME").filter(|h| !h.is_empty()).unwrap_or(b"-");
    let ident = get(b"SYSLOG_IDENTIFIER").or_else(|| get(b"_COMM"));
    let pid = get(b"SYSLOG_PID").or_else(|| get(b"_PID"));
    let mut out = Vec::with_capacity(message.len() + 64);
    stamp(us, &mut out);
    out.push(b' ');
    out.extend(host.iter().map(|&b| if b == b' ' { b'_' } else { b }));
    out.push(b' ');
    if let Some(ident) = ident.filter(|i| !i.is_empty()) {
        out.extend_from_slice(ident);
        if let Some(pid) = pid {
            out.push(b'[');
            out.extend_from_slice(pid);
            out.push(b']');
        }
        out.extend_from_slice(b": ");
    }
    // a line of its own: a message's line breaks become spaces
    out.extend(message.iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
    Some(out)
}

fn stamp(us: i64, out: &mut Vec<u8>) {
    let (days, rem) = (us.div_euclid(DAY_US), us.rem_euclid(DAY_US));
    let (y, m, d) = civil_from_days(days);
    let s = rem / US;
    let f = rem % US;
    let txt = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{f:06}Z", s / 3600, s / 60 % 60, s % 60);
    out.extend_from_slice(txt.as_bytes());
}

/// The object's top-level `"key": value` pairs whose value is a string, a number or an
/// array of byte values (the journal's form of a non-UTF-8 field); other values are skipped.
fn top_level_fields(l: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut p = Json { s: l, i: 0 };
    p.ws();
    p.eat(b'{')?;
    let mut out = Vec::new();
    loop {
        p.ws();
        if p.peek()? == b'}' {
            return Some(out);
        }
        let key = p.string()?;
        p.ws();
        p.eat(b':')?;
        p.ws();
        let val = match p.peek()? {
            b'"' => Some(p.string()?),
            b'[' => p.byte_array(),
            b'n' => {
                p.skip_value()?;
                None
            }
            b'-' | b'0'..=b'9' => {
                let a = p.i;
                p.skip_value()?;
                Some(l[a..p.i].to_vec())
            }
            _ => {
                p.skip_value()?;
                None
            }
        };
        if let Some(v) = val {
            out.push((key, v));
        }
        p.ws();
        match p.peek()? {
            b',' => p.i += 1,
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

struct Json<'a> {
    s: &'a [u8],
    i: usize,
}

impl Json<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }
    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        self.i += 4;
        u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    }
    fn string(&mut self) -> Option<Vec<u8>> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b'"' => return Some(out),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let mut c = self.hex4()?;
                            if (0xd800..0xdc00).contains(&c) && self.s.get(self.i..self.i + 2) == Some(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                c = 0x10000 + ((c - 0xd800) << 10) + (lo.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            let ch = char::from_u32(c).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                _ => out.push(b),
            }
        }
    }
    /// `[n, n, ...]` of byte values as text (invalid UTF-8 replaced)
    fn byte_array(&mut self) -> Option<Vec<u8>> {
        let a = self.i;
        self.skip_value()?;
        let inner = &self.s[a + 1..self.i - 1];
        let bytes: Option<Vec<u8>> = inner
            .split(|&b| b == b',')
            .map(|x| std::str::from_utf8(x).ok()?.trim().parse::<u8>().ok())
            .collect();
        Some(String::from_utf8_lossy(&bytes?).into_owned().into_bytes())
    }
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'[' | b'{' => {
                let mut depth = 0i32;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'[' | b'{' => depth += 1,
                        b']' | b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(self.peek()?, b',' | b'}' | b']') {
                    self.i += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_object_becomes_a_syslog_line() {
        let l = br#"{"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1795748017123456","_HOSTNAME":"vm","SYSLOG_IDENTIFIER":"postfix/smtpd","SYSLOG_PID":"9566","_PID":"9566","MESSAGE":"47EDEC25FA: client=unknown[127.0.0.1] \"q\" \u00e9","PRIORITY":"6","_SOURCE_REALTIME_TIMESTAMP":"1795748017120000"}"#;
        assert!(is_journal_json(l));
        let s = to_syslog(l).unwrap();
        assert_eq!(
            String::from_utf8(s).unwrap(),
            "2026-11-27T02:53:37.120000Z vm postfix/smtpd[9566]: 47EDEC25FA: client=unknown[127.0.0.1] \"q\" é"
        );
    }

    #[test]
    fn odd_objects_give_none_or_a_line() {
        for l in [
            &br#"{"__REALTIME_TIMESTAMP":"99999999999999999999","MESSAGE":"x"}"#[..],
            br#"{"__REALTIME_TIMESTAMP":"9223372036854775807","MESSAGE":"x"}"#,
            br#"{"__REALTIME_TIMESTAMP":"-5","MESSAGE":"\ud800\u0000"}"#,
            br#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":[1,2,"#,
            br#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":"unterminated"#,
            br#"{"__REALTIME_TIMESTAMP""#,
            b"{",
        ] {
            let _ = to_syslog(l);
        }
        assert!(to_syslog(br#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":[1,2,"#).is_none());
    }

    #[test]
    fn byte_array_message_and_missing_pid() {
        let l = br#"{"__REALTIME_TIMESTAMP":"0","MESSAGE":[104,105,255],"SYSLOG_IDENTIFIER":"x"}"#;
        assert_eq!(String::from_utf8(to_syslog(l).unwrap()).unwrap(), "1970-01-01T00:00:00.000000Z - x: hi\u{fffd}");
        assert!(to_syslog(br#"{"__REALTIME_TIMESTAMP":"1"}"#).is_none());
    }
}
