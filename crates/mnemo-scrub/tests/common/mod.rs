//! Shared test helpers: a tiny deterministic PRNG and the example template
//! expander (`{{class:n}}`, `{{uuid}}`, `{{discord}}`).
#![allow(dead_code)]

/// xorshift64* — deterministic, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn string(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| char::from(alphabet[self.below(alphabet.len())]))
            .collect()
    }
}

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
pub const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const DIGIT: &[u8] = b"0123456789";
pub const HEX: &[u8] = b"0123456789abcdef";
pub const HEXU: &[u8] = b"0123456789ABCDEF";
pub const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const LOWERNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
pub const UPPERNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const BASE32: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
pub const BECH: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// An expanded example: the text and the random fillers it contains (the
/// secret material that must not survive a scrub).
#[derive(Debug, Clone)]
pub struct Expanded {
    pub text: String,
    pub fills: Vec<String>,
}

fn alphabet(class: &str) -> Option<&'static [u8]> {
    Some(match class {
        "alnum" => ALNUM,
        "lower" => LOWER,
        "upper" => UPPER,
        "digit" => DIGIT,
        "hex" => HEX,
        "HEX" => HEXU,
        "b64" => B64,
        "b64url" => B64URL,
        "lowernum" => LOWERNUM,
        "uppernum" => UPPERNUM,
        "base32" => BASE32,
        "bech" => BECH,
        _ => return None,
    })
}

/// Expands `{{class:n}}`, `{{uuid}}` and `{{discord}}` with fake random
/// characters from a seeded PRNG.
pub fn expand(template: &str, seed: u64) -> Expanded {
    let mut rng = Rng::new(seed ^ 0xA5A5_5A5A_1234_4321);
    let mut text = String::with_capacity(template.len() + 64);
    let mut fills = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i..].find("}}") else { break };
        text.push_str(&rest[..i]);
        let spec = &rest[i + 2..i + j];
        let fill = match spec {
            "uuid" => format!(
                "{}-{}-4{}-a{}-{}",
                rng.string(HEX, 8),
                rng.string(HEX, 4),
                rng.string(HEX, 3),
                rng.string(HEX, 3),
                rng.string(HEX, 12)
            ),
            "discord" => format!(
                "M{}.{}.{}",
                rng.string(B64URL, 25),
                rng.string(B64URL, 6),
                rng.string(B64URL, 38)
            ),
            _ => {
                let (class, n) = spec.split_once(':').unwrap_or((spec, "0"));
                match (alphabet(class), n.parse::<usize>()) {
                    (Some(a), Ok(n)) => {
                        let mut s = rng.string(a, n);
                        // keep fills varied (no accidental low-variety strings)
                        if n >= 4 && a.len() > 2 {
                            let bytes = s.as_bytes().to_vec();
                            if bytes.iter().all(|&b| b == bytes[0]) {
                                s = rng.string(a, n);
                            }
                        }
                        s
                    }
                    _ => format!("{{{{{spec}}}}}"),
                }
            }
        };
        text.push_str(&fill);
        fills.push(fill);
        rest = &rest[i + j + 2..];
    }
    text.push_str(rest);
    Expanded { text, fills }
}
