//! Messages assembled while the lines are parsed, and each file's counts per minute: the one
//! definition of both (the landing writes what this returns; the dbt models read it).
//!
//! A message is a queue id's lines from its first line up to and including its `removed`
//! line (Postfix, Exim's `Completed`, qmail's `end msg`, Courier). A run's maillog files
//! are fed as one stream in time order (rotated logs, then a drain log), so a message
//! that spans files is one message. A queue id maps to its open message; the message is
//! emitted at its `removed` line, when no line of it came for `horizon` of log time (a
//! queue file lives at most `maximal_queue_lifetime`, 5 days by default), or at the end
//! of the stream. Memory is bounded by the open messages, not by the input.
//!
//! A message names the file and line of its first line (`first_file_id`, `first_line_no`);
//! the landing lists its part under the file being read when it was complete.
//!
//! Postfix reuses queue ids: the instance of a message is its rank among the messages of
//! its queue id by `stream_line` (the position of its first line in the run's stream);
//! the `messages` model numbers them. Messages without a received, header or delivery
//! line are emitted too (`has_lines` 0), so the numbering counts them.

use crate::classify::{BOUNCED, DEFERRED, DELIVERED, EXPIRED, RECEIVED, REJECTED};
use crate::cols::{count_set, Col, Ty, C};
use crate::Chunk;
use hashbrown::HashMap;

macro_rules! message_columns {
    ($( $id:ident : $ty:ident ),* $(,)?) => {
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Clone, Copy)]
        enum M { $( $id ),* }
        pub const MESSAGE_COLUMNS: &[(&str, Ty)] = &[ $( (stringify!($id), Ty::$ty) ),* ];
    };
}

message_columns! {
    first_file_id: I64, first_line_no: I32, stream_line: I64, queue_id: Str, has_lines: I32,
    received_at: Ts, client: Str, message_id: Str, sender: Str, size: I64, nrcpt: I32,
    first_delivery_at: Ts, last_delivery_at: Ts, delivered_recipients: I64, deferrals: I64,
    bounced_recipients: I64, final_status: Str, delay: F64, delay_before_qmgr: F64,
    delay_in_qmgr: F64, delay_conn_setup: F64, delay_transmission: F64, relay: Str, dsn: Str,
    relay_host: Str,
}

/// Counts per minute: lines (time-stamped rows), received, delivered, deferred, bounced, rejected.
pub const MINUTE_COLUMNS: &[&str] = &["lines", "received", "delivered", "deferred", "bounced", "rejected"];

const MINUTE_US: i64 = 60_000_000;

/// A string value of an open message: its bytes in the message's `buf` (one allocation per
/// message instead of one per value).
type Span = Option<(u32, u32)>;

#[derive(Default)]
struct Last {
    key: (bool, i64, i64), // (timed, logged_at, stream line): the latest delivery line
    is_expired: bool,
    status: Span,
    delays: [Option<f64>; 5],
    relay: Span,
    dsn: Span,
    relay_host: Span,
}

#[derive(Default)]
struct Open {
    file_id: i64,
    first_line: i64,
    stream_line: i64,
    last_ts: i64,
    has_lines: bool,
    received_at: Option<i64>,
    client: Span,
    message_id: Span,
    sender: Span,
    size: Option<i64>,
    nrcpt: Option<i64>,
    first_delivery_at: Option<i64>,
    last_delivery_at: Option<i64>,
    delivered: i64,
    deferrals: i64,
    bounced: i64,
    rejected: bool, // a reject line counted (a header or body check, a milter, after DATA)
    deleted: bool,  // its `removed` line says the administrator took it out (`postsuper -d`)
    discarded: bool, // its `removed (discarded)`: a DISCARD check dropped it
    last: Option<Last>,
    buf: Vec<u8>,
}

impl Open {
    fn get(&self, s: Span) -> Option<&[u8]> {
        s.map(|(a, n)| &self.buf[a as usize..(a + n) as usize])
    }

