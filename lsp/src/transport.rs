//! The protocol's framing (`Content-Length: N` headers, then N bytes of JSON) over any byte
//! streams, tolerant of bad input: a message that is not JSON, not UTF-8 or not a JSON-RPC
//! message is skipped and reported to the client (`window/logMessage`), never the end of the
//! session. The end of input ends the session.

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Connection, Message, Notification};
use std::io::{BufRead, Read, Write};
use std::thread::JoinHandle;

/// The largest message read (a document of the analysed size, JSON-escaped, fits well).
const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// The threads that move messages; [`Io::join`] waits for them.
pub struct Io {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Io {
    /// Waits until input ended and every message sent was written. Call it after dropping
    /// the [`Connection`] (or after [`crate::serve`] returned, which does not keep it).
    pub fn join(self) {
        let _ = self.reader.join();
        let _ = self.writer.join();
    }
}

/// A connection reading `input` and writing `output`, each on its own thread.
pub fn connect<R, W>(input: R, output: W) -> std::io::Result<(Connection, Io)>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    let (to_server, receiver) = crossbeam_channel::bounded::<Message>(0);
    let (sender, from_server) = crossbeam_channel::unbounded::<Message>();
    let log = sender.clone();
    let reader = std::thread::Builder::new()
        .name("weft-lsp-read".into())
        .spawn(move || read_loop(input, &to_server, &log))?;
    let writer = std::thread::Builder::new()
        .name("weft-lsp-write".into())
        .spawn(move || write_loop(output, &from_server))?;
    Ok((Connection { sender, receiver }, Io { reader, writer }))
}

fn write_loop<W: Write>(mut output: W, messages: &Receiver<Message>) {
    for m in messages {
        if m.write(&mut output).and_then(|()| output.flush()).is_err() {
            return;
        }
    }
}

/// Tells the client a message was skipped.
fn skipped(log: &Sender<Message>, why: &str) {
    let n = Notification::new(
        "window/logMessage".into(),
        serde_json::json!({ "type": 1, "message": format!("weft lsp: skipped a message: {why}") }),
    );
    let _ = log.send(n.into());
}

fn read_loop<R: BufRead>(mut input: R, to_server: &Sender<Message>, log: &Sender<Message>) {
    loop {
        let len = match headers(&mut input) {
            Ok(Some(Some(len))) => len,
            Ok(Some(None)) => {
                skipped(log, "no usable `Content-Length` header");
                continue;
            }
            Ok(None) | Err(_) => return,
        };
        if len > MAX_MESSAGE_BYTES {
            skipped(
                log,
                &format!("{len} bytes is more than {MAX_MESSAGE_BYTES}"),
            );
            if std::io::copy(&mut (&mut input).take(len as u64), &mut std::io::sink()).is_err() {
                return;
            }
            continue;
        }
        let mut body = vec![0u8; len];
        if input.read_exact(&mut body).is_err() {
            return;
        }
        match serde_json::from_slice::<Message>(&body) {
            Ok(m) => {
                if to_server.send(m).is_err() {
                    return;
                }
            }
            Err(e) => skipped(log, &format!("not a JSON-RPC message: {e}")),
        }
    }
}

/// Reads one header block: `None` at the end of input, `Some(None)` when it has no valid
/// `Content-Length`.
fn headers<R: BufRead>(input: &mut R) -> std::io::Result<Option<Option<usize>>> {
    let mut len = None;
    let mut any = false;
    loop {
        let mut line = Vec::new();
        // A header line is short; a stream of garbage without newlines is cut off.
        let n = input.by_ref().take(8192).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        let line = String::from_utf8_lossy(&line);
        let line = line.trim();
        if line.is_empty() {
            if any {
                return Ok(Some(len));
            }
            continue;
        }
        any = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                len = value.trim().parse().ok();
            }
        }
    }
}
