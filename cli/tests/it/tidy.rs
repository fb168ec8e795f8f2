//! Architecture rules as tests, read from `cargo metadata` (never from hand-parsed manifests):
//! which crate may depend on which (every workspace member has a rule), that every declared
//! dependency is used, where printing is allowed, and that every source file says what it is.
//! The docs are held to the code the same way: ARCHITECTURE.md names every crate, top-level
//! module, command and dependency rule (and no path that is gone), and each command's page in
//! `docs/commands/` holds its `--help` exactly. [`html`]: the rules of the HTML pages' sources.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail by panicking"
)]

mod lints;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

mod html;

/// The weft crates each member may depend on (normal dependencies), exactly, and why.
const RULES: &[(&str, &[&str], &str)] = &[
    ("weft-fabric", &[], "the model depends on no weft crate"),
    (
        "weft-formats",
        &["weft-fabric"],
        "formats are read into the model and written from it",
    ),
    (
        "weft-compiler",
        &["weft-fabric", "weft-formats"],
        "the compiler emits states; it never proves them",
    ),
    (
        "weft-metrics",
        &["weft-fabric", "weft-formats"],
        "metrics rate any state, whoever routed it",
    ),
    (
        "weft-traffic",
        &["weft-fabric", "weft-formats"],
        "the simulator runs any state, whoever routed it",
    ),
    (
        "weft-verifier",
        &["weft-fabric", "weft-formats"],
        "the verifier must not depend on the compiler",
    ),
    (
        "weft-plan",
        &["weft-fabric", "weft-formats", "weft-verifier"],
        "the planner proves with the verifier, never compiles",
    ),
    (
        "weft-deploy",
        &[
            "weft-fabric",
            "weft-formats",
            "weft-plan",
            "weft-traffic",
            "weft-verifier",
        ],
        "deploy proves what it writes on the tables it reads, never compiles",
    ),
    (
        "weft-driver",
        &[
            "weft-compiler",
            "weft-fabric",
            "weft-formats",
            "weft-metrics",
            "weft-verifier",
        ],
        "the pipeline: source to proven state and build directory; it never deploys",
    ),
    (
        "weft-lsp",
        &[
            "weft-compiler",
            "weft-driver",
            "weft-fabric",
            "weft-formats",
            "weft-verifier",
        ],
        "the server answers from the compiler",
    ),
    (
        "weft",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-formats",
            "weft-lsp",
            "weft-metrics",
            "weft-plan",
            "weft-traffic",
            "weft-verifier",
        ],
        "the CLI parses arguments and renders",
    ),
    (
        "weft-tests",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-formats",
            "weft-metrics",
            "weft-plan",
            "weft-verifier",
        ],
        "test support sees every crate",
    ),
    (
        "weft-bench",
        &[
            "weft-compiler",
            "weft-deploy",
            "weft-driver",
            "weft-fabric",
            "weft-formats",
            "weft-metrics",
            "weft-plan",
            "weft-tests",
            "weft-traffic",
            "weft-verifier",
        ],
        "benchmarks see every crate",
    ),
];

/// Library crates: they return values and typed errors; only the CLI writes to a terminal.
const LIBRARIES: &[&str] = &[
    "weft-driver",
    "weft-lsp",
    "weft-fabric",
    "weft-formats",
    "weft-compiler",
    "weft-metrics",
    "weft-traffic",
    "weft-verifier",
    "weft-plan",
    "weft-deploy",
];

struct Dep {
    /// The name the code uses (`weft_fabric`, or the rename).
    ident: String,
    /// The package name.
    package: String,
    /// `None` for a normal dependency, `Some("dev")`, `Some("build")`.
    kind: Option<String>,
}

