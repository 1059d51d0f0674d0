#![allow(clippy::expect_used, clippy::indexing_slicing)]
//! Writes `$OUT_DIR/o200k.bin`: the o200k vocabulary (every token's bytes in
//! rank order) with its hash index, in the layout `src/table.rs` describes.

#[path = "src/table.rs"]
mod table;

use std::io::Write;

fn main() {
    let tokenizer = bpe_openai::o200k_base();
    let bpe = &tokenizer.bpe;
    let n = bpe.num_tokens();
    let n32 = u32::try_from(n).expect("token count fits u32");
    assert!(
        n * 2 < table::SLOTS,
        "the table keeps a load under one half"
    );
    let mut bytes: Vec<u8> = Vec::with_capacity(2 * 1024 * 1024);
    let mut offsets: Vec<u32> = Vec::with_capacity(n + 1);
    for id in 0..n32 {
        offsets.push(u32::try_from(bytes.len()).expect("offsets fit u32"));
        bytes.extend_from_slice(bpe.token_bytes(id));
    }
    offsets.push(u32::try_from(bytes.len()).expect("offsets fit u32"));
    let token = |r: u32| &bytes[offsets[r as usize] as usize..offsets[r as usize + 1] as usize];
    let mut slots = vec![0u32; table::SLOTS];
    for r in 0..n32 {
        let t = token(r);
        let mut i = table::slot_of(table::hash(t));
        loop {
            let s = slots[i];
            // a later rank of the same bytes replaces the earlier one, as a
            // map insert would
            if s == 0 || token(s - 1) == t {
                slots[i] = r + 1;
                break;
            }
            i = (i + 1) & (table::SLOTS - 1);
        }
    }
    let mut out = Vec::with_capacity(4 * (1 + offsets.len() + slots.len()) + bytes.len());
    out.extend_from_slice(&n32.to_le_bytes());
    for o in &offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    for s in &slots {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out.extend_from_slice(&bytes);
    let dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set"));
    let mut f = std::fs::File::create(dir.join("o200k.bin")).expect("can create the table");
    f.write_all(&out).expect("can write the table");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/table.rs");
}
