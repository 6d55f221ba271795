//! What the crate's tests share: a line parsed as the parser does, and its columns as text or
//! integer.

use crate::cols::{Row, C, V};
use crate::parse::{parse_line, Ctx};

/// One line through `parse_line`, with 2026 for year-less stamps and UTC.
pub fn parsed<L: AsRef<[u8]> + ?Sized>(line: &L) -> Row<'_> {
    let mut row = Row::new();
    parse_line(line.as_ref(), false, &Ctx::new(2026, 0), &mut row);
    row
}

pub fn s<'a>(row: &Row<'a>, c: C) -> Option<&'a str> {
    row.get_s(c).map(|x| std::str::from_utf8(x).unwrap())
}

pub fn i(row: &Row, c: C) -> Option<i64> {
    match row.get(c) {
        V::I(x) => Some(x),
        _ => None,
    }
}