    fn put(&mut self, v: Option<&[u8]>) -> Span {
        let v = v?;
        let at = self.buf.len() as u32;
        self.buf.extend_from_slice(v);
        Some((at, v.len() as u32))
    }

    /// The larger string (byte order, as SQL's max) into `slot`.
    fn max_str(&mut self, slot: fn(&mut Open) -> &mut Span, v: Option<&[u8]>) {
        let Some(v) = v else { return };
        let have = *slot(self);
        if self.get(have).is_none_or(|h| v > h) {
            let s = self.put(Some(v));
            *slot(self) = s;
        }
    }
}

fn max_i(slot: &mut Option<i64>, v: Option<i64>) {
    if let Some(v) = v {
        if slot.is_none_or(|h| v > h) {
            *slot = Some(v);
        }
    }
}

fn min_i(slot: &mut Option<i64>, v: Option<i64>) {
    if let Some(v) = v {
        if slot.is_none_or(|h| v < h) {
            *slot = Some(v);
        }
    }
}

/// A chunk's value of column `c` at row `r`, with a cursor over the column's dense values
/// (rows are visited in ascending order; the rows between are skipped by counting bits).
struct Cursor {
    row: usize,
    idx: usize,
}

impl Cursor {
    fn new() -> Self {
        Cursor { row: 0, idx: 0 }
    }
    #[inline]
    fn at(&mut self, col: &Col, r: usize) -> Option<usize> {
        if col.nulls == 0 {
            return Some(r); // every row has a value: its index is its row
        }
        self.idx += count_set(&col.valid, self.row, r);
        self.row = r;
        col.is_set(r).then_some(self.idx)
    }
}

/// Arrow buffers of one output column being built.
struct ColB {
    ty: Ty,
    valid: Vec<u8>,
    nulls: usize,
    data: Vec<u8>,
    offsets: Vec<i32>,
    len: usize,
}

impl ColB {
    fn new(ty: Ty) -> Self {
        ColB { ty, valid: Vec::new(), nulls: 0, data: Vec::new(), offsets: vec![0], len: 0 }
    }
    fn bit(&mut self, set: bool) {
        if self.len % 8 == 0 {
            self.valid.push(0);
        }
        if set {
            *self.valid.last_mut().unwrap() |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }
    fn int(&mut self, v: Option<i64>) {
        self.bit(v.is_some());
        let v = v.unwrap_or(0);
        match self.ty {
            Ty::I32 => self.data.extend_from_slice(&(v as i32).to_le_bytes()),
            _ => self.data.extend_from_slice(&v.to_le_bytes()),
        }
    }
    fn float(&mut self, v: Option<f64>) {
        self.bit(v.is_some());
        self.data.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
    }
    fn str(&mut self, v: Option<&[u8]>) {
        self.bit(v.is_some());
        if let Some(v) = v {
            self.data.extend_from_slice(v);
        }
        self.offsets.push(self.data.len() as i32);
    }
}

/// Messages emitted and not yet taken, as Arrow column buffers.
pub struct Batch {
    pub len: usize,
    cols: Vec<ColB>,
}

/// One column of a taken batch: (name, type, null count, validity, offsets (strings), data).
pub type ArrowCol = (&'static str, &'static str, usize, Vec<u8>, Vec<i32>, Vec<u8>);

impl Batch {
    fn new() -> Self {
        Batch { len: 0, cols: MESSAGE_COLUMNS.iter().map(|&(_, t)| ColB::new(t)).collect() }
    }

    /// Empty, its buffers' capacity kept (a batch refilled grows no more, so it neither
    /// copies on growth nor faults in fresh pages).
    fn clear(&mut self) {
        self.len = 0;
        for c in &mut self.cols {
            c.valid.clear();
            c.data.clear();
            c.offsets.clear();
            c.offsets.push(0);
            c.nulls = 0;
            c.len = 0;
        }
    }

