//! Output columns: their names and Arrow types, and per-column buffers (values, offsets,
//! validity) that Python wraps with `pyarrow.Array.from_buffers`.

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Ts,
    I32,
    I64,
    F64,
    Str,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Ts => "timestamp",
            Ty::I32 => "int32",
            Ty::I64 => "int64",
            Ty::F64 => "float64",
            Ty::Str => "string",
        }
    }
}

macro_rules! columns {
    ($( $id:ident : $ty:ident ),* $(,)?) => {
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Clone, Copy)]
        pub enum C { $( $id ),* }
        pub const COLUMNS: &[(&str, Ty)] = &[ $( (stringify!($id), Ty::$ty) ),* ];
    };
}

// line_no first; then today's raw.maillog columns in their order; then the new ones.
columns! {
    line_no: I64,
    ts: Ts, ts_format: Str, host: Str, program: Str, pid: I32, queue_id: Str, kind: Str,
    client: Str, message_id: Str, sender: Str, size: I64, nrcpt: I32, recipient: Str,
    orig_to: Str, relay: Str, mailer: Str, conn_use: I32, delay: F64, delay_before_qmgr: F64,
    delay_in_qmgr: F64, delay_conn_setup: F64, delay_transmission: F64, dsn: Str, status: Str,
    status_text: Str, reject_action: Str, reject_stage: Str, smtp_code: I32, enhanced_code: Str,
    reason: Str, proto: Str, helo: Str, severity: Str, detail: Str, commands: Str,
    commands_ok: I32, commands_total: I32, related_queue_id: Str, message: Str,
    client_host: Str, client_ip: Str, client_port: I32,
    relay_host: Str, relay_ip: Str, relay_port: I32,
    reply_text: Str, tls_level: Str, tls_protocol: Str, tls_cipher: Str, tls_bits: I32,
    verdict: Str, dnsbl_domain: Str, dnsbl_reply: Str, dnsbl_rank: I32,
    stat_name: Str, stat_value: Str,
    service: Str, mailbox_user: Str, session_id: Str,
    top_msgs: I64, top_bytes: I64, retr_msgs: I64, retr_bytes: I64, del_msgs: I64,
    mbox_msgs: I64, mbox_size: I64, bytes_in: I64, bytes_out: I64,
}

pub const N: usize = COLUMNS.len();

/// A value of one row's column; `Null` for absent.
#[derive(Clone, Copy, Default)]
pub enum V<'a> {
    #[default]
    Null,
    S(&'a [u8]),
    I(i64),
    F(f64),
}

/// The columns one line sets (most stay null): at most MAX_SET (column, value) pairs.
pub struct Row<'a> {
    n: usize,
    e: [(u8, V<'a>); MAX_SET],
}

const MAX_SET: usize = 40;

impl<'a> Default for Row<'a> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Row<'a> {
    #[inline]
    pub fn new() -> Self {
        Row { n: 0, e: [(0, V::Null); MAX_SET] }
    }
    #[inline]
    fn set(&mut self, c: C, v: V<'a>) {
        let c = c as u8;
        for i in 0..self.n {
            if self.e[i].0 == c {
                if let V::Null = v {
                    self.e[i] = self.e[self.n - 1];
                    self.n -= 1;
                } else {
                    self.e[i].1 = v;
                }
                return;
            }
        }
        if !matches!(v, V::Null) && self.n < MAX_SET {
            self.e[self.n] = (c, v);
            self.n += 1;
        }
    }
    #[inline]
    pub fn s(&mut self, c: C, x: &'a [u8]) {
        self.set(c, V::S(x));
    }
    #[inline]
    pub fn so(&mut self, c: C, x: Option<&'a [u8]>) {
        self.set(c, x.map_or(V::Null, V::S));
    }
    #[inline]
    pub fn i(&mut self, c: C, x: Option<i64>) {
        self.set(c, x.map_or(V::Null, V::I));
    }
    #[inline]
    pub fn f(&mut self, c: C, x: Option<f64>) {
        self.set(c, x.map_or(V::Null, V::F));
    }
    pub fn get(&self, c: C) -> V<'a> {
        let c = c as u8;
        self.e[..self.n].iter().find(|e| e.0 == c).map_or(V::Null, |e| e.1)
    }
    pub fn get_s(&self, c: C) -> Option<&'a [u8]> {
        match self.get(c) {
            V::S(x) => Some(x),
            _ => None,
        }
    }
}

