//! A plain file parsed by a pipeline of threads: one reads blocks and hashes them, one
//! parses each block (in parallel pieces), one counts the lines per minute and assembles
//! the messages, in line order. Each stage hands a block to the next only when that one
//! takes it (rendezvous channels), so a block is held by one stage at a time and memory stays
//! flat whatever the file's size, while the three stages and the caller's Parquet writers
//! keep the cores busy.

use crate::assemble::{Assembler, Minutes};
use crate::other::QmailTie;
use crate::parse::Ctx;
use crate::{cols, parse_block_tied, Chunk, Years};
use sha2::Digest;
use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};

/// Lock a mutex whose holder may have panicked (the state is still consistent: each stage
/// updates it only between blocks).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What parsing one file carries from block to block.
pub struct ParseState {
    pub ctx: Ctx,
    pub years: Years,
    pub tie: QmailTie,
    pub next_line: i64,
    pub threads: usize,
}

impl ParseState {
    /// Parse complete lines (`data` ends with a line end, or is the file's last line).
    pub fn parse(&mut self, data: Vec<u8>) -> Vec<Chunk> {
        let chunks =
            parse_block_tied(Arc::new(data), &self.ctx, &mut self.years, &mut self.tie, self.next_line, self.threads);
        self.next_line += chunks.iter().map(|c| c.table.len as i64).sum::<i64>();
        chunks
    }
}

/// Where a file's parsed blocks are counted, in line order.
pub struct Tally {
    pub minutes: Mutex<Minutes>,
    pub messages: Option<Arc<Mutex<Assembler>>>,
}

impl Tally {
    pub fn feed(&self, chunks: &[Chunk]) {
        let mut m = lock(&self.minutes);
        for c in chunks {
            m.feed(c);
        }
        drop(m);
        if let Some(a) = &self.messages {
            let mut a = lock(a);
            for c in chunks {
                a.feed(c);
            }
        }
    }
}

pub type Item = std::io::Result<Vec<Chunk>>;

/// The running pipeline of one file: `next` gives its parsed, counted blocks in order.
pub struct Stream {
    out: Mutex<Receiver<Item>>,
    digest: Arc<Mutex<Option<[u8; 32]>>>,
}

impl Stream {
    /// Start reading `file` from its position in blocks of `block` bytes.
    pub fn start(file: std::fs::File, block: usize, parse: Arc<Mutex<ParseState>>, tally: Arc<Tally>) -> Stream {
        let (read_tx, read_rx) = sync_channel::<std::io::Result<Vec<u8>>>(0);
        let (parsed_tx, parsed_rx) = sync_channel::<Item>(0);
        let (out_tx, out) = sync_channel::<Item>(0);
        let digest = Arc::new(Mutex::new(None));
        let d = digest.clone();
        std::thread::Builder::new()
            .name("maillog-read".into())
            .spawn(move || read(file, block.max(1), &read_tx, &d))
            .expect("spawn the maillog reader");
        std::thread::Builder::new()
            .name("maillog-parse".into())
            .spawn(move || {
                for item in read_rx {
                    let item = item.map(|data| lock(&parse).parse(data));
                    if parsed_tx.send(item).is_err() {
                        return; // the stream was dropped
                    }
                }
            })
            .expect("spawn the maillog parser");
        std::thread::Builder::new()
            .name("maillog-count".into())
            .spawn(move || {
                for item in parsed_rx {
                    if let Ok(chunks) = &item {
                        tally.feed(chunks);
                    }
                    if out_tx.send(item).is_err() {
                        return;
                    }
                }
            })
            .expect("spawn the maillog counter");
        Stream { out: Mutex::new(out), digest }
    }

    /// The next block's chunks; None after the last (or after a read error was given).
    pub fn next(&self) -> Option<Item> {
        lock(&self.out).recv().ok()
    }

    /// The SHA-256 of every byte read, once the whole file was (None before, or after an error).
    pub fn digest(&self) -> Option<[u8; 32]> {
        *lock(&self.digest)
    }
}