    fn push(&mut self, qid: &[u8], m: Box<Open>) {
        let c = &mut self.cols;
        c[M::first_file_id as usize].int(Some(m.file_id));
        c[M::first_line_no as usize].int(Some(m.first_line));
        c[M::stream_line as usize].int(Some(m.stream_line));
        c[M::queue_id as usize].str(Some(qid));
        c[M::has_lines as usize].int(Some(m.has_lines as i64));
        c[M::received_at as usize].int(m.received_at);
        c[M::client as usize].str(m.get(m.client));
        c[M::message_id as usize].str(m.get(m.message_id));
        c[M::sender as usize].str(m.get(m.sender));
        c[M::size as usize].int(m.size);
        c[M::nrcpt as usize].int(m.nrcpt);
        c[M::first_delivery_at as usize].int(m.first_delivery_at);
        c[M::last_delivery_at as usize].int(m.last_delivery_at);
        c[M::delivered_recipients as usize].int(Some(m.delivered));
        c[M::deferrals as usize].int(Some(m.deferrals));
        c[M::bounced_recipients as usize].int(Some(m.bounced));
        let last = m.last.as_ref().map_or_else(Last::default, |l| Last { ..*l });
        let status: &[u8] = if last.is_expired {
            EXPIRED
        } else if m.deleted {
            b"removed"
        } else if m.discarded && m.last.is_none() {
            b"discarded"
        } else if m.last.is_none() && m.rejected {
            REJECTED // refused after it had its queue id, and never delivered
        } else {
            m.get(last.status).unwrap_or(b"queued")
        };
        c[M::final_status as usize].str(Some(status));
        for (i, d) in last.delays.iter().enumerate() {
            c[M::delay as usize + i].float(*d);
        }
        c[M::relay as usize].str(m.get(last.relay));
        c[M::dsn as usize].str(m.get(last.dsn));
        c[M::relay_host as usize].str(m.get(last.relay_host));
        self.len += 1;
    }

    /// Write the batch as Parquet at `path`; returns the rows. `file_id`: a constant first
    /// column (where no Hive folder names the file).
    pub fn write(&self, path: &str, file_id: Option<i64>) -> std::io::Result<usize> {
        let ids: Vec<u8> = file_id.map_or_else(Vec::new, |f| f.to_le_bytes().repeat(self.len));
        let constant = file_id.map(|_| crate::pq::ArrowCol { name: "file_id", ty: Ty::I64, valid: &[], offsets: &[], data: &ids });
        let cols: Vec<crate::pq::ArrowCol> = constant
            .into_iter()
            .chain(self.cols.iter().zip(MESSAGE_COLUMNS).map(|(b, &(name, ty))| crate::pq::ArrowCol {
                name,
                ty,
                valid: if b.nulls == 0 { &[] } else { &b.valid },
                offsets: &b.offsets,
                data: &b.data,
            }))
            .collect();
        crate::pq::write_columns(path, self.len, &cols)?;
        Ok(self.len)
    }

    /// The Arrow buffers (validity empty when no value is null).
    pub fn into_arrow(self) -> Vec<ArrowCol> {
        self.cols
            .into_iter()
            .zip(MESSAGE_COLUMNS)
            .map(|(mut b, &(name, ty))| {
                if b.nulls == 0 {
                    b.valid = Vec::new();
                }
                if ty != Ty::Str {
                    b.offsets = Vec::new();
                }
                (name, ty.name(), b.nulls, b.valid, b.offsets, b.data)
            })
            .collect()
    }
}

/// A queue id as the open messages' key: held in the map's own slot when short (every MTA's
/// ids are), so a probe compares it without reading another allocation.
#[derive(Clone, PartialEq, Eq)]
enum Qid {
    Short(u8, [u8; 30]),
    Long(Box<[u8]>),
}

impl Qid {
    fn bytes(&self) -> &[u8] {
        match self {
            Qid::Short(n, b) => &b[..*n as usize],
            Qid::Long(b) => b,
        }
    }
}

impl std::hash::Hash for Qid {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state) // as the `[u8]` it is looked up by
    }
}

