//! Per-stage thread CPU time of the landing's Rust work (one thread): parse, Parquet write.
//! `cargo run --release --example stages -- FILE [OUTDIR]`
use mtabench_maillog::*;
use std::io::Read;

extern "C" {
    fn clock_gettime(clk: i32, ts: *mut [i64; 2]) -> i32;
}
fn cpu() -> f64 {
    let mut t = [0i64; 2];
    unsafe { clock_gettime(3, &mut t) }; // CLOCK_THREAD_CPUTIME_ID
    t[0] as f64 + t[1] as f64 * 1e-9
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let out = std::env::args().nth(2).unwrap_or("/tmp/stages-out".into());
    std::fs::create_dir_all(&out).unwrap();
    let ctx = parse::Ctx::new(2026, 0);
    let mut years = Years::default();
    let mut f = std::fs::File::open(path).unwrap();
    let mut carry: Vec<u8> = Vec::new();
    let (mut t_read, mut t_parse, mut t_write) = (0.0, 0.0, 0.0);
    let (mut lines, mut rows, mut seq) = (0usize, 0usize, 0);
    let mut next = 1i64;
    let mut buf = vec![0u8; 16 << 20];
    loop {
        let t0 = cpu();
        let n = f.read(&mut buf).unwrap();
        let mut data = std::mem::take(&mut carry);
        let t1 = cpu();
        t_read += t1 - t0;
        let done = n == 0;
        let end = if done { data.len() + n } else { memchr::memrchr(b'\n', &buf[..n]).map_or(0, |i| i + 1) + data.len() };
        data.extend_from_slice(&buf[..n]);
        carry = data[end..].to_vec();
        data.truncate(end);
        if data.is_empty() {
            if done { break; }
            continue;
        }
        let t1 = cpu();
        let chunks = parse_block(std::sync::Arc::new(data), &ctx, &mut years, next, 1);
        let t2 = cpu();
        let l: usize = chunks.iter().map(|c| c.table.len).sum();
        next += l as i64;
        lines += l;
        rows += pq::write(&format!("{out}/part-{seq:06}.parquet"), &chunks, 1, false).unwrap();
        let t3 = cpu();
        drop(chunks);
        t_parse += t2 - t1;
        t_write += t3 - t2;
        seq += 1;
        if done { break; }
    }
    println!("lines {lines} rows {rows} parts {seq}");
    println!("read {t_read:.3}  parse {t_parse:.3} ({:.3} us/line)  write {t_write:.3} ({:.3} us/line)", t_parse / lines as f64 * 1e6, t_write / lines as f64 * 1e6);
}
