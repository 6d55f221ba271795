//! One test per line shape the parser learnt from the real-lines corpus
//! (tests/fixtures/corpus): the line, and the fields read off it by hand.

use crate::cols::C;
use crate::parse::{is_unknown, known_program};
use crate::test_util::{i, parsed, s};

#[test]
fn cleanup_empty_message_id_is_empty_not_missing() {
    let r = parsed("Nov 27 10:00:00 mx postfix/cleanup[42]: 4104E3D: message-id=<>");
    assert_eq!(s(&r, C::kind), Some("message_id"));
    assert_eq!(s(&r, C::queue_id), Some("4104E3D"));
    assert_eq!(s(&r, C::message_id), Some(""));
}

#[test]
fn address_verification_status_keeps_its_hyphens() {
    let r = parsed("Nov 27 10:00:00 mx postfix/error[42]: 3E29030F8637E: to=<user@yahoo.com>, relay=none, delay=0.01, delays=0.01/0/0/0, dsn=5.1.1, status=undeliverable-but-not-cached (User unknown in virtual alias table)");
    assert_eq!(s(&r, C::kind), Some("delivery"));
    assert_eq!(s(&r, C::queue_id), Some("3E29030F8637E"));
    assert_eq!(s(&r, C::status), Some("undeliverable-but-not-cached"));
    assert_eq!(s(&r, C::relay_host), Some("none"));
}

#[test]
fn local_delivery_to_bare_addresses() {
    let r = parsed("Nov 27 10:00:00 mx postfix/local[42]: 2A22C263F6: to=user@hostname.example.com, orig_to=root@localhost, relay=local, delay=0.07, delays=0.04/0/0/0.03, dsn=2.0.0, status=sent (delivered to command: procmail -a \"$EXTENSION\")");
    assert_eq!(s(&r, C::kind), Some("delivery"));
    assert_eq!(s(&r, C::recipient), Some("user@hostname.example.com"));
    assert_eq!(s(&r, C::orig_to), Some("root@localhost"));
    assert_eq!(s(&r, C::relay_host), Some("local"));
    assert_eq!(s(&r, C::status), Some("sent"));
}

#[test]
fn delivery_with_a_tls_field_before_dsn() {
    let r = parsed("Nov 27 10:00:00 mx postfix/smtp[42]: 7EE668039: to=<user@example.com>, relay=mail.example.com[1.2.3.4]:25, delay=3.6, delays=0.08/0.02/0.85/0.14, tls=dane/requiretls, dsn=2.1.5, status=sent (250 2.0.0 Ok: queued as 153053D)");
    assert_eq!(s(&r, C::relay_host), Some("mail.example.com"));
    assert_eq!(s(&r, C::relay_ip), Some("1.2.3.4"));
    assert_eq!(i(&r, C::relay_port), Some(25));
    assert_eq!(s(&r, C::dsn), Some("2.1.5"));
    assert_eq!(s(&r, C::status), Some("sent"));
    assert_eq!(i(&r, C::smtp_code), Some(250));
    assert_eq!(s(&r, C::enhanced_code), Some("2.0.0"));
}

#[test]
fn force_expired_keeps_its_status() {
    let r = parsed("Apr 10 14:50:16 mail postfix/qmgr[3663]: BACE842E73: from=<noreply@domain.com>, status=force-expired, returned to sender");
    assert_eq!(s(&r, C::kind), Some("expired"));
    assert_eq!(s(&r, C::status), Some("force-expired"));
    assert_eq!(s(&r, C::status_text), Some("returned to sender"));
}

#[test]
fn connect_to_an_ipv6_relay() {
    let r = parsed("Nov 27 10:00:00 mx postfix/smtp[42]: connect to aspmx.l.google.com[2a00:1450:400b:c02::1a]:25: Network is unreachable");
    assert_eq!(s(&r, C::kind), Some("connect_error"));
    assert_eq!(s(&r, C::relay_host), Some("aspmx.l.google.com"));
    assert_eq!(s(&r, C::relay_ip), Some("2a00:1450:400b:c02::1a"));
    assert_eq!(i(&r, C::relay_port), Some(25));
    assert_eq!(s(&r, C::detail), Some("Network is unreachable"));
}

