//! mtabench_maillog: the maillog parser (Postfix, Sendmail, Exim, qmail, Dovecot) as a
//! Python extension. Input: blocks of raw bytes; output: Arrow column buffers (values,
//! offsets, validity) that Python assembles zero-copy with `pyarrow.Array.from_buffers`.
//! Big blocks are parsed in parallel on line boundaries; the year roll-over of year-less
//! stamps is carried across chunks and blocks by `Parser`.

pub mod cols;
mod mailbox;
mod other;
pub mod parse;
mod postfix;
pub mod pq;
pub mod scan;
pub mod time;

use cols::{Row, Table, Ty, C, COLUMNS};
use parse::{parse_line, Ctx};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// A parsed chunk: the rows, per row the local month of a syslog stamp (0 otherwise), and
/// the rows that are noise or quarantine (ascending; they land outside raw.maillog).
pub struct Chunk {
    pub table: Table,
    pub months: Vec<u8>,
    pub skip: Vec<u32>,
}

/// Noise (`__noise`) and quarantine (`__quarantine`) rows carry a kind starting with `__`.
#[inline]
fn is_skipped(row: &Row) -> bool {
    row.get_s(C::kind).is_some_and(|k| k.starts_with(b"__"))
}

/// Parse complete lines (`data` ends with `\n`, or is the last line of the input).
pub fn parse_chunk(data: &[u8], ctx: &Ctx) -> Chunk {
    let n_est = memchr::memchr_iter(b'\n', data).count() + 1;
    let mut table = Table::new(n_est);
    let mut months = Vec::with_capacity(n_est);
    let mut skip = Vec::new();
    let mut start = 0usize;
    let mut line_no = 0i64;
    // one check for the whole chunk (the usual case) instead of one per line: a chunk that
    // is valid UTF-8 without NUL has only such lines ('\n' and '\r' are ASCII)
    let clean = memchr::memchr(0, data).is_none() && std::str::from_utf8(data).is_ok();
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        let mut line = &data[start..end];
        start = end + 1;
        line_no += 1;
        while let Some((&b'\r', r)) = line.split_last() {
            line = r;
        }
        let mut row = Row::new();
        row.i(C::line_no, Some(line_no));
        let m;
        if clean {
            months.push(parse_line(line, false, ctx, &mut row));
            if is_skipped(&row) {
                skip.push(table.len as u32);
            }
            table.push(&row);
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(_) if memchr::memchr(0, line).is_none() => {
                m = parse_line(line, false, ctx, &mut row);
                if is_skipped(&row) {
                    skip.push(table.len as u32);
                }
                table.push(&row);
            }
            Ok(s) => {
                let fixed = s.replace('\0', "\u{2400}");
                let mut row2 = Row::new();
                row2.i(C::line_no, Some(line_no));
                m = parse_line(fixed.as_bytes(), false, ctx, &mut row2);
                if is_skipped(&row2) {
                    skip.push(table.len as u32);
                }
                table.push(&row2);
            }
            Err(_) => {
                let fixed = String::from_utf8_lossy(line).replace('\0', "\u{2400}");
                let mut row2 = Row::new();
                row2.i(C::line_no, Some(line_no));
                m = parse_line(fixed.as_bytes(), true, ctx, &mut row2);
                if is_skipped(&row2) {
                    skip.push(table.len as u32);
                }
                table.push(&row2);
            }
        }
        months.push(m);
    }
    table.finish();
    Chunk { table, months, skip }
}

/// Year roll-over state of one file, carried across chunks and blocks: a January run
/// whose log opens in December starts a year earlier; a jump of six or more months back
/// between consecutive stamped lines (Dec -> Jan) adds a year, a jump forward takes it back.
#[derive(Default, Clone)]
pub struct Years {
    pub ref_month: u8,
    pub seen: bool,
    pub prev: u8,
    pub shift: i64,
}

impl Years {
    pub fn apply(&mut self, chunk: &mut Chunk) {
        for r in 0..chunk.months.len() {
            let m = chunk.months[r];
            if m == 0 {
                continue;
            }
            if !self.seen {
                self.seen = true;
                self.shift = if self.ref_month == 1 && m == 12 { -1 } else { 0 };
            } else if self.prev as i64 - m as i64 >= 6 {
                self.shift += 1;
            } else if m as i64 - self.prev as i64 >= 6 {
                self.shift -= 1;
            }
            self.prev = m;
            if self.shift != 0 {
                if let Some(ts) = chunk.table.ts_at(C::ts, r) {
                    chunk.table.set_ts(C::ts, r, time::add_years(ts, self.shift));
                }
            }
        }
    }
}

