//! Hostile sources: every input that once crashed, hung or ate memory gets a diagnostic and a
//! non-zero exit, under a 2 GiB address-space limit and a 60 s deadline (the deadline only
//! catches hangs; none of these takes more than a second or two).

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const PRELUDE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\n";

fn fabric(extra: &str) -> String {
    format!("{PRELUDE}fabric f {{\n    topology = fat_tree(levels: 2, switch: sb7800, hca: connectx5)\n{extra}}}\n")
}

fn dir() -> crate::support::Scratch {
    crate::support::scratch("hostile")
}

/// Runs `weft ARGS` under `ulimit -v` (2 GiB) and returns (exit code, stderr + stdout).
fn weft_limited(args: &[&str], cwd: &Path) -> (i32, String) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(crate::support::WEFT)
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // The output is read while the child runs (a full pipe would block it).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("weft {args:?} still running after 60 s");
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `weft check` of `src` exits 1 with `code` among its findings, and nothing crashed.
fn refused(name: &str, src: &str, code: &str) -> String {
    let d = dir();
    let f = d.join(format!("{name}.weft"));
    std::fs::write(&f, src).unwrap();
    let (status, out) = weft_limited(&["check", f.to_str().unwrap()], &d);
    assert!(
        !out.contains("panicked") && !out.contains("overflow"),
        "{name}: crashed:\n{}",
        &out[..out.len().min(2000)]
    );
    assert_eq!(
        status,
        1,
        "{name}: exit {status}\n{}",
        &out[..out.len().min(2000)]
    );
    assert!(
        out.contains(code),
        "{name}: no {code}:\n{}",
        &out[..out.len().min(2000)]
    );
    out
}