#[test]
fn smtpd_sasl_failure_names_its_client() {
    let r = parsed("Aug 4 16:47:52 mail3 postfix/smtpd[31152]: warning: unknown[192.0.2.237]:55729: SASL LOGIN authentication failed: authentication failure");
    assert_eq!(s(&r, C::kind), Some("warning"));
    assert_eq!(s(&r, C::client_host), Some("unknown"));
    assert_eq!(s(&r, C::client_ip), Some("192.0.2.237"));
    assert_eq!(i(&r, C::client_port), Some(55729));
    let r = parsed("Apr 26 10:55:19 tcc1 postfix/smtpd[21126]: warning: laptop.local[192.168.1.2]: SASL PLAIN authentication failed: generic failure");
    assert_eq!(s(&r, C::client_host), Some("laptop.local"));
    assert_eq!(i(&r, C::client_port), None);
}

#[test]
fn smtpd_non_smtp_command_names_its_client() {
    let r = parsed("2024-10-31T12:38:21.817327+00:00 machine postfix/submission/smtpd[2634372]: warning: non-SMTP command from unknown[192.168.1.1]: GET / HTTP/1.1");
    assert_eq!(s(&r, C::client_host), Some("unknown"));
    assert_eq!(s(&r, C::client_ip), Some("192.168.1.1"));
}

#[test]
fn dovecot_23_session_end_without_user_prefix() {
    let r = parsed("Nov 23 06:23:56 vm dovecot: pop3: Disconnected: Logged out top=0/0, retr=5/14008, del=5/11, size=26517");
    assert_eq!(s(&r, C::kind), Some("mailbox_logout"));
    assert_eq!(s(&r, C::service), Some("pop3"));
    assert_eq!(s(&r, C::mailbox_user), None);
    assert_eq!(i(&r, C::retr_msgs), Some(5));
    assert_eq!(i(&r, C::retr_bytes), Some(14008));
    assert_eq!(i(&r, C::del_msgs), Some(5));
    assert_eq!(i(&r, C::mbox_msgs), Some(11));
    assert_eq!(i(&r, C::mbox_size), Some(26517));
}

#[test]
fn dovecot_1x_upper_case_service_and_bytes() {
    let r = parsed("Apr  1 10:00:02 raptor dovecot: POP3(root): Disconnected: Logged out top=0/0, retr=0/0, del=0/0, size=0");
    assert_eq!(s(&r, C::kind), Some("mailbox_logout"));
    assert_eq!(s(&r, C::service), Some("pop3"));
    assert_eq!(s(&r, C::mailbox_user), Some("root"));
    let r = parsed("Apr  1 10:00:09 raptor dovecot: IMAP(brachiosaurus): Disconnected in IDLE bytes=7467/14209865");
    assert_eq!(s(&r, C::kind), Some("mailbox_disconnect"));
    assert_eq!(s(&r, C::service), Some("imap"));
    assert_eq!(i(&r, C::bytes_in), Some(7467));
    assert_eq!(i(&r, C::bytes_out), Some(14209865));
}

#[test]
fn dovecot_login_with_a_level_prefix() {
    let r = parsed("Oct 13 09:22:59 canyon dovecot: pop3-login: Info: Login: user=<test@yourdomain.net>, method=PLAIN, rip=172.17.0.1, lip=172.17.0.2, mpid=18, TLS, session=<PeYcgjjOGOisEQAB>");
    assert_eq!(s(&r, C::kind), Some("mailbox_login"));
    assert_eq!(s(&r, C::mailbox_user), Some("test@yourdomain.net"));
    assert_eq!(s(&r, C::client_ip), Some("172.17.0.1"));
}

#[test]
fn courier_connection_is_a_mailbox_connect() {
    let r = parsed("Nov 24 12:00:01 mx pop3d: Connection, ip=[::ffff:127.0.0.1]");
    assert_eq!(s(&r, C::kind), Some("mailbox_connect"));
    assert_eq!(s(&r, C::client_ip), Some("127.0.0.1"));
}

