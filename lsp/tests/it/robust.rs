//! Bad input neither crashes nor hangs the server: malformed framing, invalid JSON, a body
//! that is not UTF-8, a text that was not UTF-8 on disk (the editor's replacement
//! characters), a 10 MB file, and a client that leaves while a proof runs.

use crate::{join_within, root, Client, WAIT};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer into a shared buffer.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut m = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    m.extend_from_slice(body);
    m
}

fn json_frame(v: &Value) -> Vec<u8> {
    frame(v.to_string().as_bytes())
}

#[test]
fn malformed_messages_are_skipped_and_reported() {
    let mut input = Vec::new();
    // No Content-Length at all.
    input.extend_from_slice(b"Content-Type: nonsense\r\n\r\n");
    // Invalid JSON.
    input.extend_from_slice(&frame(b"{\"jsonrpc\": \"2.0\", \"id\": 1, "));
    // Not UTF-8.
    input.extend_from_slice(&frame(b"{\"jsonrpc\": \"2.0\", \"method\": \"\xff\xfe\"}"));
    // A valid session after all that.
    input.extend_from_slice(&json_frame(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} }
    })));
    input.extend_from_slice(&json_frame(
        &json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
    ));
    input.extend_from_slice(&json_frame(
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown" }),
    ));
    input.extend_from_slice(&json_frame(&json!({ "jsonrpc": "2.0", "method": "exit" })));
    let out = Shared::default();
    let (conn, io) =
        weft_lsp::transport::connect(std::io::Cursor::new(input), out.clone()).unwrap();
    let server = std::thread::spawn(move || {
        let r = weft_lsp::serve(&conn, &weft_lsp::Config::default());
        drop(conn);
        io.join();
        r
    });
    let r = join_within(server, WAIT).expect("the session ends");
    assert!(r.is_ok(), "{r:?}");
    let written = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    assert_eq!(written.matches("skipped a message").count(), 3, "{written}");
    assert!(
        written.contains("\"id\":1,\"result\":{\"capabilities\""),
        "{written}"
    );
    assert!(written.contains("\"id\":2,\"result\":null"), "{written}");
}

#[test]
fn the_end_of_input_mid_message_ends_the_session() {
    let mut input = json_frame(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} }
    }));
    input.extend_from_slice(b"Content-Length: 500\r\n\r\n{\"jsonrpc\"");
    let (conn, io) =
        weft_lsp::transport::connect(std::io::Cursor::new(input), Shared::default()).unwrap();
    let server = std::thread::spawn(move || {
        let r = weft_lsp::serve(&conn, &weft_lsp::Config::default());
        drop(conn);
        io.join();
        r
    });
    let r = join_within(server, WAIT).expect("the session ends");
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn text_that_was_not_utf8_and_a_10_mb_file() {
    let (mut c, _) = Client::start();
    // What an editor sends for a file with bytes that are not UTF-8: replacement characters.
    let d = c.open(
        "file:///work/latin1.weft",
        "fabric f\u{fffd} {\n    topology { switch s\u{fffd} }\n}\n",
    );
    let first = &d["diagnostics"][0];
    assert_eq!(first["severity"], 1, "{d}");
    assert_eq!(first["range"]["start"]["line"], 0, "{d}");
    let big = "// padding\n".repeat((10 << 20) / 11 + 1);
    assert!(big.len() >= 10 << 20);
    let started = std::time::Instant::now();
    let d = c.open("file:///work/big.weft", &big);
    assert!(started.elapsed() < WAIT);
    let m = d["diagnostics"][0]["message"].as_str().unwrap();
    assert!(m.contains("run `weft check`"), "{m}");
    // Requests on it are answered.
    let h = c.request(
        "textDocument/completion",
        json!({ "textDocument": { "uri": "file:///work/big.weft" }, "position": { "line": 3, "character": 2 } }),
    );
    assert!(h.is_array(), "{h}");
    c.stop();
}

#[test]
fn a_client_leaving_mid_proof_does_not_keep_the_server() {
    let (mut c, _) = Client::start();
    let text = std::fs::read_to_string(root().join("examples/cluster-648.weft")).unwrap();
    let uri = format!("file://{}/examples/cluster-648.weft", root().display());
    c.open(&uri, &text);
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri } }),
    );
    // The proof has begun (routing a 648-host tree takes a while in a debug build).
    c.wait_for("$/progress", |p| p["value"]["kind"] == "begin");
    let server = c.server.take().unwrap();
    drop(c.conn.take());
    let r = join_within(server, WAIT).expect("the server ends when its client goes");
    assert!(r.is_ok(), "{r:?}");
}

#[test]
fn a_newer_change_cancels_the_proof() {
    let (mut c, _) = Client::start();
    let text = std::fs::read_to_string(root().join("examples/cluster-648.weft")).unwrap();
    let uri = format!("file://{}/examples/cluster-648.weft", root().display());
    c.open(&uri, &text);
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri } }),
    );
    c.wait_for("$/progress", |p| p["value"]["kind"] == "begin");
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "text": text.clone() + "\n" }] }),
    );
    let end = c.wait_for("$/progress", |p| p["value"]["kind"] == "end");
    assert_eq!(
        end["value"]["message"], "cancelled: the file changed",
        "{end}"
    );
    c.stop();
}

#[test]
fn changes_queued_while_analysing_are_analysed_once_newest_first() {
    let (mut c, _) = Client::start();
    let text = std::fs::read_to_string(root().join("examples/cluster-648.weft")).unwrap();
    let uri = format!("file://{}/examples/cluster-648.weft", root().display());
    c.open(&uri, &text);
    // Typing faster than the server analyses: 40 changes queued at once.
    let last = 41;
    for version in 2..=last {
        c.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version },
                    "contentChanges": [{ "text": format!("{text}{}", "\n".repeat(version as usize)) }] }),
        );
    }
    // A request queued behind them is answered with the newest text's outline.
    let symbols = c.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": uri } }),
    );
    assert!(
        symbols.as_array().is_some_and(|s| !s.is_empty()),
        "{symbols}"
    );
    c.wait_for("textDocument/publishDiagnostics", |p| {
        p["uri"] == uri.as_str() && p["version"] == last
    });
    let published: Vec<i64> = c
        .notes
        .iter()
        .filter(|n| n.method == "textDocument/publishDiagnostics")
        .filter_map(|n| n.params["version"].as_i64())
        .collect();
    assert!(
        published.len() < 10,
        "each of 40 queued changes was analysed: versions published {published:?}"
    );
    assert!(
        published.windows(2).all(|w| w[0] < w[1]),
        "published out of order: {published:?}"
    );
    c.stop();
}
