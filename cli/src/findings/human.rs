//! The renderer for people: findings on stderr (compiler diagnostics and readers' problems
//! with their source excerpts) and the violations of a proof in full.

use super::{Detail, Finding, Level};
use weft_compiler::diagnostic::{Diagnostic, SourceMap};

/// The compiler diagnostics among `findings`, rendered with their source excerpts on stderr
/// (then the count of errors and warnings); nothing when there are none.
pub fn emit_diagnostics(findings: &[Finding], sources: &SourceMap, color: crate::ColorChoice) {
    let diags: Vec<Diagnostic> = findings
        .iter()
        .filter_map(|f| match &f.detail {
            Detail::Diagnostic(d) => Some((**d).clone()),
            _ => None,
        })
        .collect();
    crate::emit_diagnostics(&diags, sources, color);
}

/// The credit loops and refusals among `findings`, for people, each in full.
pub fn human_loops(findings: &[Finding]) -> String {
    let mut t = String::new();
    for f in findings {
        match &f.detail {
            Detail::Loop {
                index,
                total,
                looped,
            } => crate::render::human_loop(&mut t, looped, *index, *total),
            // A note (the routing's, already in the summary above) is no error.
            Detail::None => match f.level {
                Level::Error => t += &format!("× {}\n", f.message),
                Level::Warning => t += &format!("⚠ {}\n", f.message),
                Level::Note => {}
            },
            Detail::Rendered(r) => t += r,
            Detail::Diagnostic(_) | Detail::Pattern(_) | Detail::Breach => {}
        }
    }
    t
}

/// The first `max` patterns of failed routes among `findings` (at least one), for people.
pub fn human_patterns(findings: &[Finding], max: usize) -> String {
    let mut t = String::new();
    let patterns = findings.iter().filter_map(|f| match &f.detail {
        Detail::Pattern(p) => Some(p),
        _ => None,
    });
    for p in patterns.take(max.max(1)) {
        crate::render::human_pattern(&mut t, p);
    }
    t
}

/// Findings for people, on stderr's terms: each rendered in full (a reader's source
/// excerpt), or as `× message [code]` with its help, then the count.
pub fn human(findings: &[Finding]) -> String {
    let mut t = String::new();
    for f in findings {
        match &f.detail {
            Detail::Rendered(r) => t += r,
            _ => {
                let at = f
                    .place
                    .as_ref()
                    .map(|p| format!("{}:{}:{}: ", p.file, p.line, p.column))
                    .or_else(|| f.artifact.as_ref().map(|a| format!("{a}: ")))
                    .unwrap_or_default();
                t += &format!("× {at}{} [{}]\n", f.message, f.code);
                if let Some(h) = &f.help {
                    t += &format!("  help: {h}\n");
                }
            }
        }
    }
    let (errors, warnings) = super::counts(findings);
    t += &format!("{errors} error(s), {warnings} warning(s)\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beside a failed proof, an error is marked `×`, a warning `⚠`, and a note (the
    /// routing's, which the summary already shows) is not printed as an error at all.
    #[test]
    fn only_errors_are_marked_as_errors() {
        let mut warning =
            super::super::of_input("weft::exclusive_node_range", None, "a warning".to_owned());
        warning.level = Level::Warning;
        let mut note = super::super::of_input("weft::sftree_root", None, "a note".to_owned());
        note.level = Level::Note;
        let error = super::super::of_input("weft::credit_loop", None, "an error".to_owned());
        assert_eq!(
            human_loops(&[note, warning, error]),
            "⚠ a warning\n× an error\n"
        );
    }
}
