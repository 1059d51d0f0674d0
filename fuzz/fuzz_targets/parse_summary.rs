//! Fuzz the summary parsers (markdown, JSON, YAML) and format detection:
//! no input may panic, and every record returned has been Layer-1 filtered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_model::{Format, parse_records};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Format::detect(text, None);
    for format in [Format::Markdown, Format::Json, Format::Yaml] {
        if let Ok(records) = parse_records(text, "fuzz", format) {
            assert!(!records.is_empty());
        }
    }
});
