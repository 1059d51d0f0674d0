//! Streaming scrub in bounded memory.
//!
//! The input is read into one buffer of at most `chunk_size + carry` bytes.
//! Each round scans the whole buffer, then writes out its first part up to a
//! cut (the last line break before `len - carry`, or later if a redaction
//! crosses it) and keeps the rest (at least `carry` bytes) for the next
//! round. Any secret shorter than `carry` that starts before the cut is
//! therefore seen whole: PEM blocks, long lines and secrets across read
//! borders are caught. The buffer never grows beyond `chunk_size + carry`,
//! which is clamped to [`MAX_STREAM_BUFFER`].

use crate::{Redaction, ReplacementStyle, Scrubber};
use std::io::{ErrorKind, Read, Write};

/// Upper bound of the stream buffer, whatever the options (48 MiB: with the
/// per-chunk bookkeeping this keeps a stream scrub under 64 MiB).
pub const MAX_STREAM_BUFFER: usize = 48 * 1024 * 1024;

/// Errors of the streaming API.
#[derive(Debug, thiserror::Error)]
pub enum ScrubError {
    /// Reading the input or writing the output failed.
    #[error("i/o error while scrubbing: {0}")]
    Io(#[from] std::io::Error),
    /// The default rules could not be loaded.
    #[error(transparent)]
    Rules(#[from] crate::RuleError),
}

/// Options of the streaming API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Bytes committed per round (default 8 MiB).
    pub chunk_size: usize,
    /// Look-ahead kept between rounds (default 256 KiB): the longest secret
    /// guaranteed to be caught whole across a chunk border.
    pub carry: usize,
    /// Replacement style.
    pub style: ReplacementStyle,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            chunk_size: 8 * 1024 * 1024,
            carry: 256 * 1024,
            style: ReplacementStyle::Named,
        }
    }
}

/// Accounting of one stream scrub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamStats {
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Redactions made.
    pub redactions: u64,
    /// Largest capacity the buffer ever had, in bytes.
    pub peak_buffer: usize,
    /// Rounds (chunks) processed.
    pub rounds: u64,
}

pub(crate) fn scrub_stream<R, W, F>(
    scrubber: &Scrubber,
    mut reader: R,
    mut writer: W,
    options: &StreamOptions,
    mut on_redaction: F,
) -> Result<StreamStats, ScrubError>
where
    R: Read,
    W: Write,
    F: FnMut(Redaction),
{
    let carry = options.carry.min(MAX_STREAM_BUFFER / 2);
    let chunk = options.chunk_size.clamp(8, MAX_STREAM_BUFFER - carry);
    let cap = chunk + carry;
    let mut buf: Vec<u8> = Vec::new();
    let mut stats = StreamStats::default();
    let mut base: u64 = 0;
    let mut eof = false;
    loop {
        // Fill the buffer up to `cap` (growing geometrically, never past
        // `cap`, without zero-filling).
        while !eof && buf.len() < cap {
            let want = (cap - buf.len()).min(buf.len().max(64 * 1024));
            buf.reserve_exact(want);
            match (&mut reader).take(want as u64).read_to_end(&mut buf) {
                Ok(n) => {
                    stats.bytes_in += n as u64;
                    if n < want {
                        eof = true;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        stats.peak_buffer = stats.peak_buffer.max(buf.capacity());
        if buf.is_empty() {
            break;
        }
        stats.rounds += 1;
        // Never scan or cut inside a UTF-8 sequence that the next read completes.
        let limit = if eof {
            buf.len()
        } else {
            complete_utf8_prefix(&buf)
        };
        let mut cut = if eof {
            buf.len()
        } else {
            choose_cut(&buf[..limit], limit.saturating_sub(carry).max(1))
        };
        if cut == 0 {
            // nothing complete yet (a lone partial character): read more
            continue;
        }
        let spans = scrubber.engine.resolved(&scrubber.rules, &buf[..limit]);
        let mut last = 0usize;
        for s in spans {
            if s.start >= cut {
                break;
            }
            cut = cut.max(s.end);
            writer.write_all(&buf[last..s.start])?;
            let replacement = scrubber.replacement(s.rule, options.style);
            writer.write_all(replacement.as_bytes())?;
            stats.bytes_out += (s.start - last + replacement.len()) as u64;
            stats.redactions += 1;
            on_redaction(Redaction {
                rule: scrubber.rule_id(s.rule).to_string(),
                start: (base + s.start as u64) as usize,
                end: (base + s.end as u64) as usize,
                replacement,
            });
            last = s.end;
        }
        writer.write_all(&buf[last..cut])?;
        stats.bytes_out += (cut - last) as u64;
        buf.drain(..cut);
        base += cut as u64;
        if eof && buf.is_empty() {
            break;
        }
    }
    writer.flush()?;
    Ok(stats)
}

/// Length of the longest prefix of `buf` that does not end inside an
/// incomplete UTF-8 sequence.
fn complete_utf8_prefix(buf: &[u8]) -> usize {
    let len = buf.len();
    for back in 1..=4.min(len) {
        let i = len - back;
        let b = buf[i];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = if b < 0x80 {
            1
        } else if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else if b >= 0xC0 {
            2
        } else {
            1
        };
        return if i + need > len { i } else { len };
    }
    len
}

/// The last line break before `target` (cut after it), else `target` moved
/// to a UTF-8 boundary (backwards if possible, else forwards); never 0 when
/// `target > 0`.
fn choose_cut(buf: &[u8], target: usize) -> usize {
    let target = target.min(buf.len());
    if let Some(i) = memchr::memrchr(b'\n', &buf[..target]) {
        return i + 1;
    }
    let is_cont = |i: usize| buf.get(i).is_some_and(|b| b & 0xC0 == 0x80);
    let mut c = target;
    while c > 0 && is_cont(c) {
        c -= 1;
    }
    if c > 0 {
        return c;
    }
    let mut c = target;
    while c < buf.len() && is_cont(c) {
        c += 1;
    }
    c
}
