//! One finding type for every command: compiler diagnostics, routing notes, verifier
//! violations (credit loops, failed routes, breaches, shared cables), certificate refusals
//! and the problems of files a reader refused all become [`Finding`]s, under a code of the
//! registry ([`crate::codes`]). One renderer per format reads them: for people
//! ([`human()`]: [`emit_diagnostics`], [`human_loops`], [`human_patterns`]), SARIF 2.1.0
//! ([`sarif()`]), and the `findings` array of a command's JSON [`document`]. A finding points
//! at the source where there is one (a diagnostic's span; for a fabric compiled from a
//! `.weft` file, the declaration of the node a violation names) and names the fabric objects
//! involved as logical locations.

mod human;
mod input;
mod sarif;

pub use human::{emit_diagnostics, human, human_loops, human_patterns};
pub use input::{capped, counts, of_assemble_errors, of_miette, of_state_errors};
pub use sarif::sarif;

use serde::Serialize;
use serde_json::{json, Value};
use weft_compiler::diagnostic::{Diagnostic, Severity, SourceMap};
use weft_compiler::Elaborated;
use weft_fabric::NodeId;
use weft_verifier::{CreditLoop, FailurePattern, Property, Report};

/// How bad a finding is (SARIF's `level`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
    Note,
}

/// A region of a source file (1-based lines and columns, end inclusive of its line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// A fabric object a finding involves: a node, or a port and VL of one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Object {
    pub name: String,
    /// `node`, or `channel` (`node/portP/vlV`).
    pub kind: &'static str,
    pub path: String,
}

/// One step of a credit loop: a channel waiting for the next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub message: String,
    pub object: Object,
}

/// One finding.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Stable code (`weft::port_wired_twice`, `weft::credit_loop`, …).
    pub code: String,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Where in a source file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub place: Option<Place>,
    /// The file the finding is about when it has no place in it (a state, a dump).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<Object>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flow: Vec<Step>,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub properties: Value,
    /// What the human rendering shows in full (a diagnostic's source excerpt, every step of a
    /// loop, a pattern's witnesses).
    #[serde(skip)]
    pub detail: Detail,
}

/// The whole of what a finding came from, for the human rendering.
#[derive(Clone, Debug, Default)]
pub enum Detail {
    #[default]
    None,
    /// A compiler diagnostic, rendered with its source excerpt.
    Diagnostic(Box<Diagnostic>),
    /// Credit loop `index` (from 0) of `total` found.
    Loop {
        index: usize,
        total: u64,
        looped: Box<CreditLoop>,
    },
    /// A pattern of failed routes.
    Pattern(Box<FailurePattern>),
    /// A pair of end ports breaking the declared partitions (rendered with the verdict).
    Breach,
    /// A reader's problem, rendered for people with its source excerpt.
    Rendered(String),
}

/// Where a node was declared, for findings about fabrics compiled from source.
pub struct Origins<'a> {
    pub elaborated: &'a Elaborated,
    pub sources: &'a SourceMap,
}

impl Origins<'_> {
    /// The declarations of a compilation that elaborated.
    pub fn of(c: &weft_compiler::Compilation) -> Option<Origins<'_>> {
        c.elaborated.as_ref().map(|e| Origins {
            elaborated: e,
            sources: &c.sources,
        })
    }

    fn place(&self, id: NodeId) -> Option<Place> {
        let o = self.elaborated.origin(id);
        place(self.sources, o.source, o.span.start, o.span.end)
    }
}

fn place(
    sources: &SourceMap,
    source: weft_compiler::diagnostic::SourceId,
    start: u32,
    end: u32,
) -> Option<Place> {
    let f = sources.get(source)?;
    let (line, column) = f.line_col(start);
    let (end_line, end_column) = f.line_col(end.max(start));
    Some(Place {
        file: f.name.clone(),
        line,
        column,
        end_line,
        end_column,
    })
}

/// Compiler diagnostics as findings, each at its primary label.
pub fn of_diagnostics(diags: &[Diagnostic], sources: &SourceMap) -> Vec<Finding> {
    diags
        .iter()
        .map(|d| Finding {
            code: d.code.as_str().to_owned(),
            level: match d.severity {
                Severity::Error => Level::Error,
                Severity::Warning => Level::Warning,
                Severity::Advice => Level::Note,
            },
            message: d.message.clone(),
            help: d.help.clone(),
            place: d
                .source
                .zip(d.labels.first())
                .and_then(|(s, l)| place(sources, s, l.span.start, l.span.end)),
            artifact: None,
            objects: Vec::new(),
            flow: Vec::new(),
            properties: Value::Null,
            detail: Detail::Diagnostic(Box::new(d.clone())),
        })
        .collect()
}

fn node(name: &str) -> Object {
    Object {
        name: name.to_owned(),
        kind: "node",
        path: name.to_owned(),
    }
}

