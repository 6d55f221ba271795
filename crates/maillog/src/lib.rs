//! mtabench_maillog: the maillog parser (Postfix, Sendmail, Exim, qmail, Courier, Dovecot) as a
//! Python extension. Input: blocks of raw bytes; output: Arrow column buffers (values,
//! offsets, validity) that Python assembles zero-copy with `pyarrow.Array.from_buffers`.
//! Big blocks are parsed in parallel on line boundaries; the year roll-over of year-less
//! stamps is carried across chunks and blocks by `Parser`.

pub mod assemble;
pub mod classify;
pub mod cols;
mod courier;
mod journal;
mod mailbox;
mod milter;
pub mod other;
pub mod parse;
mod postfix;
pub mod pq;
pub mod scan;
pub mod stream;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod test_util;
pub mod time;

use cols::{Row, Table, Ty, C, COLUMNS};
use other::QmailTie;
use parse::{is_unknown, parse_line, Ctx};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::{Arc, Mutex};
use stream::{lock, ParseState, Tally};

/// A parsed chunk: the rows, per row the local month of a syslog stamp (0 otherwise), the
/// rows that are noise or quarantine (ascending; they land outside raw.maillog), and the
/// input bytes (`data[start..end]`) the rows' string values refer to.
pub struct Chunk {
    pub table: Table,
    pub months: Vec<u8>,
    pub skip: Vec<u32>,
    /// rows of a known program filed as kind `other` (ascending)
    pub unknown: Vec<u32>,
    pub data: Arc<Vec<u8>>,
    pub start: usize,
    pub end: usize,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // the last chunk of a block hands the block's buffer back for the next read
        if let Ok(v) = Arc::try_unwrap(std::mem::take(&mut self.data)) {
            cols::pool::give_block(v);
        }
    }
}

impl Chunk {
    /// The chunk's input bytes (string references are relative to them).
    pub fn input(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }
}

/// What parse_chunk returns: a Chunk without its input.
pub struct Parsed {
    pub table: Table,
    pub months: Vec<u8>,
    pub skip: Vec<u32>,
    pub unknown: Vec<u32>,
}

/// Noise (`__noise`) and quarantine (`__quarantine`) rows carry a kind starting with `__`.
#[inline]
fn is_skipped(row: &Row) -> bool {
    row.get_s(C::kind).is_some_and(|k| k.starts_with(b"__"))
}