impl hashbrown::Equivalent<Qid> for [u8] {
    fn equivalent(&self, k: &Qid) -> bool {
        self == k.bytes()
    }
}

impl From<&[u8]> for Qid {
    fn from(q: &[u8]) -> Self {
        if q.len() <= 30 {
            let mut b = [0u8; 30];
            b[..q.len()].copy_from_slice(q);
            Qid::Short(q.len() as u8, b)
        } else {
            Qid::Long(q.into())
        }
    }
}

/// The messages of one run's stream of maillog files.
pub struct Assembler {
    horizon: i64,
    open: HashMap<Qid, Box<Open>>, // boxed: a probe touches only keys and pointers
    out: Batch,
    spare: Option<Batch>, // a written batch given back, refilled next
    file_id: i64,
    base: i64,       // stream lines of the files before the current one
    file_lines: i64, // lines of the current file so far
    now: i64,        // latest log time seen
    next_sweep: i64,
}

impl Assembler {
    pub fn new(horizon_us: i64) -> Self {
        Assembler {
            horizon: horizon_us.max(1),
            open: HashMap::new(),
            out: Batch::new(),
            spare: None,
            file_id: 0,
            base: 0,
            file_lines: 0,
            now: i64::MIN,
            next_sweep: i64::MIN,
        }
    }

    /// The next file of the stream begins (its line numbers start at 1 again).
    pub fn start_file(&mut self, file_id: i64) {
        self.base += self.file_lines;
        self.file_lines = 0;
        self.file_id = file_id;
    }

    pub fn emitted(&self) -> usize {
        self.out.len
    }

    pub fn open_messages(&self) -> usize {
        self.open.len()
    }

    /// Messages emitted so far, taken out.
    pub fn take(&mut self) -> Batch {
        let next = self.spare.take().unwrap_or_else(Batch::new);
        std::mem::replace(&mut self.out, next)
    }

    /// A taken batch, once written: its buffers are reused by a later one.
    pub fn give_back(&mut self, mut b: Batch) {
        b.clear();
        self.spare = Some(b);
    }

    /// The end of the stream: every open message is emitted (in stream order).
    pub fn finish(&mut self) -> Batch {
        let mut rest: Vec<(Qid, Box<Open>)> = self.open.drain().collect();
        rest.sort_unstable_by_key(|(_, m)| m.stream_line);
        for (q, m) in rest {
            self.out.push(q.bytes(), m);
        }
        self.take()
    }

    /// Emit the messages no line of which came within the horizon.
    fn sweep(&mut self) {
        let cut = self.now.saturating_sub(self.horizon);
        let stale: Vec<Qid> = self.open.iter().filter(|(_, m)| m.last_ts < cut).map(|(q, _)| q.clone()).collect();
        let mut gone: Vec<(Qid, Box<Open>)> =
            stale.into_iter().filter_map(|q| self.open.remove(&q).map(|m| (q, m))).collect();
        gone.sort_unstable_by_key(|(_, m)| m.stream_line);
        for (q, m) in gone {
            self.out.push(q.bytes(), m);
        }
        self.next_sweep = self.now.saturating_add(self.horizon / 4);
    }

