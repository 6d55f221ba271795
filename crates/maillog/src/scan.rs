//! Small byte-scanning helpers: each one is the hand-written form of a regex the SQL
//! parser used, with the same leftmost-first result.


/// First occurrence of a short needle: memchr on its first byte, then a compare (log
/// lines are short; building a memmem searcher per call costs more than the search).
#[inline]
pub fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    let Some(&first) = n.first() else { return Some(0) };
    let mut at = 0;
    while at + n.len() <= h.len() {
        let i = memchr::memchr(first, &h[at..=h.len() - n.len()])? + at;
        if &h[i..i + n.len()] == n {
            return Some(i);
        }
        at = i + 1;
    }
    None
}

#[inline]
pub fn rfind_byte(h: &[u8], b: u8) -> Option<usize> {
    memchr::memrchr(b, h)
}

#[inline]
pub fn find_byte(h: &[u8], b: u8) -> Option<usize> {
    memchr::memchr(b, h)
}

#[inline]
pub fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// RE2's \s: [\t\n\f\r ]
#[inline]
pub fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' ')
}

#[inline]
pub fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Length of the run of bytes at the start of `h` satisfying `f`.
#[inline]
pub fn run(h: &[u8], f: impl Fn(u8) -> bool) -> usize {
    h.iter().position(|&b| !f(b)).unwrap_or(h.len())
}

/// Part of `h` before the first `b` (all of it when absent): SQL `upto`.
#[inline]
pub fn upto(h: &[u8], b: u8) -> &[u8] {
    match find_byte(h, b) {
        Some(i) => &h[..i],
        None => h,
    }
}

#[inline]
pub fn nonempty(x: &[u8]) -> Option<&[u8]> {
    if x.is_empty() {
        None
    } else {
        Some(x)
    }
}

/// For each occurrence of `lit` in `h` (leftmost first), `f(rest after lit)` may return the
/// capture; the first capture wins. The shape of `regexp_extract(h, 'lit(...)')`.
pub fn each_after<'a>(h: &'a [u8], lit: &[u8], mut f: impl FnMut(&'a [u8]) -> Option<&'a [u8]>) -> Option<&'a [u8]> {
    let mut start = 0;
    while let Some(i) = find(&h[start..], lit) {
        let at = start + i + lit.len();
        if let Some(c) = f(&h[at..]) {
            return Some(c);
        }
        start += i + 1;
        if start >= h.len() {
            break;
        }
    }
    None
}

/// `lit(\d+)` : the digit run after the first `lit` followed by a digit.
pub fn digits_after<'a>(h: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    each_after(h, lit, |r| {
        let n = run(r, is_digit);
        if n > 0 {
            Some(&r[..n])
        } else {
            None
        }
    })
}

/// `lit(\S+)`
pub fn token_after<'a>(h: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    each_after(h, lit, |r| {
        let n = run(r, |b| !is_space(b));
        if n > 0 {
            Some(&r[..n])
        } else {
            None
        }
    })
}

/// `lit([^c]*)` (nullif '' applied by callers through `nonempty`)
pub fn until_after<'a>(h: &'a [u8], lit: &[u8], stop: u8) -> Option<&'a [u8]> {
    each_after(h, lit, |r| Some(upto(r, stop)))
}

/// `lit([^>]*)>` : needs the closing `>`.
pub fn angle_after<'a>(h: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    each_after(h, lit, |r| find_byte(r, b'>').map(|i| &r[..i]))
}

/// `lit([^>,]*)` after an optional `<`: `lit<?([^>,]*)>?`
pub fn angle_opt_after<'a>(h: &'a [u8], lit: &[u8]) -> Option<&'a [u8]> {
    each_after(h, lit, |r| {
        let r = if r.first() == Some(&b'<') { &r[1..] } else { r };
        Some(&r[..run(r, |b| b != b'>' && b != b',')])
    })
}

/// Integer cast of free text, as DuckDB's try_cast: optional spaces and sign, digits, and
/// an optional fraction (DuckDB casts `12.` and `145.95` too, rounding half away from zero).
pub fn to_int(x: &[u8], min: i64, max: i64) -> Option<i64> {
    // the usual case, a plain run of digits (pid, size, port): the general path's result
    if !x.is_empty() && x.len() <= 18 && x.iter().all(|b| b.is_ascii_digit()) {
        let v = x.iter().fold(0i64, |a, &b| a * 10 + (b - b'0') as i64);
        return if v >= min && v <= max { Some(v) } else { None };
    }
    let s = trim_ascii_ws(x);
    let (neg, d) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (d, up) = match find_byte(d, b'.') {
        Some(p) => {
            let f = &d[p + 1..];
            if (p == 0 && f.is_empty()) || !f.iter().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (&d[..p], f.first().is_some_and(|&b| b >= b'5'))
        }
        None => {
            if d.is_empty() {
                return None;
            }
            (d, false)
        }
    };
    if !d.iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut v: i128 = 0;
    for &b in d {
        v = v * 10 + (b - b'0') as i128;
        if v > (max as i128) + 1 {
            return None;
        }
    }
    let v = v + up as i128;
    let v = if neg { -v } else { v };
    if v < min as i128 || v > max as i128 {
        return None;
    }
    Some(v as i64)
}

pub fn to_i32(x: &[u8]) -> Option<i64> {
    to_int(x, i32::MIN as i64, i32::MAX as i64)
}

pub fn to_i64(x: &[u8]) -> Option<i64> {
    to_int(x, i64::MIN, i64::MAX)
}

/// Digits and dots (`[\d.]+`) as a double; None when not a number (`1.2.3`, `.`).
pub fn to_f64(x: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(x).ok()?;
    if s.is_empty() || s == "." {
        return None;
    }
    s.parse::<f64>().ok()
}

pub fn trim_ascii_ws(x: &[u8]) -> &[u8] {
    let a = x.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(x.len());
    let b = x.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(a, |i| i + 1);
    &x[a..b]
}

/// DuckDB's trim(): strip Unicode space separators (category Zs) at both ends.
pub fn trim_zs(x: &[u8]) -> &[u8] {
    let s = match std::str::from_utf8(x) {
        Ok(s) => s,
        Err(_) => return x,
    };
    let zs = |c: char| {
        matches!(c, ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
    };
    s.trim_matches(zs).as_bytes()
}

/// trim(x, '<>')
pub fn trim_angles(x: &[u8]) -> &[u8] {
    let a = x.iter().position(|&b| b != b'<' && b != b'>').unwrap_or(x.len());
    let b = x.iter().rposition(|&b| b != b'<' && b != b'>').map_or(a, |i| i + 1);
    &x[a..b]
}

/// split_part(x, sep, 1)
pub fn first_field(x: &[u8], sep: u8) -> &[u8] {
    upto(x, sep)
}