/// What a failed route's witness names: the node it fails at, and for a hop on a VL that is
/// not operational or not scheduled, the port and VL (a channel).
fn witness_objects(w: &weft_verifier::Witness) -> Vec<Object> {
    use weft_verifier::FailureReason as R;
    let mut v = vec![node(&w.at.name)];
    if let R::VlNotOperational { port, vl, .. }
    | R::VlAboveMaxVls { port, vl, .. }
    | R::VlNotScheduled { port, vl, .. } = w.reason
    {
        v.push(Object {
            name: w.at.name.clone(),
            kind: "channel",
            path: format!("{}/port{port}/vl{vl}", w.at.name),
        });
    }
    v
}

fn channel(c: &weft_verifier::Channel) -> Object {
    Object {
        name: c.node.name.clone(),
        kind: "channel",
        path: format!("{}/port{}/vl{}", c.node.name, c.port, c.vl),
    }
}

/// What a verification found, for [`of_report`]: the credit loops listed and how many there
/// were, the failure patterns, and the sections of the properties asked for.
#[derive(Clone, Copy, Default)]
pub struct Violations<'a> {
    pub loops: &'a [CreditLoop],
    pub loops_total: u64,
    pub patterns: &'a [FailurePattern],
    pub isolation: Option<&'a weft_verifier::Isolation>,
    pub apm: Option<&'a weft_verifier::apm::Apm>,
    pub multicast: Option<&'a weft_verifier::McReport>,
}

impl<'a> Violations<'a> {
    /// Everything the explicit engine's report found.
    pub fn of(r: &'a Report) -> Violations<'a> {
        Violations {
            loops: &r.credit_loops,
            loops_total: r.credit_loops_total,
            patterns: &r.failures,
            isolation: r.isolation.as_ref(),
            apm: r.apm.as_ref(),
            multicast: r.multicast.as_ref(),
        }
    }
}

/// The verifier's violations as findings: one per credit loop listed (its channels, the cycle
/// as a flow, placed at the first channel's switch; `loops_total` of them were found), one
/// per failure pattern (placed where its first witness fails), per multicast pattern, shared
/// cable and partition breach. `artifact` names the verified input; `origins` places nodes in
/// the source they were declared in.
pub fn of_report(v: Violations<'_>, artifact: &str, origins: Option<&Origins<'_>>) -> Vec<Finding> {
    let Violations {
        loops,
        loops_total,
        patterns,
        isolation,
        apm,
        multicast,
    } = v;
    let at = |id: Option<NodeId>| origins.zip(id).and_then(|(o, id)| o.place(id));
    let mut out = Vec::new();
    for (index, l) in loops.iter().enumerate() {
        let names: Vec<String> = l.cycle.iter().map(|d| crate::render::ch(&d.from)).collect();
        out.push(Finding {
            code: Property::DeadlockFree.code().to_owned(),
            level: Level::Error,
            message: format!(
                "credit loop through {} channels: {}",
                l.channels.len(),
                names.join(", ")
            ),
            help: None,
            place: at(l.channels.first().map(|c| c.node.id)),
            artifact: Some(artifact.to_owned()),
            objects: l.channels.iter().take(50).map(channel).collect(),
            flow: l
                .cycle
                .iter()
                .map(|d| Step {
                    message: format!(
                        "{} waits for {} (route {})",
                        crate::render::ch(&d.from),
                        crate::render::ch(&d.to),
                        crate::render::route_name(&d.route)
                    ),
                    object: channel(&d.from),
                })
                .collect(),
            properties: json!({"loop": l}),
            detail: Detail::Loop {
                index,
                total: loops_total,
                looped: Box::new(l.clone()),
            },
        });
    }
    for p in patterns {
        let first = p.witnesses.first();
        let mut message = crate::render::pattern_sentence(p);
        if let Some(w) = first {
            message += &format!(
                "; e.g. {}: {}",
                crate::render::route_name(&w.route),
                crate::render::route_line(&w.route)
            );
        }
        out.push(Finding {
            code: Property::Connected.code().to_owned(),
            level: Level::Error,
            message,
            help: None,
            place: at(first.map(|w| w.at.id)),
            artifact: Some(artifact.to_owned()),
            objects: first.map(witness_objects).unwrap_or_default(),
            flow: Vec::new(),
            properties: json!({"pattern": p}),
            detail: Detail::Pattern(Box::new(p.clone())),
        });
    }
    for s in apm.map_or(&[][..], |a| a.shared.as_slice()) {
        let mut f = of_input(Property::ApmDisjoint.code(), Some(artifact), s.describe());
        f.place = at(Some(s.from.id));
        f.objects = vec![node(&s.from.name), node(&s.dst.node.name)];
        f.properties = json!({"shared": s});
        f.detail = Detail::Breach;
        out.push(f);
    }
    for m in multicast.map_or(&[][..], |m| m.failures.as_slice()) {
        let mut f = of_input(
            Property::MulticastConnected.code(),
            Some(artifact),
            m.describe(),
        );
        let at_node = m
            .loop_at
            .as_ref()
            .map(|(x, _, _)| x.clone())
            .unwrap_or_else(|| m.sender.node.clone());
        f.place = at(Some(at_node.id));
        f.objects = std::iter::once(node(&at_node.name))
            .chain(m.receiver.iter().map(|r| node(&r.node.name)))
            .collect();
        f.properties = json!({"multicast": m});
        f.detail = Detail::Breach;
        out.push(f);
    }
    for b in isolation.map_or(&[][..], |i| i.breaches.as_slice()) {
        let mut f = of_input(Property::Isolated.code(), Some(artifact), b.describe());
        f.place = at(Some(b.a.node.id));
        f.objects = vec![node(&b.a.node.name), node(&b.b.node.name)];
        f.properties = json!({"breach": b});
        f.detail = Detail::Breach;
        out.push(f);
    }
    out
}

/// A `.weft` file's findings: `diags` (its diagnostics, and the routing's), then the verdict's
/// violations, placed at the declarations of the nodes they name.
pub fn of_compiled(
    c: &weft_compiler::Compilation,
    diags: &[Diagnostic],
    report: Option<&Report>,
    artifact: &str,
) -> Vec<Finding> {
    let mut out = of_diagnostics(diags, &c.sources);
    if let Some(r) = report {
        let origins = Origins::of(c);
        out.extend(of_report(Violations::of(r), artifact, origins.as_ref()));
    }
    out
}

/// A certificate refusal as a finding.
pub fn of_certificate_error(e: &weft_verifier::CertificateError, path: &str) -> Finding {
    use miette::Diagnostic as _;
    Finding {
        code: e
            .code()
            .map_or_else(|| "weft::internal".to_owned(), |c| c.to_string()),
        level: Level::Error,
        message: format!("certificate rejected: {e}"),
        help: None,
        place: None,
        artifact: Some(path.to_owned()),
        objects: Vec::new(),
        flow: Vec::new(),
        properties: Value::Null,
        detail: Detail::None,
    }
}

/// The output formats of the commands that report findings.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Text for people (diagnostics with source excerpts).
    Human,
    /// One JSON document, with a `findings` array.
    Json,
    /// SARIF 2.1.0 (code-scanning tools, CI annotations).
    Sarif,
}

