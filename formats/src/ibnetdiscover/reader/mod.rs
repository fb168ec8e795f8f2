//! The reader: ibnetdiscover output and ibsim net files, and the port-by-port reports
//! (`ibnetdiscover -p`, `iblinkinfo`), into a [`Fabric`].
//!
//! Three phases:
//!
//! 1. **Lines.** The format is detected from the first line that is not blank, a comment or
//!    noise ([`detect_format`]). Every line is classified and parsed into node records with
//!    byte spans: for the topology format (`lines.rs`, `ports.rs`) headers, port lines,
//!    assignments, directives, comments and blank lines, GUIDs resolved in file order the way
//!    ibsim does it (a `switchguid=`/`caguid=`/`rtguid=` line sets the GUID of the next node
//!    of that kind, and nodes without such a line count on from it: switches `+1`, end nodes
//!    `+ports+1`; the counters start at `0x200000` for switches, `0x100000` for CAs and `0`
//!    for routers); for the reports (`report.rs`, `linkinfo.rs`) records made up from port
//!    lines, with port counts and end-node GUIDs guessed and said so. Noise (`noise.rs`:
//!    terminal-log headers, shell prompts, captured standard error, grouped-output headers)
//!    is skipped with a warning per line in every format. A file that yields no node record
//!    and no error (empty, blank, only comments and noise: a discovery that failed) is an
//!    error (`empty.rs`), whatever the reading mode.
//! 2. **Checks.** Node ids and GUIDs unique, every port line's ports on their nodes, every
//!    remote node declared (or, reading a partial dump, its link dropped with a warning), each
//!    port wired once, the two sightings of a link agreeing (ends, port GUIDs; rates differing
//!    is a warning). A link listed by one end only is accepted with a warning as long as the
//!    other end does not list that port elsewhere.
//! 3. **Build.** Only when no error was found: names (node description, name-map entry or node
//!    id, made unique), the [`Fabric`] through [`FabricBuilder`], the LIDs seen, and the ports
//!    left without one (`lid 0`/`lid 65535`). Strict reading then makes every warning an error.
//!
//! Nothing here panics on any input: spans and slices come from `get`, numbers from checked
//! parsing.

mod build;
mod checks;
mod empty;
mod foreign;
mod lines;
mod linkinfo;
mod noise;
mod ports;
mod report;
mod scan;
mod subnet_lst;

use build::*;
use checks::*;
use lines::*;
use ports::*;
use scan::*;

use super::error::{new_source, Code, IbnetDiagnostic, ParseErrors, Source};
use super::{Discovered, InputFormat, ParseOptions};
use miette::{Severity, SourceSpan};
use std::borrow::Cow;
use std::collections::BTreeMap;
use weft_fabric::{
    FabricBuilder, Guid, Lid, LidAssignment, NodeId, NodeKind, NodeSpec, PortNum, PortRef, Speed,
    Width, MAX_UNICAST_LID,
};

/// Reads an ibnetdiscover topology (or ibsim net file, or an `ibnetdiscover -p` or
/// `iblinkinfo` report: [`ParseOptions::format`]) into a fabric, collecting every error. A
/// text without any node record is an error ([`Code::NoNodes`]), partial and strict reading
/// alike: an empty fabric is never what a dump meant.
pub fn parse(text: &str, opts: &ParseOptions) -> Result<Discovered, ParseErrors> {
    let src = new_source(&opts.source_name, text);
    let mut cx = Cx {
        src: &src,
        diags: Vec::new(),
        missing_ws: None,
    };
    let format = opts.format.unwrap_or_else(|| detect_format(text));
    if opts.format.is_none() && format == InputFormat::Topology {
        if let Some(refused) = refuse_foreign(&src, text) {
            return Err(refused);
        }
    }
    let file = match format {
        InputFormat::Topology => read_lines(&mut cx, text),
        InputFormat::PortsReport => report::read(&mut cx, text),
        InputFormat::LinkInfo => linkinfo::read(&mut cx, text),
        InputFormat::SubnetLst => subnet_lst::read(&mut cx, text),
    };
    if file.nodes.is_empty() && !cx.diags.iter().any(IbnetDiagnostic::is_error) {
        empty::no_nodes(&mut cx, text, format);
    }
    let checked = check(&mut cx, &file, opts.partial);
    let built = if cx.diags.iter().any(IbnetDiagnostic::is_error) {
        None
    } else {
        build(&mut cx, &file, &checked, opts)
    };
    let mut diags = cx.diags;
    diags.sort_by_key(|d| d.span().offset());
    let mut diags = cap_repeated(diags, &src);
    if opts.strict {
        diags = diags.into_iter().map(IbnetDiagnostic::strict).collect();
    }
    match built {
        Some(b) if !diags.iter().any(IbnetDiagnostic::is_error) => Ok(Discovered {
            fabric: b.fabric,
            lids: b.lids,
            warnings: diags,
            unassigned: b.unassigned,
            format,
        }),
        _ => Err(ParseErrors::new(
            src.clone(),
            diags
                .into_iter()
                .filter(IbnetDiagnostic::is_error)
                .collect(),
        )),
    }
}

