use super::{col, int, parse, s};
use crate::cols::C;
use crate::other::QmailTie;

const COURIER: &str = "\
2026-11-27T03:06:18.785963+00:00 vm courieresmtpd: started,ip=[::ffff:127.0.0.1],port=[40004]
2026-11-27T03:06:18.997481+00:00 vm courierd: newmsg,id=00000000005B80FD.000000006B08F3AA.0000232F: dns; localhost ([::ffff:127.0.0.1])
2026-11-27T03:06:18.998031+00:00 vm courierd: started,id=00000000005B80FD.000000006B08F3AA.0000232F,from=<user408@bench.test>,module=local,host=user58!!5058!5000!/home/user58!!,addr=<user58>
2026-11-27T03:06:18.998958+00:00 vm courierd: Waiting.  shutdown time=none, wakeup time=none, queuedelivering=2, inprogress=2
2026-11-27T03:06:19.083294+00:00 vm courierlocal: id=00000000005B80FD.000000006B08F3AA.0000232F,from=<user408@bench.test>,addr=<user58@bench.test>,size=602,success: Message delivered.
2026-11-27T03:06:19.143655+00:00 vm courierd: completed,id=00000000005B80FD.000000006B08F3AA.0000232F
2026-11-27T03:06:20.001000+00:00 vm courieresmtpd: error,relay=::ffff:127.0.0.1,port=40146,from=<user12@bench.test>,to=<nouser3@bench.test>: 550 User <nouser3> unknown
";

#[test]
fn courier_message_from_arrival_to_removal() {
    let c = parse(COURIER, &mut QmailTie::default());
    let id = s("00000000005B80FD.000000006B08F3AA.0000232F");
    assert_eq!(
        col(&c, C::kind),
        vec![s("connect"), s("arrival"), s("qmgr_from"), s("status"), s("delivery"), s("removed"), s("reject")]
    );
    let q = col(&c, C::queue_id);
    assert_eq!((q[1].clone(), q[2].clone(), q[4].clone(), q[5].clone()), (id.clone(), id.clone(), id.clone(), id));
    assert_eq!(q[3], None);
    assert_eq!(col(&c, C::client)[1], s("localhost ([::ffff:127.0.0.1])"));
    assert_eq!(col(&c, C::sender)[2], s("user408@bench.test"));
    assert_eq!(col(&c, C::mailer)[2], s("local"));
    assert_eq!(col(&c, C::status)[4], s("sent"));
    assert_eq!(col(&c, C::recipient)[4], s("user58@bench.test"));
    assert_eq!(int(&c, C::size)[4], Some(602));
    assert_eq!(col(&c, C::status_text)[4], s("Message delivered."));
}

#[test]
fn courier_rcpt_reject_has_its_code() {
    let c = parse(COURIER, &mut QmailTie::default());
    assert_eq!(col(&c, C::recipient)[6], s("nouser3@bench.test"));
    assert_eq!(col(&c, C::sender)[6], s("user12@bench.test"));
    assert_eq!(col(&c, C::reject_stage)[6], s("RCPT"));
    assert_eq!(int(&c, C::smtp_code)[6], Some(550));
    assert_eq!(col(&c, C::reason)[6], s("User <nouser3> unknown"));
}

#[test]
fn courier_reply_then_status_line() {
    // libs/comctlfile.c: a reply line, then the outcome; the error of a session apart
    let text = "\
2026-11-27T03:06:21.000000+00:00 vm courieresmtp: id=00000000005B80FD.000000006B08F3AA.0000232F,from=<user1@bench.test>,addr=<a@citromail.hu>: 451 Try again later
2026-11-27T03:06:21.000001+00:00 vm courieresmtp: id=00000000005B80FD.000000006B08F3AA.0000232F,from=<user1@bench.test>,addr=<a@citromail.hu>,status: deferred
2026-11-27T03:06:22.000000+00:00 vm courieresmtpd: error,relay=::ffff:127.0.0.1,port=40000,msg=\"502 ESMTP command error\",cmd: FOO
2026-11-27T03:17:00.524748+00:00 vm courieresmtpd: 2 maximum active connections.
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(col(&c, C::kind), vec![s("delivery_reply"), s("delivery"), s("error"), s("status")]);
    assert_eq!(int(&c, C::smtp_code)[0], Some(451));
    assert_eq!(col(&c, C::status)[1], s("deferred"));
    assert_eq!(col(&c, C::mailer)[1], s("esmtp"));
}

