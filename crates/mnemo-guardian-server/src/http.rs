//! An incremental HTTP/1.1 request parser for the Guardian's HTTP transport
//! (pure: bytes in, a parsed request or "need more" out; no I/O).
//!
//! Only what a JSON-RPC POST endpoint needs: a request line, headers with
//! `Content-Length` and `Connection`, a body of known length. Chunked bodies
//! are refused (400). A head longer than [`MAX_HEAD_BYTES`] is refused (431)
//! and a declared body longer than the caller's limit is refused (413)
//! without waiting for it, so a client never makes the server buffer more
//! than one head plus one allowed body.

/// Most bytes of request line plus headers.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// One parsed request; `body` is a range of the buffer given to [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target.
    pub path: String,
    /// Whether the connection stays open after the response.
    pub keep_alive: bool,
    /// Byte range of the body within the buffer.
    pub body: std::ops::Range<usize>,
}

/// A request the server refuses; the connection is closed after the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Status line text, e.g. `400 Bad Request`.
    pub status: &'static str,
    /// Short reason.
    pub reason: String,
    /// The declared body length, for 413.
    pub declared: Option<u64>,
}

/// What [`parse`] found at the start of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet.
    Incomplete,
    /// A whole request, `consumed` bytes long.
    Request {
        /// The request.
        request: Request,
        /// Bytes to drop from the buffer.
        consumed: usize,
    },
    /// Refused (the connection closes after the answer).
    Refused(Refusal),
}

fn refuse(status: &'static str, reason: impl Into<String>) -> Parsed {
    Parsed::Refused(Refusal {
        status,
        reason: reason.into(),
        declared: None,
    })
}

/// Parses the first request in `buf`, allowing bodies of at most `max_body`
/// bytes. Blank lines before a request line are skipped (RFC 9112 §2.2).
pub fn parse(buf: &[u8], max_body: usize) -> Parsed {
    // Skip stray CRLFs between pipelined requests.
    let start = buf
        .iter()
        .position(|b| *b != b'\r' && *b != b'\n')
        .unwrap_or(buf.len());
    let Some(head_len) = head_end(&buf[start..]) else {
        return if buf.len() - start > MAX_HEAD_BYTES {
            refuse("431 Request Header Fields Too Large", "headers too large")
        } else {
            Parsed::Incomplete
        };
    };
    if head_len > MAX_HEAD_BYTES {
        return refuse("431 Request Header Fields Too Large", "headers too large");
    }
    let head = &buf[start..start + head_len];
    let mut lines = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let Ok(request_line) = std::str::from_utf8(request_line) else {
        return refuse("400 Bad Request", "request line is not UTF-8");
    };
    let mut parts = request_line.split(' ').filter(|p| !p.is_empty());
    let (Some(method), Some(path), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return refuse("400 Bad Request", "malformed request line");
    };
    if !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return refuse("400 Bad Request", "malformed method");
    }
    let mut keep_alive = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return refuse("400 Bad Request", "unsupported HTTP version"),
    };
    let mut content_length: Option<u64> = None;
    for line in lines {
        if line.is_empty() {
            break;
        }
        let Ok(line) = std::str::from_utf8(line) else {
            return refuse("400 Bad Request", "header is not UTF-8");
        };
        let Some((name, value)) = line.split_once(':') else {
            return refuse("400 Bad Request", "malformed header");
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            match value.parse::<u64>() {
                Ok(n) if content_length.is_none_or(|c| c == n) => content_length = Some(n),
                _ => return refuse("400 Bad Request", "bad Content-Length"),
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return refuse("400 Bad Request", "Transfer-Encoding is not supported");
        }
    }
    let len = content_length.unwrap_or(0);
    if len > max_body as u64 {
        return Parsed::Refused(Refusal {
            status: "413 Payload Too Large",
            reason: format!("request too large ({len} bytes, max {max_body})"),
            declared: Some(len),
        });
    }
    let body_start = start + head_len;
    let body_end = body_start + len as usize;
    if buf.len() < body_end {
        return Parsed::Incomplete;
    }
    Parsed::Request {
        request: Request {
            method: method.to_string(),
            path: path.to_string(),
            keep_alive,
            body: body_start..body_end,
        },
        consumed: body_end,
    }
}

