//! Fuzz the configuration loader: no `mnemo.toml` may panic it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_model::Config;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Config::from_toml_str(text, "fuzz.toml");
    }
});
