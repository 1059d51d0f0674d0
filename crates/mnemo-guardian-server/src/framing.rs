//! Content-Length framing (LSP-style) for the stdio transport.
//!
//! `Content-Length: N\r\n` (other headers ignored) `\r\n` then N bytes.
//! Header lines are bounded, the claimed length is checked against a maximum
//! before anything is allocated, and an oversized body is skipped in small
//! chunks so the stream stays in sync — up to [`MAX_SKIP`]; a claim beyond
//! that (`Content-Length: 1000000000000`) is answered at once, without
//! waiting for bytes that will never come.
//!
//! **Resynchronisation.** A frame starts at a header line (`Name: value`,
//! the name of letters, digits, `-` and `_`). Anything else where a frame
//! should start — the body of a frame whose `Content-Length` was invalid
//! (`-5`), the rest of an unbelievable body, stray bytes — is skipped up to
//! the next `Content-Length:` (found inside a line too: a body without a
//! line end runs into the next frame's first header line), so one bad frame
//! costs one error answer and never the frames after it.

use std::io::{self, BufRead, Read, Write};

/// Longest header line accepted.
pub const MAX_HEADER_LINE: usize = 8 * 1024;
/// Most header lines in one frame.
pub const MAX_HEADERS: usize = 32;
/// Largest oversized body skipped byte for byte; a larger claim is answered
/// at once and what follows is resynchronised.
pub const MAX_SKIP: u64 = 64 * 1024 * 1024;

/// One read from a framed stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete body.
    Body(Vec<u8>),
    /// The claimed length exceeded the maximum; the body was skipped.
    TooLarge(u64),
    /// The headers were malformed; the header block was consumed.
    Malformed(String),
    /// Clean end of stream.
    Eof,
}

/// Reads one line of at most `MAX_HEADER_LINE` bytes (without the line end).
/// Returns `Ok(None)` at EOF before any byte, `Err(InvalidData)` when too long.
fn read_line_bounded<R: BufRead>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    match read_line_tail(r)? {
        None => Ok(None),
        Some((line, false)) => Ok(Some(line)),
        Some((_, true)) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "header line too long",
        )),
    }
}

/// Reads one line; of a line longer than `MAX_HEADER_LINE` only its last
/// `MAX_HEADER_LINE` bytes are kept (flagged `true`). Without the line end.
fn read_line_tail<R: BufRead>(r: &mut R) -> io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            if line.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if line.len() > 2 * MAX_HEADER_LINE {
            too_long = true;
            line.drain(..line.len() - MAX_HEADER_LINE);
        }
        if done {
            break;
        }
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    if line.len() > MAX_HEADER_LINE {
        too_long = true;
        line.drain(..line.len() - MAX_HEADER_LINE);
    }
    Ok(Some((line, too_long)))
}

/// Whether `line` has the shape of a header line: a name of letters,
/// digits, `-` and `_`, then `:`.
fn is_header_line(line: &[u8]) -> bool {
    let name = line.iter().take_while(|&&b| b != b':').count();
    name > 0
        && name < line.len()
        && line[..name]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

/// Where `Content-Length:` starts in `line`, ignoring case.
fn find_content_length(line: &[u8]) -> Option<usize> {
    const NEEDLE: &[u8] = b"content-length:";
    line.windows(NEEDLE.len())
        .position(|w| w.eq_ignore_ascii_case(NEEDLE))
}

/// Reads one frame. I/O errors other than malformed input are returned.
pub fn read_frame<R: BufRead>(r: &mut R, max_body: usize) -> io::Result<Frame> {
    loop {
        // Where a frame should start: skip to its first header line.
        let Some((line, _)) = read_line_tail(r)? else {
            return Ok(Frame::Eof);
        };
        let line = if line.is_empty() || is_header_line(&line) {
            line
        } else if let Some(at) = find_content_length(&line) {
            line[at..].to_vec()
        } else {
            continue; // not a frame: skipped
        };
        if line.is_empty() {
            continue; // tolerate blank lines between frames
        }
        return rest_of_frame(r, &line, max_body, true);
    }
}

/// Reads one frame from a peer that must speak the framing exactly (a
/// client reading its Guardian's answers): blank lines between frames are
/// tolerated, but anything else where a frame should start is
/// [`Frame::Malformed`] at once (naming what was there), not skipped, and a
/// claim over `max_body` is [`Frame::TooLarge`] without reading the body.
/// After anything but [`Frame::Body`] the stream is not in sync.
pub fn read_frame_strict<R: BufRead>(r: &mut R, max_body: usize) -> io::Result<Frame> {
    loop {
        let Some((line, too_long)) = read_line_tail(r)? else {
            return Ok(Frame::Eof);
        };
        if line.is_empty() && !too_long {
            continue;
        }
        if too_long || !is_header_line(&line) {
            return Ok(Frame::Malformed(format!(
                "not a Content-Length frame: {}",
                snippet(&line)
            )));
        }
        return rest_of_frame(r, &line, max_body, false);
    }
}

/// At most 80 bytes of `bytes`, as a quoted, escaped string.
pub fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(80)]);
    if bytes.len() > 80 {
        format!("{text:?}...")
    } else {
        format!("{text:?}")
    }
}

