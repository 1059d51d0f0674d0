//! Signatures of ACS §10 with the HMAC-SHA256 baseline.
//!
//! * **Per-session key.** HKDF (RFC 5869) with SHA-256, no salt (RFC 5869's
//!   default, which equals an empty salt), `info` = the UTF-8 bytes of
//!   `metadata.session_id` exactly as sent, 32 bytes of output, applied to
//!   the secret that `key_id` names ([`session_key`]).
//! * **Signed input.** The RFC 8785 canonical form of the whole envelope
//!   with its `signature` removed: `params.signature` for a request,
//!   `result.signature` (or `error.signature`) for a response
//!   ([`request_signing_input`], [`response_signing_input`]).
//! * **`key_id`** is an opaque label naming one configured secret; a
//!   verifier never falls back to another secret, and a Guardian answers
//!   under the label the request named.

use crate::jcs::canonicalize_omitting;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The only algorithm of the baseline.
pub const HMAC_SHA256: &str = "HMAC-SHA256";

const BLOCK: usize = 64;

/// HMAC-SHA256 (RFC 2104) of `data` under `key`.
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut ipad = [0x36u8; BLOCK];
    let mut opad = [0x5cu8; BLOCK];
    for i in 0..BLOCK {
        ipad[i] ^= k[i];
        opad[i] ^= k[i];
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// HKDF-SHA256 (RFC 5869): extract with `salt` (empty = 32 zero bytes),
/// expand with `info` to `len` bytes (at most 255 × 32).
pub fn hkdf_sha256(ikm: &[u8], salt: &[u8], info: &[u8], len: usize) -> Vec<u8> {
    let zero = [0u8; 32];
    let prk = hmac_sha256(if salt.is_empty() { &zero } else { salt }, ikm);
    let mut out = Vec::with_capacity(len);
    let mut t: Vec<u8> = Vec::new();
    let mut i: u8 = 1;
    while out.len() < len && i != 0 {
        let mut block = t.clone();
        block.extend_from_slice(info);
        block.push(i);
        t = hmac_sha256(&prk, &block).to_vec();
        out.extend_from_slice(&t);
        i = i.wrapping_add(1);
    }
    out.truncate(len);
    out
}

/// The per-session HMAC key of §10 for `session_id` under `secret`.
pub fn session_key(secret: &[u8], session_id: &str) -> [u8; 32] {
    let v = hkdf_sha256(secret, &[], session_id.as_bytes(), 32);
    let mut k = [0u8; 32];
    k.copy_from_slice(&v);
    k
}

/// The canonical text a request signature covers: the JCS of the whole
/// envelope with `params.signature` removed.
pub fn request_signing_input(req: &Value) -> String {
    canonicalize_omitting(req, &[&["params", "signature"]])
}

/// The canonical text a response signature covers: the JCS of the whole
/// response with `result.signature` and `error.signature` removed.
pub fn response_signing_input(resp: &Value) -> String {
    canonicalize_omitting(resp, &[&["result", "signature"], &["error", "signature"]])
}

fn signature(key_id: &str, key: &[u8], input: &str) -> Value {
    json!({
        "algorithm": HMAC_SHA256,
        "value": base64_encode(&hmac_sha256(key, input.as_bytes())),
        "key_id": key_id,
    })
}

/// Signs a request in place under the session key derived from `secret`
/// (the session is the envelope's `params.metadata.session_id`).
pub fn sign_request(req: &mut Value, key_id: &str, secret: &[u8]) {
    let session = req
        .pointer("/params/metadata/session_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let key = session_key(secret, &session);
    sign_request_with_key(req, key_id, &key);
}

/// Signs a request in place with an already derived session key.
pub fn sign_request_with_key(req: &mut Value, key_id: &str, key: &[u8]) {
    let sig = signature(key_id, key, &request_signing_input(req));
    if let Some(p) = req.get_mut("params").and_then(Value::as_object_mut) {
        p.insert("signature".into(), sig);
    }
}

/// Signs a response in place with a session key: the signature goes into
/// `result` (or `error`) and covers the whole response.
pub fn sign_response_with_key(resp: &mut Value, key_id: &str, key: &[u8]) {
    let side = if resp.get("result").is_some_and(Value::is_object) {
        "result"
    } else {
        "error"
    };
    let sig = signature(key_id, key, &response_signing_input(resp));
    if let Some(m) = resp.get_mut(side).and_then(Value::as_object_mut) {
        m.insert("signature".into(), sig);
    }
}

/// Why a signature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `signature` member.
    #[error("signature required")]
    Missing,
    /// An algorithm other than HMAC-SHA256.
    #[error("unsupported signature algorithm {0}")]
    Algorithm(String),
    /// A `key_id` that names no configured secret.
    #[error("unknown key_id {0}")]
    UnknownKey(String),
    /// `value` is not base64.
    #[error("signature value is not base64")]
    Encoding,
    /// The MAC does not match the canonical envelope.
    #[error("signature does not verify")]
    Mismatch,
}

/// The `{algorithm, value, key_id}` of a signature member, when well-formed.
fn parts(sig: &Value) -> Option<(&str, &str, &str)> {
    Some((
        sig.get("algorithm")?.as_str()?,
        sig.get("value")?.as_str()?,
        sig.get("key_id")?.as_str()?,
    ))
}

/// Verifies a signature member over `input` with the secret its `key_id`
/// names (`secrets` by label) and the session key for `session`. Returns
/// the label on success.
pub fn verify<'a>(
    sig: Option<&Value>,
    input: &str,
    session: &str,
    secrets: &'a [(String, Vec<u8>)],
) -> Result<&'a str, SignatureError> {
    let sig = sig.ok_or(SignatureError::Missing)?;
    let (alg, value, key_id) = parts(sig).ok_or(SignatureError::Missing)?;
    if alg != HMAC_SHA256 {
        return Err(SignatureError::Algorithm(alg.to_string()));
    }
    let (label, secret) = secrets
        .iter()
        .find(|(k, _)| k == key_id)
        .ok_or_else(|| SignatureError::UnknownKey(key_id.to_string()))?;
    let given = base64_decode(value).ok_or(SignatureError::Encoding)?;
    let want = hmac_sha256(&session_key(secret, session), input.as_bytes());
    if constant_time_eq(&given, &want) {
        Ok(label.as_str())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// Verifies a response's signature (the client side).
pub fn verify_response(
    resp: &Value,
    session: &str,
    secrets: &[(String, Vec<u8>)],
) -> Result<(), SignatureError> {
    let sig = resp
        .get("result")
        .and_then(|r| r.get("signature"))
        .or_else(|| resp.get("error").and_then(|e| e.get("signature")));
    verify(sig, &response_signing_input(resp), session, secrets).map(|_| ())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes hexadecimal (either case); `None` for an odd length or a
/// non-hex digit.
pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// Decodes standard or URL-safe base64, padding optional.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0u32;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_decodes_either_case_and_refuses_odd_or_foreign_digits() {
        assert_eq!(hex_decode("00ffA0"), Some(vec![0, 255, 160]));
        assert_eq!(hex_decode(""), Some(vec![]));
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
        assert_eq!(hex_decode("é1"), None);
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn hkdf_matches_rfc_5869_case_1_and_3() {
        let ikm = [0x0bu8; 22];
        let salt: Vec<u8> = (0u8..=0x0c).collect();
        let info: Vec<u8> = (0xf0u8..=0xf9).collect();
        assert_eq!(
            hex(&hkdf_sha256(&ikm, &salt, &info, 42)),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        );
        // Case 3: no salt, no info.
        assert_eq!(
            hex(&hkdf_sha256(&ikm, &[], &[], 42)),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
        );
    }

    #[test]
    fn session_key_is_the_standards_worked_example() {
        // §10 "HMAC key derivation": secret 00..1f, this session id.
        let secret: Vec<u8> = (0u8..32).collect();
        let k = session_key(&secret, "6b1f2c9e-4d7a-4e3b-8a51-9c0d2e7f1a36");
        assert_eq!(
            hex(&k),
            "80f0dc8c611279bfc2af2d5f374c5cb685888192ce1af5c3e0673d8fa748e8a4"
        );
    }

    #[test]
    fn request_and_response_signatures_round_trip() {
        let secrets = vec![("k1".to_string(), b"secret".to_vec())];
        let mut req = json!({"jsonrpc": "2.0", "id": 1, "method": "steps/turnEnd",
            "params": {"metadata": {"session_id": "s"}, "payload": {}}});
        sign_request(&mut req, "k1", b"secret");
        let input = request_signing_input(&req);
        assert_eq!(
            verify(req.pointer("/params/signature"), &input, "s", &secrets),
            Ok("k1")
        );
        // Another session's key does not verify.
        assert_eq!(
            verify(req.pointer("/params/signature"), &input, "t", &secrets),
            Err(SignatureError::Mismatch)
        );
        let mut resp = json!({"jsonrpc": "2.0", "id": 1, "result": {"decision": "allow"}});
        sign_response_with_key(&mut resp, "k1", &session_key(b"secret", "s"));
        assert!(verify_response(&resp, "s", &secrets).is_ok());
        resp["result"]["decision"] = json!("deny");
        assert_eq!(
            verify_response(&resp, "s", &secrets),
            Err(SignatureError::Mismatch)
        );
        let unknown = vec![("k2".to_string(), b"secret".to_vec())];
        assert!(matches!(
            verify_response(&resp, "s", &unknown),
            Err(SignatureError::UnknownKey(_))
        ));
    }

    #[test]
    fn base64_roundtrip() {
        for n in 0..10 {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + 1) as u8).collect();
            assert_eq!(base64_decode(&base64_encode(&data)), Some(data));
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_decode("Zm9vYg=="), Some(b"foob".to_vec()));
        assert_eq!(base64_decode("Zm9v!"), None);
    }
}