/// One column's Arrow buffers, filled lazily: rows a line leaves null are padded in bulk.
pub struct Col {
    pub ty: Ty,
    pub valid: Vec<u8>,
    pub nulls: usize,
    pub offsets: Vec<i32>, // Str only
    pub data: Vec<u8>,     // Str bytes, or the fixed-width values (little endian)
    rows: usize,           // rows materialised so far
}

impl Col {
    fn new(ty: Ty) -> Self {
        let offsets = if ty == Ty::Str { vec![0] } else { Vec::new() };
        Col { ty, valid: Vec::new(), nulls: 0, offsets, data: Vec::new(), rows: 0 }
    }

    fn width(&self) -> usize {
        match self.ty {
            Ty::I32 => 4,
            Ty::Str => 0,
            _ => 8,
        }
    }

    /// Pad with nulls up to `r` rows.
    fn pad(&mut self, r: usize) {
        if self.rows >= r {
            return;
        }
        if self.ty == Ty::Str {
            let last = *self.offsets.last().unwrap();
            self.offsets.resize(r + 1, last);
        } else {
            self.data.resize(r * self.width(), 0);
        }
        self.rows = r;
    }

    #[inline]
    fn put(&mut self, r: usize, v: V) {
        self.pad(r);
        match (self.ty, v) {
            (Ty::Str, V::S(s)) => {
                self.data.extend_from_slice(s);
                self.offsets.push(self.data.len() as i32);
            }
            (Ty::I32, V::I(i)) => self.data.extend_from_slice(&(i as i32).to_le_bytes()),
            (Ty::I64 | Ty::Ts, V::I(i)) => self.data.extend_from_slice(&i.to_le_bytes()),
            (Ty::F64, V::F(f)) => self.data.extend_from_slice(&f.to_le_bytes()),
            _ => {
                // a value of the wrong type: null
                self.pad(r + 1);
                return;
            }
        }
        self.rows = r + 1;
        if self.valid.len() <= r / 8 {
            self.valid.resize(r / 8 + 1, 0);
        }
        self.valid[r / 8] |= 1 << (r % 8);
    }

    fn finish(&mut self, n: usize) {
        self.pad(n);
        self.valid.resize(n.div_ceil(8), 0);
        let set: usize = self.valid.iter().map(|b| b.count_ones() as usize).sum();
        self.nulls = n - set;
    }
}

pub struct Table {
    pub len: usize,
    pub cols: Vec<Col>,
}

impl Table {
    pub fn new(_cap: usize) -> Self {
        Table { len: 0, cols: COLUMNS.iter().map(|&(_, t)| Col::new(t)).collect() }
    }

    #[inline]
    pub fn push(&mut self, row: &Row) {
        let r = self.len;
        for &(c, v) in &row.e[..row.n] {
            self.cols[c as usize].put(r, v);
        }
        self.len += 1;
    }

    /// Pad every column to the row count and count its nulls (call once, at the end).
    pub fn finish(&mut self) {
        let n = self.len;
        for c in &mut self.cols {
            c.finish(n);
        }
    }

    /// Timestamp value of row `r` in column `c` (must be Ts and finished), None when null.
    pub fn ts_at(&self, c: C, r: usize) -> Option<i64> {
        let col = &self.cols[c as usize];
        if col.valid[r / 8] & (1 << (r % 8)) == 0 {
            return None;
        }
        Some(i64::from_le_bytes(col.data[r * 8..r * 8 + 8].try_into().unwrap()))
    }

    pub fn set_ts(&mut self, c: C, r: usize, v: i64) {
        let col = &mut self.cols[c as usize];
        col.data[r * 8..r * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
}
