use mtabench_maillog::*;
fn main() {
    let data = std::fs::read(std::env::args().nth(1).unwrap()).unwrap();
    let ctx = parse::Ctx::new(2026, 0);
    for threads in [1] {
        let mut y = Years::default();
        let t = std::time::Instant::now();
        let c = parse_block(std::sync::Arc::new(data.clone()), &ctx, &mut y, 1, threads);
        let n: usize = c.iter().map(|c| c.table.len).sum();
        let s = t.elapsed().as_secs_f64();
        println!("threads {threads}: {n} lines {s:.2}s {:.0} lines/s", n as f64 / s);
    }
}
