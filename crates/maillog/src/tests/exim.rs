//! Exim 4.96 logging to syslog (`log_file_path = syslog`), as recorded in
//! tests/fixtures/recorded/exim-syslog and exim-syslog-no-timestamp: rsyslog's stamp, the
//! host, `exim[pid]: `, then Exim's own stamp (`syslog_timestamp`, true by default) or none.

use super::{col, int, parse, s};
use crate::cols::C;
use crate::other::QmailTie;
use crate::time::{days_from_civil, DAY_US, US};

const STAMPED: &str = "\
Nov 28 00:32:20 vm exim[45]: 2026-11-28 00:32:20 H=(localhost) [127.0.0.1] F=<tempfail1@sink.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:32:20 vm exim[45]: 2026-11-28 00:32:20 H=(localhost) [127.0.0.1] F=<tempfail1@sink.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:33:37 vm exim[741]: 2026-11-28 00:33:37 1xX6Nl-0000Bx-13 <= user41@bench.test H=(localhost) [127.0.0.1] P=esmtp S=1079 id=6B0A2161.434.001.user41@bench.test
Nov 28 00:33:37 vm exim[744]: 2026-11-28 00:33:37 1xX6Nl-0000Bx-13 H=127.0.0.2 [127.0.0.2] Connection refused
Nov 28 00:33:37 vm exim[742]: 2026-11-28 00:33:37 1xX6Nl-0000Bx-13 == defer1@defer.test R=remote T=remote_smtp defer (111): Connection refused
Nov 28 00:34:13 vm exim[1088]: 2026-11-28 00:34:13 1xX6Nl-0000Bx-13 ** defer1@defer.test R=remote T=remote_smtp: all hosts for 'defer.test' have been failing for a long time (and retry time not reached)
Nov 28 00:34:13 vm exim[1090]: 2026-11-28 00:34:13 1xX6OL-0000Ha-1o <= <> R=1xX6Nl-0000Bx-13 U=Debian-exim P=local S=2353
Nov 28 00:34:13 vm exim[1088]: 2026-11-28 00:34:13 1xX6Nl-0000Bx-13 Completed
";

#[test]
fn syslog_lines_with_exims_stamp_are_exims_own() {
    let c = parse(STAMPED, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    let want = ["reject", "__noise", "arrival", "warning", "delivery", "delivery", "arrival", "removed"];
    assert_eq!(kinds, want.iter().map(|k| s(k)).collect::<Vec<_>>());
    assert_eq!(col(&c, C::queue_id)[2], s("1xX6Nl-0000Bx-13"));
    assert_eq!(col(&c, C::sender)[2], s("user41@bench.test"));
    assert_eq!(int(&c, C::size)[2], Some(1079));
    assert_eq!(col(&c, C::status)[4..6], [s("deferred"), s("bounced")]);
    assert_eq!(col(&c, C::recipient)[4], s("defer1@defer.test"));
    assert_eq!(col(&c, C::related_queue_id)[6], s("1xX6Nl-0000Bx-13"));
    assert_eq!(col(&c, C::counts_as), [s("rejected"), None, s("received"), None, s("deferred"), s("bounced"), s("received"), None]);
    // the pid is the tag's; the time Exim's stamp
    assert_eq!(int(&c, C::pid)[2], Some(741));
    assert_eq!(col(&c, C::host)[2], s("vm"));
    assert_eq!(int(&c, C::ts)[2], Some(days_from_civil(2026, 11, 28) * DAY_US + (33 * 60 + 37) * US));
    assert_eq!(col(&c, C::ts_format)[2], s("exim"));
}

#[test]
fn syslog_duplication_writes_a_reject_twice_and_it_counts_once() {
    let c = parse(STAMPED, &mut QmailTie::default());
    assert_eq!(col(&c, C::detail)[1], s("exim_syslog_duplicate"));
    // a pair stays one with another process's line between them; a third copy is a reject again
    let text = "\
Nov 28 00:35:28 vm exim[45]: H=(localhost) [127.0.0.1] F=<a@bench.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:35:28 vm exim[46]: H=(localhost) [127.0.0.1] F=<a@bench.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:35:28 vm exim[45]: H=(localhost) [127.0.0.1] F=<a@bench.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:35:28 vm exim[46]: H=(localhost) [127.0.0.1] F=<a@bench.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
Nov 28 00:35:28 vm exim[45]: H=(localhost) [127.0.0.1] F=<a@bench.test> rejected RCPT <nouser2@bench.test>: Unrouteable address
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), [s("reject"), s("reject"), s("__noise"), s("__noise"), s("reject")]);
    // Exim's own mainlog writes each line once: two alike are two rejects
    let mainlog = "\
2026-11-27 02:52:55 H=(localhost) [127.0.0.1] F=<u@bench.test> rejected RCPT <nouser4@bench.test>: Unrouteable address
2026-11-27 02:52:55 H=(localhost) [127.0.0.1] F=<u@bench.test> rejected RCPT <nouser4@bench.test>: Unrouteable address
";
    let c = parse(mainlog, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), [s("reject"), s("reject")]);
}

#[test]
fn syslog_lines_without_exims_stamp() {
    // syslog_timestamp = false: the syslog stamp is the time
    let text = "\
Nov 28 00:35:40 vm exim[140]: 1xX6Pk-00002D-0H H=127.0.0.2 [127.0.0.2] Connection refused
Nov 28 00:36:11 vm exim[415]: 1xX6QF-00006g-1F == tempfail1@sink.test R=remote T=remote_smtp defer (-44) H=127.0.0.1 [127.0.0.1]: SMTP error from remote mail server after RCPT TO:<tempfail1@sink.test>: 450 4.2.0 try later
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), [s("warning"), s("delivery")]);
    assert_eq!(col(&c, C::ts_format), [s("syslog"), s("syslog")]);
    assert_eq!(int(&c, C::ts)[0], Some(days_from_civil(2026, 11, 28) * DAY_US + (35 * 60 + 40) * US));
    assert_eq!(int(&c, C::smtp_code)[1], Some(450));
    assert_eq!(col(&c, C::relay_ip)[1], s("127.0.0.1"));
}

