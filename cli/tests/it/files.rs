//! Files another local user could interfere with: `weft apply`'s lock (in a directory only its
//! owner can write, never through a planted link) and `weft build -o DIR` (the directory is
//! swapped in whole; a kill between any two steps never leaves no `DIR` after the next run).

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::{root, weft};
use std::os::unix::fs::{symlink, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory (mode 0700) for one test.
fn temp_dir(name: &str) -> crate::support::Scratch {
    let d = crate::support::scratch(&format!("files-cli-{name}"));
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n";

/// `d` with `old/state.json` and `plan.json`, a drain plan taking `leaf3.p[6]` down.
fn planned(d: &Path) {
    weft_tests::build_and_plan(
        Path::new(crate::support::WEFT),
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
    crate::support::weft_env(&root(), &args, env)
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
    let mut locks: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    locks.sort();
    // The SM port's lock and the journal's.
    assert!(
        locks.len() == 2
            && locks[0].starts_with("weft-apply-")
            && locks[1].starts_with("weft-journal-")
            && locks.iter().all(|l| l.ends_with(".lock")),
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

/// Every entry of `dir` with its bytes (files) or its own listing's names (directories).
fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let bytes = std::fs::read(e.path()).unwrap_or_default();
                    (e.file_name().to_string_lossy().into_owned(), bytes)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    listing(dir).into_iter().map(|(n, _)| n).collect()
}

/// Two proven builds to swap: `A` (lab-16) and `B` (a small fat tree), written to `out` of
/// `d`; each returns the directory's listing.
struct Builds {
    d: crate::support::Scratch,
    tree: PathBuf,
}

impl Builds {
    fn new(name: &str) -> Builds {
        let d = temp_dir(name);
        let tree = d.join("tree.weft");
        std::fs::write(&tree, format!("{TREE}}}\n")).unwrap();
        Builds { d, tree }
    }

    fn source(&self, which: char) -> String {
        match which {
            'A' => "examples/lab-16.weft".to_owned(),
            _ => self.tree.to_str().unwrap().to_owned(),
        }
    }

    /// `weft build` of `which` to `out` (a path in `d`), with `WEFT_TEST_SWAP=swap` if given.
    fn build(&self, which: char, out: &str, swap: Option<&str>) -> Output {
        let o = self.d.join(out);
        let args = ["build", &self.source(which), "-o", o.to_str().unwrap()];
        match swap {
            Some(s) => {
                let mut c = Command::new(crate::support::WEFT);
                c.args(args).current_dir(root()).env("WEFT_TEST_SWAP", s);
                c.output().unwrap()
            }
            None => weft(&args),
        }
    }

    /// A build that must succeed; the output's listing.
    fn ok(&self, which: char, out: &str) -> Vec<(String, Vec<u8>)> {
        let o = self.build(which, out, None);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        listing(&self.d.join(out))
    }
}

/// `-o LINK`, a symbolic link to a directory holding a previous build: the directory it
/// points at is replaced and the link stays (as `-o FILE` writes through a link to a file); a
/// dangling link gets the directory where it points.
#[test]
fn build_through_a_link_replaces_the_directory_it_points_at() {
    let b = Builds::new("build-link");
    std::fs::create_dir(b.d.join("builds")).unwrap();
    let a = b.ok('A', "builds/v1");
    symlink("builds/v1", b.d.join("out")).unwrap();
    let o = b.build('B', "out", None);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains(&format!(
            "wrote     {}",
            b.d.join("out/lfts.dump").display()
        )),
        "{}",
        text(&o.stdout)
    );
    assert!(std::fs::symlink_metadata(b.d.join("out"))
        .unwrap()
        .file_type()
        .is_symlink());
    let v1 = listing(&b.d.join("builds/v1"));
    assert_ne!(v1, a);
    assert_eq!(v1, b.ok('B', "fresh"));
    assert_eq!(names(&b.d.join("builds")), ["v1"], "nothing left beside it");
    // A dangling link: the directory is made where it points.
    symlink("builds/v2", b.d.join("next")).unwrap();
    b.ok('A', "next");
    assert_eq!(listing(&b.d.join("builds/v2")), a);
    assert_eq!(names(&b.d.join("builds")), ["v1", "v2"]);
    let _ = std::fs::remove_dir_all(&b.d);
}

/// The exchange: killed right after it (SIGABRT, no cleanup), the output already holds the
/// whole new build; the next run removes the old one left beside it.
#[test]
fn a_kill_after_the_exchange_leaves_the_new_build() {
    let b = Builds::new("build-exchange");
    let a = b.ok('A', "out");
    let new = b.ok('B', "fresh");
    let o = b.build('B', "out", Some("exchange-abort"));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(6),
        "aborted after the exchange: {}",
        text(&o.stderr)
    );
    assert_eq!(listing(&b.d.join("out")), new);
    let left: Vec<String> = names(&b.d)
        .into_iter()
        .filter(|n| n.starts_with(".out."))
        .collect();
    assert_eq!(left.len(), 1, "the old build beside it: {left:?}");
    assert_eq!(listing(&b.d.join(&left[0])), a);
    // The next run (any outcome) cleans up; replacing again exchanges cleanly.
    assert_eq!(b.ok('A', "out"), a);
    assert_eq!(names(&b.d), ["fresh", "out", "tree.weft"]);
    assert_eq!(b.ok('B', "out"), new);
    assert_eq!(names(&b.d), ["fresh", "out", "tree.weft"]);
    let _ = std::fs::remove_dir_all(&b.d);
}

/// The two-step fallback (a filesystem without `RENAME_EXCHANGE`): whole when it runs through;
/// killed between its two renames there is no `out` for a moment, and the next `weft build -o
/// out` — even one that writes nothing because its own state is not proven — first moves the
/// whole new build in.
#[test]
fn a_kill_between_the_two_renames_is_recovered_by_the_next_run() {
    let b = Builds::new("build-two-step");
    let a = b.ok('A', "out");
    let new = b.ok('B', "fresh");
    let o = b.build('B', "out", Some("two-step"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(listing(&b.d.join("out")), new);
    assert_eq!(names(&b.d), ["fresh", "out", "tree.weft"]);
    assert_eq!(b.ok('A', "out"), a);

    let o = b.build('B', "out", Some("two-step-abort"));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(6),
        "aborted between the renames: {}",
        text(&o.stderr)
    );
    assert!(!b.d.join("out").exists());
    assert_eq!(listing(&b.d.join(".out.weft-new")), new);
    assert_eq!(listing(&b.d.join(".out.weft-old")), a);
    // The next run: a ring that minhop cannot prove writes nothing, but `out` is back first.
    let ring = b.d.join("ring.weft");
    std::fs::write(&ring, "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric r {\n    topology = ring(n: 6, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n").unwrap();
    let o = weft(&[
        "build",
        ring.to_str().unwrap(),
        "-o",
        b.d.join("out").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("was missing: moved in the build an interrupted run"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(listing(&b.d.join("out")), new);
    assert_eq!(names(&b.d), ["fresh", "out", "ring.weft", "tree.weft"]);

    // Killed again; this time the old build alone is left beside (the new one lost): it goes
    // back.
    let o = b.build('A', "out", Some("two-step-abort"));
    assert!(o.status.code().is_none());
    std::fs::remove_dir_all(b.d.join(".out.weft-new")).unwrap();
    assert_eq!(b.ok('A', "out"), a);
    assert_eq!(names(&b.d), ["fresh", "out", "ring.weft", "tree.weft"]);
    let _ = std::fs::remove_dir_all(&b.d);
}
