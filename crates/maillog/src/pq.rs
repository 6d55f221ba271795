//! A minimal Parquet writer for parsed chunks: one row group per chunk, one data page (v1,
//! PLAIN values, RLE/bit-packed definition levels) per column chunk, LZ4_RAW compressed;
//! the constant columns (file_id, item_no) as a one-entry dictionary and one RLE run.
//! Only the columns some kept row sets are written (the DuckDB view reads the parts by
//! name); `file_id` and `item_no` are constant columns added here. Rows listed in a
//! chunk's `skip` (noise and quarantine lines, which land elsewhere) are left out.
//!
//! Why not pyarrow: its writer spends ~5 ns per row per column on definition levels alone
//! (~70 sparse columns), more than the parse; here the levels are the validity bitmap as
//! it is (Parquet's bit-packed runs and Arrow's bitmaps share the LSB-first bit order).

use crate::cols::{Col, Table, Ty, COLUMNS};
use crate::Chunk;
use std::io::Write;

// --- Thrift compact protocol (the subset the footer and page headers need)
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_STRUCT: u8 = 12;

struct Thrift {
    b: Vec<u8>,
    last: Vec<i16>, // last field id per open struct
}

impl Thrift {
    fn new() -> Self {
        Thrift { b: Vec::new(), last: vec![0] }
    }
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.b.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.b.push(v as u8);
    }
    fn zz(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
    fn field(&mut self, id: i16, ty: u8) {
        let last = self.last.last_mut().unwrap();
        let d = id - *last;
        *last = id;
        if d > 0 && d <= 15 {
            self.b.push(((d as u8) << 4) | ty);
        } else {
            self.b.push(ty);
            self.zz(id as i64);
        }
    }
    fn i32f(&mut self, id: i16, v: i32) {
        self.field(id, T_I32);
        self.zz(v as i64);
    }
    fn i64f(&mut self, id: i16, v: i64) {
        self.field(id, T_I64);
        self.zz(v);
    }
    fn strf(&mut self, id: i16, s: &[u8]) {
        self.field(id, T_BINARY);
        self.varint(s.len() as u64);
        self.b.extend_from_slice(s);
    }
    fn begin(&mut self, id: i16) {
        self.field(id, T_STRUCT);
        self.last.push(0);
    }
    /// Start a struct that is a list element (no field header).
    fn begin_elem(&mut self) {
        self.last.push(0);
    }
    fn end(&mut self) {
        self.b.push(0);
        self.last.pop();
    }
    fn list(&mut self, id: i16, elem: u8, n: usize) {
        self.field(id, T_LIST);
        if n < 15 {
            self.b.push(((n as u8) << 4) | elem);
        } else {
            self.b.push(0xf0 | elem);
            self.varint(n as u64);
        }
    }
}

// Parquet enums
const PLAIN: i32 = 0;
const RLE: i32 = 3;
const RLE_DICTIONARY: i32 = 8;
const LZ4_RAW: i32 = 7;
const OPTIONAL: i32 = 1;
const REQUIRED: i32 = 0;

const LINE_NO: usize = crate::cols::C::line_no as usize;

#[derive(Clone, Copy, PartialEq)]
enum Phys {
    I32 = 1,
    I64 = 2,
    Double = 5,
    ByteArray = 6,
}

/// One written column: schema facts and, per row group, where its chunk is.
struct OutCol {
    name: &'static str,
    phys: Phys,
    ty: Option<Ty>, // None: a constant column added here (file_id, item_no)
    optional: bool,
    chunks: Vec<ChunkMeta>,
}

/// Where a column chunk is: its dictionary page (if any), its data page, sizes with headers.
#[derive(Clone, Copy)]
struct ChunkMeta {
    dict: Option<i64>,
    data: i64,
    compressed: i64,
    uncompressed: i64,
    values: i64,
}

impl ChunkMeta {
    fn start(&self) -> i64 {
        self.dict.unwrap_or(self.data)
    }
}

