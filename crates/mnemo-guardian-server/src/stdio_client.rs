//! The stdio transport of [`crate::client::RemoteGuardian`]: a Guardian
//! command (argv, no shell) run as a child process, JSON-RPC messages in
//! Content-Length frames ([`crate::framing`]) on its stdin and stdout.
//!
//! One child serves one connection (a `check_compaction` session): it is
//! spawned at the first request and ended by [`StdioTarget::close`] (or on
//! any failure, or when the client is dropped): its stdin is closed, it is
//! given a moment to exit by itself, then it is killed (with its process
//! group on Unix, so a shell script's own children go too) and reaped.
//!
//! The pipes are served by threads of their own so that no read or write
//! can block the caller past its timeout: a writer thread (frames to the
//! child's stdin), a reader thread (its stdout, read with
//! [`framing::read_frame_strict`]: anything that is not a frame is an
//! error at once, not skipped) and a stderr thread that keeps the last
//! [`STDERR_TAIL`] bytes for the error messages. A request waits for its
//! answer at most the client's timeout; then the child is killed and the
//! request fails.

use crate::client::ClientError;
use crate::framing::{self, Frame};
use serde_json::Value;
use std::io::{BufReader, Read};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How much of the child's stderr is kept for the error messages (its
/// last bytes).
pub const STDERR_TAIL: usize = 2048;

/// How long a child whose stdin was closed may take to exit by itself
/// before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How long the stderr tail is waited for once the child has exited.
const STDERR_GRACE: Duration = Duration::from_millis(300);

/// A Guardian command and its running child, if any.
#[derive(Debug)]
pub struct StdioTarget {
    argv: Vec<String>,
    label: String,
    conn: Mutex<Option<Conn>>,
}

/// What the reader thread saw on the child's stdout.
#[derive(Debug)]
enum Reply {
    Frame(Frame),
    Io(std::io::Error),
}

#[derive(Debug)]
struct Conn {
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    from_child: Receiver<Reply>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Clone for StdioTarget {
    /// The same command, not yet running.
    fn clone(&self) -> Self {
        StdioTarget {
            argv: self.argv.clone(),
            label: self.label.clone(),
            conn: Mutex::new(None),
        }
    }
}

impl Drop for StdioTarget {
    fn drop(&mut self) {
        self.close();
    }
}

impl StdioTarget {
    /// A target for `argv` (program first; at least one word).
    pub fn new(argv: Vec<String>) -> Result<Self, ClientError> {
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err(ClientError::Command(
                "the Guardian command is empty (expected a program and its arguments)".into(),
            ));
        }
        let words: Vec<String> = argv.iter().map(|w| quote(w)).collect();
        let label = format!("`{}`", words.join(" "));
        Ok(StdioTarget {
            argv,
            label,
            conn: Mutex::new(None),
        })
    }

    /// The command as messages name it (in backquotes).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Ends the child, if one runs (closes its stdin, waits
    /// [`EXIT_GRACE`] for it to exit, else kills it; reaps it).
    pub fn close(&self) {
        if let Some(conn) = lock(&self.conn).take() {
            conn.end(EXIT_GRACE);
        }
    }

    /// Sends `body` (one JSON-RPC request whose id is `id`, method
    /// `method`) and returns the answer, waiting at most `timeout`.
    pub fn exchange(
        &self,
        body: Vec<u8>,
        id: &Value,
        method: &str,
        timeout: Duration,
        max: usize,
    ) -> Result<Value, ClientError> {
        let mut slot = lock(&self.conn);
        if slot.is_none() {
            *slot = Some(self.spawn()?);
        }
        let Some(conn) = slot.as_mut() else {
            return Err(self.protocol("the Guardian process is not running"));
        };
        let deadline = Instant::now() + timeout;
        let sent = conn
            .to_child
            .as_ref()
            .is_some_and(|tx| tx.send(body).is_ok());
        let outcome = if sent {
            let wait = deadline.saturating_duration_since(Instant::now());
            match conn.from_child.recv_timeout(wait) {
                Ok(Reply::Frame(Frame::Body(b))) => self.parse(&b, id, method),
                Ok(Reply::Frame(Frame::TooLarge(n))) => Err(self.protocol(format!(
                    "answered {method} with a frame of {n} bytes (at most {max} accepted)"
                ))),
                Ok(Reply::Frame(Frame::Malformed(why))) => Err(self.protocol(format!(
                    "answered {method} with a malformed frame ({why}){}",
                    conn.stderr_note()
                ))),
                Ok(Reply::Io(e)) => Err(ClientError::Io {
                    url: self.label.clone(),
                    source: e,
                }),
                Ok(Reply::Frame(Frame::Eof)) | Err(RecvTimeoutError::Disconnected) => {
                    Err(conn.ended_early(&self.label, method))
                }
                Err(RecvTimeoutError::Timeout) => Err(ClientError::NoAnswer {
                    url: self.label.clone(),
                    what: method.into(),
                    timeout,
                }),
            }
        } else {
            // The writer thread is gone: the child closed its stdin.
            Err(conn.ended_early(&self.label, method))
        };
        if outcome.is_err() {
            // After a failure the stream is out of sync: end the child
            // at once.
            if let Some(conn) = slot.take() {
                conn.end(Duration::ZERO);
            }
        }
        outcome
    }

    fn protocol(&self, message: impl Into<String>) -> ClientError {
        ClientError::Protocol {
            url: self.label.clone(),
            message: message.into(),
        }
    }

