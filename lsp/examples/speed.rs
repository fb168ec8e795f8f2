//! How fast `weft lsp` answers on `examples/cluster-11664.weft` (issue 46, item 8): the
//! diagnostics after an edit, hover and completion, and the resident memory over 1 000
//! edits. Run `cargo run --release -p weft-lsp --example speed`; it prints the figures.

#![expect(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a measuring program prints its figures and stops on the first surprise"
)]

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

struct Client {
    conn: Connection,
    next: i32,
}

impl Client {
    fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.into(), params);
        self.conn.sender.send(n.into()).unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        let r = Request::new(id.clone(), method.into(), params);
        self.conn.sender.send(r.into()).unwrap();
        loop {
            match self
                .conn
                .receiver
                .recv_timeout(Duration::from_secs(120))
                .unwrap()
            {
                Message::Response(r) if r.id == id => return r.result.unwrap_or(Value::Null),
                _ => {}
            }
        }
    }

    fn diagnostics(&self, version: i32) -> Value {
        loop {
            match self
                .conn
                .receiver
                .recv_timeout(Duration::from_secs(120))
                .unwrap()
            {
                Message::Notification(n)
                    if n.method == "textDocument/publishDiagnostics"
                        && n.params["version"] == version =>
                {
                    return n.params;
                }
                _ => {}
            }
        }
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn summary(name: &str, mut t: Vec<Duration>) {
    t.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name}: n={} median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        t.len(),
        ms(t[t.len() / 2]),
        ms(t[t.len() * 9 / 10]),
        ms(t[t.len() - 1])
    );
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let path = root.join("examples/cluster-11664.weft");
    let text = std::fs::read_to_string(&path).unwrap();
    let uri = format!("file://{}", path.display());
    let (server, conn) = Connection::memory();
    let config = weft_lsp::Config {
        stdlib_dir: Some(root.join("stdlib")),
    };
    std::thread::spawn(move || weft_lsp::serve(&server, &config));
    let mut c = Client { conn, next: 0 };
    c.request("initialize", json!({ "capabilities": {} }));
    c.notify("initialized", json!({}));
    let t = Instant::now();
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "weft", "version": 1, "text": text } }),
    );
    let d = c.diagnostics(1);
    println!(
        "open: {:.1} ms, {} diagnostic(s)",
        t.elapsed().as_secs_f64() * 1e3,
        d["diagnostics"].as_array().map_or(0, Vec::len)
    );
    // Edits that change the fabric: the host name pattern, alternately.
    let edited = |v: i32| {
        if v % 2 == 0 {
            text.replace("cn{:05}", "node{:05}")
        } else {
            text.clone()
        }
    };
    let mut edits = Vec::new();
    let mut rss = vec![(0, rss_kib())];
    for v in 2..1002 {
        let t = Instant::now();
        c.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": v }, "contentChanges": [{ "text": edited(v) }] }),
        );
        c.diagnostics(v);
        edits.push(t.elapsed());
        if (v - 1) % 100 == 0 {
            rss.push((v - 1, rss_kib()));
        }
    }
    summary("diagnostics after an edit", edits);
    let line = |needle: &str| {
        let off = text.find(needle).unwrap();
        let l = text[..off].matches('\n').count();
        let col = off - text[..off].rfind('\n').map_or(0, |n| n + 1);
        json!({ "line": l, "character": col + 1 })
    };
    let mut hovers = Vec::new();
    for needle in ["fat_tree(", "sb7800,", "engine"].iter().cycle().take(60) {
        let p = json!({ "textDocument": { "uri": uri }, "position": line(needle) });
        let t = Instant::now();
        let h = c.request("textDocument/hover", p);
        hovers.push(t.elapsed());
        assert!(!h.is_null(), "hover on {needle}");
    }
    summary("hover", hovers);
    let mut completions = Vec::new();
    for needle in ["engine = ", "topology = "].iter().cycle().take(40) {
        let mut pos = line(needle);
        pos["character"] = json!(pos["character"].as_u64().unwrap() - 1 + needle.len() as u64);
        let p = json!({ "textDocument": { "uri": uri }, "position": pos });
        let t = Instant::now();
        let r = c.request("textDocument/completion", p);
        completions.push(t.elapsed());
        assert!(
            r.as_array().is_some_and(|a| !a.is_empty()),
            "completion at {needle}"
        );
    }
    summary("completion", completions);
    let rss: Vec<String> = rss
        .iter()
        .map(|(n, k)| format!("{n}: {} MiB", k / 1024))
        .collect();
    println!("resident memory after N edits: {}", rss.join(", "));
}