/// `body` (a JSON object) as a versioned document of `command`: `format` is
/// `weft-COMMAND` and `version` its shape's version, so a tool reading it can refuse a shape
/// it does not know.
pub fn document(command: &str, mut body: Value) -> Value {
    body["format"] = json!(format!("weft-{command}"));
    body["version"] = json!(DOCUMENT_VERSION);
    body
}

/// The version of every command's JSON document.
pub const DOCUMENT_VERSION: u32 = 1;

/// One finding about a whole input (no place in it): an option or a file the command cannot
/// use, under `code`.
pub fn of_input(code: &str, artifact: Option<&str>, message: String) -> Finding {
    Finding {
        code: code.to_owned(),
        level: Level::Error,
        message,
        help: None,
        place: None,
        artifact: artifact.map(str::to_owned),
        objects: Vec::new(),
        flow: Vec::new(),
        properties: Value::Null,
        detail: Detail::None,
    }
}

/// Each machine whose rail cables cross (`weft::crossed_rails`, a warning) about `artifact`:
/// `weft report` and `weft diff` say it as `weft import` does.
pub fn of_crossed_rails(crossed: &[weft_metrics::CrossedHost], artifact: &str) -> Vec<Finding> {
    crossed
        .iter()
        .map(|h| {
            let each: Vec<String> = h
                .hcas
                .iter()
                .map(|x| {
                    format!(
                        "`{}` is cabled to `{}`, a leaf of rail {}, where its peers are on rail {}",
                        x.hca, x.leaf, x.leaf_rail, x.expected_rail
                    )
                })
                .collect();
            let mut f = of_input(
                "weft::crossed_rails",
                Some(artifact),
                format!(
                    "host `{}` has HCAs on other rails' leaves than its peers': {}",
                    h.host,
                    each.join("; ")
                ),
            );
            f.level = Level::Warning;
            f.help = Some(
                "swap the cables back (each HCA to its rail's leaf); until then its HCAs take \
                 their leaves' rails"
                    .to_owned(),
            );
            f.objects = h
                .hcas
                .iter()
                .map(|x| Object {
                    name: x.hca.clone(),
                    kind: "node",
                    path: x.hca.clone(),
                })
                .collect();
            f
        })
        .collect()
}

/// The routing engine's notes (`weft::sftree_root`, `weft::fat_tree_updn`, …) as findings of
/// level note about `artifact`.
pub fn of_notes(notes: &[weft_compiler::routing::RouteNote], artifact: &str) -> Vec<Finding> {
    notes
        .iter()
        .map(|n| {
            let mut f = of_input(n.code.as_str(), Some(artifact), n.message.clone());
            f.level = Level::Note;
            f
        })
        .collect()
}

/// What a command proved, and of which state: the state's fingerprint (topology and LIDs)
/// and digest (all of it, tables included), and the properties the proof checked. Two
/// commands that prove the same state show the same three.
pub fn proved(state: &weft_fabric::FabricState, report: &Report) -> Value {
    json!({
        "fingerprint": weft_fabric::Fingerprint::of(state),
        "digest": weft_formats::state_json::digest(state),
        "properties": report.properties,
    })
}
