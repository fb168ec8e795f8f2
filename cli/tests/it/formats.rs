//! One snapshot per output format for the same inputs: a description that does not compile,
//! one whose routing has credit loops, and a dump a reader refuses, each shown for people
//! (stderr and stdout), as the command's JSON document and as SARIF. A change to the finding
//! model shows in all three at once.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use std::path::Path;
use std::process::Command;

/// A description with a port wired twice and a port the switch does not have.
const BAD: &str = "use std::hardware::{sb7800, connectx5}\nfabric bad {\n    topology {\n        switch s : sb7800\n        hca h[1..=2] : connectx5\n        link s.p[1] <-> h[1].p[1]\n        link s.p[1] <-> h[2].p[1]\n        link s.p[40] <-> h[2].p[1]\n    }\n}\n";

/// A ring routed by minhop: credit loops.
const RING: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric r {\n    topology = ring(n: 4, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n";

/// A dump with a port GUID that is not hex and a line that is nothing.
const DUMP: &str =
    "Switch 36 \"S-1\"  # \"sw\" base port 0 lid 1 lmc 0\n[1] \"H-2\"[1](x)\nbogus line\n";

/// Writes the inputs into a fresh directory and returns it: commands run there, so every
/// path they show is relative and the snapshots do not depend on where the test runs.
/// (One directory per test: tests run in parallel.)
fn inputs(test: &str) -> crate::support::Scratch {
    let d = crate::support::scratch(&format!("formats-{test}"));
    std::fs::write(d.join("bad.weft"), BAD).unwrap();
    std::fs::write(d.join("ring.weft"), RING).unwrap();
    std::fs::write(d.join("bad.net"), DUMP).unwrap();
    std::fs::write(d.join("lfts.dump"), "").unwrap();
    d
}

/// `weft ARGS --format FORMAT` run in `dir`: exit code, stdout and stderr, as one text.
fn run(dir: &Path, args: &[&str], format: &str) -> String {
    let out = Command::new(crate::support::WEFT)
        .args(args)
        .args(["--format", format])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).replace(version, "[VERSION]"),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn every_format(name: &str, args: &[&str]) {
    let dir = inputs(name);
    for format in ["human", "json", "sarif"] {
        insta::assert_snapshot!(format!("{name}_{format}"), run(&dir, args, format));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_description_that_does_not_compile() {
    every_format("check_bad", &["check", "bad.weft"]);
}

#[test]
fn credit_loops() {
    every_format("verify_ring", &["verify", "ring.weft", "--max-listed", "1"]);
}

#[test]
fn a_refused_dump() {
    every_format(
        "verify_bad_dump",
        &["verify", "--topology", "bad.net", "--lfts", "lfts.dump"],
    );
}
