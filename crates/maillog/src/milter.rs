//! opendkim, the milter beside Postfix: `QUEUEID: message` lines about one message (the id is
//! Postfix's, so the line joins its message) and lines about the filter itself.

use crate::cols::{Row, C};
use crate::scan::*;

/// What opendkim did with a message, by the message's opening words.
const VERDICTS: &[(&[u8], &[u8])] = &[
    (b"DKIM-Signature field added", b"signed"),
    (b"DKIM verification successful", b"verified"),
    (b"no signature data", b"no_signature"),
    (b"bad signature data", b"bad_signature"),
    (b"no signing table match", b"not_signed"),
    (b"no signing domain match", b"not_signed"),
    (b"not authenticated", b"not_authenticated"),
    (b"[", b"not_internal"),
];

pub fn opendkim<'a>(row: &mut Row<'a>, m: &'a [u8]) {
    if let Some(c) = find(m, b": ") {
        let cand = &m[..c];
        if crate::parse::is_postfix_qid(cand) {
            row.s(C::queue_id, cand);
            let b = &m[c + 2..];
            row.s(C::kind, b"milter");
            row.s(C::detail, b);
            if let Some((_, v)) = VERDICTS.iter().find(|(p, _)| b.starts_with(p)) {
                // `[ip] [ip] not internal`: a verifying pass, no signature wanted
                if *v != b"not_internal" || find(b, b" not internal").is_some() {
                    row.s(C::verdict, v);
                }
            }
            return;
        }
    }
    // the filter's own lines: start, stop, key and configuration notices
    row.s(C::kind, b"milter_notice");
    row.s(C::detail, m);
}

#[cfg(test)]
mod tests {
    use crate::cols::{Row, C};

    fn run(m: &'static [u8]) -> Row<'static> {
        let mut row = Row::new();
        super::opendkim(&mut row, m);
        row
    }

    #[test]
    fn signature_added_joins_its_message() {
        let r = run(b"4jbJ2G3bhNz608R: DKIM-Signature field added (s=bench, d=bench.test)");
        assert_eq!(r.get_s(C::queue_id), Some(&b"4jbJ2G3bhNz608R"[..]));
        assert_eq!(r.get_s(C::kind), Some(&b"milter"[..]));
        assert_eq!(r.get_s(C::verdict), Some(&b"signed"[..]));
        let r = run(b"OpenDKIM Filter v2.11.0 starting (args: -x /etc/opendkim-bench.conf)");
        assert_eq!(r.get_s(C::kind), Some(&b"milter_notice"[..]));
        assert_eq!(r.get_s(C::queue_id), None);
    }
}
