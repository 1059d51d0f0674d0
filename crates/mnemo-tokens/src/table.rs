//! The vocabulary's index, laid out once by the build script and read in
//! place at run time (no inflating, no hash-map build: a count's first use
//! costs a few page faults instead of indexing 200,000 tokens). Shared by
//! `build.rs` and the library (`#[path]`), so that both hash alike.
//!
//! Layout (all integers u32, little-endian): the token count `n`; `n + 1`
//! offsets of each token's bytes in the byte area (rank order); [`SLOTS`]
//! slots of an open-addressing table (linear probing from
//! [`slot_of`]`(hash(token))`), each `rank + 1` or 0 for empty; then the
//! tokens' bytes, concatenated in rank order.

/// Slots of the table: a power of two, over twice the o200k token count.
pub const SLOTS: usize = 1 << 19;

/// A small multiplicative hash (the keys are short byte strings; nothing
/// here is adversarial: a collision only costs a longer probe).
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    // one more round so that the last byte reaches the high bits
    (h ^ (h >> 29)).wrapping_mul(0x94_d0_49_bb_13_31_11_eb)
}

/// The first slot probed for a hash.
pub fn slot_of(h: u64) -> usize {
    // SLOTS is 2^19: the top 19 bits
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}