/// The first line of `text` that is no blank line, comment or noise, trimmed, with its span
/// and the lines after it.
fn first_line(text: &str) -> Option<(&str, SourceSpan, impl Iterator<Item = Line<'_>>)> {
    let mut all = lines(text);
    for line in all.by_ref() {
        let t = line.text.trim_matches([' ', '\t']);
        if t.is_empty() || t.starts_with('#') || noise::classify(line.text).is_some() {
            continue;
        }
        let lead = line.text.len() - line.text.trim_start_matches([' ', '\t']).len();
        return Some((t, sp(line.start + lead, t.len()), all));
    }
    None
}

/// The one error for a text in a known format that is no topology ([`foreign`]).
fn refuse_foreign(src: &Source, text: &str) -> Option<ParseErrors> {
    let (t, span, rest) = first_line(text)?;
    let found = foreign::recognise(t, rest.map(|l| l.text))?;
    let d = IbnetDiagnostic::new(
        src,
        Code::ForeignFormat,
        Severity::Error,
        span,
        format!("this is {}, not a topology", found.what),
        "recognised from this line",
    )
    .with_help(found.help);
    Some(ParseErrors::new(src.clone(), vec![d]))
}

/// The format of `text`, from its first line that is no blank line, comment or noise: a
/// `Switch: 0x…`, `CA: …` or `Router: …` line is `iblinkinfo`, a line such as `SW 12 1
/// 0x… 4x EDR` an `ibnetdiscover -p` report, `{ SW Ports:08 … NodeGUID:… PN:01 } { … }`
/// a `subnet.lst`, anything else the topology format.
pub fn detect_format(text: &str) -> InputFormat {
    if let Some((t, _, _)) = first_line(text) {
        if subnet_lst::is_line(t) {
            return InputFormat::SubnetLst;
        }
        if linkinfo::is_header(t) {
            return InputFormat::LinkInfo;
        }
        if report::is_port_line(t) {
            return InputFormat::PortsReport;
        }
    }
    InputFormat::Topology
}

