//! `weft build` writes only what it proved: the listing of its directory, a closed pipe kept
//! quiet, Ctrl-C leaving the old build or the new one, progress only on a terminal, tenants'
//! `partitions.conf`.

use super::*;

const MINHOP_RING: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric r {\n    topology = ring(n: 6, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n";

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read(e.path()).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `weft build` proves what it writes: a minhop ring (credit loops) writes nothing and exits
/// 1, leaving a previous build untouched; `--allow-unproven` writes it marked `UNPROVEN`; a
/// proven build writes a certificate that `weft verify` accepts.
#[test]
fn build_writes_only_what_it_proved() {
    let dir = crate::support::scratch("cli-build");
    let ring = dir.join("ring.weft");
    std::fs::write(&ring, MINHOP_RING).unwrap();
    let out_dir = dir.join("out");

    // Nothing there: nothing created.
    let out = weft(&[
        "build",
        ring.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("[weft::credit_loop]"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("nothing written"),
        "{}",
        text(&out.stderr)
    );
    assert!(!out_dir.exists());

    // A proven build, with its certificate.
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let names: Vec<String> = listing(&out_dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "certificate.json",
            "guid2lid",
            "lfts.dump",
            "state.json",
            "topology.net"
        ]
    );
    let out = weft(&[
        "verify",
        "--state",
        out_dir.join("state.json").to_str().unwrap(),
        "--certificate",
        out_dir.join("certificate.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).starts_with("✓ certificate accepted"));

    // The unproven ring leaves that build exactly as it was.
    let before = listing(&out_dir);
    let out = weft(&[
        "build",
        ring.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(listing(&out_dir), before);

    // --allow-unproven replaces it, marked, still exit 1; no temporary directory is left.
    let out = weft(&[
        "build",
        ring.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--allow-unproven",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let after = listing(&out_dir);
    let names: Vec<&str> = after.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "UNPROVEN",
            "guid2lid",
            "lfts.dump",
            "state.json",
            "topology.net"
        ]
    );
    let marker = String::from_utf8_lossy(&after[0].1).into_owned();
    assert!(marker.contains("× deadlock freedom"), "{marker}");
    let left: Vec<String> = listing(&dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(left, ["out", "ring.weft"]);

    // A directory with someone else's files is never replaced, nor through a symlink to it.
    let foreign = dir.join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("which weft build did not write"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(listing(&foreign).len(), 1);
    let link = dir.join("link");
    std::os::unix::fs::symlink(&foreign, &link).unwrap();
    let out = weft(&[
        "build",
        "examples/lab-16.weft",
        "-o",
        link.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("which weft build did not write"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(listing(&foreign).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `weft export … | head -1`: the closed pipe is quiet, and the exit status is SIGPIPE's
/// (141), as for any Unix tool cut short.
#[test]
fn a_closed_pipe_is_quiet() {
    use std::io::Read as _;
    let mut child = Command::new(crate::support::WEFT)
        .args([
            "export",
            root().join("examples/cluster-648.weft").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
}

/// Ctrl-C at any moment of a `weft build` over a previous build: exit 130 and the output
/// directory is exactly the old build or exactly the new one; no temporary file or directory
/// is left beside it. The moments are spread over the measured length of an uninterrupted run.
#[test]
fn ctrl_c_leaves_the_old_build_or_the_new_one() {
    let dir = temp_dir("interrupt");
    let out_dir = dir.join("out");
    let o = out_dir.to_str().unwrap();
    let build = |example: &str| {
        let r = weft(&["build", example, "-o", o]);
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        listing(&out_dir)
    };
    let started = std::time::Instant::now();
    let new = build("examples/cluster-648.weft");
    let length = started.elapsed();
    let old = build("examples/lab-16.weft");
    let mut interrupted = 0;
    for k in 1..=8u32 {
        let child = Command::new(crate::support::WEFT)
            .args(["build", "examples/cluster-648.weft", "-o", o])
            .current_dir(root())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(length * k / 8);
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        let now = listing(&out_dir);
        match out.status.code() {
            Some(130) => {
                interrupted += 1;
                assert!(
                    text(&out.stderr).starts_with("weft: interrupted"),
                    "{}",
                    text(&out.stderr)
                );
                assert!(now == old || now == new, "moment {k}/8: a mix of builds");
            }
            Some(0) => assert!(now == new, "moment {k}/8"),
            // Killed before the handler was installed (a very early moment on a slow machine).
            None if std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(2) => {
                assert!(now == old, "moment {k}/8");
            }
            other => panic!("moment {k}/8: exit {other:?}: {}", text(&out.stderr)),
        }
        let beside: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "out")
            .collect();
        assert!(beside.is_empty(), "moment {k}/8 left {beside:?}");
        // Back to the old build for the next moment.
        if now != old {
            build("examples/lab-16.weft");
        }
    }
    assert!(interrupted > 0, "no run was interrupted");
    let _ = std::fs::remove_dir_all(dir);
}

/// The progress line: on a terminal (a pseudo-terminal from `script`), work past a second
/// shows what it is doing on stderr and erases it before printing; `--quiet` shows nothing
/// and no summary; off a terminal there is no progress line at all.
#[test]
fn progress_only_on_a_terminal_and_never_when_quiet() {
    let bin = crate::support::WEFT;
    let big = root().join("examples/cluster-45056.weft");
    let big = big.to_str().unwrap();
    let on_tty = |args: &str| {
        let out = Command::new("script")
            .args(["-qec", &format!("{bin} {args}"), "/dev/null"])
            .current_dir(root())
            .output()
            .unwrap_or_else(|e| panic!("script (util-linux) is needed: {e}"));
        text(&out.stdout)
    };
    // Compiling the largest example takes over a second in a debug build but may not in an
    // optimised one; then the proof (about ten seconds) is the work that shows progress.
    let start = std::time::Instant::now();
    let piped = weft(&["check", "--no-verify", big]);
    let work = if start.elapsed() > std::time::Duration::from_millis(1300) {
        "check --no-verify"
    } else {
        "check"
    };
    let shown = on_tty(&format!("{work} {big}"));
    assert!(shown.contains("\r\x1b[2Kweft: "), "{shown:?}");
    assert!(shown.contains("… 1."), "{shown:?}");
    assert!(
        shown.contains("\r\x1b[2Kfabric `cluster45056`"),
        "{shown:?}"
    );
    let quiet = on_tty(&format!("check --no-verify --quiet {big}"));
    assert_eq!(quiet, "");
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(text(&piped.stderr), "");
    assert!(text(&piped.stdout).starts_with("fabric `cluster45056`"));
}

/// Tenants: `weft build` writes OpenSM's `partitions.conf` beside the tables, one partition
/// per tenant — its name and full key as declared, `alice=0x8001` — with its hosts' port GUIDs
/// as full members, and the state carries the P_Key
/// tables (`weft verify` of it passes).
#[test]
fn tenants_build_writes_partitions_conf() {
    let dir = temp_dir("tenants");
    let f = dir.join("t.weft");
    std::fs::write(
        &f,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n    tenant alice { pkey = 0x8001, hosts = cn001..=cn002 }\n    tenant bob { pkey = 0x8002, hosts = cn003 }\n    sm on leaf1\n}\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let out = weft(&[
        "build",
        f.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("partitions.conf"),
        "{}",
        text(&out.stdout)
    );
    let conf = std::fs::read_to_string(out_dir.join("partitions.conf")).unwrap_or_default();
    // Each partition named and keyed as its tenant was declared.
    let alice = conf.split("\nalice=0x8001 :").nth(1).unwrap_or_default();
    let alice = alice.split(';').next().unwrap_or_default();
    assert_eq!(alice.matches("=full").count(), 2, "{conf}");
    assert!(conf.contains("\nbob=0x8002 :"), "{conf}");
    let state = std::fs::read_to_string(out_dir.join("state.json")).unwrap_or_default();
    assert!(state.contains("pkeys"), "P_Key tables in the state");
    let out = weft(&[
        "verify",
        "--state",
        out_dir.join("state.json").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let _ = std::fs::remove_dir_all(dir);
}
