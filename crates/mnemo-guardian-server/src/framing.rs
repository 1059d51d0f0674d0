//! Content-Length framing (LSP-style) for the stdio transport.
//!
//! `Content-Length: N\r\n` (other headers ignored) `\r\n` then N bytes.
//! Header lines are bounded, the claimed length is checked against a maximum
//! before anything is allocated, and an oversized body is skipped in small
//! chunks so the stream stays in sync.

use std::io::{self, BufRead, Read, Write};

/// Longest header line accepted.
pub const MAX_HEADER_LINE: usize = 8 * 1024;
/// Most header lines in one frame.
pub const MAX_HEADERS: usize = 32;

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
        if !too_long {
            let room = MAX_HEADER_LINE.saturating_sub(line.len());
            if take > room + 1 {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&buf[..take]);
            }
        }
        r.consume(take);
        if done {
            break;
        }
    }
    if too_long {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "header line too long",
        ));
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    Ok(Some(line))
}

/// Reads one frame. I/O errors other than malformed input are returned.
pub fn read_frame<R: BufRead>(r: &mut R, max_body: usize) -> io::Result<Frame> {
    let mut length: Option<u64> = None;
    let mut problem: Option<String> = None;
    let mut count = 0usize;
    let mut started = false;
    loop {
        let line = match read_line_bounded(r) {
            Ok(Some(l)) => l,
            Ok(None) => {
                return Ok(if started {
                    Frame::Malformed("end of stream inside headers".into())
                } else {
                    Frame::Eof
                });
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                problem.get_or_insert_with(|| "header line too long".into());
                started = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        if line.is_empty() {
            if !started {
                continue; // tolerate blank lines between frames
            }
            break;
        }
        started = true;
        count += 1;
        if count > MAX_HEADERS {
            problem.get_or_insert_with(|| "too many header lines".into());
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let Some((name, value)) = text.split_once(':') else {
            problem.get_or_insert_with(|| format!("malformed header line {text:?}"));
            continue;
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            match value.trim().parse::<u64>() {
                Ok(n) => length = Some(n),
                Err(_) => {
                    problem.get_or_insert_with(|| format!("bad Content-Length {:?}", value.trim()));
                }
            }
        }
    }
    if let Some(p) = problem {
        return Ok(Frame::Malformed(p));
    }
    let Some(len) = length else {
        return Ok(Frame::Malformed("missing Content-Length".into()));
    };
    if len > max_body as u64 {
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
        assert!(matches!(read_frame(&mut c, 100), Ok(Frame::Malformed(_))));
    }
}
