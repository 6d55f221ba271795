#!/bin/bash
# Dovecot POP3/IMAP on 127.0.0.1 over the Maildirs that scripts/setup_postfix_bench.sh delivers to
# (run that first): passwd-file with every userN@bench.test (password from BENCH_MAIL_PASSWORD, or
# generated once into $BENCH_ROOT/mail-password), static userdb (uid/gid 5000). Dovecot logs through
# rsyslog to $BENCH_ROOT/log/dovecot.log: record it with `mtabench record ... --log2 that-file`.
# Idempotent. Run as root.
set -euo pipefail
BASE=${BENCH_ROOT:-/srv/bench}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }
[ -s "$BASE/users.txt" ] || { echo "$BASE/users.txt missing: run scripts/setup_postfix_bench.sh first" >&2; exit 1; }

need=()
for pkg in dovecot-pop3d dovecot-imapd rsyslog; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

pwfile=$BASE/mail-password
if [ -n "${BENCH_MAIL_PASSWORD:-}" ]; then
  printf '%s\n' "$BENCH_MAIL_PASSWORD" > "$pwfile"
elif [ ! -s "$pwfile" ]; then
  head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$pwfile"
fi
chmod 600 "$pwfile"
pw=$(cat "$pwfile")
# passwd-file: user:{PLAIN}password (loopback benchmark accounts, never exposed beyond 127.0.0.1)
sed "s|\$|:{PLAIN}$pw|" "$BASE/users.txt" > /etc/dovecot/bench.passwd
chown root:dovecot /etc/dovecot/bench.passwd
chmod 640 /etc/dovecot/bench.passwd

cat > /etc/dovecot/conf.d/99-bench.conf <<CONF
# written by mtabench scripts/setup_dovecot_bench.sh
listen = 127.0.0.1
protocols = pop3 imap
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
mail_location = maildir:$BASE/vmail/%d/%n
first_valid_uid = 5000
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u /etc/dovecot/bench.passwd
}
userdb {
  driver = static
  args = uid=5000 gid=5000 home=$BASE/vmail/%d/%n
}
log_path = syslog
syslog_facility = mail
CONF
# Debian's 10-auth.conf includes auth-system.conf.ext (PAM): only our passwd-file is wanted
sed -i 's/^!include auth-system.conf.ext/#!include auth-system.conf.ext/' /etc/dovecot/conf.d/10-auth.conf

cat > /etc/rsyslog.d/10-bench-dovecot.conf <<CONF
# written by mtabench scripts/setup_dovecot_bench.sh: Dovecot's lines into their own file
if \$programname startswith 'dovecot' then {
  action(type="omfile" file="$BASE/log/dovecot.log")
  stop
}
CONF
touch "$BASE/log/dovecot.log"
# rsyslog reads rules only at start: restart it (systemd if it runs the machine, else the daemon itself)
if [ -d /run/systemd/system ]; then
  systemctl restart rsyslog
else
  if [ -s /run/rsyslogd.pid ] && kill -0 "$(cat /run/rsyslogd.pid)" 2>/dev/null; then
    kill "$(cat /run/rsyslogd.pid)"
    for _ in $(seq 1 50); do [ -e /run/rsyslogd.pid ] || break; sleep 0.1; done
  fi
  rsyslogd </dev/null >/dev/null 2>&1
fi
doveconf -n >/dev/null
if doveadm service status >/dev/null 2>&1 || pidof dovecot >/dev/null; then doveadm reload; else dovecot </dev/null >/dev/null 2>&1; fi
for _ in $(seq 1 50); do
  if (exec 3<>/dev/tcp/127.0.0.1/110) 2>/dev/null; then break; fi
  sleep 0.2
done
echo "dovecot $(dovecot --version | cut -d' ' -f1) on 127.0.0.1:110/143, log $BASE/log/dovecot.log"
