//! Any bytes as one JSON-RPC request: the Guardian answers, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy};

fuzz_target!(|data: &[u8]| {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig { skew_window_ms: None, require_handshake: false, ..GuardianConfig::default() },
        MemoryStore::new(),
    );
    let out = g.handle(data);
    assert!(serde_json_is_object(&out));
});

fn serde_json_is_object(out: &[u8]) -> bool {
    out.first() == Some(&b'{') && out.last() == Some(&b'}')
}