    /// Feed a parsed chunk's rows (in line order; noise and quarantine rows are not lines of
    /// a message).
    pub fn feed(&mut self, c: &Chunk) {
        let t = &c.table;
        let input = c.input();
        let col = |x: C| &t.cols[x as usize];
        let (line_no, ts, qid, kind, counts) = (col(C::line_no), col(C::ts), col(C::queue_id), col(C::kind), col(C::counts_as));
        let strs = [C::client, C::message_id, C::sender, C::status, C::relay, C::dsn, C::relay_host];
        let ints = [C::size, C::nrcpt];
        let floats = [C::delay, C::delay_before_qmgr, C::delay_in_qmgr, C::delay_conn_setup, C::delay_transmission];
        let mut cur_ts = Cursor::new();
        let mut cur_q = Cursor::new();
        let mut cur_kind = Cursor::new();
        let mut cur_counts = Cursor::new();
        let (stage_col, mut cur_stage) = (col(C::reject_stage), Cursor::new());
        let mut cur_s: Vec<Cursor> = strs.iter().map(|_| Cursor::new()).collect();
        let mut cur_i: Vec<Cursor> = ints.iter().map(|_| Cursor::new()).collect();
        let mut cur_f: Vec<Cursor> = floats.iter().map(|_| Cursor::new()).collect();
        let mut skip = c.skip.iter().peekable();
        if t.len > 0 {
            self.file_lines = self.file_lines.max(line_no.fixed(t.len - 1)); // set on every row, ascending
        }
        for r in 0..t.len {
            if skip.peek().is_some_and(|&&s| s as usize == r) {
                skip.next();
                continue;
            }
            let Some(qi) = cur_q.at(qid, r) else { continue };
            let ln = line_no.fixed(r);
            let q = t.resolve(input, qid.refs[qi]);
            let logged = cur_ts.at(ts, r).map(|i| ts.fixed(i));
            if let Some(x) = logged {
                if x > self.now {
                    self.now = x;
                    if x >= self.next_sweep {
                        self.sweep();
                    }
                }
            }
            let k = cur_kind.at(kind, r).map(|i| t.resolve(input, kind.refs[i]));
            let counted = cur_counts.at(counts, r).map(|i| t.resolve(input, counts.refs[i]));
            let stream_line = self.base + ln;
            let file_id = self.file_id;
            let m = self.open.entry_ref(q).or_insert_with(|| {
                Box::new(Open { file_id, first_line: ln, stream_line, ..Default::default() })
            });
            if let Some(x) = logged {
                m.last_ts = m.last_ts.max(x);
            } else if m.last_ts == 0 {
                m.last_ts = self.now;
            }
            let is_received = counted == Some(RECEIVED);
            let header = matches!(k, Some(b"message_id" | b"qmgr_from" | b"from" | b"arrival"));
            let is_expired = counted == Some(EXPIRED);
            let delivery = k == Some(b"delivery") || is_expired;
            if is_received || header || delivery {
                m.has_lines = true;
            }
            let s = |j: usize, cur: &mut [Cursor]| {
                let col = &t.cols[strs[j] as usize];
                cur[j].at(col, r).map(|i| t.resolve(input, col.refs[i]))
            };
            if is_received {
                min_i(&mut m.received_at, logged);
                m.max_str(|o| &mut o.client, s(0, &mut cur_s));
            }
            if header {
                m.max_str(|o| &mut o.message_id, s(1, &mut cur_s));
                m.max_str(|o| &mut o.sender, s(2, &mut cur_s));
                let mut iv = |j: usize| {
                    let col = &t.cols[ints[j] as usize];
                    cur_i[j].at(col, r).map(|i| col.fixed(i))
                };
                max_i(&mut m.size, iv(0));
                max_i(&mut m.nrcpt, iv(1));
            }
            if delivery {
                min_i(&mut m.first_delivery_at, logged);
                max_i(&mut m.last_delivery_at, logged);
                match counted {
                    Some(DELIVERED) => m.delivered += 1,
                    Some(DEFERRED) => m.deferrals += 1,
                    Some(BOUNCED) => m.bounced += 1,
                    _ => {}
                }
                let key = (logged.is_some(), logged.unwrap_or(i64::MIN), stream_line);
                if m.last.as_ref().is_none_or(|l| key > l.key) {
                    let mut delays = [None; 5];
                    for (j, d) in delays.iter_mut().enumerate() {
                        let col = &t.cols[floats[j] as usize];
                        *d = cur_f[j].at(col, r).map(|i| f64::from_bits(col.fixed(i) as u64));
                    }
                    let status = m.put(s(3, &mut cur_s));
                    let relay = m.put(s(4, &mut cur_s));
                    let dsn = m.put(s(5, &mut cur_s));
                    let relay_host = m.put(s(6, &mut cur_s));
                    m.last = Some(Last { key, is_expired, status, delays, relay, dsn, relay_host });
                }
            }
            if counted == Some(REJECTED) {
                // a refused recipient leaves the message to the others; a refused header, body
                // or DATA refuses the message
                let stage = cur_stage.at(stage_col, r).map(|i| t.resolve(input, stage_col.refs[i]));
                m.rejected |= stage.is_some_and(|x| !matches!(x, b"RCPT" | b"MAIL" | b"CONNECT" | b"HELO" | b"EHLO" | b"VRFY" | b"ETRN"));
            }
            if k == Some(b"removed") {
                let status = s(3, &mut cur_s);
                m.deleted |= status == Some(b"removed".as_slice());
                m.discarded |= status == Some(b"discarded".as_slice());
                if let Some((q, m)) = self.open.remove_entry(q) {
                    self.out.push(q.bytes(), m);
                }
            }
        }
    }
}

