//! Real line shapes of the recorded runs of other MTAs (samples/mtas/), parsed as the
//! streaming parser does.

mod courier;
mod dovecot;
mod exim;
mod qmail;

use crate::cols::C;
use crate::other::QmailTie;
use crate::parse::Ctx;
use crate::{parse_block_tied, Chunk, Years};
use std::sync::Arc;

pub fn parse(text: &str, tie: &mut QmailTie) -> Vec<Chunk> {
    let ctx = Ctx::new(2026, 0);
    parse_block_tied(Arc::new(text.as_bytes().to_vec()), &ctx, &mut Years::default(), tie, 1, 1)
}

/// Column `c` of every row, as text.
pub fn col(chunks: &[Chunk], c: C) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for ch in chunks {
        let t = &ch.table;
        let rows: Vec<u32> = (0..t.len as u32).collect();
        for i in t.dense_index(c, &rows) {
            out.push(i.map(|i| String::from_utf8_lossy(t.resolve(ch.input(), t.cols[c as usize].refs[i])).into_owned()));
        }
    }
    out
}

/// Integer column `c` of every row.
pub fn int(chunks: &[Chunk], c: C) -> Vec<Option<i64>> {
    let mut out = Vec::new();
    for ch in chunks {
        let t = &ch.table;
        let rows: Vec<u32> = (0..t.len as u32).collect();
        for i in t.dense_index(c, &rows) {
            out.push(i.map(|i| t.cols[c as usize].fixed(i)));
        }
    }
    out
}

pub fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

