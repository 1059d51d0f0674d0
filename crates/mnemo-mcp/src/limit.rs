//! The size limit of one incoming MCP message, answered rather than dropped.
//!
//! rmcp's stdio transport drops a line longer than its 16 MiB limit and
//! logs it; the client, which is waiting for an answer to that request,
//! waits forever. [`limit_lines`] sits between stdin and rmcp: lines up to
//! [`MAX_MESSAGE_BYTES`] (newline included) pass through untouched and
//! unbuffered; of a longer line only the first `MAX_MESSAGE_BYTES - 1`
//! bytes reach rmcp, closed by a newline (an incomplete JSON text, which
//! rmcp ignores), the rest is read and dropped while a small state machine
//! picks out the top-level `"id"` (wherever it is in the line; clients put
//! it first or last), and then a short `mnemo/request_too_large` request
//! with that id takes its place, which the server answers with an error
//! (see [`too_large_error`]). Without an id (a notification, or no
//! readable id) a well-formed non-message takes its place and rmcp
//! answers `Invalid request` with a null id. Memory stays flat: nothing
//! of the oversized line is kept except its id (at most 256 bytes).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream};

/// Longest incoming message, newline included: rmcp's stdio limit.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The method of the request that takes an oversized one's place.
pub const TOO_LARGE_METHOD: &str = "mnemo/request_too_large";

/// Longest id kept from an oversized line.
const MAX_ID_BYTES: usize = 256;

/// Finds the top-level `"id"` member of a JSON object as its bytes stream
/// past, without keeping the rest.
#[derive(Debug, Default)]
struct IdScanner {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// The first bytes of a depth-1 key being read.
    key: Option<Vec<u8>>,
    /// At depth 1 the next string is a key (after `{` or `,`).
    expect_key: bool,
    /// The last depth-1 key was `id`; its value follows the `:`.
    last_key_is_id: bool,
    /// Collecting the id's value.
    capturing: bool,
    value: Vec<u8>,
    overflow: bool,
    found: Option<Vec<u8>>,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        let top = self.depth == 1 && !self.in_string;
        if self.capturing && top && (b == b',' || b == b'}') {
            self.capturing = false;
            if self.found.is_none() && !self.overflow {
                self.found = Some(std::mem::take(&mut self.value));
            }
        }
        if self.capturing {
            if self.value.len() < MAX_ID_BYTES {
                self.value.push(b);
            } else {
                self.overflow = true;
            }
        }
        if self.in_string {
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(k) = self.key.take() {
                    self.last_key_is_id = k == b"id";
                }
            } else if let Some(k) = self.key.as_mut()
                && k.len() < 3
            {
                k.push(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key && !self.capturing {
                    self.key = Some(Vec::new());
                    self.expect_key = false;
                }
            }
            b':' if self.depth == 1 && !self.capturing && self.last_key_is_id => {
                self.last_key_is_id = false;
                self.capturing = true;
                self.value.clear();
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = b == b'{';
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.last_key_is_id = false;
            }
            _ => {}
        }
    }

    /// The id as a JSON value, when one was found and is a string or a number.
    fn id(&self) -> Option<serde_json::Value> {
        let raw = self.found.as_deref()?;
        let text = std::str::from_utf8(raw).ok()?.trim();
        match serde_json::from_str::<serde_json::Value>(text).ok()? {
            v @ (serde_json::Value::String(_) | serde_json::Value::Number(_)) => Some(v),
            _ => None,
        }
    }
}

/// The line that takes an oversized message's place.
fn replacement(id: Option<serde_json::Value>, bytes: u64) -> Vec<u8> {
    let mut line = match id {
        Some(id) => serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": TOO_LARGE_METHOD,
            "params": {"bytes": bytes, "limit": MAX_MESSAGE_BYTES}
        })
        .to_string(),
        // Well-formed JSON that is no JSON-RPC message: rmcp answers
        // `Invalid request` with a null id.
        None => r#"{"jsonrpc":"2.0","mnemo":"request_too_large"}"#.to_string(),
    };
    line.push('\n');
    line.into_bytes()
}

/// The error answer to a [`TOO_LARGE_METHOD`] request.
pub fn too_large_error(params: Option<&serde_json::Map<String, serde_json::Value>>) -> String {
    let bytes = params
        .and_then(|p| p.get("bytes"))
        .and_then(serde_json::Value::as_u64)
        .map_or_else(|| "too many".to_string(), |b| b.to_string());
    format!(
        "the request is {bytes} bytes, more than the {MAX_MESSAGE_BYTES}-byte limit of one MCP message; nothing was done (tool texts are limited to 4 MiB)"
    )
}