/// One file's counts per minute (`MINUTE_COLUMNS`), keyed by the minute's start (epoch µs).
#[derive(Default)]
pub struct Minutes {
    counts: HashMap<i64, [i64; 6]>,
}

impl Minutes {
    pub fn feed(&mut self, c: &Chunk) {
        let t = &c.table;
        let input = c.input();
        let (ts, counts) = (&t.cols[C::ts as usize], &t.cols[C::counts_as as usize]);
        let mut cur_ts = Cursor::new();
        let mut cur_counts = Cursor::new();
        let mut skip = c.skip.iter().peekable();
        // consecutive lines mostly share their minute: counted locally, added at each change
        let (mut minute, mut acc) = (i64::MIN, [0i64; 6]);
        for r in 0..t.len {
            if skip.peek().is_some_and(|&&s| s as usize == r) {
                skip.next();
                continue;
            }
            let Some(i) = cur_ts.at(ts, r) else { continue };
            let m = ts.fixed(i).div_euclid(MINUTE_US) * MINUTE_US;
            if m != minute {
                self.add(minute, &acc);
                (minute, acc) = (m, [0; 6]);
            }
            acc[0] += 1;
            if let Some(j) = cur_counts.at(counts, r) {
                let slot = match t.resolve(input, counts.refs[j]) {
                    RECEIVED => 1,
                    DELIVERED => 2,
                    DEFERRED => 3,
                    BOUNCED => 4,
                    REJECTED => 5,
                    _ => continue,
                };
                acc[slot] += 1;
            }
        }
        self.add(minute, &acc);
    }

    fn add(&mut self, minute: i64, acc: &[i64; 6]) {
        if acc[0] == 0 {
            return;
        }
        let e = self.counts.entry(minute).or_default();
        for (a, b) in e.iter_mut().zip(acc) {
            *a += b;
        }
    }