/// The reader: blocks of whole lines (a line spanning reads is carried to the next block; the
/// file's last line may lack its end), each hashed as read.
fn read(file: std::fs::File, block: usize, tx: &SyncSender<std::io::Result<Vec<u8>>>, digest: &Mutex<Option<[u8; 32]>>) {
    let mut hash = sha2::Sha256::new();
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut v = cols::pool::take_block();
        v.reserve(carry.len() + block + 64);
        v.extend_from_slice(&carry);
        carry.clear();
        let before = v.len();
        let n = match (&file).take(block as u64).read_to_end(&mut v) {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        hash.update(&v[before..]);
        if n == 0 {
            if !v.is_empty() && tx.send(Ok(v)).is_err() {
                return;
            }
            *lock(digest) = Some(hash.finalize().into());
            return;
        }
        match memchr::memrchr(b'\n', &v[before..]) {
            None => carry = v, // no line ends in this read yet
            Some(i) => {
                carry.extend_from_slice(&v[before + i + 1..]);
                v.truncate(before + i + 1);
                if tx.send(Ok(v)).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cols::C;
    use crate::tests::{col, int};

    const LOG: &str = "Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[127.0.0.1]\n\
        Nov 21 22:04:34 mx1 postfix/smtpd[1]: 4B7C12E0A3: client=a[127.0.0.1]\n\
        Nov 21 22:04:35 mx1 postfix/qmgr[2]: 4B7C12E0A3: from=<s@x>, size=10, nrcpt=1 (queue active)\n\
        \n\
        Nov 21 22:04:35 mx1 postfix/local[3]: 4B7C12E0A3: to=<r@y>, relay=local, delay=1, delays=0/0/0/1, dsn=2.0.0, status=sent (delivered)\n\
        Nov 21 22:04:36 mx1 postfix/qmgr[2]: 4B7C12E0A3: removed";

    fn state() -> Arc<Mutex<ParseState>> {
        let ctx = Ctx::new(2026, 0);
        Arc::new(Mutex::new(ParseState { ctx, years: Years::default(), tie: QmailTie::default(), next_line: 1, threads: 2 }))
    }

    /// Every block of the file through the stream: its chunks, the messages assembled, the digest.
    fn streamed(path: &std::path::Path, block: usize) -> (Vec<Chunk>, usize, Option<[u8; 32]>) {
        let messages = Arc::new(Mutex::new(Assembler::new(1 << 40)));
        let tally = Arc::new(Tally { minutes: Mutex::new(Minutes::default()), messages: Some(messages.clone()) });
        let s = Stream::start(std::fs::File::open(path).unwrap(), block, state(), tally);
        let mut chunks = Vec::new();
        while let Some(item) = s.next() {
            chunks.extend(item.unwrap());
        }
        let n = lock(&messages).finish().len;
        (chunks, n, s.digest())
    }

    #[test]
    fn blocks_of_any_size_give_the_lines_the_messages_and_the_hash_of_the_whole_file() {
        let dir = std::env::temp_dir().join(format!("mtabench-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("maillog");
        std::fs::write(&path, LOG).unwrap(); // the last line has no line end
        let whole: [u8; 32] = sha2::Sha256::digest(LOG.as_bytes()).into();
        let lines = LOG.split('\n').count();
        for block in [1, 7, 64, 997, 1 << 20] {
            let (chunks, messages, digest) = streamed(&path, block);
            let line_no: Vec<_> = int(&chunks, C::line_no).into_iter().flatten().collect();
            assert_eq!(line_no, (1..=lines as i64).collect::<Vec<_>>(), "block {block}");
            let kinds = col(&chunks, C::kind);
            assert_eq!(kinds.last().unwrap().as_deref(), Some("removed"), "block {block}");
            assert_eq!(messages, 1, "block {block}");
            assert_eq!(digest, Some(whole), "block {block}");
        }
        std::fs::write(&path, b"").unwrap();
        let (chunks, messages, digest) = streamed(&path, 997);
        assert!(chunks.is_empty() && messages == 0);
        assert_eq!(digest, Some(sha2::Sha256::digest(b"").into()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stream_dropped_early_stops_its_threads() {
        let dir = std::env::temp_dir().join(format!("mtabench-stream-drop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("maillog");
        std::fs::write(&path, LOG.repeat(200)).unwrap();
        let tally = Arc::new(Tally { minutes: Mutex::new(Minutes::default()), messages: None });
        let s = Stream::start(std::fs::File::open(&path).unwrap(), 64, state(), tally.clone());
        assert!(s.next().is_some());
        drop(s);
        // the counting thread holds the tally until it stops; it stops at its next hand-over
        let t0 = std::time::Instant::now();
        while Arc::strong_count(&tally) > 1 {
            assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the stream's threads did not stop");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
