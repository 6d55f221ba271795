#!/bin/bash
# Records Postfix and Dovecot log variants on the host's Postfix (127.0.0.1:25) and Dovecot
# (127.0.0.1:110/143): each variant changes a few settings, runs a short bounded load (postal at a
# capped rate, rabid for the mailbox variants) plus the hand-made SMTP sessions the variant needs
# (swaks, sendmail), cuts the log to the run window and restores Postfix's and Dovecot's settings.
# Output: samples/variants/<slug>/ (run.toml, the log gzipped, the load tool's output) and
# tests/fixtures/oracles/<slug>/pflogsumm.txt for the Postfix logs.
#
# usage: scripts/record/postfix_variants.sh [VARIANT ...]   (no argument: every variant)
# Needs root; run scripts/setup_postfix_bench.sh and scripts/setup_dovecot_bench.sh first.
# Packages: postal, pflogsumm, swaks, rsyslog, opendkim, opendkim-tools, dovecot-core, openssl.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BASE=${BENCH_ROOT:-/srv/bench}
OUT=${VARIANT_OUT:-$REPO/samples/variants}
ORACLES=${VARIANT_ORACLES:-$REPO/tests/fixtures/oracles}
LOAD_S=${VARIANT_LOAD_S:-60}      # seconds of load per variant
RATE=${VARIANT_RATE:-120}         # postal: messages per minute (keeps each log small)
DRAIN_S=${VARIANT_DRAIN_S:-120}   # longest wait for the queue to empty after the load
SYSLOG_FILE=$BASE/log/variant-syslog.log
[ "$(id -u)" -eq 0 ] || { echo "run as root" >&2; exit 1; }

VUSERS=$BASE/variant-users.txt
SAVED=$(mktemp -d)
PW=$(cat "$BASE/mail-password")

# --- shared steps -------------------------------------------------------------------------

users_file() {
  # 100 known mailboxes and 3 unknown ones (RCPT rejects)
  { head -n 100 "$BASE/users.txt"; printf 'nouser%s@bench.test\n' 1 2 3; } > "$VUSERS"
}

save_settings() {
  cp -a /etc/postfix/main.cf /etc/postfix/master.cf "$SAVED/"
  cp -a /etc/dovecot/conf.d/99-bench.conf "$SAVED/"
}

restore_settings() {
  cp -a "$SAVED/main.cf" "$SAVED/master.cf" /etc/postfix/
  cp -a "$SAVED/99-bench.conf" /etc/dovecot/conf.d/
  rm -f /etc/dovecot/conf.d/98-variant.conf /etc/dovecot/conf.d/99-variant.conf /etc/rsyslog.d/20-variant.conf
  postfix reload >/dev/null 2>&1 || postfix start
  doveadm reload
}

wait_smtp() {
  for _ in $(seq 1 50); do (exec 3<>/dev/tcp/127.0.0.1/25) 2>/dev/null && return 0; sleep 0.2; done
}

queue_empty() {
  [ -z "$(find /var/spool/postfix/incoming /var/spool/postfix/active /var/spool/postfix/deferred \
    /var/spool/postfix/maildrop -type f 2>/dev/null | head -n 1)" ]
}

drain() {
  local t=0
  while ! queue_empty && [ $t -lt "$DRAIN_S" ]; do sleep 2; t=$((t + 2)); done
}

# postal at RATE messages/minute for LOAD_S seconds; postal ignores SIGINT, so -k ends it
load_postal() { # dir [extra postal options...]
  local dir=$1; shift
  LOAD_CMD="timeout -s INT -k 5 $LOAD_S postal -t 2 -m 4 -r $RATE $* 127.0.0.1 $VUSERS"
  set +e
  # shellcheck disable=SC2086
  timeout -s INT -k 5 "$LOAD_S" stdbuf -oL postal -t 2 -m 4 -r "$RATE" "$@" 127.0.0.1 "$VUSERS" \
    > "$dir/postal.csv" 2>/dev/null
  LOAD_RC=$?
  set -e
}