/// The rest of a frame whose first header line is `first`. With `skip`, an
/// oversized body of at most [`MAX_SKIP`] bytes is read and dropped so the
/// stream stays in sync.
fn rest_of_frame<R: BufRead>(
    r: &mut R,
    first: &[u8],
    max_body: usize,
    skip: bool,
) -> io::Result<Frame> {
    let mut length: Option<u64> = None;
    let mut problem: Option<String> = None;
    let mut count = 0usize;
    parse_header(first, &mut count, &mut length, &mut problem);
    loop {
        let line = match read_line_bounded(r) {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(Frame::Malformed("end of stream inside headers".into())),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                problem.get_or_insert_with(|| "header line too long".into());
                continue;
            }
            Err(e) => return Err(e),
        };
        if line.is_empty() {
            break;
        }
        parse_header(&line, &mut count, &mut length, &mut problem);
    }
    if let Some(p) = problem {
        return Ok(Frame::Malformed(p));
    }
    let Some(len) = length else {
        return Ok(Frame::Malformed("missing Content-Length".into()));
    };
    if len > max_body as u64 {
        if !skip || len > MAX_SKIP {
            // Not believable: answer now; the resynchronisation skips
            // whatever of it does come.
            return Ok(Frame::TooLarge(len));
        }
        let skipped = io::copy(&mut r.take(len), &mut io::sink())?;
        if skipped < len {
            return Ok(Frame::Eof);
        }
        return Ok(Frame::TooLarge(len));
    }
    let mut body = vec![0u8; len as usize];
    match r.read_exact(&mut body) {
        Ok(()) => Ok(Frame::Body(body)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Ok(Frame::Malformed("end of stream inside body".into()))
        }
        Err(e) => Err(e),
    }
}

/// Takes one header line.
fn parse_header(
    line: &[u8],
    count: &mut usize,
    length: &mut Option<u64>,
    problem: &mut Option<String>,
) {
    *count += 1;
    if *count > MAX_HEADERS {
        problem.get_or_insert_with(|| "too many header lines".into());
        return;
    }
    let text = String::from_utf8_lossy(line);
    let Some((name, value)) = text.split_once(':') else {
        problem.get_or_insert_with(|| format!("malformed header line {text:?}"));
        return;
    };
    if name.trim().eq_ignore_ascii_case("content-length") {
        match value.trim().parse::<u64>() {
            Ok(n) => *length = Some(n),
            Err(_) => {
                problem.get_or_insert_with(|| format!("bad Content-Length {:?}", value.trim()));
            }
        }
    }
}

