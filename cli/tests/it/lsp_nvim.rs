//! `weft lsp` in a real editor: Neovim, headless, with its built-in LSP client and
//! `editors/nvim/lua/weft.lua`, runs `lsp_nvim/e2e.lua` on a sample — a diagnostic at the
//! right span after an edit, a quick fix applied, hover, a definition jumped to in the
//! standard library, completion, formatting. Fails under `CI` when `nvim` is missing (the
//! `neovim` package); skips loudly otherwise.

#![expect(
    clippy::print_stderr,
    reason = "a skipped editor test says so loudly on stderr"
)]

use crate::support::{root, scratch, WEFT};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The language server's own sample (the `lsp` crate's protocol tests use it too).
const SAMPLE: &str = include_str!("../../../tests/fixtures/lsp/sample.weft");

fn nvim() -> bool {
    let found = Command::new("nvim")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvim is missing; CI must run the editor test (.ci/run installs neovim)"
        );
        eprintln!("\n==================================================================");
        eprintln!("SKIP lsp_nvim: nvim is missing (apt-get install neovim)");
        eprintln!("==================================================================\n");
    }
    found
}

#[test]
fn neovim_drives_the_language_server() {
    if !nvim() {
        return;
    }
    let dir = scratch("lsp-nvim");
    let sample = dir.path().join("sample.weft");
    std::fs::write(&sample, SAMPLE).expect("sample written");
    let result = dir.path().join("result.tsv");
    let script = root().join("cli/tests/it/lsp_nvim/e2e.lua");
    let mut child = Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!("luafile {}", script.display()))
        .env("WEFT", WEFT)
        .env("EDITORS", root().join("editors"))
        .env("SAMPLE", &sample)
        .env("RESULT", &result)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nvim starts");
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if child.try_wait().expect("nvim waited on").is_some() {
            break;
        }
        if Instant::now() > deadline {
            // Only the process this test started.
            let _ = child.kill();
            let _ = child.wait();
            panic!("nvim did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&result).expect("the script wrote its results");
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}\t")))
            .unwrap_or_else(|| panic!("no `{k}` in:\n{text}"))
            .to_owned()
    };
    assert_eq!(get("ok"), "true", "{text}");
    assert_eq!(get("filetype"), "weft");
    assert_eq!(get("attached"), "true", "{text}");
    // Line 20 (0-based 19), `cn11..cn12` at UTF-16 columns 38 to 48.
    assert_eq!(get("range_diag"), "19:38-48", "{text}");
    assert_eq!(
        get("fixed_line"),
        "    tenant a { pkey = 0x8001, hosts = cn11..=cn12 }"
    );
    let hover = get("hover");
    assert!(
        hover.contains("**spine** — switch, model `sb7800`"),
        "{hover}"
    );
    assert!(hover.contains("- ports: 36"), "{hover}");
    assert!(
        get("definition").ends_with("/stdlib/hardware.weft"),
        "{text}"
    );
    assert!(
        get("jumped_to").ends_with("/stdlib/hardware.weft"),
        "{text}"
    );
    assert!(get("jumped_line").starts_with("model sb7800"), "{text}");
    assert_eq!(get("completion"), "fat_tree updn minhop layered");
    assert_eq!(get("formatted"), "    routing { engine = updn }");
    assert_eq!(get("edited"), "true", "{text}");
    // `sb780` on line 6 (0-based 5), columns 19 to 24.
    assert_eq!(get("edit_diag"), "5:19-24", "{text}");
}