#[test]
fn a_hosts_connection_error_is_a_warning_naming_the_host() {
    // the smtp transport's line for one host of a delivery, before the address's `==`
    let text = "\
2026-11-28 00:33:37 1xX6Nl-0000Bx-13 H=127.0.0.2 [127.0.0.2] Connection refused
2026-11-28 00:33:37 1xX6Nl-0000Bx-13 H=mx.example.test [192.0.2.7]:2525 Connection timed out
2026-11-28 00:33:37 1xX6Nl-0000Bx-14 H=(helo) [192.0.2.9] F=<a@b.test> rejected after DATA: spam
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), [s("warning"), s("warning"), s("reject")]);
    assert_eq!(col(&c, C::severity)[0], s("warning"));
    assert_eq!(col(&c, C::reason)[..2], [s("Connection refused"), s("Connection timed out")]);
    assert_eq!(col(&c, C::relay_host)[..2], [s("127.0.0.2"), s("mx.example.test")]);
    assert_eq!(col(&c, C::relay_ip)[1], s("192.0.2.7"));
    assert_eq!(int(&c, C::relay_port)[1], Some(2525));
    assert_eq!(col(&c, C::counts_as)[..2], [None, None]);
}

/// A refusal after DATA (tests/fixtures/recorded/exim-syslog-parts): its main log line, then the
/// reject log's copy, an entry of nine lines, in parts `[1\9]` to `[9/9]`.
const REFUSED_AFTER_DATA: &str = r"Nov 28 00:50:39 vm exim[1673]: 2026-11-28 00:50:39 1xX6eF-0000Qz-1n H=(vm) [127.0.0.1] F=<spam@bench.test> rejected after DATA: message refused
Nov 28 00:50:39 vm exim[1673]: [1\9] 2026-11-28 00:50:39 1xX6eF-0000Qz-1n H=(vm) [127.0.0.1] F=<spam@bench.test> rejected after DATA: message refused
Nov 28 00:50:39 vm exim[1673]: [2\9] Envelope-from: <spam@bench.test>
Nov 28 00:50:39 vm exim[1673]: [3\9] Envelope-to: <user2@bench.test>
Nov 28 00:50:39 vm exim[1673]: [4\9] P Received: from [127.0.0.1] (helo=vm) by mx-exim.bench.test id 1xX6eF-0000Qz-1n;
Nov 28 00:50:39 vm exim[1673]: [5\9] #011Sat, 28 Nov 2026 00:50:39 +0000
Nov 28 00:50:39 vm exim[1673]: [6\9] F From: <spam@bench.test>
Nov 28 00:50:39 vm exim[1673]: [7\9] T To: <user2@bench.test>
Nov 28 00:50:39 vm exim[1673]: [8\9]   Date: Sat, 28 Nov 2026 00:50:39 +0000 (UTC)
Nov 28 00:50:39 vm exim[1673]: [9/9] I Message-Id: <66d8.0003.0000@vm>
";

#[test]
fn an_entry_in_parts_is_its_first_part() {
    let c = parse(REFUSED_AFTER_DATA, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    assert_eq!(kinds[0], s("reject"));
    assert_eq!(col(&c, C::reject_stage)[0], s("after DATA"));
    assert_eq!(col(&c, C::sender)[0], s("spam@bench.test"));
    // the reject log's copy: its first part repeats the line, the others hold its headers
    assert_eq!(col(&c, C::detail)[1], s("exim_syslog_duplicate"));
    assert!(kinds[1..].iter().all(|k| k.as_deref() == Some("__noise")));
    assert_eq!(col(&c, C::detail)[2..], vec![s("exim_syslog_part"); 8]);
    assert_eq!(col(&c, C::counts_as).iter().flatten().count(), 1);

    // an entry past 870 bytes, cut in two (`/`): the first part is the arrival, as far as it goes
    let rcpts: Vec<String> = (2..=80).rev().map(|i| format!("{i}r@bench.test")).collect();
    let line = format!(
        "2026-11-28 00:50:37 1xX6eD-00000Y-0L <= user1@bench.test H=(vm) [127.0.0.1] P=smtp S=306 id=54db.0005.0012@vm for {} r@bench.test",
        rcpts.join(" ")
    );
    let (a, b) = line.split_at(870);
    let text = format!("Nov 28 00:50:37 vm exim[34]: [1/2] {a}\nNov 28 00:50:37 vm exim[34]: [2/2] {b}\n");
    let c = parse(&text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), [s("arrival"), s("__noise")]);
    assert_eq!(col(&c, C::queue_id)[0], s("1xX6eD-00000Y-0L"));
    assert_eq!(int(&c, C::size)[0], Some(306));
    assert_eq!(col(&c, C::detail)[1], s("exim_syslog_part"));
    // without Exim's stamp (syslog_timestamp = false) the parts are numbered alike
    let text = "Nov 28 00:50:37 vm exim[34]: [1/2] 1xX6eD-00000Y-0L <= user1@bench.test H=(vm) [127.0.0.1] P=smtp S=306 for 80r@be\n";
    assert_eq!(col(&parse(text, &mut QmailTie::default()), C::kind), [s("arrival")]);
}