#[test]
fn sendmail_starttls_client() {
    let r = parsed("Nov  3 11:36:05 mx sm-mta[26271]: STARTTLS=client, relay=mail.example.com., version=TLSv1.3, verify=FAIL, cipher=TLS_AES_256_GCM_SHA384, bits=256/256");
    assert_eq!(s(&r, C::kind), Some("tls"));
    assert_eq!(s(&r, C::relay_host), Some("mail.example.com."));
    assert_eq!(s(&r, C::tls_protocol), Some("TLSv1.3"));
    assert_eq!(s(&r, C::tls_cipher), Some("TLS_AES_256_GCM_SHA384"));
    assert_eq!(i(&r, C::tls_bits), Some(256));
}

#[test]
fn queue_ids_of_daemons_without_a_kind_of_their_own() {
    for (prog, msg) in [
        ("postfix/postsuper", "D4F2023DB: requeued"),
        ("postfix/postsuper", "D4F2023DB: placed on hold"),
        ("postfix/bounce", "732BB407C3: sender non-delivery notification: 5DE184083C"),
        ("postfix/pipe", "0F5383D: to=<tom@example.com>, relay=dovecot, delay=4.3, delays=4.1/0.01/0/0.15, dsn=2.0.0, status=sent (delivered via dovecot service)"),
        ("postfix/lmtp", "D8B4C2A3F1: to=<u@x>, relay=private/dovecot-lmtp, delay=0.01, dsn=2.0.0, status=sent (250 2.0.0 <u@x> Saved)"),
    ] {
        let line = format!("Nov 27 10:00:00 mx {prog}[42]: {msg}");
        let r = parsed(&line);
        assert_eq!(s(&r, C::queue_id), Some(msg.split(':').next().unwrap()), "{line}");
    }
}

#[test]
fn known_programs_other_lines_are_flagged() {
    assert!(known_program(b"postfix/smtpd") && known_program(b"dovecot") && known_program(b"sm-mta"));
    assert!(!known_program(b"CRON") && !known_program(b"sshd"));
    let r = parsed("Nov 27 10:00:00 mx postfix/smtpd[42]: something postfix never says");
    assert!(is_unknown(&r));
    let r = parsed("Nov 27 10:00:00 mx CRON[42]: (root) CMD (true)");
    assert_eq!(s(&r, C::kind), Some("other"));
    assert!(!is_unknown(&r));
}

#[test]
fn smtpd_protocol_slips_name_their_client() {
    let r = parsed("Jun 12 08:58:35 xxx postfix/smtpd[13533]: improper command pipelining after AUTH from unknown[1.2.3.4]: QUIT");
    assert_eq!(s(&r, C::kind), Some("pipelining"));
    assert_eq!(s(&r, C::client_ip), Some("1.2.3.4"));
    let r = parsed("Jun  3 06:25:43 srv postfix/smtpd[29306]: too many errors after RCPT from example.com[192.0.2.11]");
    assert_eq!(s(&r, C::kind), Some("too_many_errors"));
    assert_eq!(s(&r, C::client_host), Some("example.com"));
}

#[test]
fn tls_established_with_and_without_a_level() {
    let r = parsed("Jan 31 09:50:08 raptor postfix/smtpd[15802]: TLS connection established from stegosaurus.dinos.test[192.168.4.150]: TLSv1 with cipher DHE-RSA-AES256-SHA (256/256 bits)");
    assert_eq!(s(&r, C::kind), Some("tls"));
    assert_eq!(s(&r, C::tls_level), None);
    assert_eq!(s(&r, C::client_ip), Some("192.168.4.150"));
    assert_eq!(s(&r, C::tls_protocol), Some("TLSv1"));
    let r = parsed("Jul 24 03:28:15 mail postfix/smtp[24052]: Verified TLS connection established to mx2.comcast.net[2001:558:fe21:2a::6]:25: TLSv1.2 with cipher ECDHE-RSA-AES256-GCM-SHA384 (256/256 bits)");
    assert_eq!(s(&r, C::kind), Some("tls"));
    assert_eq!(s(&r, C::tls_level), Some("Verified"));
    assert_eq!(s(&r, C::relay_ip), Some("2001:558:fe21:2a::6"));
    assert_eq!(i(&r, C::relay_port), Some(25));
}

