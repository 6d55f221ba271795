//! Output columns: their names and Arrow types, and per-column buffers (values, offsets,
//! validity) that Python wraps with `pyarrow.Array.from_buffers`.

use std::mem::MaybeUninit;

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

/// The columns one line sets (most stay null): a value slot per column and a bit mask of
/// the slots set, so `set` is O(1) and a fresh row costs nothing to make.
pub struct Row<'a> {
    mask: u128,
    v: [MaybeUninit<V<'a>>; N],
}

const _: () = assert!(N <= 128, "Row's mask holds 128 columns");

impl<'a> Default for Row<'a> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Row<'a> {
    #[inline]
    pub fn new() -> Self {
        Row { mask: 0, v: [const { MaybeUninit::uninit() }; N] }
    }
    #[inline]
    fn set(&mut self, c: C, v: V<'a>) {
        let c = c as usize;
        if let V::Null = v {
            self.mask &= !(1u128 << c);
        } else {
            self.v[c] = MaybeUninit::new(v);
            self.mask |= 1u128 << c;
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
    #[inline]
    fn at(&self, c: usize) -> V<'a> {
        if self.mask & (1u128 << c) == 0 {
            V::Null
        } else {
            // SAFETY: a set mask bit means slot c was written by `set`
            unsafe { self.v[c].assume_init() }
        }
    }
    pub fn get(&self, c: C) -> V<'a> {
        self.at(c as usize)
    }
    pub fn get_s(&self, c: C) -> Option<&'a [u8]> {
        match self.get(c) {
            V::S(x) => Some(x),
            _ => None,
        }
    }
}

/// One column's Arrow buffers, filled lazily: rows a line leaves null are padded in bulk.
/// The buffers come from `pool` (slot = column index), so a block reuses the pages of
/// an earlier one instead of faulting in fresh zeroed ones.
pub struct Col {
    pub ty: Ty,
    pub slot: usize,
    pub valid: Vec<u8>,
    pub nulls: usize,
    pub offsets: Vec<i32>, // Str only
    pub data: Vec<u8>,     // Str bytes, or the fixed-width values (little endian)
    rows: usize,           // rows materialised so far
}

impl Col {
    fn new(ty: Ty, slot: usize, cap: usize) -> Self {
        let mut valid = pool::take_u8(pool::valid_slot(slot));
        valid.resize(cap.div_ceil(8), 0); // zeroed: bits are only ever set
        let mut offsets = Vec::new();
        if ty == Ty::Str {
            offsets = pool::take_i32(slot);
            offsets.push(0);
        }
        let data = pool::take_u8(pool::data_slot(slot));
        Col { ty, slot, valid, nulls: 0, offsets, data, rows: 0 }
    }

    fn width(&self) -> usize {
        match self.ty {
            Ty::I32 => 4,
            Ty::Str => 0,
            _ => 8,
        }
    }

    /// Pad with nulls up to `r` rows.
    #[inline]
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

impl Drop for Col {
    fn drop(&mut self) {
        // buffers not handed to Python (taken out by then) go back to the pool
        pool::give_u8(pool::valid_slot(self.slot), std::mem::take(&mut self.valid));
        pool::give_u8(pool::data_slot(self.slot), std::mem::take(&mut self.data));
        pool::give_i32(self.slot, std::mem::take(&mut self.offsets));
    }
}

/// Column buffers kept for reuse, per slot (two u8 slots per column: validity, data; one
/// i32 slot: offsets). A slot keeps at most KEEP buffers, so the pool never holds more
/// than a few blocks' worth: memory stays flat.
pub mod pool {
    use std::sync::Mutex;

    const KEEP: usize = 4;
    const SLOTS: usize = 2 * super::N;

    static U8: Mutex<Vec<Vec<Vec<u8>>>> = Mutex::new(Vec::new());
    static I32: Mutex<Vec<Vec<Vec<i32>>>> = Mutex::new(Vec::new());

    pub fn valid_slot(col: usize) -> usize {
        2 * col
    }
    pub fn data_slot(col: usize) -> usize {
        2 * col + 1
    }

    fn take<T>(p: &Mutex<Vec<Vec<Vec<T>>>>, slot: usize) -> Vec<T> {
        let mut g = p.lock().unwrap_or_else(|e| e.into_inner());
        let mut v = g.get_mut(slot).and_then(|s| s.pop()).unwrap_or_default();
        v.clear();
        v
    }

    fn give<T>(p: &Mutex<Vec<Vec<Vec<T>>>>, slot: usize, v: Vec<T>) {
        if v.capacity() == 0 || slot >= SLOTS {
            return;
        }
        let mut g = p.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < SLOTS {
            g.resize_with(SLOTS, Vec::new);
        }
        if g[slot].len() < KEEP {
            g[slot].push(v);
        }
    }

    pub fn take_u8(slot: usize) -> Vec<u8> {
        take(&U8, slot)
    }
    pub fn give_u8(slot: usize, v: Vec<u8>) {
        give(&U8, slot, v)
    }
    pub fn take_i32(slot: usize) -> Vec<i32> {
        take(&I32, slot)
    }
    pub fn give_i32(slot: usize, v: Vec<i32>) {
        give(&I32, slot, v)
    }
}

pub struct Table {
    pub len: usize,
    pub cols: Vec<Col>,
}

impl Table {
    pub fn new(cap: usize) -> Self {
        let cols = COLUMNS.iter().enumerate().map(|(i, &(_, t))| Col::new(t, i, cap)).collect();
        Table { len: 0, cols }
    }

    #[inline]
    pub fn push(&mut self, row: &Row) {
        let r = self.len;
        let mut m = row.mask;
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            self.cols[c].put(r, row.at(c));
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

    /// String of row `r` in column `c` (finished table), None when null.
    pub fn str_at(&self, c: C, r: usize) -> Option<&[u8]> {
        let col = &self.cols[c as usize];
        if col.valid[r / 8] & (1 << (r % 8)) == 0 {
            return None;
        }
        Some(&col.data[col.offsets[r] as usize..col.offsets[r + 1] as usize])
    }

    /// Integer of row `r` in an I64 column (0 when null).
    pub fn i64_at(&self, c: C, r: usize) -> i64 {
        let col = &self.cols[c as usize];
        i64::from_le_bytes(col.data[r * 8..r * 8 + 8].try_into().unwrap())
    }

    pub fn set_ts(&mut self, c: C, r: usize, v: i64) {
        let col = &mut self.cols[c as usize];
        col.data[r * 8..r * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
}
