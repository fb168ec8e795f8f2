//! The language server's tests, one binary: `protocol` drives the server through an
//! in-memory connection, each request answered and snapshotted; `robust` feeds the byte
//! transport bad input and leaves mid-proof. Every wait is bounded.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests fail by panicking"
)]

mod protocol;
mod robust;

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long any one answer may take (generous: debug builds on a shared machine).
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the lsp crate sits in the workspace")
        .to_path_buf()
}

/// A client of a server running on its own thread.
pub(crate) struct Client {
    pub(crate) conn: Option<Connection>,
    pub(crate) server: Option<JoinHandle<Result<(), weft_lsp::Error>>>,
    next: i32,
    /// Notifications received while waiting for something else.
    pub(crate) notes: Vec<Notification>,
}

impl Client {
    /// A server with the workspace's `stdlib/`, initialized (with work-done progress).
    pub(crate) fn start() -> (Client, Value) {
        let (server_end, client_end) = Connection::memory();
        let config = weft_lsp::Config {
            stdlib_dir: Some(root().join("stdlib")),
        };
        let server = std::thread::spawn(move || weft_lsp::serve(&server_end, &config));
        let mut c = Client {
            conn: Some(client_end),
            server: Some(server),
            next: 0,
            notes: Vec::new(),
        };
        let init = c.request(
            "initialize",
            json!({ "processId": null, "rootUri": null,
                    "capabilities": { "window": { "workDoneProgress": true } } }),
        );
        c.notify("initialized", json!({}));
        (c, init)
    }

    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("connected")
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.into(), params);
        self.conn().sender.send(n.into()).expect("server listening");
    }

    /// Sends a request and waits for its answer (the result, or the error object).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        let r = Request::new(id.clone(), method.into(), params);
        self.conn().sender.send(r.into()).expect("server listening");
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.conn().receiver.recv_timeout(left) {
                Ok(Message::Response(r)) if r.id == id => {
                    return match r.error {
                        Some(e) => json!({ "error": { "code": e.code, "message": e.message } }),
                        None => r.result.unwrap_or(Value::Null),
                    };
                }
                Ok(Message::Notification(n)) => self.notes.push(n),
                Ok(_) => {}
                Err(e) => panic!("no answer to `{method}` within {WAIT:?}: {e}"),
            }
        }
    }

    /// Waits for the next notification `method` whose parameters satisfy `pred`.
    pub(crate) fn wait_for(&mut self, method: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .notes
            .iter()
            .position(|n| n.method == method && pred(&n.params))
        {
            return self.notes.remove(i).params;
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.conn().receiver.recv_timeout(left) {
                Ok(Message::Notification(n)) if n.method == method && pred(&n.params) => {
                    return n.params;
                }
                Ok(Message::Notification(n)) => self.notes.push(n),
                Ok(_) => {}
                Err(e) => panic!("no `{method}` within {WAIT:?}: {e}"),
            }
        }
    }

    /// Opens `text` as `uri` and returns its first diagnostics.
    pub(crate) fn open(&mut self, uri: &str, text: &str) -> Value {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "weft", "version": 1, "text": text } }),
        );
        self.wait_for("textDocument/publishDiagnostics", |p| {
            p["uri"] == uri && p["version"] == 1
        })
    }

    /// Says `shutdown` and `exit`, and waits for the server to end.
    pub(crate) fn stop(mut self) {
        let r = self.request("shutdown", Value::Null);
        assert_eq!(r, Value::Null);
        self.notify("exit", Value::Null);
        let server = self.server.take().expect("running");
        let res = join_within(server, WAIT).expect("the server ends after `exit`");
        assert!(res.is_ok(), "{res:?}");
    }
}

/// Joins `h` unless it takes longer than `limit`.
pub(crate) fn join_within<T: Send + 'static>(h: JoinHandle<T>, limit: Duration) -> Option<T> {
    let deadline = Instant::now() + limit;
    while !h.is_finished() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    h.join().ok()
}

/// `v` as pretty JSON with the workspace's path written `[root]`.
pub(crate) fn shown(v: &Value) -> String {
    let text = serde_json::to_string_pretty(v).expect("JSON");
    text.replace(&root().display().to_string(), "[root]")
}