#[test]
fn remote_reply_before_the_delivery_status() {
    let r = parsed("Nov 27 10:00:00 mx postfix/smtp[42]: ED59C3D: host mail2.example.com[1.74.253.23] said: 450 4.7.1 <user@example.com>: Recipient address rejected: Greylisted for 5 minutes (in reply to RCPT TO command)");
    assert_eq!(s(&r, C::kind), Some("remote_reply"));
    assert_eq!(s(&r, C::queue_id), Some("ED59C3D"));
    assert_eq!(s(&r, C::relay_host), Some("mail2.example.com"));
    assert_eq!(i(&r, C::smtp_code), Some(450));
    assert_eq!(s(&r, C::enhanced_code), Some("4.7.1"));
}

#[test]
fn dovecot_auth_and_other_services() {
    let r = parsed("Jan 29 05:13:50 mail dovecot: auth: passwd-file(username,1.2.3.4): unknown user");
    assert_eq!(s(&r, C::kind), Some("auth"));
    assert_eq!(s(&r, C::mailbox_user), Some("username"));
    assert_eq!(s(&r, C::client_ip), Some("1.2.3.4"));
    // the auth policy server's refusal (lightmeter ControlCenter's test lines and labels)
    let r = parsed("Nov  6 18:07:37 mail dovecot: auth: policy(alice,33.44.55.66): Authentication failure due to policy server refusal");
    assert_eq!((s(&r, C::kind), s(&r, C::mailbox_user), s(&r, C::client_ip)), (Some("auth"), Some("alice"), Some("33.44.55.66")));
    // an LDA/LMTP delivery names its service (2.2 and older: no pid or session after the user)
    let r = parsed("Nov 27 10:00:00 mail dovecot: lmtp(user): msgid=<a@b.test>: saved mail to INBOX");
    assert_eq!((s(&r, C::kind), s(&r, C::service), s(&r, C::mailbox_user)), (Some("local_delivery"), Some("lmtp"), Some("user")));
    let r = parsed("@400000004c91b044077a9e94 imap-login: Info: Aborted login (auth failed, 1 attempts): user=<martin@waschbuesch.de>, method=CRAM-MD5, rip=80.187.101.33, lip=80.254.129.240, TLS");
    assert_eq!(s(&r, C::program), Some("dovecot"));
    assert_eq!(s(&r, C::kind), Some("mailbox_auth_failed"));
    let r = parsed("Aug 29 03:17:18 server dovecot: submission-login: Client has quit the connection (auth failed, 1 attempts in 2 secs): user=<user1>, method=LOGIN, rip=192.0.2.133, lip=0.0.0.0");
    assert_eq!(s(&r, C::kind), Some("login"));
    assert_eq!(s(&r, C::service), None);
    let r = parsed("Dec  7 20:53:17 edge dovecot: master: Warning: Killed with signal 15 (by pid=1 uid=0 code=kill)");
    assert_eq!(s(&r, C::kind), Some("warning"));
}

#[test]
fn sendmail_refusals() {
    let r = parsed("Feb 27 10:53:07 strange sm-mta[18001]: u9A0GtpL018001: rejecting commands from example.com [1.2.3.4] due to pre-greeting traffic after 6 seconds");
    assert_eq!(s(&r, C::kind), Some("reject"));
    assert_eq!(s(&r, C::client_host), Some("example.com"));
    assert_eq!(s(&r, C::client_ip), Some("1.2.3.4"));
    let r = parsed("Nov  3 11:35:30 Microsoft sendmail[26254]: rA37ZTSC026250: <arhipov@domain.com>... No such user here");
    assert_eq!(s(&r, C::kind), Some("reject"));
    assert_eq!(s(&r, C::recipient), Some("arhipov@domain.com"));
    let r = parsed("Mar 29 22:51:46 server sm-mta[50438]: 06QDQnNf050438: example.com [IPv6:2001:DB8::1] did not issue MAIL/EXPN/VRFY/ETRN during connection to IPv6");
    assert_eq!(s(&r, C::kind), Some("idle_connection"));
    assert_eq!(s(&r, C::client_ip), Some("2001:DB8::1"));
}

#[test]
fn exim_cutthrough_delivery_and_sender_on_delivery() {
    let r = parsed("2024-01-02 10:00:00 1rAbCd-000000005vi-0000 >> dest@example.com F=<a@example.org> R=all T=smtp H=mx.example.com [192.0.2.1] C=\"250 2.0.0 OK\"");
    assert_eq!(s(&r, C::kind), Some("delivery"));
    assert_eq!(s(&r, C::status), Some("sent"));
    assert_eq!(s(&r, C::sender), Some("a@example.org"));
    assert_eq!(s(&r, C::relay_ip), Some("192.0.2.1"));
    assert_eq!(i(&r, C::smtp_code), Some(250));
}

