#!/bin/bash
# Debian Postfix for benchmarking with `mtabench record`: listens on 127.0.0.1:25 only, delivers
# to Maildirs through virtual(8) for BENCH_USERS users in bench.test, logs through postlogd
# (maillog_file) to $BENCH_ROOT/log/maillog. Also installs the load tool (postal), sysstat
# (vmstat/iostat), pflogsumm, procps and iproute2 (the tests use pgrep and ss).
# Idempotent: run it again to re-apply. Run as root.
set -euo pipefail
BASE=${BENCH_ROOT:-/srv/bench}
USERS=${BENCH_USERS:-500}
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }

need=()
for pkg in postfix postal sysstat pflogsumm coreutils procps iproute2; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  # preseed so the postfix package does not ask, and starts as a local-only system
  echo "postfix postfix/main_mailer_type select Local only" | debconf-set-selections
  echo "postfix postfix/mailname string bench.localdomain" | debconf-set-selections
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$BASE/log" "$BASE/vmail"
getent group vmail >/dev/null || groupadd -g 5000 vmail
getent passwd vmail >/dev/null || useradd -u 5000 -g 5000 -M -d "$BASE/vmail" -s /usr/sbin/nologin vmail
chown 5000:5000 "$BASE/vmail"

# users: userN@bench.test -> bench.test/userN/ (trailing slash = Maildir)
tmp=$(mktemp)
for i in $(seq 1 "$USERS"); do echo "user$i@bench.test bench.test/user$i/"; done > "$tmp"
install -m 644 "$tmp" /etc/postfix/vmailbox
cut -d' ' -f1 "$tmp" > "$BASE/users.txt"
rm -f "$tmp"
postmap /etc/postfix/vmailbox
[ -f /etc/aliases ] || echo "postmaster: root" > /etc/aliases
newaliases

# main.cf: set only what benchmarking needs; everything else stays Debian's default
postconf -e \
  "inet_interfaces = 127.0.0.1" \
  "inet_protocols = ipv4" \
  "mynetworks = 127.0.0.0/8" \
  "mydestination = \$myhostname, localhost" \
  "relayhost =" \
  "default_transport = error" \
  "relay_transport = error" \
  "smtpd_tls_security_level = none" \
  "smtp_tls_security_level = none" \
  "virtual_mailbox_domains = bench.test" \
  "virtual_mailbox_maps = hash:/etc/postfix/vmailbox" \
  "virtual_mailbox_base = $BASE/vmail" \
  "virtual_uid_maps = static:5000" \
  "virtual_gid_maps = static:5000" \
  "virtual_minimum_uid = 100" \
  "message_size_limit = 10240000" \
  "maillog_file_prefixes = /var, /dev/stdout, $BASE" \
  "maillog_file = $BASE/log/maillog"
# postlogd must run for maillog_file (Debian's master.cf has it; add it if missing)
postconf -M postlog/unix-dgram >/dev/null 2>&1 ||
  postconf -M "postlog/unix-dgram=postlog unix-dgram n - n - 1 postlogd"
touch "$BASE/log/maillog"
postfix check
if postfix status >/dev/null 2>&1; then postfix reload; else postfix start; fi
# wait until smtpd answers on loopback (master may take a moment to bind)
for _ in $(seq 1 50); do
  if (exec 3<>/dev/tcp/127.0.0.1/25) 2>/dev/null; then break; fi
  sleep 0.2
done
echo "postfix $(postconf -h mail_version) on 127.0.0.1:25, maillog $BASE/log/maillog, users $BASE/users.txt"
