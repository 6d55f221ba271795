//! What a parsed line counts as, pflogsumm's definitions, so totals can be checked against it:
//!
//! - received: smtpd/postscreen `QUEUEID: client=` and pickup lines (Exim `<=` arrivals,
//!   Sendmail `from=` lines, qmail `new msg`);
//! - delivered: `status=sent` delivery lines (per recipient), local forwards excluded;
//! - deferred / bounced / expired: delivery lines of that status (`expired`: also Postfix's
//!   `expired, returned to sender`);
//! - rejected: smtpd/postscreen `reject:` lines and cleanup header/body rejects (any reject
//!   of another MTA).
//!
//! The one definition: the landing stores it per line (`counts_as`), the per-minute counts
//! and the messages (crate::assemble) are computed from it, and the dbt models read it.

use crate::cols::{Row, C};

pub const RECEIVED: &[u8] = b"received";
pub const DELIVERED: &[u8] = b"delivered";
pub const DEFERRED: &[u8] = b"deferred";
pub const BOUNCED: &[u8] = b"bounced";
pub const EXPIRED: &[u8] = b"expired";
pub const REJECTED: &[u8] = b"rejected";

/// pflogsumm's reading of a program: the Postfix daemon, `postfix[-instance]/` and the
/// `smtps/` or `submission/` prefixes stripped; any other program as it is.
pub fn postfix_daemon(program: &[u8]) -> &[u8] {
    if !program.starts_with(b"postfix") {
        return program;
    }
    let Some(slash) = memchr::memchr(b'/', program) else { return program };
    let rest = &program[slash + 1..];
    for p in [&b"smtps/"[..], b"submission/"] {
        if let Some(r) = rest.strip_prefix(p) {
            return r;
        }
    }
    rest
}

/// Set the row's `counts_as`.
#[inline]
pub fn set(row: &mut Row) {
    if let Some(c) = counts_as(row) {
        row.s(C::counts_as, c);
    }
}

/// What the row counts as (None: nothing counted).
pub fn counts_as(row: &Row) -> Option<&'static [u8]> {
    let kind = row.get_s(C::kind)?;
    let program = row.get_s(C::program);
    let daemon = || program.map(postfix_daemon);
    // rsyslog's default RFC 5424 template keeps `postfix` of `postfix/smtpd` (its programname
    // ends at the slash): the daemon is unknown, and the line's shape alone tells it
    let unnamed = program == Some(b"postfix".as_slice());
    match kind {
        b"client" => (row.get_i(C::pid).is_some() && (unnamed || matches!(daemon(), Some(b"smtpd" | b"postscreen"))))
            .then_some(RECEIVED),
        b"pickup" => (row.get_s(C::queue_id).is_some() && (unnamed || daemon() == Some(b"pickup"))).then_some(RECEIVED),
        b"arrival" => Some(RECEIVED),
        b"from" => matches!(program, Some(b"sendmail" | b"sm-mta")).then_some(RECEIVED),
        b"expired" => Some(EXPIRED),
        b"delivery" => match row.get_s(C::status)? {
            b"sent" => {
                let forward = row.get_s(C::status_text).is_some_and(|t| memchr::memmem::find(t, b"forwarded as ").is_some());
                (!forward).then_some(DELIVERED)
            }
            b"deferred" => Some(DEFERRED),
            b"bounced" => Some(BOUNCED),
            b"expired" => Some(EXPIRED),
            _ => None,
        },
        b"reject" => {
            let program = program?;
            let counted = !program.starts_with(b"postfix")
                || (matches!(postfix_daemon(program), b"smtpd" | b"postscreen" | b"postfix")
                    && row.get_s(C::reject_action) == Some(b"reject"))
                || (postfix_daemon(program) == b"cleanup"
                    && matches!(row.get_s(C::reject_stage), Some(b"header" | b"body" | b"END-OF-MESSAGE")));
            counted.then_some(REJECTED)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemon_as_pflogsumm_reads_it() {
        assert_eq!(postfix_daemon(b"postfix/smtpd"), b"smtpd");
        assert_eq!(postfix_daemon(b"postfix-out/smtps/smtpd"), b"smtpd");
        assert_eq!(postfix_daemon(b"postfix/submission/smtpd"), b"smtpd");
        assert_eq!(postfix_daemon(b"postfix"), b"postfix");
        assert_eq!(postfix_daemon(b"sendmail"), b"sendmail");
    }
}
