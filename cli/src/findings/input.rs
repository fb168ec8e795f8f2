//! Findings of inputs a reader refused: a file's problems (each placed at its span when the
//! text is known, rendered with miette's source excerpt), a state file's, OpenSM's dumps',
//! capped per code so a broken file of a million lines gives a readable answer.

use super::{of_input, Detail, Finding, Level, Place};
use serde_json::Value;

/// The findings of a file a reader refused (`d`, a diagnostic with its related ones): one
/// per problem, placed in `text` (the file's content, when it was read) at the problem's
/// first label, rendered for people with miette's source excerpts.
pub fn of_miette(d: &dyn miette::Diagnostic, artifact: &str, text: Option<&str>) -> Vec<Finding> {
    let leaves: Vec<&dyn miette::Diagnostic> = match d.related() {
        Some(r) => r.collect(),
        None => vec![d],
    };
    let leaves = if leaves.is_empty() { vec![d] } else { leaves };
    let parent_code = d.code().map(|c| c.to_string());
    leaves
        .into_iter()
        .map(|leaf| {
            let code = leaf
                .code()
                .map(|c| c.to_string())
                .or_else(|| parent_code.clone())
                .unwrap_or_else(|| "weft::input".to_owned());
            let place = text
                .zip(leaf.labels().and_then(|mut l| l.next()))
                .map(|(t, l)| place_in(t, artifact, l.offset(), l.offset() + l.len()));
            let mut rendered = String::new();
            let handler = miette::GraphicalReportHandler::new_themed(
                miette::GraphicalTheme::unicode_nocolor(),
            )
            .with_width(100);
            let shown = if leaf.source_code().is_some() || d.source_code().is_none() {
                handler.render_report(&mut rendered, leaf)
            } else {
                // The leaf points into its parent's source: render it with the parent's.
                handler.render_report(&mut rendered, &WithSource { d: leaf, parent: d })
            };
            Finding {
                level: match leaf.severity() {
                    Some(miette::Severity::Warning) => Level::Warning,
                    Some(miette::Severity::Advice) => Level::Note,
                    _ => Level::Error,
                },
                message: leaf.to_string(),
                help: leaf.help().map(|h| h.to_string()),
                place,
                artifact: Some(artifact.to_owned()),
                objects: Vec::new(),
                flow: Vec::new(),
                properties: Value::Null,
                detail: match shown {
                    Ok(()) => Detail::Rendered(rendered),
                    Err(_) => Detail::None,
                },
                code,
            }
        })
        .collect()
}

/// A related diagnostic shown with its parent's source.
struct WithSource<'a> {
    d: &'a dyn miette::Diagnostic,
    parent: &'a dyn miette::Diagnostic,
}

impl std::fmt::Debug for WithSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.d, f)
    }
}

impl std::fmt::Display for WithSource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.d, f)
    }
}

impl std::error::Error for WithSource<'_> {}

impl miette::Diagnostic for WithSource<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.d.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.d.severity()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.d.help()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.d.labels()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.parent.source_code()
    }
}

/// The region of `text` (a file named `file`) from byte `start` to `end`.
fn place_in(text: &str, file: &str, start: usize, end: usize) -> Place {
    let at = |off: usize| -> (u32, u32) {
        let off = off.min(text.len());
        let before = text.get(..off).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        )
    };
    let (line, column) = at(start);
    let (end_line, end_column) = at(end.max(start));
    Place {
        file: file.to_owned(),
        line,
        column,
        end_line,
        end_column,
    }
}

/// Findings of problems of one kind (one code) shown before a note of how many more.
pub const SHOWN_PER_CODE: usize = 10;

/// `found` with at most [`SHOWN_PER_CODE`] findings of one code, and for each code with
/// more, a note saying how many more were found (a state with a million bad entries gives a
/// readable document, not a million findings).
pub fn capped(found: Vec<Finding>) -> Vec<Finding> {
    let mut count: std::collections::BTreeMap<String, (usize, Level)> = Default::default();
    let mut out = Vec::new();
    for f in found {
        let n = count.entry(f.code.clone()).or_insert((0, f.level));
        n.0 += 1;
        if n.0 <= SHOWN_PER_CODE {
            out.push(f);
        }
    }
    for (code, (n, level)) in count {
        if n > SHOWN_PER_CODE {
            let more = n - SHOWN_PER_CODE;
            let mut note = of_input(&code, None, format!("… and {more} more like this"));
            note.level = Level::Note;
            // What the note stands for, so that a summary counts every finding.
            note.properties = serde_json::json!({ "more": more, "level": level });
            out.push(note);
        }
    }
    out
}

/// How many errors and warnings `findings` hold, those a note of [`capped`] stands for
/// included (notes themselves are neither).
pub fn counts(findings: &[Finding]) -> (usize, usize) {
    let mut errors = 0;
    let mut warnings = 0;
    for f in findings {
        let (level, n) = match (f.level, f.properties.get("more").and_then(Value::as_u64)) {
            (Level::Note, Some(more)) => {
                let level = match f.properties.get("level").and_then(Value::as_str) {
                    Some("error") => Level::Error,
                    Some("warning") => Level::Warning,
                    _ => Level::Note,
                };
                (level, usize::try_from(more).unwrap_or(usize::MAX))
            }
            (level, _) => (level, 1),
        };
        match level {
            Level::Error => errors += n,
            Level::Warning => warnings += n,
            Level::Note => {}
        }
    }
    (errors, warnings)
}

/// A state file's problems (`weft::state::…`), in `artifact`.
pub fn of_state_errors(e: &weft_fabric::StateErrors, artifact: &str) -> Vec<Finding> {
    capped(
        e.0.iter()
            .flat_map(|e| of_miette(e, artifact, None))
            .collect(),
    )
}

/// OpenSM's files' problems (`weft::opensm`, each at its line of the file it is in, named by
/// `path_of` from the kind of file) and those of the state they make with the topology.
pub fn of_assemble_errors(
    e: &weft_formats::opensm::AssembleErrors,
    path_of: impl Fn(&str) -> String,
    topology: &str,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = e
        .dumps
        .iter()
        .map(|d| {
            let file = path_of(d.file);
            let mut f = of_input("weft::opensm", Some(&file), d.message.clone());
            if d.line > 0 {
                let line = u32::try_from(d.line).unwrap_or(u32::MAX);
                f.place = Some(Place {
                    file,
                    line,
                    column: 1,
                    end_line: line,
                    end_column: 1,
                });
            }
            f
        })
        .collect();
    out.extend(e.state.iter().flat_map(|s| of_miette(s, topology, None)));
    capped(out)
}