#[test]
fn courier_relayed_delivery_counts_once_and_courierd_refusals_are_bounces() {
    // Courier 1.0.16 (Debian 12) relaying to an SMTP sink: courieresmtp logs the reply, the
    // delivery with its text and then its outcome (ctlfile_append_reply's
    // COMCTLFILE_DELSUCCESS_NOLOG); courierd refuses an unknown local address itself; its own
    // start is the daemon's
    let text = "\
2026-11-28T03:57:32.913873+00:00 vm courieresmtp: id=000000000058A26C.000000006B0A512C.00000145,from=<user25@bench.test>,addr=<user2@sink.test>: 250 2.0.0 Ok: queued as S00000001
2026-11-28T03:57:32.913882+00:00 vm courieresmtp: id=000000000058A26C.000000006B0A512C.00000145,from=<user25@bench.test>,addr=<user2@sink.test>,success: delivered: [127.0.0.1] [127.0.0.1]
2026-11-28T03:57:32.913884+00:00 vm courieresmtp: id=000000000058A26C.000000006B0A512C.00000145,from=<user25@bench.test>,addr=<user2@sink.test>,status: success
2026-11-28T03:59:08.430778+00:00 vm courierd: id=000000000058A408.000000006B0A518C.00000812,from=<>,addr=<nouser1@bench.test>: 550 User <nouser1> unknown
2026-11-28T03:59:08.430795+00:00 vm courierd: id=000000000058A408.000000006B0A518C.00000812,from=<>,addr=<nouser1@bench.test>,status: failure
2026-11-28T03:57:27.596505+00:00 vm courierd: Started ./courierlocal, pid=276, maxdels=10, maxhost=4, maxrcpt=1
2026-11-28T04:00:01.000000+00:00 vm courierd: SHUTDOWN: Stopping...
2026-11-28T03:57:33.000000+00:00 vm courierlocal: id=000000000058A26D.000000006B0A512C.00000146,from=<user1@bench.test>,addr=<user3@bench.test>,size=618,success: Message delivered.
";
    let c = parse(text, &mut QmailTie::default());
    assert_eq!(
        col(&c, C::kind),
        vec![
            s("delivery_reply"),
            s("delivery"),
            s("delivery_status"),
            s("delivery_reply"),
            s("delivery"),
            s("master"),
            s("master"),
            s("delivery")
        ]
    );
    let counted = col(&c, C::counts_as);
    assert_eq!(counted, vec![None, s("delivered"), None, None, s("bounced"), None, None, s("delivered")]);
    assert_eq!(col(&c, C::mailer)[4], None);
    assert_eq!(int(&c, C::smtp_code)[3], Some(550));
}

#[test]
fn a_courier_message_goes_on_past_a_pass_that_deferred_or_failed() {
    // courierd logs `completed,id=` after every delivery pass: after a deferral a retry
    // follows, after a failure the pass that sends the bounce (module=dsn)
    let text = "\
2026-11-28T03:59:08.430450+00:00 vm courierd: newmsg,id=000000000058A408.000000006B0A518C.00000812: dns; localhost (localhost [127.0.0.1])
2026-11-28T03:59:08.430795+00:00 vm courierd: id=000000000058A408.000000006B0A518C.00000812,from=<>,addr=<nouser1@bench.test>,status: failure
2026-11-28T03:59:08.434447+00:00 vm courierd: completed,id=000000000058A408.000000006B0A518C.00000812
2026-11-28T03:59:08.438404+00:00 vm courierd: started,id=000000000058A408.000000006B0A518C.00000812,from=<>,module=dsn,host=,addr=<postmaster>
2026-11-28T03:59:08.450380+00:00 vm courierd: completed,id=000000000058A408.000000006B0A518C.00000812
2026-11-28T03:59:09.000000+00:00 vm courieresmtp: id=000000000058A409.000000006B0A518C.00000813,from=<u@bench.test>,addr=<tempfail1@sink.test>,status: deferred
2026-11-28T03:59:09.000100+00:00 vm courierd: completed,id=000000000058A409.000000006B0A518C.00000813
2026-11-28T03:59:39.000000+00:00 vm courieresmtp: id=000000000058A409.000000006B0A518C.00000813,from=<u@bench.test>,addr=<tempfail1@sink.test>,success: delivered: [127.0.0.1] [127.0.0.1]
2026-11-28T03:59:39.000100+00:00 vm courierd: completed,id=000000000058A409.000000006B0A518C.00000813
";
    let c = parse(text, &mut QmailTie::default());
    let kinds = col(&c, C::kind);
    assert_eq!(
        (kinds[2].clone(), kinds[4].clone(), kinds[6].clone(), kinds[8].clone()),
        (s("pass_completed"), s("removed"), s("pass_completed"), s("removed"))
    );
}
