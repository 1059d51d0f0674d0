#![allow(clippy::expect_used)]
//! Writes `$OUT_DIR/o200k.deflate`: the o200k vocabulary, every token's bytes
//! in rank order, each preceded by its length (one byte), deflated.

use std::io::Write;

fn main() {
    let tokenizer = bpe_openai::o200k_base();
    let bpe = &tokenizer.bpe;
    let n = bpe.num_tokens();
    let mut blob = Vec::with_capacity(2 * 1024 * 1024);
    blob.extend_from_slice(
        &u32::try_from(n)
            .expect("token count fits u32")
            .to_le_bytes(),
    );
    for id in 0..n {
        let bytes = bpe.token_bytes(u32::try_from(id).expect("token id fits u32"));
        blob.push(u8::try_from(bytes.len()).expect("tokens are at most 255 bytes"));
        blob.extend_from_slice(bytes);
    }
    let packed = miniz_oxide::deflate::compress_to_vec(&blob, 9);
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set"));
    let mut f = std::fs::File::create(out.join("o200k.deflate")).expect("can create the table");
    f.write_all(&packed).expect("can write the table");
    println!("cargo::rerun-if-changed=build.rs");
}
