//! The HTML pages' sources (`cli/src/html/`): markup through maud, nothing unescaped but the
//! pages' own constants, no inline style or handlers, style and scripts that cannot end their
//! own element.

use super::{relative, rust_files};
use std::path::Path;

/// The HTML pages' sources (`cli/src/html/`): Rust files, whole, tests included.
fn html_sources() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/html");
    rust_files(&dir)
        .into_iter()
        .map(|p| {
            (
                relative(&p),
                std::fs::read_to_string(&p).unwrap_or_default(),
            )
        })
        .collect()
}

/// What an HTML page source may not hold, and why: markup is maud's, escaped by default;
/// only the page's own constant style and scripts go in unescaped; the Content-Security-Policy
/// admits no inline style attribute or event handler.
fn html_source_problems(path: &str, code: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (at, _) in code.match_indices("PreEscaped(") {
        let arg = &code[at + "PreEscaped(".len()..];
        let name: String = arg
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || *c == '_')
            .collect();
        if name.is_empty() || !arg[name.len()..].starts_with(')') {
            let shown: String = arg.chars().take(40).collect();
            problems.push(format!(
                "{path}: `PreEscaped({shown}`: only a constant (SCREAMING_CASE) goes in unescaped; \
                 write markup with maud's `html!`"
            ));
        }
    }
    for needle in [
        "format!(\"<",
        "push_str(\"<",
        "write!(t, \"<",
        "writeln!(t, \"<",
        "style=",
        " onclick",
        " onload",
        " onerror=",
        "'unsafe-inline'",
    ] {
        if code.contains(needle) {
            problems.push(format!(
                "{path} holds `{needle}`: markup through maud's `html!`, no inline style or \
                 handlers, no 'unsafe-inline' (the page's CSP admits its style and scripts by hash)"
            ));
        }
    }
    problems
}

#[test]
fn html_is_written_with_maud_and_nothing_goes_in_unescaped_but_constants() {
    let files = html_sources();
    assert!(files.len() >= 5, "{files:?}");
    let problems: Vec<String> = files
        .iter()
        .flat_map(|(path, code)| html_source_problems(path, code))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The rule catches what it is for.
    for bad in [
        "(PreEscaped(format!(\"<b>{}</b>\", name)))",
        "(PreEscaped(name))",
        "(PreEscaped(&STYLE))",
        "let s = format!(\"<td>{x}</td>\");",
        "span style=\"color:red\" {}",
    ] {
        assert!(
            !html_source_problems("x.rs", bad).is_empty(),
            "not caught: {bad}"
        );
    }
    assert!(html_source_problems("x.rs", "(PreEscaped(SCRIPT))").is_empty());
    // The style and scripts pulled in cannot end their own element.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/html");
    for (file, end) in [
        ("style.css", "</style"),
        ("cabling.css", "</style"),
        ("catch.js", "</script"),
        ("page.js", "</script"),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.to_lowercase().contains(end), "{file} holds `{end}`");
    }
}