struct Member {
    name: String,
    dir: PathBuf,
    /// The directories of its library, binaries and benchmarks (what normal dependencies
    /// serve).
    product: Vec<PathBuf>,
    /// The root files of its library and of its binaries named `main.rs`: where its top-level
    /// modules are declared.
    roots: Vec<PathBuf>,
    /// Its integration-test binaries (`tests/` targets), by name.
    tests: Vec<String>,
    deps: Vec<Dep>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn members() -> Vec<Member> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON");
    let mut members = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| {
                let package = d["name"].as_str().expect("name").to_owned();
                let ident = d["rename"].as_str().unwrap_or(&package).replace('-', "_");
                Dep {
                    ident,
                    package,
                    kind: d["kind"].as_str().map(str::to_owned),
                }
            })
            .collect();
        let mut product: Vec<PathBuf> = p["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| {
                t["kind"].as_array().is_some_and(|k| {
                    k.iter()
                        .any(|k| matches!(k.as_str(), Some("lib" | "bin" | "bench")))
                })
            })
            .filter_map(|t| Some(Path::new(t["src_path"].as_str()?).parent()?.to_path_buf()))
            .collect();
        product.sort();
        product.dedup();
        let mut roots: Vec<PathBuf> = p["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| {
                t["kind"].as_array().is_some_and(|k| {
                    k.iter().any(|k| k.as_str() == Some("lib"))
                        || (k.iter().any(|k| k.as_str() == Some("bin"))
                            && t["src_path"]
                                .as_str()
                                .is_some_and(|p| p.ends_with("main.rs")))
                })
            })
            .filter_map(|t| Some(PathBuf::from(t["src_path"].as_str()?)))
            .collect();
        roots.sort();
        let mut tests: Vec<String> = p["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .filter(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k.as_str() == Some("test")))
            })
            .filter_map(|t| Some(t["name"].as_str()?.to_owned()))
            .collect();
        tests.sort();
        members.push(Member {
            name: p["name"].as_str().expect("name").to_owned(),
            dir: manifest.parent().expect("crate dir").to_path_buf(),
            product,
            roots,
            tests,
            deps,
        });
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text of every `.rs` file under `dirs`.
fn sources(dirs: &[PathBuf]) -> String {
    let mut text = String::new();
    for d in dirs {
        for f in rust_files(d) {
            text.push_str(&std::fs::read_to_string(&f).unwrap_or_default());
            text.push('\n');
        }
    }
    text
}

#[test]
fn every_member_has_a_dependency_rule_and_keeps_it() {
    let members = members();
    for m in &members {
        let Some((_, allowed, why)) = RULES.iter().find(|(n, ..)| *n == m.name) else {
            panic!(
                "{} has no dependency rule: add one to cli/tests/it/tidy.rs and ARCHITECTURE.md",
                m.name
            );
        };
        let mut weft: Vec<&str> = m
            .deps
            .iter()
            .filter(|d| d.kind.is_none() && d.package.starts_with("weft"))
            .map(|d| d.package.as_str())
            .collect();
        weft.sort_unstable();
        assert_eq!(&weft, allowed, "{}: {why}", m.name);
    }
    for (name, ..) in RULES {
        assert!(
            members.iter().any(|m| m.name == *name),
            "the rule for {name} names no workspace member"
        );
    }
}

#[test]
fn every_declared_dependency_is_used() {
    for m in members() {
        let product = sources(&m.product);
        let all = sources(std::slice::from_ref(&m.dir));
        for d in &m.deps {
            let text = if d.kind.is_none() { &product } else { &all };
            let used = [
                format!("{}::", d.ident),
                format!("use {}", d.ident),
                format!("extern crate {}", d.ident),
            ]
            .iter()
            .any(|needle| text.contains(needle.as_str()));
            assert!(
                used,
                "{} declares `{}`{} but its code never names `{}`",
                m.name,
                d.package,
                d.kind
                    .as_deref()
                    .map(|k| format!(" ({k})"))
                    .unwrap_or_default(),
                d.ident
            );
        }
    }
}