#[test]
fn deep_nesting_is_a_diagnostic() {
    let parens = format!("let x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    refused("parens", &(parens + &fabric("")), "weft::too_deep");
    let ifs = format!(
        "let x = {}1{}\n",
        "if true { ".repeat(3000),
        " } else { 2 }".repeat(3000)
    );
    refused("ifs", &(ifs + &fabric("")), "weft::too_deep");
    let chain = format!(
        "let x = if false {{ 0 }}{} else {{ 1 }}\n",
        " else if false { 0 }".repeat(5000)
    );
    refused("else_if", &(chain + &fabric("")), "weft::too_deep");
    let sum = format!("let x = {}\n", vec!["1"; 20_000].join(" + "));
    refused("sum", &(sum + &fabric("")), "weft::too_deep");
    let neg = format!("let x = {}1\n", "-".repeat(20_000));
    refused("neg", &(neg + &fabric("")), "weft::too_deep");
    let index = format!("let x = [1]{}\n", "[0]".repeat(20_000));
    refused("index", &(index + &fabric("")), "weft::too_deep");
    let mut templates = String::from("template t0() { }\n");
    for i in 1..10_000 {
        templates += &format!("template t{i}() {{ t{}() }}\n", i - 1);
    }
    templates += "fabric f {\n    topology {\n        t9999()\n    }\n}\n";
    refused("templates", &templates, "weft::too_deep");
}

#[test]
fn fmt_refuses_what_it_cannot_format() {
    let d = dir();
    let f = d.join("fmt-parens.weft");
    std::fs::write(
        &f,
        format!("let x = {}1{}\n", "(".repeat(5000), ")".repeat(5000)) + &fabric(""),
    )
    .unwrap();
    let (status, out) = weft_limited(&["fmt", f.to_str().unwrap()], &d);
    assert_ne!(status, 0, "{out}");
    assert!(out.contains("weft::too_deep"), "{out}");
    assert!(!out.contains("overflow"), "{out}");
}

#[test]
fn runaway_work_stops() {
    refused(
        "empty_loops",
        "fabric f {\n    topology {\n        for i in 0..1000000000000, j in 0..1000000000000 {}\n    }\n}\n",
        "weft::evaluation_limit",
    );
    let mut bomb = String::from("let s0 = \"xxxxxxxxxxxxxxxx\"\n");
    for i in 1..60 {
        bomb += &format!("let s{i} = s{0} + s{0}\n", i - 1);
    }
    let out = refused(
        "string_bomb",
        &(bomb + &fabric("")),
        "weft::value_too_large",
    );
    // One root error, one diagnostic: the names it poisoned stay quiet.
    assert!(out.contains("1 error(s)"), "{out}");
    refused(
        "repeat",
        &(String::from("let l = repeat(0, 100000000)\n") + &fabric("")),
        "weft::value_too_large",
    );
    refused(
        "format_width",
        &(String::from("let x = format(\"{:70000}\", 1)\n") + &fabric("")),
        "weft::bad_format",
    );
    refused(
        "ndr_4_levels",
        "use std::hardware::{qm9700, connectx7}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 4, switch: qm9700, hca: connectx7)\n}\n",
        "weft::too_many_nodes",
    );
}

#[test]
fn twenty_thousand_errors_render_briefly() {
    let mut src = String::new();
    for i in 0..20_000 {
        src += &format!("let x{i} = nope{i}\n");
    }
    let out = refused("errors", &(src + &fabric("")), "weft::unknown_name");
    assert!(
        out.contains("… and 19990 more like this (weft::unknown_name)"),
        "{}",
        &out[out.len().saturating_sub(2000)..]
    );
    assert!(out.contains("20000 error(s)"));
    assert!(out.lines().count() < 200, "{} lines", out.lines().count());
}

#[test]
fn imports_and_inputs_must_be_regular_files() {
    let d = dir();
    refused(
        "dev_zero",
        "fabric f {\n    topology = import(\"/dev/zero\")\n}\n",
        "weft::import_unreadable",
    );
    let fifo = d.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let out = refused(
        "fifo",
        &format!(
            "fabric f {{\n    topology = import(\"{}\")\n}}\n",
            fifo.display()
        ),
        "weft::import_unreadable",
    );
    assert!(out.contains("regular files only"), "{out}");
    // The CLI's own inputs: exit 2, naming the file.
    for path in ["/dev/zero", fifo.to_str().unwrap()] {
        let (status, out) = weft_limited(&["check", path], &d);
        assert_eq!(status, 2, "{out}");
        assert!(out.contains("regular files only"), "{out}");
        let (status, out) = weft_limited(&["verify", "--state", path], &d);
        assert_eq!(status, 2, "{out}");
        assert!(out.contains("regular files only"), "{out}");
    }
    // A traffic file and a journal too, a directory as well: refused at once (these two
    // read until out of memory, or blocked on the FIFO, before).
    let lab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lab-16.weft");
    let built = d.join("lab16");
    let (status, out) = weft_limited(
        &[
            "build",
            lab.to_str().unwrap(),
            "--output",
            built.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(status, 0, "{out}");
    let state = built.join("state.json");
    let dir_input = d.join("a-directory");
    std::fs::create_dir_all(&dir_input).unwrap();
    for path in [
        "/dev/zero",
        fifo.to_str().unwrap(),
        dir_input.to_str().unwrap(),
    ] {
        let traffic = format!("file:{path}");
        let (status, out) = weft_limited(
            &["simulate", lab.to_str().unwrap(), "--traffic", &traffic],
            &d,
        );
        assert_eq!(status, 2, "{out}");
        assert!(out.contains(&format!("cannot read `{path}`: ")), "{out}");
        assert!(out.contains("regular files only"), "{out}");
        let (status, out) = weft_limited(
            &[
                "apply",
                "--recover",
                path,
                "--fabric",
                state.to_str().unwrap(),
            ],
            &d,
        );
        assert_eq!(status, 2, "{out}");
        assert!(out.contains("regular files only"), "{out}");
        assert!(out.contains("nothing was written"), "{out}");
    }
    // An empty journal is not "an apply that did not end" (which `--recover` then refused
    // for having no header): both say what it is.
    let empty = d.join("empty.journal");
    std::fs::write(&empty, "").unwrap();
    let (status, out) = weft_limited(
        &[
            "apply",
            "--recover",
            empty.to_str().unwrap(),
            "--fabric",
            state.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(status, 2, "{out}");
    assert!(
        out.contains("is empty: weft writes a journal whole"),
        "{out}"
    );
    assert!(!out.contains("no header"), "{out}");
}