#[test]
fn exim_reject_lines_without_leading_client_fields() {
    let r = parsed("2024-01-02 10:00:00 rejected MAIL from [192.0.2.7]: no HELO/EHLO given");
    assert_eq!(s(&r, C::kind), Some("reject"));
    assert_eq!(s(&r, C::client_ip), Some("192.0.2.7"));
    let r = parsed("2024-01-02 10:00:00 [2249] H=(h) [192.0.2.8]:52391 F=s@example.com rejected RCPT r@example.net: listed");
    assert_eq!(s(&r, C::sender), Some("s@example.com"));
    assert_eq!(s(&r, C::recipient), Some("r@example.net"));
    let r = parsed("2024-01-02 10:00:00 H=[192.0.2.9]:62839 dropped by 'connect' ACL: banned");
    assert_eq!(s(&r, C::kind), Some("reject"));
    assert_eq!(i(&r, C::client_port), Some(62839));
}

#[test]
fn exim_session_lines_name_their_client() {
    for (line, kind, ip) in [
        ("SMTP call from h.example [192.0.2.1]:3767 I=[10.0.0.1]:25 dropped: too many nonmail commands", "protocol_error", "192.0.2.1"),
        ("SMTP connection Ci=1234 from (t) [192.0.2.2] lost while reading message data", "lost_connection", "192.0.2.2"),
        ("1ahr79-0006jK-G9 SMTP connection from (v) [192.0.2.3]:44884 I=[10.0.0.1]:25 closed by DROP in ACL", "disconnect", "192.0.2.3"),
        ("SMTP command timeout on connection from [192.0.2.4]", "timeout", "192.0.2.4"),
        ("plain authenticator failed for H=(x) [192.0.2.5]: 535 Incorrect authentication data", "sasl_failed", "192.0.2.5"),
        ("H=h.example [192.0.2.6] sender verify fail for <a@example.com>: Unrouteable address", "warning", "192.0.2.6"),
        ("no IP address found for host h.example (during SMTP connection from [192.0.2.7]:49390 I=[10.0.0.1]:25)", "warning", "192.0.2.7"),
        ("SMTP protocol synchronization error (input sent too soon): rejected \"RSET\" H=h [192.0.2.8]:58302 next input=\"QUIT\"", "protocol_error", "192.0.2.8"),
    ] {
        let text = format!("2024-01-02 10:00:00 {line}");
        let r = parsed(&text);
        assert_eq!(s(&r, C::kind), Some(kind), "{line}");
        assert_eq!(s(&r, C::client_ip), Some(ip), "{line}");
    }
}

#[test]
fn exim_one_hosts_error_after_its_port_and_colon() {
    let r = parsed("2024-01-02 10:00:00 1rAbCd-000000005vi-0000 H=mx.example [192.0.2.1]:25: SMTP error from remote mail server after MAIL FROM:<>: 450 not now");
    assert_eq!(s(&r, C::kind), Some("warning"));
    assert_eq!(s(&r, C::relay_ip), Some("192.0.2.1"));
    assert_eq!(i(&r, C::relay_port), Some(25));
    let r = parsed("2024-01-02 10:00:00 1rAbCd-000000005vi-0000 == a@example.com R=r1 T=t1 defer (-45): SMTP error from remote mail server after MAIL FROM:<b@example.com> SIZE=1325: host mx.example [192.0.2.2]: 421 closing");
    assert_eq!(s(&r, C::relay_ip), Some("192.0.2.2"));
    assert_eq!(i(&r, C::smtp_code), Some(421));
}