fn phys(ty: Ty) -> Phys {
    match ty {
        Ty::I32 => Phys::I32,
        Ty::I64 | Ty::Ts => Phys::I64,
        Ty::F64 => Phys::Double,
        Ty::Str => Phys::ByteArray,
    }
}

#[inline]
fn is_set(bits: &[u8], r: usize) -> bool {
    bits[r / 8] & (1 << (r % 8)) != 0
}

/// The length prefix and run header of `n` definition levels (bit width 1) as one bit-packed
/// run; the caller appends the returned number of bytes (groups of 8 levels).
fn levels_header(n: usize, out: &mut Vec<u8>) -> usize {
    let groups = n.div_ceil(8);
    let mut hdr = Vec::with_capacity(5);
    let mut v = ((groups as u64) << 1) | 1;
    while v >= 0x80 {
        hdr.push((v as u8) | 0x80);
        v >>= 7;
    }
    hdr.push(v as u8);
    out.extend_from_slice(&((hdr.len() + groups) as u32).to_le_bytes());
    out.extend_from_slice(&hdr);
    groups
}

/// Definition levels (bit width 1) of the kept rows: one bit-packed run.
fn def_levels(col: &Col, n: usize, keep: &[usize], out: &mut Vec<u8>) {
    let kept = if keep.is_empty() { n } else { keep.len() };
    let groups = levels_header(kept, out);
    if keep.is_empty() {
        out.extend_from_slice(&col.valid[..groups]);
    } else {
        let start = out.len();
        out.resize(start + groups, 0);
        for (i, &r) in keep.iter().enumerate() {
            if is_set(&col.valid, r) {
                out[start + i / 8] |= 1 << (i % 8);
            }
        }
    }
}

/// Strings as PLAIN BYTE_ARRAY values (u32 length, bytes). Most values are short: they are
/// copied in fixed 16/32/64-byte moves (reading past a value's end, never past its
/// buffer's), not by a memcpy call per value.
fn put_strings(t: &Table, input: &[u8], refs: impl Iterator<Item = u64> + Clone, out: &mut Vec<u8>) {
    const SLACK: usize = 64;
    let (bytes, n) = refs.clone().fold((0usize, 0usize), |(b, n), rf| (b + (rf & 0xffff_ffff) as usize, n + 1));
    let start = out.len();
    out.reserve(bytes + 4 * n + SLACK);
    let base = out.as_mut_ptr();
    let mut at = start;
    for rf in refs {
        let (src, avail) = t.locate(input, rf);
        let len = (rf & 0xffff_ffff) as usize;
        // SAFETY: capacity holds every value and its length plus SLACK (the widest
        // overshoot, 64 - 1 bytes); `src` has `avail` readable bytes, checked per move
        unsafe {
            let d = base.add(at);
            std::ptr::copy_nonoverlapping((len as u32).to_le_bytes().as_ptr(), d, 4);
            let d = d.add(4);
            if len <= 16 && avail >= 16 {
                std::ptr::copy_nonoverlapping(src, d, 16);
            } else if len <= 32 && avail >= 32 {
                std::ptr::copy_nonoverlapping(src, d, 32);
            } else if len <= 64 && avail >= 64 {
                std::ptr::copy_nonoverlapping(src, d, 64);
            } else {
                std::ptr::copy_nonoverlapping(src, d, len);
            }
        }
        at += 4 + len;
    }
    // SAFETY: bytes start..at were all written above (overshoot beyond `at` is left out)
    unsafe { out.set_len(at) };
}

/// Dense indices of the kept rows' values in `col` (the kept rows that are not null).
fn kept_dense(col: &Col, n: usize, keep: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(keep.len());
    let (mut idx, mut j) = (0usize, 0usize);
    for r in 0..n {
        let kept = j < keep.len() && keep[j] == r;
        j += kept as usize;
        if col.is_set(r) {
            if kept {
                out.push(idx);
            }
            idx += 1;
        }
    }
    out
}

