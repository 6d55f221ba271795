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
    assert_eq!(col(&c, C::kind), vec![s("connect"), s("other"), s("status"), s("disconnect")]);
    assert_eq!(col(&c, C::program), vec![s("tcpserver"); 4]);
    assert_eq!(col(&c, C::client)[0], s("127.0.0.1"));
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