/// `p` relative to the workspace root, as the lists here name files.
fn relative(p: &Path) -> String {
    let root = workspace().canonicalize().unwrap();
    p.strip_prefix(&root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// Every source file of the library crates: its path relative to the workspace root and its
/// code before the first `#[cfg(test)]` (test modules may print and write their fixtures).
fn library_code() -> Vec<(String, String)> {
    let members = members();
    let mut out = Vec::new();
    for name in LIBRARIES {
        let m = members
            .iter()
            .find(|m| m.name == *name)
            .unwrap_or_else(|| panic!("{name} is not a workspace member"));
        for p in rust_files(&m.dir.join("src")) {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
            out.push((relative(&p), code));
        }
    }
    out
}

#[test]
fn libraries_never_print() {
    for (path, code) in library_code() {
        for needle in [
            "println!",
            "eprintln!",
            "print!(",
            "eprint!(",
            "dbg!(",
            "stdout()",
            "stderr()",
        ] {
            assert!(!code.contains(needle), "{path} uses `{needle}`");
        }
    }
}

/// The Rust files over [`MAX_LINES`] lines when the cap came in (issue 43), each to be split
/// along its seams. The list may only shrink: a file under the cap must leave it, and no file
/// may join it.
const LONG_FILES: &[&str] = &[];

/// Crates with more than one integration-test binary, and how many they had when the rule came
/// in (issue 43). Each binary links the whole crate graph again, and linking is most of a test
/// build on CI; a crate's suites are modules of one binary (`tests/it/main.rs`). The list may
/// only shrink: a crate may not add a binary, and one down to a single binary must leave it.
const MANY_TEST_BINARIES: &[(&str, usize)] = &[];

#[test]
fn every_crate_has_one_integration_test_binary_unless_listed() {
    for m in members() {
        let n = m.tests.len();
        match MANY_TEST_BINARIES.iter().find(|(name, _)| *name == m.name) {
            Some(&(_, had)) => {
                assert!(
                    n <= had,
                    "{} has {n} integration-test binaries ({}), more than the {had} it had: \
                     make the new suite a module of an existing one",
                    m.name,
                    m.tests.join(", ")
                );
                assert!(
                    n > 1,
                    "{} is down to {n} integration-test binary: take it off MANY_TEST_BINARIES",
                    m.name
                );
            }
            None => assert!(
                n <= 1,
                "{} has {n} integration-test binaries ({}): one per crate, each suite a module \
                 of tests/it/main.rs (every binary is a link step of its own)",
                m.name,
                m.tests.join(", ")
            ),
        }
    }
}

/// The most lines a Rust file may have: a room one can hold.
const MAX_LINES: usize = 1000;

#[test]
fn no_file_is_longer_than_the_cap_unless_listed() {
    let mut long = Vec::new();
    for m in members() {
        for p in rust_files(&m.dir) {
            let lines = std::fs::read_to_string(&p)
                .unwrap_or_default()
                .lines()
                .count();
            let rel = relative(&p);
            if lines > MAX_LINES {
                long.push(rel.clone());
                assert!(
                    LONG_FILES.contains(&rel.as_str()),
                    "{rel} has {lines} lines, over the cap of {MAX_LINES}: split it along its seams \
                     (LONG_FILES may only shrink)"
                );
            }
        }
    }
    for listed in LONG_FILES {
        assert!(
            long.iter().any(|l| l == listed),
            "{listed} is no longer over {MAX_LINES} lines (or is gone): take it off LONG_FILES"
        );
    }
}

/// Where a library may write files: `deploy`'s `files` (private directories, locks, atomic
/// replacement, no symbolic links followed), the journal it appends to (opened through
/// `files`' rules: no link followed, appends only), and the build's tables, each created
/// exclusively in the fresh directory the CLI makes and puts in place through `files`.
const FILE_WRITERS: &[&str] = &[
    "deploy/src/files.rs",
    "deploy/src/journal.rs",
    "driver/src/build_dir.rs",
];

#[test]
fn libraries_write_files_only_through_files() {
    for (path, code) in library_code() {
        if FILE_WRITERS.contains(&path.as_str()) {
            continue;
        }
        for needle in [
            "fs::write",
            "File::create",
            "OpenOptions",
            "fs::rename",
            "fs::copy",
            "create_dir",
            "remove_file",
            "remove_dir",
            "set_permissions",
        ] {
            assert!(
                !code.contains(needle),
                "{path} uses `{needle}`: a library writes files only through weft_deploy::files"
            );
        }
    }
}

/// The CLI's production code, per file (tests cut off at the first `#[cfg(test)]`).
fn cli_code() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&dir)
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_owned();
            (relative(&p), code)
        })
        .collect()
}

/// CLI files that write with `std::fs` themselves: the build directory's exchange and its
/// fallback renames (`build.rs`), and the removal of unfinished outputs on an interrupt
/// (`term.rs`). Every other output goes through `output::write_file` (`weft_deploy::files`).
const CLI_FILE_WRITERS: &[&str] = &["cli/src/build.rs", "cli/src/term.rs"];

