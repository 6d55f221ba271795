//! Dovecot's own log file and its 2.4 shapes (tests/fixtures/recorded/postfix-310-lmtp-dovecot24
//! and recordings of 2.3 and 2.4 with the mail_log plugin), parsed as the stream does.

use super::{col, int, parse};
use crate::cols::C;
use crate::other::QmailTie;

#[test]
fn lmtp_save_events_are_mail_log_and_not_deliveries() {
    let text = "\
2026-11-28 06:54:21 lmtp(29): Info: Connect from 127.0.0.1
2026-11-28 06:54:21 lmtp(user8@bench.test)<29><eXjKGJ16CmsdAAAAg+zDdQ>: Info: Mailbox INBOX: save: uid=1, msgid=<a.1@load.test>, size=3375
2026-11-28 06:54:21 lmtp(user8@bench.test)<29><eXjKGJ16CmsdAAAAg+zDdQ>: Info: msgid=<a.1@load.test>: saved mail to INBOX
Nov 28 06:54:22 vm dovecot: lmtp(user9@bench.test)<30><fXjKGJ16CmsdAAAAg+zDdQ>: save: box=INBOX, uid=2, msgid=<a.2@load.test>, size=3375
Nov 28 06:54:22 vm dovecot: lmtp(user9@bench.test)<30><fXjKGJ16CmsdAAAAg+zDdQ>: msgid=<a.2@load.test>: saved mail to INBOX
2026-11-28 06:58:23 master: Warning: Killed with signal 15 (by pid=215 uid=0 code=kill)
";
    let c = parse(text, &mut QmailTie::default());
    let kinds: Vec<_> = col(&c, C::kind).into_iter().map(Option::unwrap).collect();
    assert_eq!(kinds, ["connect", "mail_log", "local_delivery", "mail_log", "local_delivery", "warning"]);
    assert_eq!(col(&c, C::program), vec![Some("dovecot".to_string()); 6]);
    assert_eq!(col(&c, C::client_ip)[0].as_deref(), Some("127.0.0.1"));
    assert_eq!(col(&c, C::mailbox_user)[1].as_deref(), Some("user8@bench.test"));
    assert_eq!(int(&c, C::size)[1], Some(3375));
}

#[test]
fn mail_log_of_2_4_names_the_box_first() {
    let text = "\
2026-11-28 06:54:38 imap(u2@bench.test)<35><wWF4plBhtMN/AAAB>: Info: Mailbox INBOX: expunge: uid=1, msgid=<m.8@load.test>, size=2665
2026-11-28 06:54:38 imap(u2@bench.test)<35><wWF4plBhtMN/AAAB>: Info: Mailbox Archive: copy from INBOX: uid=1, msgid=<m.1@load.test>, size=6783
2026-11-28 06:54:38 imap(u2@bench.test)<35><wWF4plBhtMN/AAAB>: Info: Mailbox tmp1: Mailbox renamed: tmp1 -> tmp1r
2026-11-28 06:54:38 imap(u2@bench.test)<35><wWF4plBhtMN/AAAB>: Info: Mailbox tmp1r: Mailbox deleted
Nov 28 06:54:38 vm dovecot: imap(u2@bench.test)<35><wWF4plBhtMN/AAAB>: Mailbox created: tmp2
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), vec![Some("mail_log".to_string()); 5]);
    let events: Vec<_> = col(&c, C::detail).into_iter().map(Option::unwrap).collect();
    assert_eq!(events, ["expunge", "copy", "mailbox_rename", "mailbox_delete", "mailbox_create"]);
    assert_eq!(col(&c, C::message_id)[0].as_deref(), Some("m.8@load.test"));
}

#[test]
fn pop3_del_second_figure_is_bytes_in_2_4() {
    // 2.3: `del=%d/%m` (the messages the mailbox held); 2.4: `del=%{deleted_count}/%{deleted_bytes}`
    let v23 = "\
2026-11-28 06:54:39 pop3-login: Info: Login: user=<u3@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=37, secured, session=<AsiVplBhfJB/AAAB>
2026-11-28 06:54:40 pop3(u3@bench.test)<37><AsiVplBhfJB/AAAB>: Info: Disconnected: Logged out top=1/411, retr=2/8984, del=1/2, size=8950
";
    let v24 = "\
2026-11-28 06:54:39 pop3-login: Info: Logged in: user=<u3@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=37, secured, session=<AsiVplBhfJB/AAAB>
2026-11-28 06:54:40 pop3(u3@bench.test)<37><AsiVplBhfJB/AAAB>: Info: Disconnected: Logged out top=1/411, retr=2/8984, del=1/1054, size=8950
";
    let c = parse(v23, &mut QmailTie::default());
    assert_eq!((int(&c, C::del_msgs)[1], int(&c, C::mbox_msgs)[1]), (Some(1), Some(2)));
    let c = parse(v24, &mut QmailTie::default());
    assert_eq!((int(&c, C::del_msgs)[1], int(&c, C::mbox_msgs)[1]), (Some(1), None));
}

#[test]
fn auth_of_2_4_and_custom_prefixes_name_user_and_client() {
    let text = "\
2026-11-28 06:54:56 auth(u10@bench.test,127.0.0.1,sasl:plain)<H32Lp1BhSId/AAAB>: Info: passwd-file: Password mismatch
Nov 28 06:54:57 vm dovecot: pop3-login: Login: user=<u1@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, rport=40312, lport=110, mpid=41, session=<WSZoplBh>
Nov 28 06:54:58 vm dovecot: pop3(u1@bench.test)[127.0.0.1]<WSZoplBh>: Disconnected: Logged out top=0/0, retr=1/4000, del=1/1, size=4000
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind)[0].as_deref(), Some("auth"));
    assert_eq!((col(&c, C::mailbox_user)[0].as_deref(), col(&c, C::client_ip)[0].as_deref()), (Some("u10@bench.test"), Some("127.0.0.1")));
    assert_eq!(int(&c, C::client_port)[1], Some(40312));
    assert_eq!(col(&c, C::kind)[2].as_deref(), Some("mailbox_logout"));
    assert_eq!((col(&c, C::session_id)[2].as_deref(), col(&c, C::client_ip)[2].as_deref()), (Some("WSZoplBh"), Some("127.0.0.1")));
    assert_eq!(int(&c, C::retr_msgs)[2], Some(1));
}
