//! Diagnostics as data: a code, a severity, a message, labelled spans and help.
//!
//! Passes return [`Diagnostic`] values; only the CLI decides how to show them. [`render`]
//! turns them into text with miette's graphical handler (used by the CLI and by snapshot
//! tests with a fixed, colourless theme) and [`to_json`] into machine-readable records.
//! [`SourceMap`] holds the texts the spans point into.

use crate::code::Code;
use crate::syntax::ast::Span;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Identifies one file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(pub u32);

/// One source file: its display name and text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// Name shown in diagnostics (a path as the user gave it, or `std/hardware.weft`).
    pub name: String,
    /// Full text.
    pub text: Arc<str>,
    line_starts: Vec<u32>,
}

impl SourceFile {
    /// 1-based (line, column) of a byte offset; columns count characters.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = self.line_starts.get(line).copied().unwrap_or(0) as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self
            .text
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(0);
        (line as u32 + 1, col as u32 + 1)
    }
}

/// Every file diagnostics can point into.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceId {
        let text: Arc<str> = text.into();
        let line_starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, b)| b == b'\n')
                    .map(|(i, _)| i as u32 + 1),
            )
            .collect();
        self.files.push(SourceFile {
            name: name.into(),
            text,
            line_starts,
        });
        SourceId(self.files.len() as u32 - 1)
    }

    /// The file with this id.
    pub fn get(&self, id: SourceId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The input is wrong; nothing is emitted.
    Error,
    /// Suspicious but compiled.
    Warning,
    /// For information.
    Advice,
}

/// A labelled span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What to say there.
    pub text: String,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, e.g. `weft::port_wired_twice`.
    pub code: Code,
    /// Severity.
    pub severity: Severity,
    /// One-line message: lowercase, no final period, names in backticks.
    pub message: String,
    /// The file the labels point into.
    pub source: Option<SourceId>,
    /// Labels; the first is the primary one.
    pub labels: Vec<Label>,
    /// Advice.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with a message and no location yet.
    pub fn error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            source: None,
            labels: Vec::new(),
            help: None,
        }
    }

    /// A warning with a message and no location yet.
    pub fn warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message)
        }
    }

    /// Adds a label in `source`.
    pub fn label(mut self, source: SourceId, span: Span, text: impl Into<String>) -> Diagnostic {
        if self.source.is_none() {
            self.source = Some(source);
        }
        if self.source == Some(source) {
            self.labels.push(Label {
                span,
                text: text.into(),
            });
        }
        self
    }

    /// Sets the help line.
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Converts any miette diagnostic whose labels point into `source` (e.g. an ibnetdiscover
    /// reader error) into this form.
    pub fn from_miette(d: &dyn miette::Diagnostic, code: Code, source: SourceId) -> Diagnostic {
        let severity = match d.severity() {
            Some(miette::Severity::Warning) => Severity::Warning,
            Some(miette::Severity::Advice) => Severity::Advice,
            _ => Severity::Error,
        };
        let labels = d
            .labels()
            .map(|ls| {
                ls.map(|l| Label {
                    span: Span::new(l.offset(), l.offset() + l.len()),
                    text: l.label().unwrap_or_default().to_owned(),
                })
                .collect()
            })
            .unwrap_or_default();
        Diagnostic {
            code,
            severity,
            message: d.to_string(),
            source: Some(source),
            labels,
            help: d.help().map(|h| h.to_string()),
        }
    }
}

/// Counts of errors and warnings.
pub fn count(diags: &[Diagnostic]) -> (usize, usize) {
    let errors = diags.iter().filter(|d| d.is_error()).count();
    (errors, diags.len() - errors)
}

/// A diagnostic bound to its source, in the form miette renders.
struct Bound<'a> {
    diag: &'a Diagnostic,
    source: Option<miette::NamedSource<Arc<str>>>,
}

impl fmt::Debug for Bound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diag, f)
    }
}

impl fmt::Display for Bound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl std::error::Error for Bound<'_> {}

impl miette::Diagnostic for Bound<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.diag.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Advice => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.diag
            .help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.source.as_ref()?;
        Some(Box::new(self.diag.labels.iter().enumerate().map(
            |(i, l)| {
                let text = (!l.text.is_empty()).then(|| l.text.clone());
                if i == 0 {
                    miette::LabeledSpan::new_primary_with_span(text, l.span)
                } else {
                    miette::LabeledSpan::new_with_span(text, l.span)
                }
            },
        )))
    }
}

/// How [`render`] draws.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// Use colour.
    pub color: bool,
    /// Use Unicode box drawing (else ASCII).
    pub unicode: bool,
    /// Terminal width.
    pub width: usize,
}