#[test]
fn the_cli_writes_files_only_through_files() {
    for (path, code) in cli_code() {
        if CLI_FILE_WRITERS.contains(&path.as_str()) {
            continue;
        }
        // Directories for outputs (`create_dir_all`) are allowed; files are not.
        for needle in [
            "fs::write",
            "File::create",
            "OpenOptions",
            "fs::rename",
            "fs::copy",
            "remove_file",
            "remove_dir",
            "set_permissions",
        ] {
            assert!(
                !code.contains(needle),
                "{path} uses `{needle}`: the CLI writes files through `output::write_file` \
                 (weft_deploy::files)"
            );
        }
    }
}

/// What a CLI module may not name, and why: the domain work behind it lives in a library,
/// which the CLI calls and whose result it renders.
const CLI_MAY_NOT_NAME: &[(&str, &str)] = &[
    (
        "weft_deploy::pma",
        "port counters are read by weft_deploy::dftree::Loop, which returns a Sweep",
    ),
    (
        "CounterReader",
        "port counters are read by weft_deploy::dftree::Loop, which returns a Sweep",
    ),
    (
        "PortCounters",
        "which counters dFtree may judge is weft_deploy::dftree::trust's",
    ),
    (
        "WireView",
        "whether a fabric is the state's is deploy's wire check (apply, dftree)",
    ),
    (
        "weft_deploy::smp",
        "SMP attributes are deploy's; the CLI calls apply, audit and discover",
    ),
    (
        "z3.run(",
        "the engines are run and compared by weft_verifier::engines::run",
    ),
    (
        "weft_verifier::explicit",
        "the engines are run and compared by weft_verifier::engines::run",
    ),
    (
        "Layout {",
        "drawing geometry is weft_metrics::layout's; the CLI renders a Layout",
    ),
];

#[test]
fn cli_modules_name_no_domain_internals() {
    for (path, code) in cli_code() {
        for (needle, why) in CLI_MAY_NOT_NAME {
            assert!(
                !code.contains(needle),
                "{path} names `{needle}`: {why} (the CLI parses, calls and renders)"
            );
        }
    }
}

#[test]
fn every_source_file_opens_with_what_it_is() {
    for m in members() {
        for p in rust_files(&m.dir) {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or_default();
            assert!(
                first.starts_with("//!"),
                "{} does not open with a `//!` comment saying what it is",
                p.display()
            );
        }
    }
}

