//! Output columns: their names and types, and the parsed values of a chunk per column: a
//! validity bitmap and the non-null values only, strings as references into the chunk's
//! input bytes (no copy while parsing). The Parquet writer reads them as they are; the
//! Arrow path (`Table::arrow`) builds Arrow buffers from them.

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
    counts_as: Str,
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
    pub fn get_i(&self, c: C) -> Option<i64> {
        match self.get(c) {
            V::I(x) => Some(x),
            _ => None,
        }
    }
    pub fn get_s(&self, c: C) -> Option<&'a [u8]> {
        match self.get(c) {
            V::S(x) => Some(x),
            _ => None,
        }
    }
}

/// A string value: `start << 32 | len`, `start` into the chunk's input bytes, or (bit 31
/// of `start` set) into the table's arena (constants and text of repaired lines).
pub type Ref = u64;
const ARENA: u64 = 1 << 63;

/// One column of a chunk: validity bitmap (one bit per row) and the non-null values in
/// row order (dense: what a Parquet PLAIN page holds). The buffers come from `pool`, so a
/// block reuses the pages of an earlier one instead of faulting in fresh zeroed ones.
pub struct Col {
    pub ty: Ty,
    pub slot: usize,
    pub valid: Vec<u8>,
    pub nulls: usize,
    pub refs: Vec<Ref>, // Str values
    pub data: Vec<u8>,  // fixed-width values, little endian (I32: 4 bytes, others 8)
    // the last value of this column that came from outside the input (a constant): the
    // same constant is stored once in the arena
    last_const: (usize, usize, Ref),
}

impl Col {
    fn new(ty: Ty, slot: usize, cap: usize) -> Self {
        let mut valid = pool::take_u8(pool::valid_slot(slot));
        valid.resize(cap.div_ceil(8), 0); // zeroed: bits are only ever set
        let data = pool::take_u8(pool::data_slot(slot));
        let refs = if ty == Ty::Str { pool::take_u64(slot) } else { Vec::new() };
        Col { ty, slot, valid, nulls: 0, refs, data, last_const: (0, 0, 0) }
    }

    pub fn width(&self) -> usize {
        match self.ty {
            Ty::I32 => 4,
            Ty::Str => 0,
            _ => 8,
        }
    }

    /// Non-null values held.
    pub fn count(&self) -> usize {
        if self.ty == Ty::Str {
            self.refs.len()
        } else {
            self.data.len() / self.width()
        }
    }

    #[inline]
    pub fn is_set(&self, r: usize) -> bool {
        self.valid[r >> 3] & (1 << (r & 7)) != 0
    }

    #[inline]
    fn set_bit(&mut self, r: usize) {
        if self.valid.len() <= r >> 3 {
            self.valid.resize((r >> 3) + 1, 0);
        }
        self.valid[r >> 3] |= 1 << (r & 7);
    }

    fn finish(&mut self, n: usize) {
        self.valid.resize(n.div_ceil(8), 0);
        self.nulls = n - self.count();
    }

    /// Fixed-width value `i` (dense index) as i64 (I32 sign-extended); F64 as its bits.
    pub fn fixed(&self, i: usize) -> i64 {
        if self.ty == Ty::I32 {
            i32::from_le_bytes(self.data[i * 4..i * 4 + 4].try_into().unwrap()) as i64
        } else {
            i64::from_le_bytes(self.data[i * 8..i * 8 + 8].try_into().unwrap())
        }
    }