    /// Write the counts as Parquet at `path` (columns file_id, minute_at, MINUTE_COLUMNS);
    /// returns the rows.
    pub fn write(&self, path: &str, file_id: i64) -> std::io::Result<usize> {
        let rows = self.rows();
        let n = rows.len();
        let mut fixed: Vec<Vec<u8>> = vec![Vec::with_capacity(n * 8); 2 + MINUTE_COLUMNS.len()];
        for (m, c) in &rows {
            fixed[0].extend_from_slice(&file_id.to_le_bytes());
            fixed[1].extend_from_slice(&m.to_le_bytes());
            for (j, v) in c.iter().enumerate() {
                fixed[2 + j].extend_from_slice(&v.to_le_bytes());
            }
        }
        let names = ["file_id", "minute_at"].into_iter().chain(MINUTE_COLUMNS.iter().copied());
        let cols: Vec<crate::pq::ArrowCol> = names
            .zip(&fixed)
            .enumerate()
            .map(|(i, (name, data))| crate::pq::ArrowCol {
                name,
                ty: if i == 1 { Ty::Ts } else { Ty::I64 },
                valid: &[],
                offsets: &[],
                data,
            })
            .collect();
        crate::pq::write_columns(path, n, &cols)?;
        Ok(n)
    }

    /// (minute, counts) in minute order.
    pub fn rows(&self) -> Vec<(i64, [i64; 6])> {
        let mut v: Vec<_> = self.counts.iter().map(|(&m, &c)| (m, c)).collect();
        v.sort_unstable_by_key(|r| r.0);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::Ctx;
    use crate::{parse_block, Years};
    use std::sync::Arc;

    fn fed(a: &mut Assembler, file_id: i64, text: &str) {
        a.start_file(file_id);
        for c in parse_block(Arc::new(text.as_bytes().to_vec()), &Ctx::new(2026, 0), &mut Years::default(), 1, 1) {
            a.feed(&c);
        }
    }

    fn col_i(b: &Batch, m: M, row: usize) -> i64 {
        let c = &b.cols[m as usize];
        let w = if c.ty == Ty::I32 { 4 } else { 8 };
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(&c.data[row * w..row * w + w]);
        if w == 4 {
            i32::from_le_bytes(v[..4].try_into().unwrap()) as i64
        } else {
            i64::from_le_bytes(v)
        }
    }

    const ONE: &str = "Nov 21 22:00:01 mx postfix/smtpd[1]: ABC123: client=a[1.2.3.4]\n\
        Nov 21 22:00:02 mx postfix/qmgr[2]: ABC123: from=<s@x>, size=100, nrcpt=1 (queue active)\n\
        Nov 21 22:00:03 mx postfix/smtp[3]: ABC123: to=<r@y>, relay=y[5.6.7.8]:25, delay=2, delays=1/0/0.5/0.5, dsn=2.0.0, status=sent (250 ok)\n\
        Nov 21 22:00:03 mx postfix/qmgr[2]: ABC123: removed\n";

    #[test]
    fn a_message_ends_with_its_removed_line_and_a_reused_id_is_the_next() {
        let mut a = Assembler::new(7 * 86_400_000_000);
        fed(&mut a, 1, &format!("{ONE}{}", ONE.replace("22:00:0", "22:05:0")));
        let b = a.finish();
        assert_eq!(b.len, 2);
        assert_eq!(a.open_messages(), 0);
        assert_eq!((col_i(&b, M::stream_line, 0), col_i(&b, M::stream_line, 1)), (1, 5));
        assert_eq!(col_i(&b, M::delivered_recipients, 1), 1);
        assert_eq!(col_i(&b, M::size, 0), 100);
    }

    fn col_s(b: &Batch, m: M, row: usize) -> &[u8] {
        let c = &b.cols[m as usize];
        &c.data[c.offsets[row] as usize..c.offsets[row + 1] as usize]
    }

    #[test]
    fn a_message_a_check_refused_is_rejected_and_a_refused_recipient_is_not() {
        // Postfix 3.10: header_checks REJECT, then cleanup removes the message
        let refused = "Nov 21 22:00:01 mx postfix/smtpd[1]: ABC124: client=a[1.2.3.4]\n\
            Nov 21 22:00:01 mx postfix/cleanup[4]: ABC124: reject: header Subject: x from a[1.2.3.4]; from=<s@x> to=<r@y> proto=ESMTP helo=<a>: 5.7.1 header rejected\n\
            Nov 21 22:00:01 mx postfix/cleanup[4]: ABC124: removed (canceled)\n";
        // a second recipient refused once the message has its id; the first is delivered
        let partly = ONE.replace(
            "Nov 21 22:00:02 mx postfix/qmgr",
            "Nov 21 22:00:01 mx postfix/smtpd[1]: ABC123: reject: RCPT from a[1.2.3.4]: 550 5.1.1 <n@y>: Recipient address rejected: User unknown; from=<s@x> to=<n@y> proto=ESMTP helo=<a>\n\
            Nov 21 22:00:02 mx postfix/qmgr",
        );
        let mut a = Assembler::new(7 * 86_400_000_000);
        fed(&mut a, 1, &format!("{refused}{partly}"));
        let b = a.finish();
        assert_eq!(b.len, 2);
        assert_eq!(a.open_messages(), 0);
        assert_eq!(col_s(&b, M::final_status, 0), b"rejected");
        assert_eq!(col_s(&b, M::final_status, 1), b"sent");
        // the same refused recipient before any delivery leaves the message queued
        let waiting: String = partly.lines().take(3).map(|l| format!("{l}\n")).collect();
        let mut a = Assembler::new(7 * 86_400_000_000);
        fed(&mut a, 1, &waiting);
        assert_eq!(col_s(&a.finish(), M::final_status, 0), b"queued");
    }

    #[test]
    fn a_message_deleted_from_the_queue_is_removed() {
        // Postfix 3.10: deferred, then `postsuper -d`; qmgr's own `removed` ends a delivered one
        let text = "Nov 21 22:00:01 mx postfix/smtpd[1]: ABC125: client=a[1.2.3.4]\n\
            Nov 21 22:00:02 mx postfix/qmgr[2]: ABC125: from=<s@x>, size=100, nrcpt=1 (queue active)\n\
            Nov 21 22:00:03 mx postfix/smtp[3]: ABC125: to=<r@y>, relay=none, delay=1, delays=1/0/0/0, dsn=4.4.1, status=deferred (connect to y[5.6.7.8]:25: Connection refused)\n\
            Nov 21 22:00:09 mx postfix/postsuper[9]: ABC125: removed\n";
        let mut a = Assembler::new(7 * 86_400_000_000);
        fed(&mut a, 1, &format!("{text}{ONE}"));
        let b = a.finish();
        assert_eq!(b.len, 2);
        assert_eq!(col_s(&b, M::final_status, 0), b"removed");
        assert_eq!(col_i(&b, M::deferrals, 0), 1);
        assert_eq!(col_s(&b, M::final_status, 1), b"sent");
    }

    #[test]
    fn a_message_spans_the_files_of_a_stream() {
        let mut a = Assembler::new(7 * 86_400_000_000);
        let (first, rest) = ONE.split_at(ONE.find("Nov 21 22:00:03").unwrap());
        fed(&mut a, 10, first);
        assert_eq!((a.emitted(), a.open_messages()), (0, 1));
        fed(&mut a, 20, rest);
        let b = a.take();
        assert_eq!(b.len, 1);
        // the first line's file and line; its place in the stream
        assert_eq!((col_i(&b, M::first_file_id, 0), col_i(&b, M::first_line_no, 0)), (10, 1));
        assert_eq!(col_i(&b, M::delivered_recipients, 0), 1);
    }

    #[test]
    fn a_message_without_a_line_within_the_horizon_is_complete() {
        let mut a = Assembler::new(60_000_000); // one minute
        let late = "Nov 21 23:00:00 mx postfix/smtpd[1]: DEF456: client=b[1.2.3.5]\n";
        fed(&mut a, 1, &format!("{}{late}", &ONE[..ONE.find("Nov 21 22:00:03").unwrap()]));
        assert_eq!((a.emitted(), a.open_messages()), (1, 1));
    }
}