/// Parse complete lines (`data` ends with `\n`, or is the last line of the input).
/// `data` must be shorter than 2 GiB (string references hold 31-bit offsets).
pub fn parse_chunk(data: &[u8], ctx: &Ctx, tie: &mut QmailTie) -> Parsed {
    // a size estimate (buffers grow past it): counting the lines first costs a pass
    let n_est = data.len() / 64 + 1;
    let mut table = Table::new(n_est);
    let mut months = Vec::with_capacity(n_est);
    let mut skip = Vec::new();
    let mut unknown = Vec::new();
    let mut start = 0usize;
    let mut line_no = 0i64;
    // one check for the whole chunk (the usual case) instead of one per line: a chunk that
    // is valid UTF-8 without NUL has only such lines ('\n' and '\r' are ASCII)
    let clean = memchr::memchr(0, data).is_none() && std::str::from_utf8(data).is_ok();
    let mut across = other::AcrossLines::default();
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        let mut line = &data[start..end];
        start = end + 1;
        line_no += 1;
        while let Some((&b'\r', r)) = line.split_last() {
            line = r;
        }
        // a `journalctl -o json` object: parsed as the syslog line it stands for
        if line.first() == Some(&b'{') && journal::is_journal_json(line) {
            if let Some(fixed) = journal::to_syslog(line) {
                // a field's bytes may be invalid UTF-8 or hold a NUL (`\u0000`): as other lines
                let fixed = match std::str::from_utf8(&fixed) {
                    Ok(s) if !s.contains('\0') => fixed,
                    _ => String::from_utf8_lossy(&fixed).replace('\0', "\u{2400}").into_bytes(),
                };
                let mut row2 = Row::new();
                row2.i(C::line_no, Some(line_no));
                months.push(parse_line(&fixed, false, ctx, &mut row2));
                if is_skipped(&row2) {
                    skip.push(table.len as u32);
                } else {
                    row2.s(C::ts_format, b"journal_json");
                }
                classify::set(&mut row2);
                table.push(&row2, data, &fixed);
                continue;
            }
        }
        // a qmail delivery's message number and recipient, which its line does not carry
        // (QmailTie)
        let mut qid = Vec::new();
        let mut row = Row::new();
        row.i(C::line_no, Some(line_no));
        let m;
        if clean {
            months.push(parse_line(line, false, ctx, &mut row));
            across.see(&mut row);
            if is_skipped(&row) {
                skip.push(table.len as u32);
            } else if is_unknown(&row) {
                unknown.push(table.len as u32);
            }
            if let Some(t) = tied(&mut row, tie, &mut qid) {
                t.set(&mut row, &qid);
            }
            classify::set(&mut row);
            table.push(&row, data, &qid);
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(_) if memchr::memchr(0, line).is_none() => {
                m = parse_line(line, false, ctx, &mut row);
                across.see(&mut row);
                if is_skipped(&row) {
                    skip.push(table.len as u32);
                } else if is_unknown(&row) {
                    unknown.push(table.len as u32);
                }
                if let Some(t) = tied(&mut row, tie, &mut qid) {
                    t.set(&mut row, &qid);
                }
                classify::set(&mut row);
                table.push(&row, data, &qid);
            }
            Ok(s) => {
                let fixed = s.replace('\0', "\u{2400}");
                let mut row2 = Row::new();
                row2.i(C::line_no, Some(line_no));
                m = parse_line(fixed.as_bytes(), false, ctx, &mut row2);
                across.see(&mut row2);
                if is_skipped(&row2) {
                    skip.push(table.len as u32);
                } else if is_unknown(&row2) {
                    unknown.push(table.len as u32);
                }
                tie.apply(&mut row2); // the repaired text is the arena's `temp`: no queue id tie
                classify::set(&mut row2);
                table.push(&row2, data, fixed.as_bytes());
            }
            Err(_) => {
                let fixed = String::from_utf8_lossy(line).replace('\0', "\u{2400}");
                let mut row2 = Row::new();
                row2.i(C::line_no, Some(line_no));
                m = parse_line(fixed.as_bytes(), true, ctx, &mut row2);
                if is_skipped(&row2) {
                    skip.push(table.len as u32);
                } else if is_unknown(&row2) {
                    unknown.push(table.len as u32);
                }
                classify::set(&mut row2);
                table.push(&row2, data, fixed.as_bytes());
            }
        }
        months.push(m);
    }
    table.finish();
    Parsed { table, months, skip, unknown }
}

/// Tie a qmail delivery row to its start: Some when `qid` received the message number's
/// digits (the row's queue_id) followed by the recipient's bytes (the table copies them to
/// its arena, as a repaired line's text, so a value of the last line is never taken for a
/// constant).
#[inline]
fn tied(row: &mut Row<'_>, tie: &mut QmailTie, qid: &mut Vec<u8>) -> Option<Tied> {
    let e = tie.apply(row)?;
    qid.extend_from_slice(e.msg.to_string().as_bytes());
    let digits = qid.len();
    qid.extend_from_slice(&e.recipient);
    Some(Tied { digits, mailer: e.mailer, returns: e.returns })
}

/// Where a tied row's values sit in `qid` (tied), and its mailer.
struct Tied {
    digits: usize,
    mailer: Option<&'static [u8]>,
    returns: bool,
}

impl Tied {
    #[inline]
    fn set<'a>(&self, row: &mut Row<'a>, qid: &'a [u8]) {
        if self.returns {
            // a bounce's `info msg`: the message it returns
            row.s(C::related_queue_id, &qid[..self.digits]);
            return;
        }
        row.s(C::queue_id, &qid[..self.digits]);
        if qid.len() > self.digits && row.get_s(C::recipient).is_none() {
            row.s(C::recipient, &qid[self.digits..]);
        }
        if row.get_s(C::mailer).is_none() {
            row.so(C::mailer, self.mailer);
        }
    }
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
        let ts = &mut chunk.table.cols[C::ts as usize];
        let mut idx = 0; // dense index of row r's ts value
        for r in 0..chunk.months.len() {
            let m = chunk.months[r];
            let has_ts = ts.is_set(r);
            if m == 0 {
                idx += has_ts as usize;
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
            if has_ts {
                if self.shift != 0 {
                    let v = ts.fixed(idx);
                    ts.set_fixed(idx, time::add_years(v, self.shift));
                }
                idx += 1;
            }
        }
    }
}