/// PLAIN values of the kept, non-null rows (`keep` empty: every row). The values are
/// already dense in row order: a page is a copy (strings: length, then the bytes).
fn values(t: &Table, input: &[u8], col: &Col, n: usize, keep: &[usize], out: &mut Vec<u8>) {
    let sel: Vec<usize>;
    let sel: Option<&[usize]> = if keep.is_empty() {
        None
    } else {
        sel = kept_dense(col, n, keep);
        Some(&sel)
    };
    match (col.ty, sel) {
        (Ty::Str, None) => put_strings(t, input, col.refs.iter().copied(), out),
        (Ty::Str, Some(sel)) => put_strings(t, input, sel.iter().map(|&i| col.refs[i]), out),
        (_, None) => out.extend_from_slice(&col.data),
        (_, Some(sel)) => {
            let w = col.width();
            for &i in sel {
                out.extend_from_slice(&col.data[i * w..i * w + w]);
            }
        }
    }
}

fn page_header(t: &mut Thrift, uncompressed: usize, compressed: usize, num_values: usize, encoding: i32) {
    t.i32f(1, 0); // DATA_PAGE
    t.i32f(2, uncompressed as i32);
    t.i32f(3, compressed as i32);
    t.begin(5);
    t.i32f(1, num_values as i32);
    t.i32f(2, encoding);
    t.i32f(3, RLE);
    t.i32f(4, RLE);
    t.end();
    t.b.push(0); // end of PageHeader
}

fn dict_page_header(t: &mut Thrift, uncompressed: usize, compressed: usize, entries: usize) {
    t.i32f(1, 2); // DICTIONARY_PAGE
    t.i32f(2, uncompressed as i32);
    t.i32f(3, compressed as i32);
    t.begin(7);
    t.i32f(1, entries as i32);
    t.i32f(2, PLAIN);
    t.end();
    t.b.push(0); // end of PageHeader
}

/// One page (LZ4_RAW) with its header; returns (header + compressed, header + raw) sizes.
fn put_page<W: Write>(w: &mut W, raw: &[u8], comp: &mut Vec<u8>, header: impl FnOnce(&mut Thrift, usize)) -> std::io::Result<(i64, i64)> {
    let need = lz4_flex::block::get_maximum_output_size(raw.len());
    if comp.len() < need {
        comp.resize(need, 0); // grown only: no re-zeroing per column
    }
    let clen = lz4_flex::block::compress_into(raw, comp).map_err(std::io::Error::other)?;
    let mut t = Thrift::new();
    header(&mut t, clen);
    w.write_all(&t.b)?;
    w.write_all(&comp[..clen])?;
    Ok(((t.b.len() + clen) as i64, (t.b.len() + raw.len()) as i64))
}