#[test]
fn sendmail_attack_and_auth_failure_clients() {
    let r = parsed("Feb 24 13:00:17 k sm-mta[1499]: s1OHxxSn001499: h.example [192.0.2.1] (may be forged): possible SMTP attack: command=AUTH, count=6");
    assert_eq!(s(&r, C::client_host), Some("h.example"));
    assert_eq!(s(&r, C::client_ip), Some("192.0.2.1"));
    let r = parsed("Feb 25 04:02:28 r sendmail[16665]: 06I02CNi016765: AUTH failure (LOGIN): authentication failure (-13) SASL(-13): authentication failure: checkpass failed, user=x, relay=[192.0.2.100], relay=[192.0.2.4] (may be forged)");
    assert_eq!(s(&r, C::kind), Some("sasl_failed"));
    assert_eq!(s(&r, C::client_ip), Some("192.0.2.4"));
}

#[test]
fn qmail_rblsmtpd_refusal_and_courier_null_sender() {
    let r = parsed("Sep  6 07:33:33 sd6 qmail: 1157520813.485077 rblsmtpd: 198.51.100.77 pid 19597 sbl.example: 451 listed");
    assert_eq!(s(&r, C::kind), Some("reject"));
    assert_eq!(s(&r, C::client_ip), Some("198.51.100.77"));
    assert_eq!(i(&r, C::smtp_code), Some(451));
    let r = parsed("Nov 21 23:16:17 s courieresmtpd: error,relay=::ffff:1.2.3.4,from=<>,to=<>: 550 User unknown.");
    assert_eq!(s(&r, C::sender), Some(""));
    let r = parsed("Jul  3 23:07:20 s courieresmtpd: error,relay=::ffff:1.2.3.4,msg=\"535 Authentication failed.\",cmd: x");
    assert_eq!(i(&r, C::smtp_code), Some(535));
}

#[test]
fn exim_notes_on_messages_and_sessions() {
    let p = "2017-07-30 18:51:05.712 10HmaY-000000005vi-0000 ";
    let l1 = format!("{p}DKIM: d=test.ex s=sel c=relaxed/relaxed a=rsa-sha256 b=1024 [verification succeeded]");
    let r = parsed(&l1);
    assert_eq!((s(&r, C::kind), s(&r, C::verdict)), (Some("dkim"), Some("verification succeeded")));
    for (line, kind) in [
        ("error ignored", "other"), // no address before it
        ("userz@domain.com: error ignored", "message_note"),
        ("sender address changed to <bad@test.ex> by CALLER", "message_note"),
        ("recipient <delay@2.test.again.dns> added by root", "message_note"),
        ("no immediate delivery: queued by ACL", "message_note"),
        ("Spool file 10HmaY-000000005vi-0000-D not found", "error"),
        ("[127.0.0.1] SSL verify error: depth=0 error=self signed certificate", "warning"),
        ("F=<CALLER@myhost.test.ex> rejected by non-SMTP ACL: cannot use \"control=enforce_sync\"", "reject"),
    ] {
        assert_eq!(s(&parsed(&format!("{p}{line}")), C::kind), Some(kind), "{line}");
    }
    let q = "1999-03-02 09:44:33 ";
    let l2 = format!("{q}VRFY failed for <b@test.ex> H=(test) [192.0.2.7] U=CALLER");
    let r = parsed(&l2);
    assert_eq!((s(&r, C::kind), s(&r, C::recipient), s(&r, C::client_ip)), (Some("vrfy_failed"), Some("b@test.ex"), Some("192.0.2.7")));
    let l3 = format!("{q}H=(exim.test.ex) [192.0.2.14] I=[14.12.11.10]:10002 U=CALLER Warning: 192.0.2.14 is in rbl.test.ex");
    let r = parsed(&l3);
    assert_eq!((s(&r, C::kind), s(&r, C::client_ip), s(&r, C::reason)), (Some("warning"), Some("192.0.2.14"), Some("192.0.2.14 is in rbl.test.ex")));
    let l4 = format!("{q}SMTP protocol error in \"auth plain AHVz\" U=CALLER already authenticated");
    let r = parsed(&l4);
    assert_eq!((s(&r, C::kind), s(&r, C::reason)), (Some("protocol_error"), Some("already authenticated")));
    for line in ["spool directory space check failed: space=1 inodes=2", "ACL for QUIT returned ERROR: cannot use \"control=freeze\" in QUIT ACL"] {
        assert_eq!(s(&parsed(&format!("{q}{line}")), C::kind), Some("error"), "{line}");
    }
    // an ISO-stamped syslog line: the host and Exim's text after its tag and its own [pid]
    let r = parsed("2016-04-01 11:08:00 mail exim[8001]: [8001] no MAIL in SMTP connection from (User) [192.0.2.29]:20042 I=[192.0.2.1]:25 D=0.349s C=EHLO,AUTH,QUIT");
    assert_eq!((s(&r, C::kind), s(&r, C::host), s(&r, C::client_ip)), (Some("idle_connection"), Some("mail"), Some("192.0.2.29")));
    assert_eq!(i(&r, C::pid), Some(8001));
}