/// The commands `weft --help` lists, from the binary's own clap definitions (the hidden
/// `weft __commands`), in its order.
fn commands() -> Vec<String> {
    let out = Command::new(crate::support::WEFT)
        .arg("__commands")
        .output()
        .expect("weft runs");
    assert!(
        out.status.success(),
        "weft __commands: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("weft __commands prints JSON");
    doc["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_owned())
        .collect()
}

/// `weft ARGS --help` as clap renders it (the long help), each line's trailing blanks removed.
fn long_help(args: &[String]) -> String {
    let out = Command::new(crate::support::WEFT)
        .args(args)
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .expect("weft runs");
    assert!(out.status.success(), "weft {args:?} --help fails");
    String::from_utf8(out.stdout)
        .expect("help is UTF-8")
        .lines()
        .map(|l| l.trim_end().to_owned() + "\n")
        .collect()
}

/// How a page's generated block opens (followed by the command line whose help it holds) and
/// closes.
const GENERATED: &str = "<!-- generated: ";
const GENERATED_END: &str = "<!-- end generated -->";

/// `page` with its block generated from `invocation` (`weft plan --help`) set to `help`, or
/// why it has no such block.
fn regenerated(page: &str, invocation: &str, help: &str) -> Result<String, String> {
    let open = format!("{GENERATED}{invocation} ");
    let start = page
        .find(&open)
        .ok_or_else(|| format!("no `{open}…-->` line"))?;
    let len = page[start..]
        .find(GENERATED_END)
        .ok_or_else(|| format!("no `{GENERATED_END}` after `{open}…`"))?;
    let block = format!(
        "{open}(WEFT_BLESS=1 cargo test -p weft --test it tidy:: regenerates it) -->\n```text\n{help}```\n"
    );
    Ok(format!("{}{block}{}", &page[..start], &page[start + len..]))
}

/// Every command has a page, `docs/commands/weft-COMMAND.md`, whose options block is exactly
/// what `weft COMMAND --help` prints (and `docs/commands/README.md` holds `weft --help`'s), so
/// the reference cannot drift from clap's definitions; no page names a command that is gone.
/// `WEFT_BLESS=1` rewrites the blocks that differ.
#[test]
fn every_command_page_holds_its_help() {
    let bless = std::env::var_os("WEFT_BLESS").is_some();
    let dir = workspace().join("docs/commands");
    let commands = commands();
    let mut pages = vec![("README.md".to_owned(), Vec::new())];
    pages.extend(
        commands
            .iter()
            .map(|c| (format!("weft-{c}.md"), vec![c.clone()])),
    );
    let mut problems = Vec::new();
    for (file, args) in &pages {
        let path = dir.join(file);
        let Ok(page) = std::fs::read_to_string(&path) else {
            problems.push(format!("docs/commands/{file} is missing"));
            continue;
        };
        let invocation = std::iter::once("weft")
            .chain(args.iter().map(String::as_str))
            .chain(["--help"])
            .collect::<Vec<_>>()
            .join(" ");
        match regenerated(&page, &invocation, &long_help(args)) {
            Err(why) => problems.push(format!("docs/commands/{file}: {why}")),
            Ok(new) if new == page => {}
            Ok(new) if bless => std::fs::write(&path, new).expect("page written"),
            Ok(_) => problems.push(format!(
                "docs/commands/{file}: the options differ from `{invocation}` (regenerate: \
                 WEFT_BLESS=1 cargo test -p weft --test it tidy::every_command_page)"
            )),
        }
    }
    for entry in std::fs::read_dir(&dir).expect("docs/commands") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if let Some(c) = name
            .strip_prefix("weft-")
            .and_then(|n| n.strip_suffix(".md"))
        {
            if !commands.iter().any(|k| k == c) {
                problems.push(format!("docs/commands/{name}: weft has no command `{c}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The README and the commands' index link every command's page.
#[test]
fn the_readme_and_the_index_link_every_command_page() {
    let root = workspace();
    for (doc, prefix) in [
        ("README.md", "docs/commands/"),
        ("docs/commands/README.md", ""),
    ] {
        let text = std::fs::read_to_string(root.join(doc)).expect(doc);
        for c in commands() {
            let link = format!("]({prefix}weft-{c}.md)");
            assert!(
                text.contains(&link),
                "{doc} does not link `weft {c}`'s page (`{link}`)"
            );
        }
    }
}

/// ARCHITECTURE.md's text.
fn architecture() -> String {
    std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// The sections of `text` under headings that start with `marker` (`"## "`, `"### "`): each
/// heading line and the text up to the next heading of that level or above.
fn sections<'t>(text: &'t str, marker: &str) -> Vec<(&'t str, &'t str)> {
    let level = marker.trim_end().len();
    let mut out = Vec::new();
    let mut at: Option<(&str, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let heading = hashes > 0 && hashes <= level && line[hashes..].starts_with(' ');
        if heading {
            if let Some((h, start)) = at.take() {
                out.push((h, &text[start..offset]));
            }
            if line.starts_with(marker) {
                at = Some((line.trim_end(), offset + line.len()));
            }
        }
        offset += line.len();
    }
    if let Some((h, start)) = at {
        out.push((h, &text[start..]));
    }
    out
}

/// `text` with every run of whitespace one space (so a phrase matches across line breaks).
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `code spans` of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Whether `text` names `token` as a path: not preceded by a letter, digit, `_` or `.`.
fn names_path(text: &str, token: &str) -> bool {
    text.match_indices(token).any(|(i, _)| {
        !text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    })
}

/// The file modules a crate root declares at its top level (`mod x;`, `pub mod x;` …, not one
/// under `#[cfg(test)]`): each name and whether it is a directory (`x/mod.rs`).
fn top_level_modules(root: &Path) -> Vec<(String, bool)> {
    let text = std::fs::read_to_string(root).expect("crate root");
    let dir = root.parent().expect("root dir");
    let mut out = Vec::new();
    let mut previous = "";
    for line in text.lines() {
        let decl = ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .and_then(|rest| rest.strip_suffix(';'));
        if let Some(name) = decl {
            if !previous.contains("cfg(test)") {
                let is_dir = !dir.join(format!("{name}.rs")).exists();
                out.push((name.to_owned(), is_dir));
            }
        }
        if !line.trim().is_empty() {
            previous = line;
        }
    }
    out
}

/// Every file and directory under `dir` (`target/` and hidden ones left out), as `/`-separated
/// paths relative to it, directories with a trailing `/`.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            let rel = p
                .strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned();
            if p.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// ARCHITECTURE.md has a section per workspace member, headed `` ### `DIR/` — PACKAGE ``, and
/// no section for a crate that is gone; each section names every top-level module of the
/// crate (`x.rs` or `x/`) and states the crate's dependency rule — a `**Depends on:**`
/// paragraph naming exactly the weft crates RULES allows, with RULES' reason word for word.
#[test]
fn architecture_names_every_crate_module_and_rule() {
    let text = architecture();
    let crates = sections(&text, "### ");
    let root = workspace().canonicalize().expect("workspace");
    let members = members();
    let mut problems = Vec::new();
    for m in &members {
        let dir = m
            .dir
            .canonicalize()
            .expect("crate dir")
            .strip_prefix(&root)
            .expect("member inside the workspace")
            .to_string_lossy()
            .into_owned();
        let heading = format!("### `{dir}/` — {}", m.name);
        let Some((_, body)) = crates.iter().find(|(h, _)| *h == heading) else {
            problems.push(format!("no section `{heading}`"));
            continue;
        };
        for r in &m.roots {
            for (name, is_dir) in top_level_modules(r) {
                let named = names_path(body, &format!("{name}/"))
                    || (!is_dir && names_path(body, &format!("{name}.rs")));
                if !named {
                    let file = if is_dir {
                        format!("{name}/")
                    } else {
                        format!("{name}.rs")
                    };
                    problems.push(format!("`{heading}` does not name the module `{file}`"));
                }
            }
        }
        let rule = body
            .split("\n\n")
            .find(|p| p.trim_start().starts_with("**Depends on:**"))
            .map(squeezed);
        let Some(rule) = rule else {
            problems.push(format!("`{heading}` has no `**Depends on:**` paragraph"));
            continue;
        };
        if let Some((_, allowed, why)) = RULES.iter().find(|(n, ..)| *n == m.name) {
            let mut named: Vec<&str> = code_spans(&rule)
                .into_iter()
                .filter(|s| s.starts_with("weft"))
                .collect();
            named.sort_unstable();
            if named != *allowed {
                problems.push(format!(
                    "`{heading}` says it depends on {named:?}; the rule allows {allowed:?}"
                ));
            }
            if !rule.contains(why) {
                problems.push(format!(
                    "`{heading}` does not give the rule's reason: \"{why}\""
                ));
            }
        }
    }
    for (heading, _) in &crates {
        let Some((_, rest)) = heading.split_once("` — ") else {
            continue;
        };
        if !members.iter().any(|m| m.name == rest) {
            problems.push(format!("`{heading}` names no workspace member"));
        }
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md:\n{}",
        problems.join("\n")
    );
}

/// ARCHITECTURE.md's entry points list exactly the commands of the binary (its clap
/// definitions: `weft __commands`), every path it names in code spans (`x.rs`, `dir/`) exists,
/// and it stays under 2 000 words.
#[test]
fn architecture_lists_the_commands_and_only_real_paths() {
    let text = architecture();
    let mut problems = Vec::new();
    let entry = sections(&text, "## ")
        .into_iter()
        .find(|(h, _)| *h == "## Entry points")
        .map(|(_, b)| b)
        .unwrap_or_default();
    let bullet = entry
        .split("\n- ")
        .find(|b| b.trim_start_matches("- ").starts_with("**Commands**"))
        .unwrap_or_default();
    let mut listed: Vec<&str> = code_spans(bullet)
        .into_iter()
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    listed.sort_unstable();
    let mut commands = commands();
    commands.sort();
    if listed != commands {
        problems.push(format!(
            "the `**Commands**` entry point lists {listed:?}; weft's commands are {commands:?}"
        ));
    }
    let files = tree(&workspace());
    for span in code_spans(&text) {
        let path_like = span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
            && (span.ends_with(".rs") || (span.ends_with('/') && span.len() > 1));
        if path_like
            && !files
                .iter()
                .any(|f| f == span || f.ends_with(&format!("/{span}")))
        {
            problems.push(format!(
                "`{span}` is no file or directory of the repository"
            ));
        }
    }
    let words = text.split_whitespace().count();
    if words > 2000 {
        problems.push(format!(
            "{words} words: keep the map under 2 000 (detail goes into the crates' `//!` docs)"
        ));
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md:\n{}",
        problems.join("\n")
    );
}