/// Copies `input` to the returned stream line by line, replacing every line
/// longer than `limit` bytes (newline included) as the module says. Runs
/// on a spawned task; call it inside a Tokio runtime.
pub fn limit_lines<R>(input: R, limit: usize) -> DuplexStream
where
    R: AsyncRead + Send + Unpin + 'static,
{
    let (mut tx, rx) = tokio::io::duplex(64 * 1024);
    let limit = limit.max(2);
    tokio::spawn(async move {
        let mut input = input;
        let mut buf = vec![0u8; 64 * 1024];
        // Bytes of the current line seen so far, and its id scanner.
        let mut line_len: u64 = 0;
        let mut scan = IdScanner::default();
        let mut dropping = false;
        loop {
            let n = match input.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut chunk = &buf[..n];
            while !chunk.is_empty() {
                let nl = chunk.iter().position(|&b| b == b'\n');
                let take = nl.map_or(chunk.len(), |i| i + 1);
                let (part, rest) = chunk.split_at(take);
                chunk = rest;
                let ends = nl.is_some();
                scan.feed(part);
                let len = part.len() as u64;
                if !dropping {
                    let room = (limit as u64).saturating_sub(line_len);
                    // A line of exactly `limit` bytes passes only with its newline.
                    if len < room || (len == room && ends) {
                        if tx.write_all(part).await.is_err() {
                            return;
                        }
                    } else {
                        // Over the limit: pass what fits short of it, close
                        // it with a newline (rmcp ignores the incomplete
                        // text) and drop the rest of the line.
                        let fit = usize::try_from(room.saturating_sub(1))
                            .unwrap_or(usize::MAX)
                            .min(part.len());
                        if tx.write_all(&part[..fit]).await.is_err()
                            || tx.write_all(b"\n").await.is_err()
                        {
                            return;
                        }
                        dropping = true;
                    }
                }
                line_len += len;
                if ends {
                    if dropping
                        && tx
                            .write_all(&replacement(scan.id(), line_len))
                            .await
                            .is_err()
                    {
                        return;
                    }
                    dropping = false;
                    line_len = 0;
                    scan = IdScanner::default();
                }
            }
        }
        let _ = tx.shutdown().await;
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn id_of(line: &str) -> Option<Value> {
        let mut s = IdScanner::default();
        s.feed(line.as_bytes());
        s.id()
    }

    #[test]
    fn the_top_level_id_is_found_first_or_last() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Some(json!(7))
        );
        assert_eq!(
            id_of(r#"{"method":"x","params":{"id":1,"a":[{"id":2}]},"jsonrpc":"2.0","id":"abc"}"#),
            Some(json!("abc"))
        );
        assert_eq!(
            id_of(r#"{"params":{"text":"\"id\": 3, ,}"},"id" : 42 }"#),
            Some(json!(42))
        );
        assert_eq!(id_of(r#"{"method":"x","params":{"id":5}}"#), None);
        assert_eq!(id_of(r#"{"idx":1,"id":null}"#), None);
        assert_eq!(id_of(r#"{"id":"a\"b"}"#), Some(json!("a\"b")));
    }

    async fn run(input: Vec<u8>, limit: usize) -> String {
        let mut out = limit_lines(std::io::Cursor::new(input), limit);
        let mut s = String::new();
        out.read_to_string(&mut s).await.unwrap_or_default();
        s
    }

    #[tokio::test(flavor = "current_thread")]
    async fn short_lines_pass_and_long_ones_are_replaced() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"t\":\"{}\"}},\"id\":9}}\n",
            "x".repeat(300)
        );
        let input = format!("{{\"id\":1}}\n{big}{{\"id\":2}}\n");
        let out = run(input.into_bytes(), 64).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], r#"{"id":1}"#);
        // The truncated head (63 bytes and the newline): not JSON.
        assert_eq!(lines[1].len(), 63);
        assert!(serde_json::from_str::<Value>(lines[1]).is_err());
        let r: Value = serde_json::from_str(lines[2]).unwrap_or_default();
        assert_eq!(r["id"], 9);
        assert_eq!(r["method"], TOO_LARGE_METHOD);
        assert_eq!(r["params"]["bytes"], big.len());
        assert_eq!(lines[3], r#"{"id":2}"#);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_line_of_exactly_the_limit_passes() {
        let line = format!("{{\"id\":\"{}\"}}\n", "y".repeat(20));
        let n = line.len();
        assert_eq!(run(line.clone().into_bytes(), n).await, line);
        let out = run(line.into_bytes(), n - 1).await;
        assert!(out.contains(TOO_LARGE_METHOD), "{out}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn without_an_id_a_non_message_takes_the_place() {
        let line = format!("{{\"method\":\"n\",\"params\":\"{}\"}}\n", "z".repeat(100));
        let out = run(line.into_bytes(), 32).await;
        assert!(
            out.ends_with("{\"jsonrpc\":\"2.0\",\"mnemo\":\"request_too_large\"}\n"),
            "{out}"
        );
    }
}