    pub fn set_fixed(&mut self, i: usize, v: i64) {
        self.data[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
}

impl Drop for Col {
    fn drop(&mut self) {
        pool::give_u8(pool::valid_slot(self.slot), std::mem::take(&mut self.valid));
        pool::give_u8(pool::data_slot(self.slot), std::mem::take(&mut self.data));
        pool::give_u64(self.slot, std::mem::take(&mut self.refs));
    }
}

/// Column buffers kept for reuse, per slot (two u8 slots per column: validity, data; one
/// i32 slot: Arrow offsets; one u64 slot: string references). A slot keeps at most KEEP buffers, so the pool never holds more
/// than a few blocks' worth: memory stays flat.
pub mod pool {
    use std::sync::Mutex;

    const KEEP: usize = 2;
    const SLOTS: usize = 2 * super::N;

    /// A slot's kept buffers, and the length its last buffer given back had: a buffer made
    /// anew when none is kept starts at that size (not grown by doubling, each growth a copy).
    type Slots<T> = Mutex<Vec<(Vec<Vec<T>>, usize)>>;

    static U8: Slots<u8> = Mutex::new(Vec::new());
    static I32: Slots<i32> = Mutex::new(Vec::new());
    static U64: Slots<u64> = Mutex::new(Vec::new());

    pub fn valid_slot(col: usize) -> usize {
        2 * col
    }
    pub fn data_slot(col: usize) -> usize {
        2 * col + 1
    }

    fn take<T>(p: &Slots<T>, slot: usize) -> Vec<T> {
        let mut g = p.lock().unwrap_or_else(|e| e.into_inner());
        let Some((kept, hint)) = g.get_mut(slot) else { return Vec::new() };
        let mut v = kept.pop().unwrap_or_else(|| Vec::with_capacity(*hint + *hint / 8));
        v.clear();
        v
    }

    fn give<T>(p: &Slots<T>, slot: usize, v: Vec<T>) {
        if v.capacity() == 0 || slot >= SLOTS {
            return;
        }
        let mut g = p.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < SLOTS {
            g.resize_with(SLOTS, || (Vec::new(), 0));
        }
        let (kept, hint) = &mut g[slot];
        *hint = v.len();
        if kept.len() < KEEP {
            kept.push(v);
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
    static BLOCKS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

    /// An input block buffer (empty; its capacity kept from an earlier block).
    pub fn take_block() -> Vec<u8> {
        let mut v = BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        v.clear();
        v
    }
    pub fn give_block(v: Vec<u8>) {
        // the landing's blocks (8 MiB and a carried line); a one-off big input is freed
        if v.capacity() == 0 || v.capacity() > 64 << 20 {
            return;
        }
        let mut g = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() < KEEP {
            g.push(v);
        }
    }

    pub fn take_u64(slot: usize) -> Vec<u64> {
        take(&U64, slot)
    }
    pub fn give_u64(slot: usize, v: Vec<u64>) {
        give(&U64, slot, v)
    }
}

pub struct Table {
    pub len: usize,
    pub cols: Vec<Col>,
    /// bytes of string values that are not in the input (constants, repaired lines)
    pub arena: Vec<u8>,
}

impl Table {
    pub fn new(cap: usize) -> Self {
        let cols = COLUMNS.iter().enumerate().map(|(i, &(_, t))| Col::new(t, i, cap)).collect();
        Table { len: 0, cols, arena: Vec::new() }
    }

    /// Append a row. `input`: the chunk's bytes (string values inside it are kept as
    /// references); `temp`: a repaired line's text (values inside it are copied to the
    /// arena); any other string value is a constant ('static), so a repeat of the last one
    /// reuses its arena bytes.
    #[inline]
    pub fn push(&mut self, row: &Row, input: &[u8], temp: &[u8]) {
        let r = self.len;
        let base = input.as_ptr() as usize;
        let (t0, t1) = (temp.as_ptr() as usize, temp.as_ptr() as usize + temp.len());
        let mut m = row.mask;
        while m != 0 {
            let c = m.trailing_zeros() as usize;
            m &= m - 1;
            let col = &mut self.cols[c];
            match (col.ty, row.at(c)) {
                (Ty::Str, V::S(s)) => {
                    let (p, l) = (s.as_ptr() as usize, s.len());
                    let rf = if p >= base && p + l <= base + input.len() {
                        ((p - base) as u64) << 32 | l as u64
                    } else {
                        let is_const = !(p >= t0 && p + l <= t1 && l > 0);
                        if is_const && col.last_const.0 == p && col.last_const.1 == l {
                            col.last_const.2
                        } else {
                            assert!(self.arena.len() < 1 << 31, "arena offset overflow");
                            let rf = ARENA | (self.arena.len() as u64) << 32 | l as u64;
                            self.arena.extend_from_slice(s);
                            if is_const {
                                col.last_const = (p, l, rf);
                            }
                            rf
                        }
                    };
                    col.refs.push(rf);
                }
                (Ty::I32, V::I(i)) => col.data.extend_from_slice(&(i as i32).to_le_bytes()),
                (Ty::I64 | Ty::Ts, V::I(i)) => col.data.extend_from_slice(&i.to_le_bytes()),
                (Ty::F64, V::F(f)) => col.data.extend_from_slice(&f.to_le_bytes()),
                _ => continue, // a value of the wrong type: null
            }
            col.set_bit(r);
        }
        self.len += 1;
    }

    /// Size the bitmaps to the row count and count the nulls (call once, at the end).
    pub fn finish(&mut self) {
        let n = self.len;
        for c in &mut self.cols {
            c.finish(n);
        }
    }

    /// The bytes of a string reference (`input`: the chunk's bytes).
    #[inline]
    pub fn resolve<'a>(&'a self, input: &'a [u8], rf: Ref) -> &'a [u8] {
        let start = ((rf >> 32) & 0x7fff_ffff) as usize;
        let len = (rf & 0xffff_ffff) as usize;
        if rf & ARENA != 0 {
            &self.arena[start..start + len]
        } else {
            &input[start..start + len]
        }
    }

    /// Start of a string reference's bytes and how many bytes are readable from there in
    /// its buffer (at least its length).
    #[inline]
    pub fn locate(&self, input: &[u8], rf: Ref) -> (*const u8, usize) {
        let start = ((rf >> 32) & 0x7fff_ffff) as usize;
        let buf: &[u8] = if rf & ARENA != 0 { &self.arena } else { input };
        assert!(start + (rf & 0xffff_ffff) as usize <= buf.len(), "string reference out of bounds");
        // SAFETY: start <= buf.len() (asserted)
        (unsafe { buf.as_ptr().add(start) }, buf.len() - start)
    }

    /// For each of `rows` (ascending), the dense index of its value in column `c` (None: null).
    pub fn dense_index(&self, c: C, rows: &[u32]) -> Vec<Option<usize>> {
        let col = &self.cols[c as usize];
        let mut out = Vec::with_capacity(rows.len());
        let (mut r0, mut idx) = (0usize, 0usize); // set bits in rows [0, r0)
        for &r in rows {
            let r = r as usize;
            idx += count_set(&col.valid, r0, r);
            r0 = r;
            out.push(if col.is_set(r) { Some(idx) } else { None });
        }
        out
    }

    /// The Arrow buffers of column `c` (finished table): (validity, offsets, data) with
    /// offsets for strings only; None when every row is null.
    pub fn arrow(&mut self, c: usize, input: &[u8]) -> Option<(Vec<u8>, Vec<i32>, Vec<u8>)> {
        let n = self.len;
        let col = &self.cols[c];
        if col.nulls == n {
            return None;
        }
        let mut data = pool::take_u8(pool::data_slot(col.slot));
        let mut offsets = Vec::new();
        if col.ty == Ty::Str {
            offsets = pool::take_i32(col.slot);
            offsets.reserve(n + 1);
            offsets.push(0);
            let mut i = 0;
            for r in 0..n {
                if col.is_set(r) {
                    data.extend_from_slice(self.resolve(input, col.refs[i]));
                    i += 1;
                }
                offsets.push(data.len() as i32);
            }
        } else {
            let w = col.width();
            data.resize(n * w, 0);
            let mut i = 0;
            for r in 0..n {
                if col.is_set(r) {
                    data[r * w..r * w + w].copy_from_slice(&col.data[i * w..i * w + w]);
                    i += 1;
                }
            }
        }
        let col = &mut self.cols[c];
        let valid = std::mem::take(&mut col.valid);
        col.valid = pool::take_u8(pool::valid_slot(col.slot));
        Some((valid, offsets, data))
    }
}

/// Set bits of `bits` in positions [a, b).
pub fn count_set(bits: &[u8], a: usize, b: usize) -> usize {
    let mut n = 0;
    let mut r = a;
    while r < b && r & 7 != 0 {
        n += (bits[r >> 3] >> (r & 7) & 1) as usize;
        r += 1;
    }
    while r + 64 <= b {
        n += u64::from_le_bytes(bits[r >> 3..(r >> 3) + 8].try_into().unwrap()).count_ones() as usize;
        r += 64;
    }
    while r + 8 <= b {
        n += bits[r >> 3].count_ones() as usize;
        r += 8;
    }
    while r < b {
        n += (bits[r >> 3] >> (r & 7) & 1) as usize;
        r += 1;
    }
    n
}