#[test]
fn rblsmtpd_under_its_own_tag_is_a_reject() {
    let r = parsed("Jun 30 15:13:33 ns1 rblsmtpd: relays.ordb.org blocked 193.111.120.47 ordb-test.null.dk -");
    assert_eq!((s(&r, C::kind), s(&r, C::client_ip), s(&r, C::reason)), (Some("reject"), Some("193.111.120.47"), Some("relays.ordb.org")));
    assert_eq!(s(&r, C::program), Some("rblsmtpd"));
}

// Debian 11's OpenSMTPD 6.8, Exim 4.94 and sendmail 8.15, recorded on loopback
#[test]
fn opensmtpd_expiry_routes_and_relay_errors() {
    let r = parsed("Nov 28 10:14:29 vm smtpd[23887]: relay: Expire for 1c3039c7dec1eb41: from=<u17@bench.test>, to=<z2@slow.test>, rcpt=<->, delay=3m, stat=Envelope expired");
    assert_eq!((s(&r, C::kind), s(&r, C::status), s(&r, C::queue_id)), (Some("delivery"), Some("expired"), Some("1c3039c7")));
    assert_eq!(s(&r, C::recipient), Some("z2@slow.test"));
    assert!(matches!(r.get(C::delay), crate::cols::V::F(d) if d == 180.0));
    assert_eq!(crate::classify::counts_as(&r), Some(b"expired".as_slice()));
    let r = parsed("Nov 28 10:11:02 vm smtpd[23887]: smtp-out: Disabling route [] <-> 127.0.0.1 (localhost) for 15s");
    assert_eq!((s(&r, C::kind), s(&r, C::relay_ip), s(&r, C::relay_host)), (Some("route"), Some("127.0.0.1"), Some("localhost")));
    let r = parsed("Nov 28 10:11:02 vm smtpd[23887]: smtp-out: No valid route for [connector:[]->[relay:127.0.0.1,port=2599,smtp,mx],0x0]");
    assert_eq!((s(&r, C::kind), s(&r, C::severity)), (Some("warning"), Some("warning")));
    let r = parsed("Nov 28 10:11:02 vm smtpd[23887]: 3ca5279d811b3602 mta error reason=IO Error: Connection refused");
    assert_eq!((s(&r, C::kind), s(&r, C::reason)), (Some("connect_error"), Some("IO Error: Connection refused")));
    let r = parsed("Nov 28 10:11:02 vm smtpd[23887]: 86c57dc1b194302a mta delivery evpid=086d758652c6c900 from=<a@b.test> to=<z2@slow.test> rcpt=<-> source=\"127.0.0.1\" relay=\"127.0.0.1 (localhost)\" delay=1s result=\"TempFail\" stat=\"Connection refused\"");
    assert_eq!(s(&r, C::orig_to), None);
}

#[test]
fn exim_failure_transport_and_indented_continuation() {
    let r = parsed("2026-11-28 09:53:56 1xXF80-0000mk-9A ** z4@slow.test R=slow T=remote_smtp: all hosts for 'slow.test' have been failing for a long time (and retry time not reached)");
    assert_eq!((s(&r, C::kind), s(&r, C::mailer)), (Some("delivery"), Some("remote_smtp")));
    let r = parsed(" Suggested action: use keep_environment.");
    assert_eq!((s(&r, C::kind), s(&r, C::detail)), (Some("__noise"), Some("continuation")));
}

#[test]
fn sendmail_client_address_without_a_name_is_a_warning() {
    let r = parsed("Nov 28 09:57:40 vm sendmail[18445]: gethostbyaddr(192.0.2.2) failed: 1");
    assert_eq!((s(&r, C::kind), s(&r, C::severity)), (Some("warning"), Some("warning")));
}