impl RenderOptions {
    /// Colourless Unicode at width 80: what snapshot tests use.
    pub fn plain() -> RenderOptions {
        RenderOptions {
            color: false,
            unicode: true,
            width: 80,
        }
    }
}

/// Renders diagnostics as human-readable text, each followed by a blank line.
pub fn render(diags: &[Diagnostic], sources: &SourceMap, opts: RenderOptions) -> String {
    let theme = match (opts.unicode, opts.color) {
        (true, true) => miette::GraphicalTheme::unicode(),
        (true, false) => miette::GraphicalTheme::unicode_nocolor(),
        (false, true) => miette::GraphicalTheme {
            characters: miette::ThemeCharacters::ascii(),
            styles: miette::ThemeStyles::ansi(),
        },
        (false, false) => miette::GraphicalTheme::none(),
    };
    let handler = miette::GraphicalReportHandler::new_themed(theme)
        .with_width(opts.width)
        .with_links(false);
    let mut out = String::new();
    // The first few of each code are shown in full; the rest are counted (a file with 20 000
    // errors renders in linear time, and the first ones are the ones to fix).
    let mut shown: BTreeMap<(Code, bool), usize> = BTreeMap::new();
    for d in diags {
        // A reader's own summary of what it left out ("… and 190 more like this") is always
        // shown and not counted.
        if !d.message.starts_with("… and ") {
            let n = shown.entry((d.code, d.is_error())).or_default();
            *n += 1;
            if *n > SHOWN_PER_CODE {
                continue;
            }
        }
        let file = d.source.and_then(|id| sources.get(id));
        // A snippet of a very long line is unreadable (and miette cannot pad past column
        // 65 535): such a diagnostic is shown without its snippet, at its line and column.
        let long = file.filter(|f| {
            d.labels
                .iter()
                .any(|l| f.line_col(l.span.end).1 > MAX_SNIPPET_COLUMN)
        });
        let source = match long {
            Some(_) => None,
            None => file.map(|f| {
                miette::NamedSource::new(f.name.clone(), Arc::clone(&f.text)).with_language("weft")
            }),
        };
        let bound = Bound { diag: d, source };
        if handler.render_report(&mut out, &bound).is_err() {
            out.push_str(&d.message);
        }
        if let (Some(f), Some(l)) = (long, d.labels.first()) {
            let (line, column) = f.line_col(l.span.start);
            out.push_str(&format!(
                "  at {}:{line}:{column} (line too long to show)\n",
                f.name
            ));
        }
        out.push('\n');
    }
    for ((code, _), n) in shown {
        if n > SHOWN_PER_CODE {
            out.push_str(&format!(
                "… and {} more like this ({code}); {SHOWN_PER_CODE} are shown in full\n\n",
                n - SHOWN_PER_CODE
            ));
        }
    }
    out
}

/// Diagnostics of one code (and severity) rendered in full; the rest are counted.
pub const SHOWN_PER_CODE: usize = 10;

/// Columns past this are not shown as a snippet.
const MAX_SNIPPET_COLUMN: u32 = 4_096;

/// A diagnostic as a JSON record.
#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    severity: Severity,
    message: &'a str,
    file: Option<&'a str>,
    line: Option<u32>,
    column: Option<u32>,
    labels: Vec<JsonLabel<'a>>,
    help: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonLabel<'a> {
    text: &'a str,
    start: u32,
    end: u32,
    line: u32,
    column: u32,
}

/// Diagnostics as JSON values (file, line and column resolved).
pub fn to_json(diags: &[Diagnostic], sources: &SourceMap) -> serde_json::Value {
    let records: Vec<JsonDiagnostic<'_>> = diags
        .iter()
        .map(|d| {
            let file = d.source.and_then(|id| sources.get(id));
            let labels: Vec<JsonLabel<'_>> = d
                .labels
                .iter()
                .map(|l| {
                    let (line, column) = file.map(|f| f.line_col(l.span.start)).unwrap_or((0, 0));
                    JsonLabel {
                        text: &l.text,
                        start: l.span.start,
                        end: l.span.end,
                        line,
                        column,
                    }
                })
                .collect();
            JsonDiagnostic {
                code: d.code.as_str(),
                severity: d.severity,
                message: &d.message,
                file: file.map(|f| f.name.as_str()),
                line: labels.first().map(|l| l.line),
                column: labels.first().map(|l| l.column),
                labels,
                help: d.help.as_deref(),
            }
        })
        .collect();
    serde_json::to_value(records).unwrap_or(serde_json::Value::Null)
}