/// Split `data` on line boundaries into about `n` pieces.
fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let target = data.len() / n.max(1) + 1;
    let mut start = 0;
    while start < data.len() {
        let want = (start + target).min(data.len());
        let end = if want >= data.len() {
            data.len()
        } else {
            memchr::memchr(b'\n', &data[want..]).map_or(data.len(), |i| want + i + 1)
        };
        out.push(&data[start..end]);
        start = end;
    }
    out
}

/// Parse a block in parallel; line numbers continue from `first_line_no`.
pub fn parse_block(data: &[u8], ctx: &Ctx, years: &mut Years, first_line_no: i64, threads: usize) -> Vec<Chunk> {
    let pieces = if data.len() < (1 << 20) || threads <= 1 { vec![data] } else { split(data, threads) };
    let mut chunks: Vec<Chunk> = if pieces.len() == 1 {
        vec![parse_chunk(pieces[0], ctx)]
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = pieces.iter().map(|p| s.spawn(move || parse_chunk(p, ctx))).collect();
            hs.into_iter().map(|h| h.join().expect("parser thread panicked")).collect()
        })
    };
    let mut base = first_line_no - 1;
    for c in &mut chunks {
        years.apply(c);
        let col = &mut c.table.cols[C::line_no as usize];
        for r in 0..c.table.len {
            let v = i64::from_le_bytes(col.data[r * 8..r * 8 + 8].try_into().unwrap()) + base;
            col.data[r * 8..r * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        base += c.table.len as i64;
    }
    chunks
}

/// A Rust-owned byte buffer exposed through the buffer protocol (pyarrow wraps it without a copy).
#[pyclass(module = "mtabench_maillog", frozen)]
struct Buf {
    v: Vec<u8>,
    o: Vec<i32>, // offsets (used instead of v when not empty)
    slot: usize, // cols::pool slot the buffer returns to when Python lets go of it
}

impl Drop for Buf {
    fn drop(&mut self) {
        cols::pool::give_u8(self.slot, std::mem::take(&mut self.v));
        cols::pool::give_i32(self.slot, std::mem::take(&mut self.o));
    }
}

#[pymethods]
impl Buf {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer, flags: std::ffi::c_int) -> PyResult<()> {
        let me = slf.get();
        let (ptr, len) = if me.o.is_empty() {
            (me.v.as_ptr() as *mut std::ffi::c_void, me.v.len())
        } else {
            (me.o.as_ptr() as *mut std::ffi::c_void, me.o.len() * 4)
        };
        let len = len as pyo3::ffi::Py_ssize_t;
        let rc = unsafe { pyo3::ffi::PyBuffer_FillInfo(view, slf.as_ptr(), ptr, len, 1, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.v.len() + self.o.len() * 4
    }
}

fn buf<'py>(py: Python<'py>, v: Vec<u8>, slot: usize) -> PyResult<Bound<'py, PyAny>> {
    Ok(Bound::new(py, Buf { v, o: Vec::new(), slot })?.into_any())
}

fn table_to_py<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let n = t.len;
    for (mut col, &(name, ty)) in t.cols.into_iter().zip(COLUMNS.iter()) {
        let none = || py.None().into_bound(py);
        // a column no line of the chunk set: no buffers (Python makes an all-null array)
        let all_null = col.nulls == n;
        let (valid, offsets, data) = if all_null {
            (none(), none(), none())
        } else {
            let offsets = if ty == Ty::Str {
                let o = std::mem::take(&mut col.offsets);
                Bound::new(py, Buf { v: Vec::new(), o, slot: col.slot })?.into_any()
            } else {
                none()
            };
            let valid = if col.nulls == 0 {
                none()
            } else {
                buf(py, std::mem::take(&mut col.valid), cols::pool::valid_slot(col.slot))?
            };
            (valid, offsets, buf(py, std::mem::take(&mut col.data), cols::pool::data_slot(col.slot))?)
        };
        let item = PyTuple::new(
            py,
            [
                name.into_pyobject(py)?.into_any(),
                ty.name().into_pyobject(py)?.into_any(),
                col.nulls.into_pyobject(py)?.into_any(),
                valid,
                offsets,
                data,
            ],
        )?;
        out.append(item)?;
    }
    Ok(out)
}

/// Streaming parser of one file. `feed(block)` takes any bytes (lines may span blocks) and
/// returns the complete lines parsed, as a list of chunks, each `(n_rows, [(name, type,
/// null_count, validity, offsets|None, data), ...])`; `finish()` parses a last line
/// without a final newline.
#[pyclass(module = "mtabench_maillog")]
struct Parser {
    ctx: Ctx,
    years: Years,
    carry: Vec<u8>,
    next_line: i64,
    threads: usize,
}

#[pymethods]
impl Parser {
    #[new]
    #[pyo3(signature = (year, utc_offset_minutes=0, ref_month=0, threads=0))]
    fn new(year: i64, utc_offset_minutes: i64, ref_month: u8, threads: usize) -> Self {
        let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
        Parser {
            ctx: Ctx::new(year, utc_offset_minutes),
            years: Years { ref_month, ..Default::default() },
            carry: Vec::new(),
            next_line: 1,
            threads,
        }
    }

