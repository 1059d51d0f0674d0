//! Any bytes through the HTTP request parser, as a stream of pipelined
//! requests: never panics, never claims bytes it was not given, never
//! accepts a body over the limit, always makes progress.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_guardian_server::http::{Parsed, parse};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Parsed::Request { request, consumed } = parse(rest, 256) {
        assert!(consumed > 0 && consumed <= rest.len());
        assert!(request.body.end <= consumed && request.body.len() <= 256);
        rest = &rest[consumed..];
    }
});
