//! What a user reads before the first command: global flags before the command, the bash
//! completion loading and completing, the man pages rendering, the README's tour run as written.

use super::*;

#[test]
fn global_flags_go_before_the_command_and_explain_goes_alone() {
    let o = weft(&[
        "--color",
        "never",
        "--quiet",
        "check",
        "--no-verify",
        "examples/lab-16.weft",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = weft(&["--explain", "credit_loop"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("### `weft::credit_loop`\n"),
        "{}",
        text(&o.stdout)
    );
    let o = weft(&[
        "--explain",
        "weft::credit_loop",
        "check",
        "examples/lab-16.weft",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    let o = weft(&["--explain", "credit_lop"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("the closest are weft::credit_loop"),
        "{}",
        text(&o.stderr)
    );
}

/// `weft completions bash` prints a script bash loads, and its function completes commands
/// and options (the way bash calls it: `_weft COMMAND WORD PREVIOUS` with `COMP_WORDS` set).
#[test]
fn bash_completion_loads_and_completes() {
    let out = weft(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let dir = temp_dir("completions");
    let script = dir.join("weft.bash");
    std::fs::write(&script, &out.stdout).unwrap_or_else(|e| panic!("{e}"));
    let run = Command::new("bash")
        .arg("-c")
        .arg(
            r#"set -e
source "$1"
complete -p weft
COMP_WORDS=(weft pl); COMP_CWORD=1; _weft weft pl weft; echo "commands: ${COMPREPLY[*]}"
COMP_WORDS=(weft plan --zero); COMP_CWORD=2; _weft weft --zero plan; echo "options: ${COMPREPLY[*]}"
COMP_WORDS=(weft apply --target ''); COMP_CWORD=3; _weft weft '' --target; echo "values: ${COMPREPLY[*]}""#,
        )
        .arg("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    let said = text(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{said}{}", text(&run.stderr));
    assert!(said.contains("-F _weft weft"), "{said}");
    assert!(said.contains("commands: plan\n"), "{said}");
    assert!(said.contains("options: --zero-outage\n"), "{said}");
    assert!(said.contains("values: sim mad opensm\n"), "{said}");
    // The hidden command the docs tests read is never offered.
    assert!(!text(&out.stdout).contains("__commands"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = weft(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("zero-outage"), "{shell}");
    }
}

/// `weft man --out DIR` writes `DIR/man1/weft.1` and a page per command, which `man` renders
/// both ways the docs say: `man -l FILE` and `MANPATH=DIR man weft-plan`.
#[test]
#[expect(
    clippy::print_stderr,
    reason = "a test skipped for want of `man` says so loudly (outside CI only)"
)]
fn man_pages_render() {
    let dir = temp_dir("man");
    let out = weft(&["man", "--out", &dir.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("MANPATH="),
        "{}",
        text(&out.stdout)
    );
    let listed = weft(&["__commands"]);
    let doc: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let mut pages: Vec<String> = std::fs::read_dir(dir.join("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut expected: Vec<String> = doc["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("weft-{}.1", c["name"].as_str().unwrap()))
        .chain(["weft.1".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(pages, expected);
    let man = |args: &[&str], manpath: Option<&Path>| {
        let mut c = Command::new("man");
        c.args(args)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .env("LC_ALL", "C.UTF-8");
        if let Some(p) = manpath {
            c.env("MANPATH", p);
        }
        c.output()
    };
    let by_file = man(
        &["-l", &dir.join("man1/weft-plan.1").to_string_lossy()],
        None,
    );
    let Ok(by_file) = by_file else {
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            std::env::var_os("CI").is_none(),
            "man is missing; CI must run this (.ci/run installs man-db)"
        );
        eprintln!("SKIP man_pages_render: man is missing (man-db)");
        return;
    };
    let by_name = man(&["weft-plan"], Some(&dir)).unwrap_or_else(|e| panic!("man: {e}"));
    let top = man(&["-l", &dir.join("man1/weft.1").to_string_lossy()], None)
        .unwrap_or_else(|e| panic!("man: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    for page in [&by_file, &by_name] {
        let shown = text(&page.stdout);
        assert_eq!(page.status.code(), Some(0), "{shown}{}", text(&page.stderr));
        assert!(shown.contains("weft-plan"), "{shown}");
        assert!(shown.contains("--zero-outage"), "{shown}");
        assert!(shown.contains("SYNOPSIS"), "{shown}");
    }
    assert_eq!(text(&by_file.stdout), text(&by_name.stdout));
    assert!(
        text(&top.stdout).contains("weft-plan(1)"),
        "{}",
        text(&top.stdout)
    );
}

/// The README's five-minute tour runs as written, and every line of output it shows is a line
/// the commands print (`…` marks what it leaves out).
#[test]
fn the_readme_tour_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let tour = readme
        .split("\n## A five-minute tour\n")
        .nth(1)
        .and_then(|t| t.split("\n## ").next())
        .expect("the README has a five-minute tour");
    let mut script = String::new();
    let mut shown = Vec::new();
    let mut fence: Option<String> = None;
    for line in tour.lines() {
        match (&fence, line.strip_prefix("```")) {
            (None, Some(lang)) => fence = Some(lang.to_owned()),
            (Some(_), Some(_)) => fence = None,
            (Some(lang), None) if lang == "sh" => script += &format!("{line}\n"),
            (Some(_), None) if line != "…" && !line.is_empty() => shown.push(line.to_owned()),
            _ => {}
        }
    }
    assert!(script.contains("weft apply"), "{script}");
    // The tour runs the release build; here, the binary under test.
    let bin = Path::new(crate::support::WEFT).parent().unwrap();
    let script = script.replace("$PWD/target/release", &bin.to_string_lossy());
    let tmp = temp_dir("tour");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(root())
        .env("TMPDIR", tmp.path())
        .env("NO_COLOR", "1")
        .env("WEFT_RUN_DIR", tmp.join("run"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash: {e}"));
    let _ = std::fs::remove_dir_all(&tmp);
    let printed = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{printed}{}", text(&out.stderr));
    let lines: std::collections::BTreeSet<&str> = printed.lines().collect();
    let missing: Vec<&String> = shown
        .iter()
        .filter(|l| !lines.contains(l.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the README's tour shows lines the commands no longer print: {missing:#?}\n\nthey print:\n{printed}"
    );
}