    fn feed<'py>(&mut self, py: Python<'py>, block: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let Some(last) = memchr::memrchr(b'\n', block) else {
            self.carry.extend_from_slice(block);
            return Ok(PyList::empty(py));
        };
        let owned;
        let data: &[u8] = if self.carry.is_empty() {
            &block[..=last]
        } else {
            let mut v = std::mem::take(&mut self.carry);
            v.extend_from_slice(&block[..=last]);
            owned = v;
            &owned
        };
        let chunks = self.run(py, data);
        self.carry = block[last + 1..].to_vec();
        chunks_to_py(py, chunks)
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        if self.carry.is_empty() {
            return Ok(PyList::empty(py));
        }
        let data = std::mem::take(&mut self.carry);
        let chunks = self.run(py, &data);
        chunks_to_py(py, chunks)
    }

    /// As `feed`, but the parsed lines stay in Rust as a `Block` that writes itself as a
    /// Parquet part (None when the block completed no line).
    fn feed_block(&mut self, py: Python<'_>, block: &[u8]) -> Option<Block> {
        let last = match memchr::memrchr(b'\n', block) {
            Some(i) => i,
            None => {
                self.carry.extend_from_slice(block);
                return None;
            }
        };
        let mut v = std::mem::take(&mut self.carry);
        let chunks = if v.is_empty() {
            self.run(py, &block[..=last])
        } else {
            v.extend_from_slice(&block[..=last]);
            self.run(py, &v)
        };
        self.carry = block[last + 1..].to_vec();
        Some(Block { chunks })
    }

    fn finish_block(&mut self, py: Python<'_>) -> Option<Block> {
        if self.carry.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.carry);
        Some(Block { chunks: self.run(py, &data) })
    }

    #[getter]
    fn lines(&self) -> i64 {
        self.next_line - 1
    }
}

impl Parser {
    fn run(&mut self, py: Python<'_>, data: &[u8]) -> Vec<Chunk> {
        let (ctx, years, first, threads) = (&self.ctx, &mut self.years, self.next_line, self.threads);
        let chunks = py.detach(|| parse_block(data, ctx, years, first, threads));
        self.next_line += chunks.iter().map(|c| c.table.len as i64).sum::<i64>();
        chunks
    }
}

/// Parsed lines of one input block, kept in Rust until written.
#[pyclass(module = "mtabench_maillog", frozen)]
struct Block {
    chunks: Vec<Chunk>,
}

#[pymethods]
impl Block {
    /// Lines in the block (rows, noise and quarantine).
    #[getter]
    fn lines(&self) -> usize {
        self.chunks.iter().map(|c| c.table.len).sum()
    }

    /// Rows that go to the Parquet part (lines that are neither noise nor quarantine).
    #[getter]
    fn rows(&self) -> usize {
        self.chunks.iter().map(|c| c.table.len - c.skip.len()).sum()
    }

    /// Noise and quarantine lines: [(line_no, kind, detail, message)].
    fn skipped(&self) -> Vec<(i64, String, Option<String>, Option<String>)> {
        let mut out = Vec::new();
        for c in &self.chunks {
            for &r in &c.skip {
                let r = r as usize;
                let s = |col: C| c.table.str_at(col, r).map(|b| String::from_utf8_lossy(b).into_owned());
                out.push((c.table.i64_at(C::line_no, r), s(C::kind).unwrap_or_default(), s(C::detail), s(C::message)));
            }
        }
        out
    }

    /// Write the rows as a Parquet file at `path` (GIL released); returns the rows written.
    /// `all_columns`: write null columns too (a folder of parts with one schema).
    #[pyo3(signature = (path, file_id, all_columns=false))]
    fn write(&self, py: Python<'_>, path: &str, file_id: i64, all_columns: bool) -> PyResult<usize> {
        py.detach(|| pq::write(path, &self.chunks, file_id, all_columns)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }
}

fn chunks_to_py<'py>(py: Python<'py>, chunks: Vec<Chunk>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for c in chunks {
        let n = c.table.len;
        let cols = table_to_py(py, c.table)?;
        out.append(PyTuple::new(py, [n.into_pyobject(py)?.into_any(), cols.into_any()])?)?;
    }
    Ok(out)
}

/// The output columns: [(name, arrow type name)].
#[pyfunction]
fn columns() -> Vec<(&'static str, &'static str)> {
    COLUMNS.iter().map(|&(n, t)| (n, t.name())).collect()
}

#[pymodule]
fn mtabench_maillog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Parser>()?;
    m.add_class::<Buf>()?;
    m.add_class::<Block>()?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    Ok(())
}
