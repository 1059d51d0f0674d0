//! Any byte stream as a stdio Guardian's answers, read the way mnemo's
//! client reads them (`framing::read_frame_strict`): never panics, never
//! returns a body over the maximum, and stops at the first frame that is
//! not exactly Content-Length framing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_guardian_server::framing::{Frame, read_frame_strict};

const MAX: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let mut input = std::io::BufReader::new(std::io::Cursor::new(data));
    // Each frame consumes at least one byte, so the loop ends.
    for _ in 0..=data.len() {
        match read_frame_strict(&mut input, MAX) {
            Ok(Frame::Body(b)) => assert!(b.len() <= MAX),
            Ok(_) | Err(_) => break,
        }
    }
});