    /// One answer frame as a JSON-RPC response to the request `id`.
    fn parse(&self, body: &[u8], id: &Value, method: &str) -> Result<Value, ClientError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            self.protocol(format!(
                "answered {method} with a frame that is not JSON ({e}): {}",
                framing::snippet(body)
            ))
        })?;
        if !v.is_object() {
            return Err(self.protocol(format!(
                "answered {method} with JSON that is not a JSON-RPC response: {}",
                framing::snippet(body)
            )));
        }
        // An answer to another request would be read as this one's: the
        // id must be ours (null: the Guardian could not read the request).
        match v.get("id") {
            Some(got) if got != id && !got.is_null() => Err(self.protocol(format!(
                "answered {method} (id {id}) with the response to id {got}"
            ))),
            _ => Ok(v),
        }
    }

    fn spawn(&self) -> Result<Conn, ClientError> {
        let (program, args) = self.argv.split_first().ok_or_else(|| {
            ClientError::Command("the Guardian command is empty (expected a program)".into())
        })?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            // Its own process group, so that ending it ends what it
            // started (a shell script's children hold its pipes too).
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().map_err(|source| ClientError::Spawn {
            program: program.clone(),
            source,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill(&mut child);
            return Err(self.protocol("the Guardian process has no pipes"));
        };
        let (to_child, writes) = mpsc::channel::<Vec<u8>>();
        let (replies, from_child) = mpsc::channel();
        let tail = Arc::new(Mutex::new(Vec::new()));
        let (stderr_tx, stderr_done) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("guardian-stdin".into())
            .spawn(move || write_loop(stdin, writes))
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("guardian-stdout".into())
                    .spawn(move || read_loop(stdout, replies))
            })
            .and_then(|_| {
                let tail = tail.clone();
                std::thread::Builder::new()
                    .name("guardian-stderr".into())
                    .spawn(move || stderr_loop(stderr, tail, stderr_tx))
            });
        if let Err(e) = spawned {
            kill(&mut child);
            return Err(ClientError::Io {
                url: self.label.clone(),
                source: e,
            });
        }
        Ok(Conn {
            child,
            to_child: Some(to_child),
            from_child,
            stderr: tail,
            stderr_done,
        })
    }
}

impl Conn {
    /// Closes stdin, gives the child `grace` to exit, kills it (and its
    /// process group) otherwise, and reaps it.
    fn end(mut self, grace: Duration) {
        self.to_child = None; // the writer thread ends and closes stdin
        if self.wait_exit(grace).is_none() {
            kill(&mut self.child);
        }
    }

    /// The child's exit status, waiting at most `grace` for it.
    fn wait_exit(&mut self, grace: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }

    /// The error for a child that closed its stdout (or stdin) before it
    /// answered: its exit status and the tail of its stderr.
    fn ended_early(&mut self, label: &str, method: &str) -> ClientError {
        let status = self.wait_exit(Duration::from_secs(1));
        let _ = self.stderr_done.recv_timeout(STDERR_GRACE);
        let status = match status {
            Some(s) => format!("exited ({s})"),
            None => "closed its standard output".into(),
        };
        ClientError::Exited {
            url: label.into(),
            what: format!("{status} before answering {method}"),
            stderr: self.stderr_tail(),
        }
    }

    fn stderr_tail(&self) -> String {
        let tail = lock(&self.stderr);
        String::from_utf8_lossy(&tail).trim().to_string()
    }

    fn stderr_note(&self) -> String {
        let tail = self.stderr_tail();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr: {tail}")
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // `end` may have run already: then the child is reaped and this
        // does nothing.
        self.to_child = None;
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            kill(&mut self.child);
        }
    }
}

/// `word` as a POSIX shell reads it back (single quotes when it holds
/// anything but plain characters), for messages.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Kills `child` (its process group on Unix) and reaps it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        let pid = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn write_loop(mut stdin: ChildStdin, writes: Receiver<Vec<u8>>) {
    for body in writes {
        if framing::write_frame(&mut stdin, &body).is_err() {
            return; // the child closed its stdin; the reader reports it
        }
    }
}

fn read_loop(stdout: impl Read, replies: Sender<Reply>) {
    let mut r = BufReader::new(stdout);
    loop {
        let reply = match framing::read_frame_strict(&mut r, crate::client::MAX_RESPONSE) {
            Ok(f) => Reply::Frame(f),
            Err(e) => Reply::Io(e),
        };
        let more = matches!(reply, Reply::Frame(Frame::Body(_)));
        if replies.send(reply).is_err() || !more {
            return;
        }
    }
}

fn stderr_loop(mut stderr: impl Read, tail: Arc<Mutex<Vec<u8>>>, done: Sender<()>) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut t = lock(&tail);
                t.extend_from_slice(&buf[..n]);
                if t.len() > STDERR_TAIL {
                    let cut = t.len() - STDERR_TAIL;
                    t.drain(..cut);
                }
            }
        }
    }
    let _ = done.send(());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_quote_words_as_a_shell_reads_them() {
        let t = StdioTarget::new(vec!["sh".into(), "-c".into(), "echo 'x'; exit 3".into()]);
        assert_eq!(
            t.map(|t| t.label().to_string()).ok().as_deref(),
            Some(r#"`sh -c 'echo '\''x'\''; exit 3'`"#)
        );
        assert!(matches!(
            StdioTarget::new(vec![]),
            Err(ClientError::Command(_))
        ));
        assert!(matches!(
            StdioTarget::new(vec![String::new()]),
            Err(ClientError::Command(_))
        ));
    }
}
