//! Files another local user could interfere with: `weft apply`'s lock (in a directory only its
//! owner can write, never through a planted link) and `weft build -o DIR` (the directory is
//! swapped in whole; a kill between any two steps never leaves no `DIR` after the next run).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::{symlink, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn weft_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_weft"));
    c.args(args).current_dir(root()).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("cannot run weft: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory (mode 0700) for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("weft-files-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n";

/// `d` with `old/state.json` and `plan.json`, a drain plan taking `leaf3.p[6]` down.
fn planned(d: &Path) {
    weft_tests::build_and_plan(
        Path::new(env!("CARGO_BIN_EXE_weft")),
        d,
        &format!("{TREE}}}\n"),
        &format!("{TREE}    faults {{\n        link leaf3.p[6] down\n    }}\n}}\n"),
        &["--drain"],
    );
}

/// `weft apply` of `d`'s plan on the simulated fabric, with `extra` arguments.
fn apply(d: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Output {
    let p = |f: &str| d.join(f).to_str().unwrap().to_owned();
    let (plan, fabric, journal) = (p("plan.json"), p("old/state.json"), p("plan.journal"));
    let mut args = vec!["apply", &plan, "--fabric", &fabric, "--journal", &journal];
    args.extend(extra);
    weft_env(&args, env)
}

/// A symbolic link planted at the lock's name is not followed: the file it points at keeps
/// its contents (a lock once truncated it) and the apply is refused.
#[test]
fn a_link_planted_at_the_lock_is_not_followed() {
    let d = temp_dir("planted-lock");
    let victim = d.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let run = d.join("run");
    std::fs::create_dir(&run).unwrap();
    symlink(&victim, run.join("weft-apply-0000000000001234-1.lock")).unwrap();
    let e = weft_deploy::apply::lock(&run, 0x1234, 1).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    // Another port's lock is taken, 0600, and excludes a second taker.
    let held = weft_deploy::apply::lock(&run, 0x1234, 2).unwrap();
    let lock = run.join("weft-apply-0000000000001234-2.lock");
    assert_eq!(
        std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(matches!(
        weft_deploy::apply::lock(&run, 0x1234, 2).unwrap_err(),
        weft_deploy::ApplyError::Locked(_)
    ));
    drop(held);
    let _ = std::fs::remove_dir_all(d);
}

/// `weft apply` takes its lock in the run directory (`WEFT_RUN_DIR` here; `/run/weft` for
/// root, never the shared temporary directory), and refuses a `--lock-dir` others can write,
/// before anything is written.
#[test]
fn apply_locks_in_a_directory_only_its_owner_can_write() {
    let d = temp_dir("apply-lock");
    planned(&d);
    let run = d.join("run");
    let o = apply(&d, &[], &[("WEFT_RUN_DIR", &run)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let locks: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        locks.len() == 1 && locks[0].starts_with("weft-apply-") && locks[0].ends_with(".lock"),
        "{locks:?}"
    );
    let m = std::fs::metadata(&run).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o700, "created private");

    let open = d.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = apply(&d, &["--lock-dir", open.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("writable by group or others"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(d);
}
