//! Any byte stream through the Content-Length stdio server: never panics,
//! never allocates more than the configured maximum for a body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_guardian::{Guardian, GuardianConfig, MemoryStore, Policy};
use mnemo_guardian_server::server;

fuzz_target!(|data: &[u8]| {
    let mut g = Guardian::new(
        Policy::default(),
        GuardianConfig { skew_window_ms: None, max_request_bytes: 4096, ..GuardianConfig::default() },
        MemoryStore::new(),
    );
    let mut input = std::io::Cursor::new(data);
    let mut output = Vec::new();
    let _ = server::serve_stdio(&mut g, &mut input, &mut output);
});