thread_local! {
    // page buffers (raw, compressed) reused across the parts a writer thread writes: fresh
    // multi-MB buffers per column cost a page fault per 4 KiB
    static BUFS: std::cell::RefCell<(Vec<Vec<u8>>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Write the kept rows of `chunks` to `path` as Parquet; returns the rows written.
/// `all_columns`: every column, null or not (parts a reader takes without merging schemas:
/// Spark's output folder); otherwise only those some kept row sets.
pub fn write(path: &str, chunks: &[Chunk], file_id: i64, all_columns: bool) -> std::io::Result<usize> {
    BUFS.with(|b| {
        let mut b = b.borrow_mut();
        let (pages, comp) = &mut *b;
        write_with(path, chunks, file_id, all_columns, pages, comp)
    })
}

fn write_with(
    path: &str,
    chunks: &[Chunk],
    file_id: i64,
    all_columns: bool,
    pages: &mut Vec<Vec<u8>>,
    comp: &mut Vec<u8>,
) -> std::io::Result<usize> {
    // columns some kept row sets (line_no always)
    let mut used = vec![all_columns; COLUMNS.len()];
    used[0] = true;
    for c in chunks {
        let n = c.table.len;
        if c.skip.len() == n {
            continue;
        }
        let keep = kept_rows(c);
        for (i, col) in c.table.cols.iter().enumerate() {
            if used[i] || col.nulls == n {
                continue;
            }
            used[i] = c.skip.is_empty() || keep.iter().any(|&r| is_set(&col.valid, r));
        }
    }
    let mut cols: Vec<OutCol> = vec![
        OutCol { name: "file_id", phys: Phys::I64, ty: None, optional: false, chunks: vec![] },
        OutCol { name: "item_no", phys: Phys::I32, ty: None, optional: false, chunks: vec![] },
    ];
    let mut idx: Vec<usize> = Vec::new(); // source column per OutCol (usize::MAX for constants)
    idx.extend([usize::MAX, usize::MAX]);
    for (i, &(name, ty)) in COLUMNS.iter().enumerate() {
        if used[i] {
            // line_no as INT32: raw.maillog's type (the parser keeps it as int64)
            let p = if i == LINE_NO { Phys::I32 } else { phys(ty) };
            cols.push(OutCol { name, phys: p, ty: Some(ty), optional: true, chunks: vec![] });
            idx.push(i);
        }
    }

    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    w.write_all(b"PAR1")?;
    let mut pos: i64 = 4;
    let mut rg_rows = Vec::new();
    let mut total = 0usize;
    for c in chunks {
        let n = c.table.len;
        let keep = kept_rows(c);
        let rows = if c.skip.is_empty() { n } else { keep.len() };
        if rows == 0 {
            continue;
        }
        let keep: &[usize] = if c.skip.is_empty() { &[] } else { &keep };
        if pages.len() < cols.len() {
            pages.resize_with(cols.len(), Vec::new);
        }
        // the pages of this row group first, then each compressed and written
        let mut by_rows = Vec::new(); // string columns filled below, row block by row block
        for (k, &src) in idx.iter().enumerate() {
            let raw = &mut pages[k];
            raw.clear();
            if src == usize::MAX {
                // a constant (required column): indices into a one-entry dictionary, as one
                // RLE run (bit width 1) of index 0
                raw.push(1);
                let mut v = (rows as u64) << 1;
                while v >= 0x80 {
                    raw.push((v as u8) | 0x80);
                    v >>= 7;
                }
                raw.push(v as u8);
                raw.push(0);
            } else {
                let col = &c.table.cols[src];
                def_levels(col, n, keep, raw);
                if src == LINE_NO {
                    let sel: Vec<usize> = if keep.is_empty() { (0..col.count()).collect() } else { kept_dense(col, n, keep) };
                    for i in sel {
                        raw.extend_from_slice(&(col.fixed(i) as i32).to_le_bytes());
                    }
                } else if col.ty == Ty::Str && keep.is_empty() {
                    by_rows.push((k, src, 0usize));
                } else {
                    values(&c.table, c.input(), col, n, keep, raw);
                }
            }
        }
        // Strings, ROWS rows at a time: the input bytes of those rows stay in cache while
        // every column copies its values out of them (a column-by-column pass re-reads the
        // whole chunk from memory once per column)
        const ROWS: usize = 2048;
        for rb in (0..n).step_by(ROWS) {
            let re = (rb + ROWS).min(n);
            for (k, src, cur) in by_rows.iter_mut() {
                let col = &c.table.cols[*src];
                let cnt = crate::cols::count_set(&col.valid, rb, re);
                put_strings(&c.table, c.input(), col.refs[*cur..*cur + cnt].iter().copied(), &mut pages[*k]);
                *cur += cnt;
            }
        }
        for (k, (oc, &src)) in cols.iter_mut().zip(idx.iter()).enumerate() {
            let raw = &pages[k];
            let (mut csize, mut usize_) = (0, 0);
            let mut dict = None;
            let mut encoding = PLAIN;
            if src == usize::MAX {
                let v: i64 = if oc.name == "file_id" { file_id } else { 0 };
                let d = if oc.phys == Phys::I32 { (v as i32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
                let (c, u) = put_page(&mut w, &d, comp, |t, clen| dict_page_header(t, d.len(), clen, 1))?;
                dict = Some(pos);
                pos += c;
                (csize, usize_) = (c, u);
                encoding = RLE_DICTIONARY;
            }
            let data = pos;
            let (c, u) = put_page(&mut w, raw, comp, |t, clen| page_header(t, raw.len(), clen, rows, encoding))?;
            pos += c;
            oc.chunks.push(ChunkMeta { dict, data, compressed: csize + c, uncompressed: usize_ + u, values: rows as i64 });
        }
        rg_rows.push(rows as i64);
        total += rows;
    }

    footer(&mut w, &cols, &rg_rows, total, Some(file_id))?;
    w.flush()?;
    Ok(total)
}

/// The file's footer (FileMetaData) after its row groups. `stats_file_id`: the constant
/// `file_id` column's min = max statistics.
fn footer<W: Write>(w: &mut W, cols: &[OutCol], rg_rows: &[i64], total: usize, stats_file_id: Option<i64>) -> std::io::Result<()> {
    let mut t = Thrift::new();
    t.i32f(1, 1);
    t.list(2, T_STRUCT, cols.len() + 1);
    t.begin_elem();
    t.strf(4, b"schema");
    t.i32f(5, cols.len() as i32);
    t.end();
    for oc in cols {
        t.begin_elem();
        t.i32f(1, oc.phys as i32);
        t.i32f(3, if oc.optional { OPTIONAL } else { REQUIRED });
        t.strf(4, oc.name.as_bytes());
        match oc.ty {
            Some(Ty::Str) => {
                t.i32f(6, 0); // UTF8
                t.begin(10);
                t.begin(1); // STRING
                t.end();
                t.end();
            }
            Some(Ty::Ts) => {
                t.begin(10);
                t.begin(8); // TIMESTAMP(isAdjustedToUTC = false, MICROS)
                t.field(1, 2); // bool false
                t.begin(2);
                t.begin(2); // MICROS
                t.end();
                t.end();
                t.end();
                t.end();
            }
            _ => {}
        }
        t.end();
    }
    t.i64f(3, total as i64);
    t.list(4, T_STRUCT, rg_rows.len());
    for (g, &rows) in rg_rows.iter().enumerate() {
        t.begin_elem();
        t.list(1, T_STRUCT, cols.len());
        let (mut bytes, mut cbytes) = (0i64, 0i64);
        for oc in cols {
            let m = oc.chunks[g];
            bytes += m.uncompressed;
            cbytes += m.compressed;
            t.begin_elem();
            t.i64f(2, m.start());
            t.begin(3);
            t.i32f(1, oc.phys as i32);
            if m.dict.is_some() {
                t.list(2, T_I32, 3);
                t.zz(PLAIN as i64);
                t.zz(RLE as i64);
                t.zz(RLE_DICTIONARY as i64);
            } else {
                t.list(2, T_I32, 2);
                t.zz(PLAIN as i64);
                t.zz(RLE as i64);
            }
            t.list(3, T_BINARY, 1);
            t.varint(oc.name.len() as u64);
            t.b.extend_from_slice(oc.name.as_bytes());
            t.i32f(4, LZ4_RAW);
            t.i64f(5, m.values);
            t.i64f(6, m.uncompressed);
            t.i64f(7, m.compressed);
            t.i64f(9, m.data);
            if let Some(d) = m.dict {
                t.i64f(11, d);
            }
            if let (Some(file_id), "file_id") = (stats_file_id, oc.name) {
                // min = max = the file's id: readers skip other files' parts by statistics
                // (incremental builds select a run's files by id)
                let v = file_id.to_le_bytes();
                t.begin(12);
                t.i64f(3, 0); // null_count
                t.strf(5, &v); // max_value
                t.strf(6, &v); // min_value
                t.end();
            }
            t.end();
            t.end();
        }
        t.i64f(2, bytes);
        t.i64f(3, rows);
        t.i64f(5, cols[0].chunks[g].start());
        t.i64f(6, cbytes);
        t.field(7, 4); // i16 ordinal
        t.zz(g as i64);
        t.end();
    }
    t.strf(6, b"mtabench-maillog");
    t.b.push(0);
    w.write_all(&t.b)?;
    w.write_all(&(t.b.len() as u32).to_le_bytes())?;
    w.write_all(b"PAR1")?;
    Ok(())
}

/// One column of Arrow buffers to write: validity (empty: no null), offsets (strings), data.
pub struct ArrowCol<'a> {
    pub name: &'static str,
    pub ty: Ty,
    pub valid: &'a [u8],
    pub offsets: &'a [i32],
    pub data: &'a [u8],
}

/// Write `n` rows of Arrow columns as Parquet at `path` (one row group, one page per
/// column): the assembled messages and the counts per minute, a few rows per line.
pub fn write_columns(path: &str, n: usize, cols: &[ArrowCol]) -> std::io::Result<()> {
    BUFS.with(|b| {
        let mut b = b.borrow_mut();
        let (pages, comp) = &mut *b;
        if pages.is_empty() {
            pages.push(Vec::new());
        }
        write_columns_with(path, n, cols, &mut pages[0], comp)
    })
}

fn write_columns_with(path: &str, n: usize, cols: &[ArrowCol], raw: &mut Vec<u8>, comp: &mut Vec<u8>) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    w.write_all(b"PAR1")?;
    let mut pos: i64 = 4;
    let mut out = Vec::with_capacity(cols.len());
    for c in cols {
        raw.clear();
        raw.reserve(n.div_ceil(8) + 16 + if c.ty == Ty::Str { 4 * n + c.data.len() } else { c.data.len() });
        let set = |r: usize| c.valid.is_empty() || is_set(c.valid, r);
        let groups = levels_header(n, raw);
        if c.valid.is_empty() {
            raw.resize(raw.len() + groups, 0xff);
        } else {
            raw.extend_from_slice(&c.valid[..groups]);
        }
        let w8 = match c.ty {
            Ty::I32 => 4,
            Ty::Str => 0,
            _ => 8,
        };
        for r in (0..n).filter(|&r| set(r)) {
            if c.ty == Ty::Str {
                let (a, b) = (c.offsets[r] as usize, c.offsets[r + 1] as usize);
                raw.extend_from_slice(&((b - a) as u32).to_le_bytes());
                raw.extend_from_slice(&c.data[a..b]);
            } else {
                raw.extend_from_slice(&c.data[r * w8..r * w8 + w8]);
            }
        }
        let (csize, usize_) = put_page(&mut w, raw, comp, |t, clen| page_header(t, raw.len(), clen, n, PLAIN))?;
        let meta = ChunkMeta { dict: None, data: pos, compressed: csize, uncompressed: usize_, values: n as i64 };
        pos += csize;
        out.push(OutCol { name: c.name, phys: phys(c.ty), ty: Some(c.ty), optional: true, chunks: vec![meta] });
    }
    footer(&mut w, &out, &[n as i64], n, None)?;
    w.flush()
}

/// Rows of a chunk that are not skipped (empty when none is skipped: callers use 0..n).
fn kept_rows(c: &Chunk) -> Vec<usize> {
    if c.skip.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(c.table.len - c.skip.len());
    let mut s = c.skip.iter().peekable();
    for r in 0..c.table.len {
        if s.peek() == Some(&&(r as u32)) {
            s.next();
        } else {
            out.push(r);
        }
    }
    out
}