/// Reads a node name map: `<guid> "<name>"` per line, `#` comments and blank lines.
///
/// The errors are shown under the source name `node-name-map`; use
/// [`ParseErrors::with_source_name`] to show the real path.
pub fn parse_node_name_map(text: &str) -> Result<BTreeMap<Guid, String>, ParseErrors> {
    let src = new_source("node-name-map", text);
    let mut cx = Cx {
        src: &src,
        diags: Vec::new(),
        missing_ws: None,
    };
    let mut map: BTreeMap<Guid, (String, SourceSpan)> = BTreeMap::new();
    for line in lines(text) {
        let mut sc = Scan::new(line.text, line.start);
        sc.skip_ws();
        if sc.at_end() || sc.peek() == Some(b'#') {
            continue;
        }
        let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
        let guid_span = sp(at, tok.len().max(1));
        let guid = match parse_uint(tok) {
            Some(0) => {
                cx.error(
                    Code::MalformedNameMap,
                    guid_span,
                    "GUID `0` in the node name map",
                    "not a GUID",
                    "GUIDs are non-zero, written as `0x0002c903000e0b52`",
                );
                continue;
            }
            Some(g) => Guid(g),
            None => {
                let label = if tok.is_empty() {
                    "expected a GUID".to_owned()
                } else {
                    format!("`{tok}` is not a GUID")
                };
                cx.error(
                    Code::MalformedNameMap,
                    guid_span,
                    "malformed node name map line",
                    label,
                    "each line is a GUID and a quoted name, like `0x0002c903000e0b52 \"cn001\"`",
                );
                continue;
            }
        };
        let had_ws = sc.skip_ws();
        let name = match sc.peek() {
            Some(b'"') if had_ws => match sc.quoted() {
                Ok((name, span)) => (name, span),
                Err(span) => {
                    cx.error(
                        Code::MalformedNameMap,
                        span,
                        "unterminated name in the node name map",
                        "this name is not closed by `\"`",
                        "each line is a GUID and a quoted name, like `0x0002c903000e0b52 \"cn001\"`",
                    );
                    continue;
                }
            },
            _ => {
                cx.error(
                    Code::MalformedNameMap,
                    sp(sc.abs(), sc.rest().len().max(1)),
                    "malformed node name map line",
                    "expected a space and a quoted name",
                    "each line is a GUID and a quoted name, like `0x0002c903000e0b52 \"cn001\"`",
                );
                continue;
            }
        };
        sc.skip_ws();
        if !sc.at_end() && sc.peek() != Some(b'#') {
            cx.error(
                Code::MalformedNameMap,
                sp(sc.abs(), sc.rest().len()),
                "malformed node name map line",
                "unexpected text after the name",
                "each line is a GUID and a quoted name; a comment starts with `#`",
            );
            continue;
        }
        if name.0.is_empty() {
            cx.error(
                Code::MalformedNameMap,
                name.1,
                "empty name in the node name map",
                "empty",
                "give the node a name, or remove the line",
            );
            continue;
        }
        if let Some((first, first_span)) = map.get(&guid) {
            let d = IbnetDiagnostic::new(
                cx.src,
                Code::DuplicateNameMapEntry,
                Severity::Error,
                guid_span,
                format!("GUID `{guid}` is mapped twice"),
                format!("mapped to `{}` here", name.0),
            )
            .with_secondary(*first_span, format!("and to `{first}` here"))
            .with_help("list each GUID once");
            cx.diags.push(d);
            continue;
        }
        map.insert(guid, (name.0.to_owned(), guid_span));
    }
    if cx.diags.is_empty() {
        Ok(map.into_iter().map(|(g, (n, _))| (g, n)).collect())
    } else {
        let mut diags = cx.diags;
        diags.sort_by_key(|d| d.span().offset());
        Err(ParseErrors::new(src.clone(), cap_repeated(diags, &src)))
    }
}

/// Diagnostics of one code (and severity) shown in full before the rest are summed up.
const SHOWN_PER_CODE: usize = 10;

/// Keeps the first [`SHOWN_PER_CODE`] diagnostics of each code and severity (in source order)
/// and replaces the rest of each by one "… and N more like this" diagnostic at the first one
/// left out: a file broken the same way on every switch gives a screen, not 900 reports.
fn cap_repeated(diags: Vec<IbnetDiagnostic>, src: &Source) -> Vec<IbnetDiagnostic> {
    let mut seen: BTreeMap<(Code, bool), (usize, Option<SourceSpan>)> = BTreeMap::new();
    let mut out = Vec::with_capacity(diags.len().min(64));
    for d in diags {
        let e = seen.entry((d.code(), d.is_error())).or_insert((0, None));
        e.0 += 1;
        if e.0 <= SHOWN_PER_CODE {
            out.push(d);
        } else if e.1.is_none() {
            e.1 = Some(d.span());
        }
    }
    for ((code, error), (n, first)) in seen {
        let Some(span) = first else { continue };
        let more = n - SHOWN_PER_CODE;
        let severity = if error {
            Severity::Error
        } else {
            Severity::Warning
        };
        out.push(
            IbnetDiagnostic::new(
                src,
                code,
                severity,
                span,
                format!("… and {more} more like this ({code})"),
                "the first one not shown",
            )
            .with_help(format!(
                "{SHOWN_PER_CODE} `{code}` diagnostics are shown in full; fix those and read the file again"
            )),
        );
    }
    out.sort_by_key(|d| d.span().offset());
    out
}
