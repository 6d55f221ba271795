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