/// Writes one frame.
pub fn write_frame<W: Write>(w: &mut W, body: &[u8]) -> io::Result<()> {
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn frames() {
        let mut c = Cursor::new(
            b"Content-Length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 1\r\n\r\n[".to_vec(),
        );
        assert_eq!(
            read_frame(&mut c, 100).ok(),
            Some(Frame::Body(b"{}".to_vec()))
        );
        assert_eq!(
            read_frame(&mut c, 100).ok(),
            Some(Frame::Body(b"[".to_vec()))
        );
        assert_eq!(read_frame(&mut c, 100).ok(), Some(Frame::Eof));
    }

    #[test]
    fn huge_and_malformed() {
        let mut c = Cursor::new(b"Content-Length: 99999999999999\r\n\r\nabc".to_vec());
        assert_eq!(
            read_frame(&mut c, 100).ok(),
            Some(Frame::TooLarge(99_999_999_999_999))
        );
        assert_eq!(read_frame(&mut c, 100).ok(), Some(Frame::Eof));
        let mut data = b"Content-Length: 200\r\n\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 200));
        data.extend(b"Content-Length: 2\r\n\r\n{}");
        let mut c = Cursor::new(data);
        assert_eq!(read_frame(&mut c, 100).ok(), Some(Frame::TooLarge(200)));
        assert_eq!(
            read_frame(&mut c, 100).ok(),
            Some(Frame::Body(b"{}".to_vec()))
        );
        let mut c = Cursor::new(b"Content-Length: -1\r\n\r\nX-Other: 1\r\n\r\n".to_vec());
        assert!(matches!(read_frame(&mut c, 100), Ok(Frame::Malformed(_))));
        assert!(matches!(read_frame(&mut c, 100), Ok(Frame::Malformed(_))));
        let mut long = vec![b'a'; MAX_HEADER_LINE * 3];
        long.extend(b"\r\n\r\n");
        let mut c = Cursor::new(long);
        // A long junk line where a frame should start is skipped.
        assert_eq!(read_frame(&mut c, 100).ok(), Some(Frame::Eof));
        let mut long = b"Content-Length: 2\r\n".to_vec();
        long.extend(vec![b'a'; MAX_HEADER_LINE * 3]);
        long.extend(b"\r\n\r\n");
        let mut c = Cursor::new(long);
        assert!(matches!(read_frame(&mut c, 100), Ok(Frame::Malformed(_))));
    }

    #[test]
    fn a_body_without_line_end_runs_into_the_next_header() {
        let mut c =
            Cursor::new(b"Content-Length: -5\r\n\r\n{\"x\":1}content-length: 2\r\n\r\n{}".to_vec());
        assert!(matches!(read_frame(&mut c, 100), Ok(Frame::Malformed(m)) if m.contains("-5")));
        assert_eq!(
            read_frame(&mut c, 100).ok(),
            Some(Frame::Body(b"{}".to_vec()))
        );
    }

    #[test]
    fn strict_frames_name_what_is_not_a_frame() {
        let mut c = Cursor::new(b"\r\nContent-Length: 2\r\n\r\n{}<!DOCTYPE html>\n<html>".to_vec());
        assert_eq!(
            read_frame_strict(&mut c, 100).ok(),
            Some(Frame::Body(b"{}".to_vec()))
        );
        match read_frame_strict(&mut c, 100) {
            Ok(Frame::Malformed(m)) => assert!(m.contains("<!DOCTYPE html>"), "{m}"),
            other => panic!("{other:?}"),
        }
        // A claim over the maximum is refused without reading the body.
        let mut c = Cursor::new(b"Content-Length: 200\r\n\r\nxx".to_vec());
        assert_eq!(
            read_frame_strict(&mut c, 100).ok(),
            Some(Frame::TooLarge(200))
        );
        assert_eq!(c.position(), 23);
        let mut c = Cursor::new(b"Content-Length: 5\r\n\r\nab".to_vec());
        assert!(matches!(
            read_frame_strict(&mut c, 100),
            Ok(Frame::Malformed(m)) if m.contains("inside body")
        ));
        let mut c = Cursor::new(b"garbage without a line end".to_vec());
        assert!(matches!(
            read_frame_strict(&mut c, 100),
            Ok(Frame::Malformed(m)) if m.contains("garbage")
        ));
        let mut c = Cursor::new(b"\n\n".to_vec());
        assert_eq!(read_frame_strict(&mut c, 100).ok(), Some(Frame::Eof));
        let mut c = Cursor::new(vec![b'{'; MAX_HEADER_LINE * 3]);
        assert!(matches!(
            read_frame_strict(&mut c, 100),
            Ok(Frame::Malformed(m)) if m.contains("not a Content-Length frame")
        ));
        let mut c = Cursor::new(b"Content-Type: x\r\n\r\n{}".to_vec());
        assert!(matches!(
            read_frame_strict(&mut c, 100),
            Ok(Frame::Malformed(m)) if m.contains("missing Content-Length")
        ));
    }
}
