//! Store and search throughput of the memory store.
//!
//! `cargo run --release -p mnemo-mcp --example store_bench -- [N] [DIR]`
//! stores N synthetic memories (default 100000) one transaction each through
//! the public API (scrubbing included), then times searches. Prints one JSON
//! object. The database goes to DIR (default: a new temp dir under /tmp).

use std::error::Error;
use std::path::PathBuf;
use std::time::Instant;

use mnemo_mcp::store::{MemoryStore, STOPWORDS, SearchRequest, SqliteStore, StoreRequest};

/// A small deterministic generator (xorshift64*), so every run stores the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Roughly Zipf-distributed index below `n`: a few words are common, most rare.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let x = (n as f64).powf(u) - 1.0;
        (x as usize).min(n - 1)
    }
}

const STEMS: [&str; 40] = [
    "auth",
    "token",
    "schema",
    "migration",
    "endpoint",
    "cache",
    "router",
    "session",
    "deploy",
    "queue",
    "index",
    "parser",
    "config",
    "billing",
    "invoice",
    "search",
    "upload",
    "webhook",
    "retry",
    "timeout",
    "lock",
    "budget",
    "phase",
    "handoff",
    "summary",
    "test",
    "fixture",
    "render",
    "button",
    "layout",
    "metric",
    "alert",
    "backup",
    "restore",
    "tenant",
    "quota",
    "policy",
    "audit",
    "ledger",
    "stream",
];

/// Words in rank order: the English stopwords first (together they are
/// about 45% of the words of a memory, as in English prose), then 50,000
/// content words (`auth`, `token`, …, `auth40`, `token41`, …).
fn vocabulary() -> Vec<String> {
    let mut words: Vec<String> = STOPWORDS.iter().map(|w| (*w).to_string()).collect();
    for i in 0..50_000 {
        let stem = STEMS[i % STEMS.len()];
        words.push(if i < STEMS.len() {
            stem.to_string()
        } else {
            format!("{stem}{i}")
        });
    }
    words
}

fn sentence(rng: &mut Rng, vocab: &[String], words: usize) -> String {
    (0..words)
        .map(|_| vocab[rng.zipf(vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn time_searches(
    store: &SqliteStore,
    queries: &[String],
    top_k: u32,
    half_life: Option<f64>,
) -> Result<(f64, f64, f64), Box<dyn Error>> {
    let mut ms = Vec::with_capacity(queries.len());
    let mut hits = 0usize;
    for q in queries {
        let t = Instant::now();
        let r = store.search(&SearchRequest {
            query: q.clone(),
            namespace: "default".to_string(),
            top_k: Some(top_k),
            recency_half_life_days: half_life,
        })?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
        hits += r.count;
    }
    ms.sort_by(f64::total_cmp);
    Ok((
        percentile(&ms, 0.5),
        percentile(&ms, 0.95),
        hits as f64 / queries.len() as f64,
    ))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let dir = match args.next() {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("mnemo-store-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("memory.sqlite3");
    let _ = std::fs::remove_file(&path);
    let store = SqliteStore::open(&path)?;
    let vocab = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);

    let mut value_bytes = 0usize;
    let t = Instant::now();
    for i in 0..n {
        let value = sentence(&mut rng, &vocab, 30);
        value_bytes += value.len();
        store.store(StoreRequest {
            value,
            namespace: "default".to_string(),
            key: (i % 4 == 0).then(|| format!("note/{i}")),
            metadata: None,
        })?;
    }
    let store_s = t.elapsed().as_secs_f64();

    store.with_connection(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"))?;
    let stats = store.stats()?;

    // Queries: two or three content words, Zipf-distributed like the text;
    // then the same in a sentence with stopwords ("the … and …"); then each
    // of the ten most common content words alone (the worst case: one word
    // that matches a large part of the store).
    let content = &vocab[STOPWORDS.len()..];
    let queries: Vec<String> = (0..300)
        .map(|_| {
            let words = 2 + (rng.next() % 2) as usize;
            sentence(&mut rng, content, words)
        })
        .collect();
    let with_stopword: Vec<String> = queries
        .iter()
        .map(|q| format!("the {} and", q.replacen(' ', " of the ", 1)))
        .collect();
    let common: Vec<String> = content[..10].to_vec();
    let common_matches: i64 = store.with_connection(|c| {
        let mut total = 0i64;
        for w in &common {
            total += c.query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
                [format!("\"{w}\"")],
                |r| r.get::<_, i64>(0),
            )?;
        }
        Ok(total / common.len() as i64)
    })?;
    // Warm the page cache once.
    time_searches(&store, &queries[..20], 5, None)?;
    let (p50, p95, hits) = time_searches(&store, &queries, 5, None)?;
    let (p50_50, p95_50, _) = time_searches(&store, &queries, 50, None)?;
    let (p50_decay, p95_decay, _) = time_searches(&store, &queries, 5, Some(7.0))?;
    let (p50_stop, p95_stop, _) = time_searches(&store, &with_stopword, 5, None)?;
    let (p50_common, p95_common, _) = time_searches(&store, &common, 5, None)?;

    println!(
        "{{\"memories\": {n}, \"store_per_s\": {:.0}, \"store_ms_mean\": {:.3}, \
         \"search_ms_p50\": {p50:.3}, \"search_ms_p95\": {p95:.3}, \"hits_per_query\": {hits:.1}, \
         \"search_top50_ms_p50\": {p50_50:.3}, \"search_top50_ms_p95\": {p95_50:.3}, \
         \"search_decay_ms_p50\": {p50_decay:.3}, \"search_decay_ms_p95\": {p95_decay:.3}, \
         \"search_with_common_word_ms_p50\": {p50_stop:.3}, \"search_with_common_word_ms_p95\": {p95_stop:.3}, \
         \"search_one_top10_word_ms_p50\": {p50_common:.3}, \"search_one_top10_word_ms_p95\": {p95_common:.3}, \
         \"top10_word_matches\": {common_matches}, \"us_per_match\": {:.3}, \
         \"file_bytes\": {}, \"bytes_per_memory\": {:.0}, \"value_bytes_per_memory\": {:.0}, \"db\": \"{}\"}}",
        n as f64 / store_s,
        store_s * 1000.0 / n as f64,
        p50_common * 1000.0 / common_matches.max(1) as f64,
        stats.file_bytes,
        stats.file_bytes as f64 / n as f64,
        value_bytes as f64 / n as f64,
        path.display()
    );
    Ok(())
}