# syslog capture: Postfix (maillog_file off) and milters into $SYSLOG_FILE through rsyslog
syslog_on() { # template ("" = rsyslog's default, RFC 3339 on Debian 12) [second file] [its template]
  local tpl=${1:+ template=\"$1\"}
  {
    echo "# written by scripts/record/postfix_variants.sh"
    echo "if \$programname startswith 'postfix' or \$programname == 'opendkim' then {"
    echo "  action(type=\"omfile\" file=\"$SYSLOG_FILE\"$tpl)"
    [ -n "${2:-}" ] && echo "  action(type=\"omfile\" file=\"$2\" template=\"$3\")"
    echo "  stop"
    echo "}"
  } > /etc/rsyslog.d/20-variant.conf
  : > "$SYSLOG_FILE"
  [ -n "${2:-}" ] && : > "$2"
  restart_rsyslog
  postconf -e "maillog_file ="
}

restart_rsyslog() {
  if [ -s /run/rsyslogd.pid ] && kill -0 "$(cat /run/rsyslogd.pid)" 2>/dev/null; then
    kill "$(cat /run/rsyslogd.pid)"
    for _ in $(seq 1 50); do [ -e /run/rsyslogd.pid ] || break; sleep 0.1; done
  fi
  rsyslogd </dev/null >/dev/null 2>&1
  sleep 0.5
}

log_offset() { stat -c %s "$1"; }

cut_log() { # file from-byte dest.gz
  tail -c +"$(($2 + 1))" "$1" | gzip -9n > "$3"
}

oracle() { # slug plain-log-file name-of-the-saved-log
  local o=$ORACLES/$1
  mkdir -p "$o"
  pflogsumm --problems_first "$2" > "$o/pflogsumm.txt" 2>"$o/pflogsumm.stderr" || true
  [ -s "$o/pflogsumm.stderr" ] || rm -f "$o/pflogsumm.stderr"
  cat > "$o/README.md" <<EOF
# Oracle for samples/variants/$1

\`pflogsumm.txt\` is Debian's pflogsumm $(dpkg-query -W -f='${Version}' pflogsumm) over the
variant's Postfix log, captured right after the run by scripts/record/postfix_variants.sh:

    zcat samples/variants/$1/$(basename "$3") > /tmp/log && pflogsumm --problems_first /tmp/log
EOF
}

manifest() { # dir slug start end format-note notes changed-settings(lines "k = v")
  local dir=$1
  cat > "$dir/run.toml" <<EOF
run_id = "$2"
hostname = "$(hostname)"
start_utc = "$3"
end_utc = "$4"
duration_s = $(($(date -d "$4" +%s) - $(date -d "$3" +%s))).0
load_exit_code = ${LOAD_RC:-0}
monitor_start_utc = "$3"
monitor_end_utc = "$4"
maillog_timestamp_format = "$5"
kernel = "$(uname -r)"
cpus = $(nproc)

[tool]
name = "${TOOL_NAME:-postal}"
version = "${TOOL_VERSION:-0.76+nmu1 (Debian package postal)}"
command = '${LOAD_CMD:-}'
output_file = "${TOOL_OUT:-postal.csv}"

[mta]
name = "${MTA_NAME:-postfix}"
version = "${MTA_VERSION:-$(postconf -h mail_version)}"
listen = "${MTA_LISTEN:-127.0.0.1:25}"
delivery = "${MTA_DELIVERY:-virtual(8) to Maildir under $BASE/vmail, 500 mailboxes in domain bench.test}"

[mta.changed_settings]
$7

[notes]
text = """$6"""
EOF
}

now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

swaks_q() { swaks --server 127.0.0.1:25 --silent 2 "$@" >/dev/null 2>&1 || true; }

# One Postfix variant logged through postlogd (maillog_file): $1 slug, $2 notes, $3 changed
# settings, then the function that applies settings and the one that makes the hand sessions.
postlogd_variant() {
  local slug=$1 notes=$2 changed=$3 setup=$4 sessions=$5 dir=$OUT/$1
  echo "== $slug"
  mkdir -p "$dir"
  save_settings
  $setup
  postfix check
  postfix reload >/dev/null; wait_smtp
  sleep 1
  local log=$BASE/log/maillog off start end
  off=$(log_offset "$log")
  start=$(now)
  $sessions &
  local spid=$!
  ${LOADER:-load_postal} "$dir" ${POSTAL_EXTRA:-}
  wait "$spid" || true
  drain
  end=$(now)
  sleep 2
  restore_settings
  sleep 1
  cut_log "$log" "$off" "$dir/maillog.gz"
  zcat "$dir/maillog.gz" > "$SAVED/plain.log"
  oracle "$slug" "$SAVED/plain.log" maillog.gz
  manifest "$dir" "$slug" "$start" "$end" "RFC3164 'Mmm dd HH:MM:SS host', no year, UTC (postlogd, maillog_file)" "$notes" "$changed"
  ls -la "$dir"
}

no_sessions() { :; }

# postal until LOAD_S is up, started again whenever it ends early: postal 0.76 dies (SIGSEGV) on a
# 421 greeting, which a saturated Postfix gives; one CSV, header once
load_postal_respawn() { # dir [extra postal options...]
  local dir=$1; shift
  local until=$(($(date +%s) + LOAD_S)) left runs=0
  LOAD_CMD="until $LOAD_S s are up: timeout -s INT -k 5 LEFT postal -t 2 -m 4 -r $RATE $* 127.0.0.1 $VUSERS (started again when it dies)"
  echo "time,messages,data(K),errors,connections,SSL connections" > "$dir/postal.csv"
  set +e
  while left=$((until - $(date +%s))); [ "$left" -gt 0 ]; do
    # shellcheck disable=SC2086
    timeout -s INT -k 5 "$left" stdbuf -oL postal -t 2 -m 4 -r "$RATE" "$@" 127.0.0.1 "$VUSERS" 2>/dev/null \
      | grep -v '^time,' >> "$dir/postal.csv"
    runs=$((runs + 1))
    sleep 1
  done
  LOAD_RC=0
  set -e
  echo "postal started $runs times" >&2
}

# --- variants -----------------------------------------------------------------------------

# rsyslog: one run written by two rsyslog actions at once, RFC 3164 stamps and RFC 3339 stamps
v_rsyslog() {
  local d1=$OUT/rsyslog-rfc3164 d2=$OUT/rsyslog-rfc3339 f3164=$BASE/log/variant-3164.log
  echo "== rsyslog-rfc3164 + rsyslog-rfc3339"
  mkdir -p "$d1" "$d2"
  save_settings
  syslog_on "" "$f3164" RSYSLOG_TraditionalFileFormat
  postfix reload >/dev/null; wait_smtp; sleep 1
  local start end
  start=$(now)
  load_postal "$d2"
  cp "$d2/postal.csv" "$d1/postal.csv"
  drain; end=$(now); sleep 2
  restore_settings; restart_rsyslog
  gzip -9nc "$SYSLOG_FILE" > "$d2/maillog.gz"
  gzip -9nc "$f3164" > "$d1/maillog.gz"
  oracle rsyslog-rfc3339 "$SYSLOG_FILE" maillog.gz
  oracle rsyslog-rfc3164 "$f3164" maillog.gz
  local ch='maillog_file = ""
"postfix/*/chroot" = "y (Debian default; rsyslog listens on /var/spool/postfix/dev/log)"'
  manifest "$d1" rsyslog-rfc3164 "$start" "$end" "RFC3164 'Mmm dd HH:MM:SS host' (rsyslog RSYSLOG_TraditionalFileFormat)" \
    "Postfix logging through syslog(3) to rsyslog (maillog_file unset), file written with \$ActionFileDefaultTemplate RSYSLOG_TraditionalFileFormat (RFC 3164 stamps, no year). The same run was written at once by a second rsyslog action in RFC 3339 (samples/variants/rsyslog-rfc3339)." "$ch"
  manifest "$d2" rsyslog-rfc3339 "$start" "$end" "RFC3339 with microseconds and offset (rsyslog RSYSLOG_FileFormat, Debian 12 default)" \
    "Postfix logging through syslog(3) to rsyslog (maillog_file unset), Debian 12's default file format RSYSLOG_FileFormat (RFC 3339, microseconds, +00:00). The same run was written at once by a second rsyslog action in RFC 3164 (samples/variants/rsyslog-rfc3164)." "$ch"
}

journal_oracle_readme() {
  cat <<EOF
# Oracle for samples/variants/$1

\`pflogsumm.txt\` is Debian's pflogsumm $(dpkg-query -W -f='${Version}' pflogsumm) over the run's
journal entries exported as syslog text (pflogsumm reads neither the ISO stamps with a +0000 offset
nor JSON), captured right after the run by scripts/record/postfix_variants.sh:

    journalctl --since START -m -o short SYSLOG_FACILITY=2 > /tmp/log && pflogsumm --problems_first /tmp/log

The variant's own file is the same entries exported with -o short-iso / -o json.
EOF
}

# journald run by hand (no systemd as PID 1): /dev/log and Postfix's chroot socket bound to it
v_journald() {
  local d1=$OUT/journald-short-iso d2=$OUT/journald-json jdir=$BASE/journal-run
  echo "== journald"
  mkdir -p "$d1" "$d2"
  save_settings
  postconf -e "maillog_file ="
  # rsyslog owns /dev/log: stop it while journald takes the socket
  kill "$(cat /run/rsyslogd.pid)"; sleep 1
  mkdir -p /run/systemd/journal /etc/systemd/journald.conf.d
  printf '[Journal]\nStorage=volatile\nRateLimitBurst=0\nForwardToSyslog=no\n' \
    > /etc/systemd/journald.conf.d/90-variant.conf
  /lib/systemd/systemd-journald </dev/null >"$SAVED/journald.out" 2>&1 &
  local jpid=$!
  for _ in $(seq 1 50); do [ -S /run/systemd/journal/dev-log ] && break; sleep 0.1; done
  rm -f /dev/log; ln -s /run/systemd/journal/dev-log /dev/log
  [ -e /var/spool/postfix/dev/log ] || touch /var/spool/postfix/dev/log
  mount --bind /run/systemd/journal/dev-log /var/spool/postfix/dev/log
  postfix reload >/dev/null; wait_smtp; sleep 1
  local start end since
  start=$(now); since=$(date -u '+%Y-%m-%d %H:%M:%S')
  load_postal "$d1"
  cp "$d1/postal.csv" "$d2/postal.csv"
  drain; end=$(now); sleep 3
  local filt=(--since "$since" -m)
  journalctl "${filt[@]}" -o short-iso SYSLOG_FACILITY=2 > "$SAVED/short-iso.log"
  journalctl "${filt[@]}" -o json SYSLOG_FACILITY=2 > "$SAVED/json.log"
  journalctl "${filt[@]}" -o short SYSLOG_FACILITY=2 > "$SAVED/short.log"
  umount /var/spool/postfix/dev/log
  kill "$jpid"; wait "$jpid" || true
  rm -f /dev/log /etc/systemd/journald.conf.d/90-variant.conf
  restore_settings; restart_rsyslog; postfix reload >/dev/null
  gzip -9nc "$SAVED/short-iso.log" > "$d1/maillog.gz"
  gzip -9nc "$SAVED/json.log" > "$d2/maillog.json.gz"
  # pflogsumm reads syslog text: its oracle is the same journal exported as `-o short`
  oracle journald-short-iso "$SAVED/short.log" maillog.gz
  oracle journald-json "$SAVED/short.log" maillog.json.gz
  for o in journald-short-iso journald-json; do
    journal_oracle_readme "$o" > "$ORACLES/$o/README.md"
  done
  local ch='maillog_file = ""
logger = "systemd-journald 252 (run by hand, Storage=volatile; /dev/log and /var/spool/postfix/dev/log bound to its socket)"'
  manifest "$d1" journald-short-iso "$start" "$end" "journalctl -o short-iso (ISO 8601 with offset)" \
    "Postfix logging through syslog(3) into systemd-journald, exported with journalctl -o short-iso SYSLOG_FACILITY=2. The same journal entries are in samples/variants/journald-json (-o json)." "$ch"
  manifest "$d2" journald-json "$start" "$end" "journalctl -o json (one JSON object per line, _SOURCE_REALTIME_TIMESTAMP and __REALTIME_TIMESTAMP in microseconds)" \
    "Postfix logging through syslog(3) into systemd-journald, exported with journalctl -o json SYSLOG_FACILITY=2. The same journal entries are in samples/variants/journald-short-iso." "$ch"
}

set_long_ids() { postconf -e "enable_long_queue_ids = yes"; }
v_long_queue_ids() {
  postlogd_variant long-queue-ids "enable_long_queue_ids = yes: queue ids like 4dHkLm0Rr4z9Qf (time-based, base 52) instead of hex." \
    'enable_long_queue_ids = "yes"' set_long_ids no_sessions
}

tls_cert() {
  [ -s /etc/postfix/bench-tls.pem ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=bench.localdomain" \
    -keyout /etc/postfix/bench-tls.key -out /etc/postfix/bench-tls.pem 2>/dev/null
  chmod 600 /etc/postfix/bench-tls.key
}

set_postscreen() {
  tls_cert
  postconf -e "postscreen_greet_action = enforce" "postscreen_pipelining_enable = yes" \
    "postscreen_non_smtp_command_enable = yes" "postscreen_bare_newline_enable = yes" \
    "postscreen_access_list = permit_mynetworks, cidr:/etc/postfix/bench-postscreen.cidr" \
    "smtpd_tls_security_level = may" "smtpd_tls_cert_file = /etc/postfix/bench-tls.pem" \
    "smtpd_tls_key_file = /etc/postfix/bench-tls.key" "smtpd_tls_loglevel = 1" \
    "postscreen_tls_security_level = may" "tlsproxy_tls_loglevel = 1"
  # loopback would be permitted by mynetworks; 127.0.0.1 is tested, 127.0.0.2 is allowlisted
  printf '127.0.0.0/8 dunno\n' > /etc/postfix/bench-postscreen.cidr
  # every address starts unknown to postscreen
  rm -f /var/lib/postfix/postscreen_cache.*
  postconf -e "postscreen_access_list = cidr:/etc/postfix/bench-postscreen.cidr"
  postconf -M "smtp/inet=smtp inet n - y - 1 postscreen" \
    "smtpd/pass=smtpd pass - - y - - smtpd" "dnsblog/unix=dnsblog unix - - y - 0 dnsblog" \
    "tlsproxy/unix=tlsproxy unix - - y - 0 tlsproxy"
  postconf -e "inet_interfaces = 127.0.0.1"
}
postscreen_sessions() {
  sleep 2
  # a client that talks before the greeting (PREGREET), then one that pipelines, then STARTTLS
  python3 - <<'PY' || true
import socket, time
s = socket.create_connection(("127.0.0.1", 25)); s.sendall(b"EHLO early.example\r\n"); time.sleep(8); s.close()
s = socket.create_connection(("127.0.0.1", 25)); time.sleep(7); s.recv(512)
s.sendall(b"EHLO pipe.example\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<user1@bench.test>\r\n"); time.sleep(1); s.recv(4096); s.close()
PY
  for i in 1 2 3; do swaks_q --tls -f user$i@bench.test -t user$((i + 10))@bench.test; done
  # clients from addresses postscreen has not seen: STARTTLS during the after-220 tests goes
  # through tlsproxy(8)
  for i in 2 3 4; do
    swaks_q --tls --local-interface 127.0.0.$i -f user$i@bench.test -t user$((i + 10))@bench.test
  done
}
v_postscreen() {
  postlogd_variant postscreen "smtpd behind postscreen(8) (greet enforce, after-220 pipelining/non-SMTP/bare-newline tests, so the load's clients are checked and then passed or dropped), postscreen STARTTLS through tlsproxy(8), smtpd_tls_loglevel 1; a pregreet client and a pipelining client by hand, three swaks --tls sessions from 127.0.0.1 and three from 127.0.0.2-4 (STARTTLS during postscreen's tests, through tlsproxy)." \
    '"master.cf" = "smtp inet -> postscreen; smtpd pass; dnsblog; tlsproxy"
postscreen_greet_action = "enforce"
postscreen_pipelining_enable = "yes"
postscreen_non_smtp_command_enable = "yes"
postscreen_bare_newline_enable = "yes"
postscreen_access_list = "cidr: 127.0.0.0/8 dunno (loopback is tested, not allowlisted; cache emptied first)"
postscreen_tls_security_level = "may"
tlsproxy_tls_loglevel = "1"
smtpd_tls_security_level = "may"
smtpd_tls_loglevel = "1"' set_postscreen postscreen_sessions
}

set_tls_sasl() {
  tls_cert
  postconf -e "smtpd_tls_security_level = may" "smtpd_tls_cert_file = /etc/postfix/bench-tls.pem" \
    "smtpd_tls_key_file = /etc/postfix/bench-tls.key" "smtpd_tls_loglevel = 1" \
    "smtpd_sasl_auth_enable = yes" "smtpd_sasl_type = dovecot" "smtpd_sasl_path = private/auth" \
    "smtpd_tls_auth_only = yes" "anvil_status_update_time = 20s" \
    "smtpd_client_connection_rate_limit = 1000" "smtpd_client_event_limit_exceptions ="
  cat > /etc/dovecot/conf.d/98-variant.conf <<'CONF'
# written by scripts/record/postfix_variants.sh: Postfix SMTP AUTH through Dovecot
service auth {
  unix_listener /var/spool/postfix/private/auth {
    mode = 0660
    user = postfix
    group = postfix
  }
}
auth_mechanisms = plain login
CONF
  doveadm reload; sleep 1
}
tls_sasl_sessions() {
  sleep 3
  for i in 1 2 3 4 5; do
    swaks_q --tls -f user$i@bench.test -t user$((i + 20))@bench.test \
      --auth PLAIN --auth-user "user$i@bench.test" --auth-password "$PW"
    swaks_q --tls -f user$i@bench.test -t user$((i + 30))@bench.test
  done
  # failed logins: wrong password (PLAIN and LOGIN)
  swaks_q --tls -f user7@bench.test -t user8@bench.test --auth PLAIN --auth-user user7@bench.test --auth-password wrong
  swaks_q --tls -f user7@bench.test -t user8@bench.test --auth LOGIN --auth-user user9@bench.test --auth-password wrong
  # AUTH offered only after STARTTLS: plaintext AUTH attempt
  swaks_q -f user7@bench.test -t user8@bench.test --auth PLAIN --auth-user user7@bench.test --auth-password "$PW"
}
v_tls_sasl() {
  POSTAL_EXTRA="-s 50" postlogd_variant tls-sasl "STARTTLS with a self-signed certificate (smtpd_tls_loglevel 1; postal -s 50 uses TLS on half its connections), SMTP AUTH through Dovecot SASL (5 swaks logins that succeed, 2 attempted with a wrong password, of which the PLAIN one left the smtpd warning line and the LOGIN one none, 1 refused client-side before STARTTLS as AUTH is offered only after it), anvil statistics every 20 s (loopback taken out of smtpd_client_event_limit_exceptions)." \
    'smtpd_tls_security_level = "may"
smtpd_tls_loglevel = "1"
smtpd_sasl_auth_enable = "yes"
smtpd_sasl_type = "dovecot"
smtpd_sasl_path = "private/auth"
smtpd_tls_auth_only = "yes"
anvil_status_update_time = "20s"
smtpd_client_connection_rate_limit = "1000"
smtpd_client_event_limit_exceptions = ""  # loopback is in mynetworks, the default exception: anvil would never be asked' set_tls_sasl tls_sasl_sessions
}

set_milter() {
  if [ ! -s /etc/opendkim/keys/bench.private ]; then
    mkdir -p /etc/opendkim/keys
    opendkim-genkey -D /etc/opendkim/keys -d bench.test -s bench
    chown -R opendkim:opendkim /etc/opendkim/keys
  fi
  cat > /etc/opendkim-bench.conf <<'CONF'
Syslog yes
SyslogSuccess yes
LogWhy yes
Mode sv
Domain bench.test
Selector bench
KeyFile /etc/opendkim/keys/bench.private
Socket inet:8891@127.0.0.1
UserID opendkim
PidFile /run/opendkim/bench.pid
CONF
  mkdir -p /run/opendkim; chown opendkim:opendkim /run/opendkim; opendkim -x /etc/opendkim-bench.conf
  postconf -e "smtpd_milters = inet:127.0.0.1:8891" "non_smtpd_milters = inet:127.0.0.1:8891" \
    "milter_default_action = accept"
}
milter_sessions() {
  sleep 2
  for i in 1 2 3; do echo "Subject: local $i" | sendmail -f user$i@bench.test user$((i + 40))@bench.test; done
}
v_milter() {
  local slug=milter-opendkim dir=$OUT/milter-opendkim
  echo "== $slug"
  mkdir -p "$dir"
  save_settings
  syslog_on ""
  set_milter
  postfix reload >/dev/null; wait_smtp; sleep 1
  local start end
  start=$(now)
  milter_sessions &
  load_postal "$dir"
  wait || true
  drain; end=$(now); sleep 2
  kill "$(cat /run/opendkim/bench.pid)" || true
  restore_settings; restart_rsyslog
  gzip -9nc "$SYSLOG_FILE" > "$dir/maillog.gz"
  oracle "$slug" "$SYSLOG_FILE" maillog.gz
  manifest "$dir" "$slug" "$start" "$end" "RFC3339 with microseconds and offset (rsyslog, Debian 12 default)" \
    "opendkim 2.11 as a milter (smtpd_milters and non_smtpd_milters, signing for bench.test, SyslogSuccess, LogWhy), Postfix and opendkim logging through rsyslog into one file; three local sendmail submissions." \
    'smtpd_milters = "inet:127.0.0.1:8891"
non_smtpd_milters = "inet:127.0.0.1:8891"
milter_default_action = "accept"
maillog_file = ""'
}

set_header_checks() {
  cat > /etc/postfix/bench_header_checks <<'HC'
/^Subject: .*reject-me/ REJECT subject refused by bench header_checks
/^Subject: .*hold-me/ HOLD held by bench header_checks
/^Subject: .*discard-me/ DISCARD discarded by bench header_checks
HC
  postconf -e "header_checks = regexp:/etc/postfix/bench_header_checks"
}
header_sessions() {
  sleep 2
  for w in reject hold discard; do
    for i in 1 2; do swaks_q -f user$i@bench.test -t user$((i + 50))@bench.test --header "Subject: please $w-me $i"; done
  done
  sleep 5
  postsuper -d ALL hold >/dev/null 2>&1 || true
}
v_header_checks() {
  postlogd_variant header-checks "header_checks with REJECT, HOLD and DISCARD rules, each hit twice by swaks; the held messages are deleted with postsuper -d ALL hold." \
    'header_checks = "regexp: Subject reject-me REJECT, hold-me HOLD, discard-me DISCARD"' set_header_checks header_sessions
}

set_verify() {
  postconf -e "smtpd_recipient_restrictions = reject_unverified_recipient, permit_mynetworks, reject_unauth_destination" \
    "address_verify_negative_cache = no" "address_verify_poll_count = 3"
}
verify_sessions() {
  sleep 2
  for r in user61 user62 nouser4 nouser5; do swaks_q -f user1@bench.test -t $r@bench.test; done
  sleep 5
  for r in user61 nouser4; do swaks_q -f user1@bench.test -t $r@bench.test; done
}
v_verify() {
  postlogd_variant address-verify "reject_unverified_recipient first in smtpd_recipient_restrictions (probes through verify(8), results deliverable / undeliverable-but-not-cached with address_verify_negative_cache = no); the load's unknown recipients are probed too." \
    'smtpd_recipient_restrictions = "reject_unverified_recipient, permit_mynetworks, reject_unauth_destination"
address_verify_negative_cache = "no"
address_verify_poll_count = "3"' set_verify verify_sessions
}

set_expire() {
  printf 'dead.test smtp:[127.0.0.1]:2599\n' > /etc/postfix/bench_transport
  postmap /etc/postfix/bench_transport
  postconf -e "transport_maps = hash:/etc/postfix/bench_transport" \
    "maximal_queue_lifetime = 60s" "bounce_queue_lifetime = 60s" "queue_run_delay = 15s" \
    "minimal_backoff_time = 15s" "maximal_backoff_time = 30s"
}
expire_sessions() {
  sleep 2
  # unknown mailbox through pickup: virtual(8) bounces it to the (known) sender
  for i in 1 2 3; do printf 'Subject: to nobody %s\n\nbody\n' "$i" | sendmail -f user$i@bench.test nouser$((i + 10))@bench.test; done
  # a destination routed to a relay that never answers: deferred, then expired
  for i in 1 2 3; do swaks_q -f user$i@bench.test -t someone$i@dead.test; done
}
v_bounce_expired() {
  postlogd_variant bounce-expired "Bounces: three messages to unknown mailboxes submitted with sendmail (virtual(8) bounces them, bounce(8) notifies the sender); three messages to dead.test, routed to 127.0.0.1:2599 where nothing listens, deferred until maximal_queue_lifetime 60s and then status=expired." \
    'transport_maps = "hash: dead.test smtp:[127.0.0.1]:2599"
maximal_queue_lifetime = "60s"
bounce_queue_lifetime = "60s"
queue_run_delay = "15s"
minimal_backoff_time = "15s"
maximal_backoff_time = "30s"' set_expire expire_sessions
}

# Dovecot: scripts/record/mailbox_client.py drains the mailboxes over POP3 and IMAP (a wrong
# password every tenth login) while postal refills them; Dovecot logs through rsyslog
dovecot_variant() { # slug notes changed extra-conf
  local slug=$1 dir=$OUT/$1 log=$BASE/log/dovecot.log
  echo "== $slug"
  mkdir -p "$dir"
  save_settings
  [ -n "$4" ] && printf '%s\n' "$4" > /etc/dovecot/conf.d/98-variant.conf
  doveadm reload; sleep 2
  head -n 100 "$BASE/users.txt" > "$SAVED/mailbox-users.txt"
  local off start end
  off=$(log_offset "$log")
  start=$(now)
  load_postal "$dir" &
  local ppid=$!
  LOAD_CMD="timeout -k 5 $((LOAD_S + 10)) python3 scripts/record/mailbox_client.py USERS(100 mailboxes) $BASE/mail-password $LOAD_S 120"
  set +e
  timeout -k 5 $((LOAD_S + 10)) python3 "$REPO/scripts/record/mailbox_client.py" "$SAVED/mailbox-users.txt" \
    "$BASE/mail-password" "$LOAD_S" 120 > "$dir/mailbox_client.csv" 2>/dev/null
  LOAD_RC=$?
  set -e
  wait "$ppid" || true
  end=$(now); sleep 2
  restore_settings
  sleep 1
  cut_log "$log" "$off" "$dir/dovecot.log.gz"
  TOOL_NAME="mailbox_client.py (POP3 and IMAP rounds) beside postal -r $RATE refilling the mailboxes" \
    TOOL_VERSION="scripts/record/mailbox_client.py" TOOL_OUT=mailbox_client.csv MTA_NAME=dovecot \
    MTA_VERSION="$(dovecot --version | cut -d' ' -f1)" MTA_LISTEN="127.0.0.1:110, 127.0.0.1:143" \
    manifest "$dir" "$slug" "$start" "$end" "RFC3339 with microseconds and offset (rsyslog, Debian 12 default)" "$2" "$3"
}
v_dovecot_default() {
  dovecot_variant dovecot-default "Dovecot 2.3 POP3 and IMAP (half the rounds each) with Dovecot's default log format (mail_log_prefix \"%s(%u)<%{pid}><%{session}>: \"), through rsyslog; every tenth login has a wrong password." "" ""
}
v_dovecot_custom() {
  dovecot_variant dovecot-custom "Dovecot 2.3 POP3 and IMAP (half the rounds each, every tenth login with a wrong password) with mail_log_prefix = \"%s: \" (no user, pid or session: gives the prefix-less 'dovecot: pop3: Disconnected: Logged out top=0/0, retr=…' lines) and a shorter login_log_format_elements (no session, no mpid)." \
    'mail_log_prefix = "%s: "
login_log_format_elements = "user=<%u> method=%m rip=%r lip=%l %c"' \
    'mail_log_prefix = "%s: "
login_log_format_elements = "user=<%u> method=%m rip=%r lip=%l %c"'
}

# --- saturation, queue administration, LMTP into Dovecot --------------------------------

set_stress() {
  postconf -e "default_process_limit = 5" "anvil_rate_time_unit = 60s" "anvil_status_update_time = 20s" \
    "smtpd_client_event_limit_exceptions =" "smtpd_client_connection_rate_limit = 60" \
    "smtpd_client_message_rate_limit = 150" "smtpd_client_connection_count_limit = 10" \
    "smtpd_timeout = 10s" "smtpd_hard_error_limit = 5" \
    "default_destination_concurrency_limit = 2" "virtual_destination_concurrency_limit = 2"
}
# misbehaving clients from their own loopback addresses (their own anvil counters): one that talks
# before the greeting, one that drops after RCPT, one that goes quiet after EHLO (smtpd_timeout),
# one with more unknown recipients than smtpd_hard_error_limit
stress_clients() {
  python3 - "$1" <<'PY' || true
import socket, sys, time
src = sys.argv[1]
def conn():
    s = socket.socket(); s.settimeout(60); s.bind((src, 0)); s.connect(("127.0.0.1", 25)); return s
def talk(s, line):
    s.sendall(line + b"\r\n"); return s.recv(4096)
try:
    s = conn(); s.sendall(b"EHLO early.example\r\nMAIL FROM:<a@early.example>\r\n"); time.sleep(2); s.close()
    s = conn(); s.recv(512); talk(s, b"EHLO lost.example"); talk(s, b"MAIL FROM:<user1@bench.test>")
    talk(s, b"RCPT TO:<user2@bench.test>"); s.close()
    s = conn(); s.recv(512); s.sendall(b"HELO pipe.example\r\nMAIL FROM:<user1@bench.test>\r\nRCPT TO:<user3@bench.test>\r\n")
    time.sleep(1); s.recv(4096); talk(s, b"QUIT"); s.close()
    s = conn(); s.recv(512); talk(s, b"EHLO errors.example"); talk(s, b"MAIL FROM:<user1@bench.test>")
    for i in range(8):
        try: talk(s, b"RCPT TO:<nouser%d@bench.test>" % (20 + i))
        except OSError: break
    s.close()
    s = conn(); s.recv(512); talk(s, b"EHLO idle.example"); time.sleep(15); s.close()
except OSError as e:
    print(e, file=sys.stderr)
PY
}
# twelve clients at once from one address, each holding its session 4 s: more than the 5 smtpd
# processes, so master(8) warns that the service reached its process limit
stress_burst() {
  python3 - "$1" <<'PY' || true
import socket, sys, threading, time
def one():
    try:
        s = socket.socket(); s.settimeout(60); s.bind((sys.argv[1], 0)); s.connect(("127.0.0.1", 25))
        s.recv(512); s.sendall(b"EHLO burst.example\r\n"); s.recv(4096); time.sleep(4)
        s.sendall(b"QUIT\r\n"); s.recv(512); s.close()
    except OSError:
        pass
ts = [threading.Thread(target=one) for _ in range(12)]
for t in ts: t.start()
for t in ts: t.join()
PY
}
stress_sessions() {
  sleep 2; stress_burst 127.0.0.7
  sleep 3; stress_clients 127.0.0.5
  sleep 10; stress_clients 127.0.0.6
  stress_burst 127.0.0.8
}
v_stress() {
  local slug=stress
  # twenty postal threads, ten messages a connection, well above what 5 processes and the rate
  # limits take
  LOADER=load_postal_respawn POSTAL_EXTRA="-t 20 -c 10" RATE=${STRESS_RATE:-1200} postlogd_variant "$slug" "Postfix pushed past saturation: default_process_limit 5 (so smtpd, cleanup, virtual ... at most 5 each), connection rate 60/min, message rate 150/min and 10 concurrent connections per client (anvil_rate_time_unit 60s, loopback taken out of smtpd_client_event_limit_exceptions, anvil statistics every 20 s), destination concurrency 2, smtpd_timeout 10s, smtpd_hard_error_limit 5; postal with 20 threads, 10 messages a connection at up to 1200 a minute; postal 0.76 dies (SIGSEGV) on the 421 greetings the limits give, so it is started again each time until the minute is up, and its CSV has only the minutes it lived to print. Twelve clients at once from 127.0.0.7 and later from 127.0.0.8, each holding its session 4 s (more than the 5 smtpd processes: they are served five at a time; Postfix 3.7 logged no process-limit warning); twice, from 127.0.0.5 and 127.0.0.6, a client that talks before the greeting, one that drops after RCPT, one that pipelines after HELO, one with 8 unknown recipients and one that goes quiet after EHLO." \
    'default_process_limit = "5"
anvil_rate_time_unit = "60s"
anvil_status_update_time = "20s"
smtpd_client_event_limit_exceptions = ""
smtpd_client_connection_rate_limit = "60"
smtpd_client_message_rate_limit = "150"
smtpd_client_connection_count_limit = "10"
smtpd_timeout = "10s"
smtpd_hard_error_limit = "5"
default_destination_concurrency_limit = "2"
virtual_destination_concurrency_limit = "2"' set_stress stress_sessions
}

set_admin() { postconf -e "defer_transports = virtual"; }
# the queue fills (virtual deliveries deferred), is held, released, one message deleted, delivery
# turned back on with a reload, requeued and flushed; later a stop and a start under load
admin_sessions() {
  sleep 15
  postsuper -h ALL || true
  sleep 3
  postsuper -H ALL || true
  local qid
  qid=$(postqueue -j | head -n 1 | sed -n 's/.*"queue_id": *"\([^"]*\)".*/\1/p')
  if [ -n "$qid" ]; then postsuper -d "$qid" || true; fi
  postconf -e "defer_transports ="
  postfix reload || true
  postsuper -r ALL || true
  postqueue -f || true
  sleep 15
  postfix stop
  sleep 3
  postfix start
  wait_smtp
  sleep 10
  postqueue -f || true
}
v_admin() {
  LOADER=load_postal_respawn postlogd_variant admin "Queue administration under load (postal started again whenever it dies, as it does when Postfix stops under it): virtual deliveries deferred (defer_transports = virtual) for the first 15 s, then postsuper -h ALL, postsuper -H ALL, postsuper -d of one queued message, defer_transports emptied and postfix reload, postsuper -r ALL, postqueue -f; 15 s later postfix stop, 3 s down, postfix start, and a last postqueue -f." \
    'defer_transports = "virtual (for the first 15 s of the load, then emptied and reloaded)"' set_admin admin_sessions
}

set_lmtp() {
  postconf -e "virtual_transport = lmtp:unix:private/dovecot-lmtp"
  # after 99-bench.conf, whose `protocols = pop3 imap` would otherwise win
  cat > /etc/dovecot/conf.d/99-variant.conf <<'CONF'
# written by scripts/record/postfix_variants.sh: Postfix delivers over LMTP into Dovecot
protocols = $protocols lmtp
service lmtp {
  unix_listener /var/spool/postfix/private/dovecot-lmtp {
    mode = 0600
    user = postfix
    group = postfix
  }
}
auth_verbose = yes
mail_plugins = $mail_plugins mail_log notify
plugin {
  mail_log_events = delete undelete expunge copy mailbox_delete mailbox_rename
  mail_log_fields = uid box msgid size
}
CONF
  doveadm reload; sleep 2
}
lmtp_sessions() {
  sleep 2
  head -n 100 "$BASE/users.txt" > "$SAVED/mailbox-users.txt"
  timeout -k 5 $((LOAD_S + 10)) python3 "$REPO/scripts/record/mailbox_client.py" "$SAVED/mailbox-users.txt" \
    "$BASE/mail-password" "$((LOAD_S - 5))" 120 > "$OUT/lmtp-dovecot/mailbox_client.csv" 2>/dev/null || true
}
v_lmtp() {
  local slug=lmtp-dovecot dlog=$BASE/log/dovecot.log doff
  mkdir -p "$OUT/$slug"
  doff=$(log_offset "$dlog")
  # shellcheck disable=SC2016  # the changed settings quote Dovecot's $protocols literally
  MTA_DELIVERY="lmtp(8) over unix:private/dovecot-lmtp into Dovecot's LMTP, Maildir under $BASE/vmail, 500 mailboxes in domain bench.test" \
    postlogd_variant "$slug" "Postfix delivers the virtual domain over LMTP into Dovecot (virtual_transport = lmtp:unix:private/dovecot-lmtp, Dovecot's lmtp service listening in Postfix's spool), Dovecot with auth_verbose = yes and the mail_log plugin (delete, undelete, expunge, copy, mailbox delete/rename; fields uid box msgid size); scripts/record/mailbox_client.py drains the mailboxes over POP3 and IMAP (every tenth login with a wrong password) during the load. Postfix's log is maillog.gz (postlogd), Dovecot's dovecot.log.gz (rsyslog, RFC 3339)." \
    'virtual_transport = "lmtp:unix:private/dovecot-lmtp"
"dovecot protocols" = "$protocols lmtp (service lmtp listening on /var/spool/postfix/private/dovecot-lmtp)"
"dovecot auth_verbose" = "yes"
"dovecot mail_plugins" = "$mail_plugins mail_log notify"
"dovecot mail_log_events" = "delete undelete expunge copy mailbox_delete mailbox_rename"
"dovecot mail_log_fields" = "uid box msgid size"' set_lmtp lmtp_sessions
  sleep 2
  cut_log "$dlog" "$doff" "$OUT/$slug/dovecot.log.gz"
}

ALL=(rsyslog journald long_queue_ids postscreen tls_sasl milter header_checks verify bounce_expired dovecot_default dovecot_custom stress admin lmtp)
# a variant that fails half-way still gives Postfix and Dovecot their settings back
trap '[ -s "$SAVED/main.cf" ] && restore_settings; rm -rf "$SAVED"' EXIT
users_file
for v in "${@:-${ALL[@]}}"; do
  "v_${v//-/_}"
done