/// Length of the head including its terminating empty line, if complete.
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(off) = buf[i..].iter().position(|b| *b == b'\n') {
        let nl = i + off;
        let rest = &buf[nl + 1..];
        if rest.first() == Some(&b'\n') {
            return Some(nl + 2);
        }
        if rest.starts_with(b"\r\n") {
            return Some(nl + 3);
        }
        i = nl + 1;
    }
    None
}

/// Appends a whole response to `out`.
pub fn write_response(
    out: &mut Vec<u8>,
    status: &str,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) {
    use std::io::Write;
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(buf: &[u8]) -> (Request, usize) {
        match parse(buf, 1024) {
            Parsed::Request { request, consumed } => (request, consumed),
            other => panic!("{other:?}"),
        }
    }

    fn status(buf: &[u8], max: usize) -> &'static str {
        match parse(buf, max) {
            Parsed::Refused(r) => r.status,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn whole_request_with_body() {
        let b = b"POST /acs HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcdGET";
        let (r, n) = req(b);
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/acs"));
        assert!(r.keep_alive);
        assert_eq!(&b[r.body.clone()], b"abcd");
        assert_eq!(n, b.len() - 3);
    }

    #[test]
    fn every_prefix_is_incomplete() {
        let b = b"\r\nPOST / HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nxyz";
        for cut in 0..b.len() {
            assert_eq!(parse(&b[..cut], 1024), Parsed::Incomplete, "cut {cut}");
        }
        let (r, n) = req(b);
        assert!(!r.keep_alive);
        assert_eq!(n, b.len());
        assert_eq!(&b[r.body], b"xyz");
    }

    #[test]
    fn bare_newlines_and_http_1_0() {
        let (r, _) = req(b"GET /health HTTP/1.0\n\n");
        assert!(!r.keep_alive);
        assert!(r.body.is_empty());
        let (r, _) = req(b"GET /health HTTP/1.0\nConnection: Keep-Alive\n\n");
        assert!(r.keep_alive);
    }

    #[test]
    fn refusals() {
        assert_eq!(
            status(
                b"POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n",
                10
            ),
            "413 Payload Too Large"
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 10),
            "413 Payload Too Large"
        );
        assert_eq!(status(b"\x00\x01 garbage\r\n\r\n", 10), "400 Bad Request");
        assert_eq!(status(b"POST / HTTP/2\r\n\r\n", 10), "400 Bad Request");
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 10),
            "400 Bad Request"
        );
        assert_eq!(
            status(
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                10
            ),
            "400 Bad Request"
        );
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nnocolon\r\n\r\n", 10),
            "400 Bad Request"
        );
        let long = vec![b'a'; MAX_HEAD_BYTES + 1];
        assert_eq!(status(&long, 10), "431 Request Header Fields Too Large");
        let mut long_header = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long_header.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES));
        long_header.extend_from_slice(b"\r\n\r\n");
        assert_eq!(
            status(&long_header, 10),
            "431 Request Header Fields Too Large"
        );
    }

    #[test]
    fn response_format() {
        let mut out = Vec::new();
        write_response(&mut out, "200 OK", "text/plain", b"ok", true);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"
        );
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// Never panics; a request never claims more than the buffer.
            #[test]
            fn arbitrary_bytes(buf in proptest::collection::vec(any::<u8>(), 0..512)) {
                if let Parsed::Request { request, consumed } = parse(&buf, 64) {
                    prop_assert!(consumed <= buf.len());
                    prop_assert!(request.body.end <= consumed);
                    prop_assert!(request.body.len() <= 64);
                }
            }

            /// Any well-formed request parses back, whatever follows it.
            #[test]
            fn roundtrip(body in proptest::collection::vec(any::<u8>(), 0..64),
                         tail in proptest::collection::vec(any::<u8>(), 0..16),
                         close in any::<bool>()) {
                let mut b = format!("POST /x HTTP/1.1\r\nContent-Length: {}\r\n{}\r\n",
                    body.len(), if close { "Connection: close\r\n" } else { "" }).into_bytes();
                b.extend_from_slice(&body);
                let n = b.len();
                b.extend_from_slice(&tail);
                match parse(&b, 64) {
                    Parsed::Request { request, consumed } => {
                        prop_assert_eq!(consumed, n);
                        prop_assert_eq!(&b[request.body], &body[..]);
                        prop_assert_eq!(request.keep_alive, !close);
                    }
                    other => prop_assert!(false, "{:?}", other),
                }
            }
        }
    }
}