/// Input bytes of one piece at most: string references hold 31-bit offsets, and a repaired
/// line's text (up to 3x its bytes) goes to the arena, perhaps in more than one column, as
/// do the Arrow path's 32-bit offsets; 64 MiB keeps both far below 2 GiB.
const MAX_PIECE: usize = 64 << 20;

/// Split `data` on line boundaries into about `n` pieces: (start, end).
fn split(data: &[u8], n: usize) -> Vec<(usize, usize)> {
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
        out.push((start, end));
        start = end;
    }
    out
}

/// Parse a block in parallel; line numbers continue from `first_line_no`. The chunks keep
/// `data` (their string values refer to it).
pub fn parse_block(data: Arc<Vec<u8>>, ctx: &Ctx, years: &mut Years, first_line_no: i64, threads: usize) -> Vec<Chunk> {
    parse_block_tied(data, ctx, years, &mut QmailTie::default(), first_line_no, threads)
}

/// As parse_block, with the qmail state carried from the stream's earlier blocks. qmail's
/// lines are parsed in order, one piece after the other: a delivery's end is tied to its start
/// by the lines before it. So a block of multilog lines (`@4000...`), and every block after
/// one that held a qmail line, is parsed in order; a block parsed in parallel pieces that
/// turns out to hold qmail lines (through syslog, among other programs') is parsed again so.
pub fn parse_block_tied(
    data: Arc<Vec<u8>>,
    ctx: &Ctx,
    years: &mut Years,
    tie: &mut QmailTie,
    first_line_no: i64,
    threads: usize,
) -> Vec<Chunk> {
    let in_order = data.first() == Some(&b'@') || tie.seen;
    let n = if data.len() < (1 << 20) || threads <= 1 || in_order { 1 } else { threads };
    let n = n.max(data.len().div_ceil(MAX_PIECE));
    let pieces = if n == 1 { vec![(0, data.len())] } else { split(&data, n) };
    let in_turn = |tie: &mut QmailTie| pieces.iter().map(|&(a, b)| parse_chunk(&data[a..b], ctx, tie)).collect();
    let parsed: Vec<Parsed> = if pieces.len() == 1 || in_order {
        in_turn(tie)
    } else {
        let (parsed, qmail): (Vec<Parsed>, Vec<bool>) = std::thread::scope(|s| {
            let d = &data;
            let hs: Vec<_> = pieces
                .iter()
                .map(|&(a, b)| {
                    s.spawn(move || {
                        let mut t = QmailTie::default();
                        (parse_chunk(&d[a..b], ctx, &mut t), t.seen)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("parser thread panicked")).unzip()
        });
        if qmail.contains(&true) {
            drop(parsed);
            in_turn(tie)
        } else {
            parsed
        }
    };
    let mut chunks: Vec<Chunk> = parsed
        .into_iter()
        .zip(pieces)
        .map(|(p, (start, end))| Chunk {
            table: p.table,
            months: p.months,
            skip: p.skip,
            unknown: p.unknown,
            data: data.clone(),
            start,
            end,
        })
        .collect();
    let mut base = first_line_no - 1;
    for c in &mut chunks {
        years.apply(c);
        let col = &mut c.table.cols[C::line_no as usize]; // set on every row
        for i in 0..col.count() {
            let v = col.fixed(i) + base;
            col.set_fixed(i, v);
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

fn table_to_py<'py>(py: Python<'py>, mut c: Chunk) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (i, &(name, ty)) in COLUMNS.iter().enumerate() {
        let none = || py.None().into_bound(py);
        let (slot, nulls) = (c.table.cols[i].slot, c.table.cols[i].nulls);
        // a column no line of the chunk set: no buffers (Python makes an all-null array)
        let input = &c.data[c.start..c.end];
        let (valid, offsets, data) = match c.table.arrow(i, input) {
            None => (none(), none(), none()),
            Some((v, o, d)) => {
                let offsets =
                    if ty == Ty::Str { Bound::new(py, Buf { v: Vec::new(), o, slot })?.into_any() } else { none() };
                let valid = if nulls == 0 {
                    cols::pool::give_u8(cols::pool::valid_slot(slot), v);
                    none()
                } else {
                    buf(py, v, cols::pool::valid_slot(slot))?
                };
                (valid, offsets, buf(py, d, cols::pool::data_slot(slot))?)
            }
        };
        let item = PyTuple::new(
            py,
            [
                name.into_pyobject(py)?.into_any(),
                ty.name().into_pyobject(py)?.into_any(),
                nulls.into_pyobject(py)?.into_any(),
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
/// without a final newline. `stream(fd)` reads a plain file itself (crate::stream).
#[pyclass(module = "mtabench_maillog")]
struct Parser {
    state: Arc<Mutex<ParseState>>,
    tally: Arc<Tally>,
    carry: Vec<u8>,
}

#[pymethods]
impl Parser {
    #[new]
    #[pyo3(signature = (year, utc_offset_minutes=0, ref_month=0, threads=0, messages=None))]
    fn new(year: i64, utc_offset_minutes: i64, ref_month: u8, threads: usize, messages: Option<Py<Messages>>) -> Self {
        let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
        let state = ParseState {
            ctx: Ctx::new(year, utc_offset_minutes),
            years: Years { ref_month, ..Default::default() },
            tie: QmailTie::default(),
            next_line: 1,
            threads,
        };
        let tally = Tally { minutes: Mutex::new(assemble::Minutes::default()), messages: messages.map(|m| m.get().inner.clone()) };
        Parser { state: Arc::new(Mutex::new(state)), tally: Arc::new(tally), carry: Vec::new() }
    }

    /// Write the file's counts per minute as Parquet at `path`; returns the rows.
    fn write_minutes(&self, py: Python<'_>, path: &str, file_id: i64) -> PyResult<usize> {
        let t = &self.tally;
        py.detach(|| lock(&t.minutes).write(path, file_id)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
    }

    /// The file's counts per minute so far: [(minute start as epoch µs, lines, received,
    /// delivered, deferred, bounced, rejected)] in minute order.
    fn minutes(&self) -> Vec<(i64, i64, i64, i64, i64, i64, i64)> {
        lock(&self.tally.minutes).rows().into_iter().map(|(m, c)| (m, c[0], c[1], c[2], c[3], c[4], c[5])).collect()
    }

    fn feed<'py>(&mut self, py: Python<'py>, block: &[u8]) -> PyResult<Bound<'py, PyList>> {
        match self.take_lines(block) {
            Some(data) => {
                let chunks = self.run(py, data);
                chunks_to_py(py, chunks)
            }
            None => Ok(PyList::empty(py)),
        }
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        if self.carry.is_empty() {
            return Ok(PyList::empty(py));
        }
        let data = std::mem::take(&mut self.carry);
        let chunks = self.run(py, data);
        chunks_to_py(py, chunks)
    }

    /// As `feed`, but the parsed lines stay in Rust as a `Block` that writes itself as a
    /// Parquet part (None when the block completed no line).
    fn feed_block(&mut self, py: Python<'_>, block: &[u8]) -> Option<Block> {
        let data = self.take_lines(block)?;
        Some(Block { chunks: self.run(py, data) })
    }

    fn finish_block(&mut self, py: Python<'_>) -> Option<Block> {
        if self.carry.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.carry);
        Some(Block { chunks: self.run(py, data) })
    }

    /// Read the plain file open as `fd` from its position to its end, in blocks of `block`
    /// bytes, on threads of the crate's own: read and hashed, parsed, counted and assembled
    /// (crate::stream). The descriptor is duplicated: the caller may close its own.
    #[pyo3(signature = (fd, block=8 << 20))]
    fn stream(&self, fd: i32, block: usize) -> PyResult<BlockStream> {
        use std::os::fd::BorrowedFd;
        // SAFETY: the caller keeps `fd` open for this call; the stream reads its own duplicate
        let file = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?;
        let s = stream::Stream::start(file.into(), block, self.state.clone(), self.tally.clone());
        Ok(BlockStream { inner: s })
    }

    #[getter]
    fn lines(&self) -> i64 {
        lock(&self.state).next_line - 1
    }
}

impl Parser {
    /// The complete lines `block` ends (with the carried start of the first), as one
    /// buffer the chunks keep; the rest is carried. None when no line is complete.
    fn take_lines(&mut self, block: &[u8]) -> Option<Vec<u8>> {
        let Some(last) = memchr::memrchr(b'\n', block) else {
            self.carry.extend_from_slice(block);
            return None;
        };
        let mut v = std::mem::take(&mut self.carry);
        v.reserve_exact(last + 1);
        v.extend_from_slice(&block[..=last]);
        self.carry = block[last + 1..].to_vec();
        Some(v)
    }

    /// Parse, then count and assemble in line order.
    fn run(&mut self, py: Python<'_>, data: Vec<u8>) -> Vec<Chunk> {
        let (state, tally) = (&self.state, &self.tally);
        py.detach(|| {
            let chunks = lock(state).parse(data);
            tally.feed(&chunks);
            chunks
        })
    }
}

/// A plain file's blocks as the crate's threads read and parse them (`Parser.stream`).
#[pyclass(module = "mtabench_maillog", frozen)]
struct BlockStream {
    inner: stream::Stream,
}

#[pymethods]
impl BlockStream {
    /// The next parsed block (None after the last); a read error is raised as OSError.
    fn next(&self, py: Python<'_>) -> PyResult<Option<Block>> {
        match py.detach(|| self.inner.next()) {
            None => Ok(None),
            Some(Ok(chunks)) => Ok(Some(Block { chunks })),
            Some(Err(e)) => Err(e.into()),
        }
    }

    /// The SHA-256 (hex) of the file's bytes from the stream's start, once every block was
    /// taken (None before, or after a read error).
    #[getter]
    fn sha256(&self) -> Option<String> {
        use std::fmt::Write;
        let d = self.inner.digest()?;
        Some(d.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        }))
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
            let t = &c.table;
            let idx = |col: C| t.dense_index(col, &c.skip);
            let (kind, detail, message) = (idx(C::kind), idx(C::detail), idx(C::message));
            let s = |col: C, i: Option<usize>| {
                i.map(|i| String::from_utf8_lossy(t.resolve(c.input(), t.cols[col as usize].refs[i])).into_owned())
            };
            let line_no = &t.cols[C::line_no as usize]; // set on every row
            for (j, &r) in c.skip.iter().enumerate() {
                out.push((
                    line_no.fixed(r as usize),
                    s(C::kind, kind[j]).unwrap_or_default(),
                    s(C::detail, detail[j]),
                    s(C::message, message[j]),
                ));
            }
        }
        out
    }

    /// Line numbers of the lines of a known program the parser filed as kind `other`
    /// (shapes it does not understand; `parse::known_program`).
    fn unknown(&self) -> Vec<i64> {
        let mut out = Vec::new();
        for c in &self.chunks {
            let line_no = &c.table.cols[C::line_no as usize]; // set on every row
            out.extend(c.unknown.iter().map(|&r| line_no.fixed(r as usize)));
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

/// The messages of a run's maillog stream (crate::assemble): pass it to the `Parser` of each
/// of the run's maillog files in time order, calling `start_file(file_id)` before each.
#[pyclass(module = "mtabench_maillog", frozen)]
struct Messages {
    inner: Arc<Mutex<assemble::Assembler>>,
}

impl Messages {
    fn lock(&self) -> std::sync::MutexGuard<'_, assemble::Assembler> {
        lock(&self.inner)
    }
}

#[pymethods]
impl Messages {
    /// `horizon_seconds`: a message no line of which came for this long (log time) is complete.
    #[new]
    #[pyo3(signature = (horizon_seconds=7.0 * 86400.0))]
    fn new(horizon_seconds: f64) -> Self {
        Messages { inner: Arc::new(Mutex::new(assemble::Assembler::new((horizon_seconds * 1e6) as i64))) }
    }

    fn start_file(&self, file_id: i64) {
        self.lock().start_file(file_id)
    }

    /// Messages complete and not yet taken.
    #[getter]
    fn emitted(&self, py: Python<'_>) -> usize {
        // the stream's counting thread may hold the lock for a block: wait without the GIL
        py.detach(|| self.lock().emitted())
    }

    /// Messages still open.
    #[getter]
    fn open(&self) -> usize {
        self.lock().open_messages()
    }

    /// The complete messages, taken out: (rows, [(name, type, null_count, validity|None,
    /// offsets|None, data)]), as `Parser.feed` returns a chunk.
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let b = self.lock().take();
        batch_to_py(py, b)
    }

    /// Write the complete messages as a Parquet file at `path` and take them out (GIL
    /// released); returns the rows (0: nothing written). `file_id`: a constant column.
    #[pyo3(signature = (path, file_id=None))]
    fn write(&self, py: Python<'_>, path: &str, file_id: Option<i64>) -> PyResult<usize> {
        let b = py.detach(|| self.lock().take());
        let n = write_batch(py, &b, path, file_id)?;
        py.detach(|| self.lock().give_back(b));
        Ok(n)
    }

    /// The end of the stream: every open message is complete; written as `write` does.
    #[pyo3(signature = (path, file_id=None))]
    fn finish_write(&self, py: Python<'_>, path: &str, file_id: Option<i64>) -> PyResult<usize> {
        let b = py.detach(|| self.lock().finish());
        write_batch(py, &b, path, file_id)
    }

    /// The end of the stream: every open message too.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let b = self.lock().finish();
        batch_to_py(py, b)
    }
}

fn write_batch(py: Python<'_>, b: &assemble::Batch, path: &str, file_id: Option<i64>) -> PyResult<usize> {
    if b.len == 0 {
        return Ok(0);
    }
    py.detach(|| b.write(path, file_id)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

fn batch_to_py<'py>(py: Python<'py>, b: assemble::Batch) -> PyResult<Bound<'py, PyTuple>> {
    let n = b.len;
    let out = PyList::empty(py);
    let none = || py.None().into_bound(py);
    for (name, ty, nulls, valid, offsets, data) in b.into_arrow() {
        let valid = if nulls == 0 { none() } else { buf(py, valid, usize::MAX)? };
        let offsets =
            if ty == "string" { Bound::new(py, Buf { v: Vec::new(), o: offsets, slot: usize::MAX })?.into_any() } else { none() };
        let item = PyTuple::new(
            py,
            [
                name.into_pyobject(py)?.into_any(),
                ty.into_pyobject(py)?.into_any(),
                nulls.into_pyobject(py)?.into_any(),
                valid,
                offsets,
                buf(py, data, usize::MAX)?,
            ],
        )?;
        out.append(item)?;
    }
    PyTuple::new(py, [n.into_pyobject(py)?.into_any(), out.into_any()])
}

/// The first time stamp (epoch µs, UTC) among the complete lines of `head` (None: no line
/// of it has one): where a maillog file sits in its run's stream.
#[pyfunction]
#[pyo3(signature = (head, year, utc_offset_minutes=0))]
fn first_stamp(head: &[u8], year: i64, utc_offset_minutes: i64) -> Option<i64> {
    let end = memchr::memrchr(b'\n', head).map_or(head.len(), |i| i + 1);
    let ctx = Ctx::new(year, utc_offset_minutes);
    let p = parse_chunk(&head[..end], &ctx, &mut QmailTie::default());
    let ts = &p.table.cols[C::ts as usize];
    (ts.count() > 0).then(|| ts.fixed(0))
}

/// The columns of an assembled message: [(name, arrow type name)].
#[pyfunction]
fn message_columns() -> Vec<(&'static str, &'static str)> {
    assemble::MESSAGE_COLUMNS.iter().map(|&(n, t)| (n, t.name())).collect()
}

fn chunks_to_py<'py>(py: Python<'py>, chunks: Vec<Chunk>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for c in chunks {
        let n = c.table.len;
        let cols = table_to_py(py, c)?;
        out.append(PyTuple::new(py, [n.into_pyobject(py)?.into_any(), cols.into_any()])?)?;
    }
    Ok(out)
}

/// Whether `program` (a syslog tag's program) is one whose lines the parser is meant to
/// understand: its `other` lines are shapes the parser misses.
#[pyfunction]
fn known_program(program: &str) -> bool {
    parse::known_program(program.as_bytes())
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
    m.add_class::<BlockStream>()?;
    m.add_class::<Messages>()?;
    m.add_function(wrap_pyfunction!(message_columns, m)?)?;
    m.add_function(wrap_pyfunction!(first_stamp, m)?)?;
    m.add_function(wrap_pyfunction!(columns, m)?)?;
    m.add_function(wrap_pyfunction!(known_program, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests;
