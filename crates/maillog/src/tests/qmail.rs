use super::{col, int, parse, s};
use crate::cols::C;
use crate::other::QmailTie;
use crate::time::{days_from_civil, DAY_US, US};

const QMAIL: &str = "\
@400000006b08f122057f43c4 new msg 5899864
@400000006b08f122057f47ac info msg 5899864: bytes 2910 from <user337@bench.test> qp 24318 uid 1001
@400000006b08f122058dde0c starting delivery 27: msg 5899864 to local user75@bench.test
@400000006b08f122059728f4 new msg 5899994
@400000006b08f122059728f4 info msg 5899994: bytes 1359 from <user343@bench.test> qp 24321 uid 1001
@400000006b08f12205a123a4 starting delivery 28: msg 5899994 to local user500@bench.test
@400000006b08f12205e043cc delivery 28: success: did_1+0+0/
@400000006b08f12205e400d4 end msg 5899994
@400000006b08f122067f622c delivery 27: success: did_1+0+0/
@400000006b08f1220686a974 end msg 5899864
";

#[test]
fn qmail_delivery_lines_carry_their_message() {
    let c = parse(QMAIL, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    let qids = col(&c, C::queue_id);
    assert_eq!(kinds[6], s("delivery"));
    assert_eq!(qids[6], s("5899994"));
    assert_eq!(col(&c, C::status)[6], s("sent"));
    assert_eq!(kinds[8], s("delivery"));
    assert_eq!(qids[8], s("5899864"));
    // every line of the two messages has its message number
    assert!(qids.iter().all(|q| q.is_some()));
}

#[test]
fn qmail_info_line_is_an_arrival_unless_a_bounce_announced_it() {
    let text = "\
@400000006b08f12233cea83c starting delivery 72: msg 5899864 to local nouser4@bench.test
@400000006b08f122344589d4 delivery 72: failure: Sorry,_no_mailbox_here_by_that_name._(#5.1.1)/
@400000006b08f122349c316c bounce msg 5899864 qp 24634
@400000006b08f12234a3846c info msg 5899865: bytes 4974 from <> qp 24634 uid 1006
@400000006b08f122057f47ac info msg 5899864: bytes 2910 from <user337@bench.test> qp 24318 uid 1001
";
    let c = parse(text, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    assert_eq!(kinds[1], s("delivery"));
    assert_eq!(col(&c, C::status)[1], s("bounced"));
    assert_eq!(col(&c, C::queue_id)[1], s("5899864"));
    assert_eq!(kinds[2], s("bounce_notice"));
    assert_eq!(kinds[3], s("from"), "the bounce qmail-send injected is not received mail");
    assert_eq!(kinds[4], s("arrival"));
    assert_eq!(col(&c, C::sender)[4], s("user337@bench.test"));
    assert_eq!(int(&c, C::size)[4], Some(2910));
}

#[test]
fn qmail_delivery_started_in_an_earlier_block() {
    let mut tie = QmailTie::default();
    let (a, b) = QMAIL.split_at(QMAIL.find("@400000006b08f12205e043cc").unwrap());
    let first = parse(a, &mut tie);
    assert_eq!(col(&first, C::kind).len(), 6);
    let second = parse(b, &mut tie);
    assert_eq!(col(&second, C::queue_id), vec![s("5899994"), s("5899994"), s("5899864"), s("5899864")]);
}

#[test]
fn qmail_delivery_number_reused() {
    let text = "\
@400000006b08f21c34960b34 starting delivery 956: msg 5901271 to local nouser1@bench.test
@400000006b08f21c34960b35 delivery 956: failure: Sorry,_no_mailbox_here_by_that_name._(#5.1.1)/
@400000006b08f21d04590b74 starting delivery 956: msg 5901272 to remote postmaster@mx.bench.test
@400000006b08f21d05a0b644 delivery 956: deferral: Sorry,_I_couldn't_find_any_host_by_that_name._(#4.1.2)/
@400000006b08f21d05a0b645 delivery 956: success: did_1+0+0/
";
    let c = parse(text, &mut QmailTie::default());
    let q = col(&c, C::queue_id);
    assert_eq!((q[1].clone(), q[3].clone()), (s("5901271"), s("5901272")));
    assert_eq!(col(&c, C::status)[3], s("deferred"));
    // a delivery line whose start is not in the stream stays without a message
    assert_eq!(q[4], None);
}

#[test]
fn tai64n_stamp_as_tai64nlocal_prints_it() {
    // tai64nlocal (daemontools, TZ UTC): 2026-11-27 02:55:19.705033500
    let c = parse("@400000006b08f1212a05f51c new msg 5899900\n", &mut QmailTie::default());
    let want = days_from_civil(2026, 11, 27) * DAY_US + (2 * 3600 + 55 * 60 + 19) * US + 705_033;
    assert_eq!(int(&c, C::ts)[0], Some(want));
    assert_eq!(col(&c, C::ts_format)[0], s("tai64n"));
}

#[test]
fn tcpserver_lines_of_qmail_smtpd() {
    let text = "\
@400000006b08f121260ab36c tcpserver: pid 24119 from 127.0.0.1
@400000006b08f121260b383c tcpserver: ok 24119 mx.bench.test:127.0.0.1:25 :127.0.0.1::37502
@400000006b08f0ef35a4529c tcpserver: status: 2/40
@400000006b08f1212a05f51c tcpserver: end 24119 status 0
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), vec![s("connect"), s("accepted"), s("status"), s("disconnect")]);
    assert_eq!(col(&c, C::program), vec![s("tcpserver"); 4]);
    assert_eq!(col(&c, C::client)[0], s("127.0.0.1"));
    assert_eq!((col(&c, C::client_ip)[1].clone(), int(&c, C::client_port)[1]), (s("127.0.0.1"), Some(37502)));
    assert_eq!(col(&c, C::client_host)[1], None, "tcpserver -H: no remote host name");
    assert_eq!(int(&c, C::pid), vec![Some(24119), Some(24119), None, Some(24119)]);
}

#[test]
fn qmail_delivery_result_carries_recipient_and_mailer_of_its_start() {
    let text = "\
@400000006b08f21c34960b34 starting delivery 956: msg 5901271 to local nouser1@bench.test
@400000006b08f21c34960b35 starting delivery 957: msg 5901272 to remote postmaster@mx.bench.test
@400000006b08f21c34960b36 delivery 956: failure: Sorry,_no_mailbox_here_by_that_name._(#5.1.1)/
@400000006b08f21d05a0b644 delivery 957: deferral: Sorry,_I_couldn't_find_any_host_by_that_name._(#4.1.2)/
@400000006b08f21d05a0b645 starting delivery 956: msg 5901272 to remote postmaster@mx.bench.test
@400000006b08f21d05a0b646 delivery 956: success: 127.0.0.1_accepted_message./Remote_host_said:_250_2.0.0_Ok:_queued_as_FAKE1/
@400000006b08f21d05a0b647 delivery 957: success: did_1+0+0/
";
    let c = parse(text, &mut QmailTie::default());
    let rcpt = col(&c, C::recipient);
    let mailer = col(&c, C::mailer);
    assert_eq!((rcpt[2].clone(), mailer[2].clone()), (s("nouser1@bench.test"), s("local")));
    assert_eq!((rcpt[3].clone(), mailer[3].clone()), (s("postmaster@mx.bench.test"), s("remote")));
    assert_eq!(col(&c, C::queue_id)[5], s("5901272"));
    assert_eq!((rcpt[5].clone(), mailer[5].clone()), (s("postmaster@mx.bench.test"), s("remote")));
    assert_eq!(col(&c, C::dsn)[2..6], [s("5.1.1"), s("4.1.2"), None, s("2.0.0")]);
    assert_eq!(int(&c, C::smtp_code)[5], Some(250));
    // 957 ended once: its second result has no start, so nothing to carry
    assert_eq!((rcpt[6].clone(), mailer[6].clone(), col(&c, C::queue_id)[6].clone()), (None, None, None));
}

#[test]
fn qmail_delivery_result_tied_across_blocks_keeps_its_recipient() {
    let mut tie = QmailTie::default();
    let (a, b) = QMAIL.split_at(QMAIL.find("@400000006b08f12205e043cc").unwrap());
    parse(a, &mut tie);
    let second = parse(b, &mut tie);
    // the first block's bytes are gone: the values live in the second's table
    assert_eq!(col(&second, C::recipient), vec![s("user500@bench.test"), None, s("user75@bench.test"), None]);
    assert_eq!(col(&second, C::mailer), vec![s("local"), None, s("local"), None]);
}

/// qmail-send and tcpserver through splogger and rsyslog (traditional format), as recorded in
/// tests/fixtures/recorded/qmail-splogger: `qmail-start ./Maildir/ splogger qmail` and
/// `tcpserver ... 2>&1 | splogger smtpd`.
const SPLOGGER: &str = "\
Nov 28 00:24:56 vm smtpd: 1795825496.099160 tcpserver: pid 55 from 127.0.0.1
Nov 28 00:24:56 vm smtpd: 1795825496.099237 tcpserver: ok 55 mx.bench.test:127.0.0.1:25 :127.0.0.1::44820
Nov 28 00:24:56 vm qmail: 1795825496.100770 new msg 12509410
Nov 28 00:24:56 vm qmail: 1795825496.100805 info msg 12509410: bytes 2602 from <user4@bench.test> qp 46 uid 1001
Nov 28 00:24:56 vm qmail: 1795825496.100961 starting delivery 4: msg 12509410 to local nouser3@bench.test
Nov 28 00:24:56 vm qmail: 1795825496.100967 status: local 2/10 remote 1/20
Nov 28 00:24:56 vm qmail: 1795825496.102733 delivery 4: failure: Sorry,_no_mailbox_here_by_that_name._(#5.1.1)/
Nov 28 00:24:56 vm qmail: 1795825496.105132 bounce msg 12509410 qp 60
Nov 28 00:24:56 vm qmail: 1795825496.105168 end msg 12509410
Nov 28 00:24:56 vm qmail: 1795825496.105882 new msg 12509406
Nov 28 00:24:56 vm qmail: 1795825496.105898 info msg 12509406: bytes 3130 from <> qp 60 uid 1006
Nov 28 00:24:56 vm qmail: 1795825496.108912 starting delivery 5: msg 12509406 to local user4@bench.test
Nov 28 00:24:56 vm smtpd: 1795825496.098994 tcpserver: end 43 status 0
Nov 28 00:24:56 vm smtpd: 1795825496.099034 tcpserver: status: 1/40
";

#[test]
fn splogger_lines_are_qmails_own() {
    let c = parse(SPLOGGER, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    let want = [
        "connect", "accepted", "new_msg", "arrival", "delivery_start", "status", "delivery", "bounce_notice", "removed",
        "new_msg", "from", "delivery_start", "disconnect", "status",
    ];
    assert_eq!(kinds, want.iter().map(|k| s(k)).collect::<Vec<_>>());
    let programs = col(&c, C::program);
    assert_eq!(programs[0], s("tcpserver"));
    assert_eq!(programs[2], s("qmail"));
    assert_eq!(col(&c, C::host)[2], s("vm"));
    // the failure is tied to its start: message, recipient, mailer, status and dsn
    assert_eq!(col(&c, C::queue_id)[6], s("12509410"));
    assert_eq!(col(&c, C::recipient)[6], s("nouser3@bench.test"));
    assert_eq!(col(&c, C::mailer)[6], s("local"));
    assert_eq!(col(&c, C::status)[6], s("bounced"));
    assert_eq!(col(&c, C::dsn)[6], s("5.1.1"));
    assert_eq!(col(&c, C::counts_as)[6], s("bounced"));
    assert_eq!(col(&c, C::counts_as)[3], s("received"));
    assert_eq!(col(&c, C::counts_as)[10], None, "the bounce qmail-send injected is not received mail");
    assert_eq!(col(&c, C::client)[0], s("127.0.0.1"));
    assert_eq!(int(&c, C::pid)[0], Some(55));
}

#[test]
fn splogger_stamp_is_the_time() {
    // 1795825496.100770: 2026-11-28 00:24:56.100770 UTC, finer than the syslog stamp's second
    let c = parse(SPLOGGER, &mut QmailTie::default());
    let want = days_from_civil(2026, 11, 28) * DAY_US + (24 * 60 + 56) * US + 100_770;
    assert_eq!(int(&c, C::ts)[2], Some(want));
    assert_eq!(col(&c, C::ts_format)[2], s("splogger"));
    // in the RFC 3339 file format too, whatever the syslog stamp's zone
    let rfc = "2026-11-28T01:24:56.100800+01:00 vm qmail: 1795825496.100770 new msg 12509410\n";
    let c = parse(rfc, &mut QmailTie::default());
    assert_eq!(int(&c, C::ts)[0], Some(want));
    assert_eq!(col(&c, C::kind)[0], s("new_msg"));
}

#[test]
fn splogger_fold_is_noise_and_the_line_before_it_is_parsed() {
    // splogger folds a line past 800 bytes: the rest comes with the same stamp and `+`
    let long = "x".repeat(760);
    let text = format!(
        "Nov 28 00:24:56 vm qmail: 1795825496.100961 starting delivery 4: msg 12509410 to local nouser3@bench.test\n\
         Nov 28 00:24:56 vm qmail: 1795825496.102733 delivery 4: failure: {long}\n\
         Nov 28 00:24:56 vm qmail: 1795825496.102733+xxxx_(#5.1.1)/\n\
         Nov 28 00:24:56 vm qmail: 1795825496.105168 end msg 12509410\n"
    );
    let c = parse(&text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), vec![s("delivery_start"), s("delivery"), s("__noise"), s("removed")]);
    assert_eq!(col(&c, C::detail)[2], s("splogger_fold"));
    assert_eq!(col(&c, C::queue_id)[1], s("12509410"));
    assert_eq!(col(&c, C::status)[1], s("bounced"));
}

#[test]
fn a_pid_or_a_short_number_is_no_splogger_stamp() {
    // splogger opens syslog without LOG_PID; other programs' numbers are not its stamp
    let text = "\
Nov 28 00:24:56 vm smtpd[812]: 1795825496.100770 session started
Nov 28 00:24:56 vm CRON[43]: 12.345678 (root) CMD (true)
Nov 28 00:24:56 vm myprog: 12.345678 something
";
    let c = parse(text, &mut QmailTie::default());
    assert!(col(&c, C::ts_format).iter().all(|f| f.as_deref() == Some("syslog")));
    assert_eq!(col(&c, C::program)[2], s("myprog"));
}

#[test]
fn tcpserver_ok_names_the_remote_end() {
    // with a remote host name and TCP info (tcpserver without -H and -R), and ucspi-tcp6's
    // IPv6 address
    let text = "\
@400000006b08f121260b383c tcpserver: ok 24119 mx.bench.test:127.0.0.1:25 client.test:127.0.0.1:joe:37502
@400000006b08f121260b383c tcpserver: ok 24120 mx.bench.test:::1:25 :::1::37503
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::client_host), vec![s("client.test"), None]);
    assert_eq!(col(&c, C::client_ip), vec![s("127.0.0.1"), s("::1")]);
    assert_eq!(int(&c, C::client_port), vec![Some(37502), Some(37503)]);
    assert_eq!(int(&c, C::pid), vec![Some(24119), Some(24120)]);
}

#[test]
fn splogger_deliveries_stay_tied_in_a_block_parsed_on_many_threads() {
    // a block over 1 MiB is parsed in parallel pieces: one holding qmail's lines is parsed again
    // in order (a piece would not know the deliveries its start lines opened), and so is every
    // block after it
    let mut text = String::new();
    for i in 0..12_000u64 {
        let (d, n) = (i % 20, 12_500_000 + i);
        text += &format!("Nov 28 00:24:56 vm qmail: 1795825496.{:06} starting delivery {d}: msg {n} to local u{i}@bench.test\n", i % 1_000_000);
        text += "Nov 28 00:24:56 vm postfix/smtpd[12]: connect from localhost[127.0.0.1]\n";
        text += &format!("Nov 28 00:24:57 vm qmail: 1795825497.{:06} delivery {d}: success: did_1+0+0/\n", i % 1_000_000);
    }
    assert!(text.len() > 2 << 20);
    let ctx = crate::parse::Ctx::new(2026, 0);
    let mut tie = QmailTie::default();
    let mut years = crate::Years::default();
    let data = std::sync::Arc::new(text.clone().into_bytes());
    let chunks = crate::parse_block_tied(data, &ctx, &mut years, &mut tie, 1, 4);
    assert!(tie.seen);
    let (kinds, queue_ids) = (col(&chunks, C::kind), col(&chunks, C::queue_id));
    let results: Vec<_> = kinds.iter().zip(&queue_ids).filter(|(k, _)| k.as_deref() == Some("delivery")).collect();
    assert_eq!(results.len(), 12_000);
    assert!(results.iter().all(|(_, q)| q.is_some()), "every result tied to its start");
    // the next block, small or large, is parsed in order with the state carried
    let more = std::sync::Arc::new(text.into_bytes());
    let chunks = crate::parse_block_tied(more, &ctx, &mut years, &mut tie, 36_001, 4);
    assert_eq!(chunks.len(), 1);
    assert!(col(&chunks, C::queue_id).iter().zip(col(&chunks, C::kind)).all(|(q, k)| k.as_deref() != Some("delivery") || q.is_some()));
}
