//! The reader: ibnetdiscover output and ibsim net files into a [`Fabric`].
//!
//! Three phases:
//!
//! 1. **Lines.** Every line is classified (header, port line, assignment, directive, comment,
//!    blank) and parsed into records with byte spans. GUIDs are resolved here, in file order, the
//!    way ibsim does it: a `switchguid=`/`caguid=`/`rtguid=` line sets the GUID of the next node
//!    of that kind, and nodes without such a line count on from it (switches `+1`, end nodes
//!    `+ports+1`; the counters start at `0x200000` for switches, `0x100000` for CAs and `0` for
//!    routers).
//! 2. **Checks.** Node ids and GUIDs unique, every port line's ports on their nodes, every
//!    remote node declared, each port wired once, the two sightings of a link agreeing (ends,
//!    port GUIDs, rates). A link listed by one end only is accepted with a warning as long as
//!    the other end does not list that port elsewhere.
//! 3. **Build.** Only when no error was found: names (node description, name-map entry or node
//!    id, made unique), the [`Fabric`] through [`FabricBuilder`], and the LIDs seen.
//!
//! Nothing here panics on any input: spans and slices come from `get`, numbers from checked
//! parsing.

use super::error::{new_source, Code, IbnetDiagnostic, ParseErrors, Source};
use super::{Discovered, ParseOptions};
use crate::{
    FabricBuilder, Guid, Lid, LidAssignment, NodeId, NodeKind, NodeSpec, PortNum, PortRef, Speed,
    Width, MAX_UNICAST_LID,
};
use miette::{Severity, SourceSpan};
use std::collections::BTreeMap;

/// Reads an ibnetdiscover topology (or ibsim net file) into a fabric, collecting every error.
pub fn parse(text: &str, opts: &ParseOptions) -> Result<Discovered, ParseErrors> {
    let src = new_source(&opts.source_name, text);
    let mut cx = Cx {
        src: &src,
        diags: Vec::new(),
    };
    let file = read_lines(&mut cx, text);
    let checked = check(&mut cx, &file);
    let built = if cx.diags.iter().any(IbnetDiagnostic::is_error) {
        None
    } else {
        build(&mut cx, &file, &checked, opts)
    };
    let mut diags = cx.diags;
    diags.sort_by_key(|d| d.span().offset());
    let diags = cap_repeated(diags, &src);
    match built {
        Some((fabric, lids)) if !diags.iter().any(IbnetDiagnostic::is_error) => Ok(Discovered {
            fabric,
            lids,
            warnings: diags,
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

/// Reads a node name map: `<guid> "<name>"` per line, `#` comments and blank lines.
///
/// The errors are shown under the source name `node-name-map`; use
/// [`ParseErrors::with_source_name`] to show the real path.
pub fn parse_node_name_map(text: &str) -> Result<BTreeMap<Guid, String>, ParseErrors> {
    let src = new_source("node-name-map", text);
    let mut cx = Cx {
        src: &src,
        diags: Vec::new(),
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

// ---------------------------------------------------------------------------------------------
// Diagnostics context and small helpers.

struct Cx<'s> {
    src: &'s Source,
    diags: Vec<IbnetDiagnostic>,
}

impl Cx<'_> {
    fn error(
        &mut self,
        code: Code,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let d = self
            .diag(code, Severity::Error, span, message, label)
            .with_help(help);
        self.push(d);
    }

    fn warn(
        &mut self,
        code: Code,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let d = self
            .diag(code, Severity::Warning, span, message, label)
            .with_help(help);
        self.push(d);
    }

    fn push(&mut self, d: IbnetDiagnostic) {
        self.diags.push(d);
    }

    fn diag(
        &self,
        code: Code,
        severity: Severity,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> IbnetDiagnostic {
        IbnetDiagnostic::new(self.src, code, severity, span, message, label)
    }
}

fn sp(start: usize, len: usize) -> SourceSpan {
    SourceSpan::new(start.into(), len)
}

/// One line of the input, without its `\n` or `\r\n`.
struct Line<'a> {
    start: usize,
    text: &'a str,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0usize;
    text.split('\n').filter_map(move |raw| {
        let line_start = start;
        start += raw.len() + 1;
        if raw.is_empty() && line_start >= text.len() {
            return None;
        }
        Some(Line {
            start: line_start,
            text: raw.strip_suffix('\r').unwrap_or(raw),
        })
    })
}

/// A cursor over one line; `abs()` is the byte offset in the whole text.
struct Scan<'a> {
    line: &'a str,
    base: usize,
    pos: usize,
}

impl<'a> Scan<'a> {
    fn new(line: &'a str, base: usize) -> Scan<'a> {
        Scan { line, base, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    fn abs(&self) -> usize {
        self.base + self.pos
    }

    fn at_end(&self) -> bool {
        self.pos >= self.line.len()
    }

    fn rest(&self) -> &'a str {
        self.line.get(self.pos..).unwrap_or("")
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips spaces and tabs; whether there were any.
    fn skip_ws(&mut self) -> bool {
        let before = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos > before
    }

    /// Takes ASCII bytes while `f` holds; returns the slice and its absolute start.
    fn take(&mut self, f: impl Fn(u8) -> bool) -> (&'a str, usize) {
        let start = self.pos;
        while let Some(b) = self.peek() {
            if b.is_ascii() && f(b) {
                self.pos += 1;
            } else {
                break;
            }
        }
        (
            self.line.get(start..self.pos).unwrap_or(""),
            self.base + start,
        )
    }

    /// At a `"`: the quoted text and the span of the whole quoted string (quotes included).
    /// On a missing closing quote, the span from the opening quote to the end of the line.
    fn quoted(&mut self) -> Result<(&'a str, SourceSpan), SourceSpan> {
        let open = self.pos;
        if !self.eat(b'"') {
            return Err(sp(self.abs(), 1));
        }
        let rest = self.rest();
        match rest.find('"') {
            Some(close) => {
                let inner = rest.get(..close).unwrap_or("");
                self.pos += close + 1;
                Ok((inner, sp(self.base + open, close + 2)))
            }
            None => {
                self.pos = self.line.len();
                Err(sp(self.base + open, self.line.len().saturating_sub(open)))
            }
        }
    }
}

/// `0x…` hex or decimal, no sign; `None` on anything else or overflow.
fn parse_uint(tok: &str) -> Option<u64> {
    if let Some(hex) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    } else {
        if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        tok.parse().ok()
    }
}

/// Bare hex (as in `(2c90300a1b2c1)`), an optional `0x` allowed.
fn parse_hex(tok: &str) -> Option<u64> {
    let hex = tok
        .strip_prefix("0x")
        .or_else(|| tok.strip_prefix("0X"))
        .unwrap_or(tok);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

fn kind_index(kind: NodeKind) -> usize {
    match kind {
        NodeKind::Switch => 0,
        NodeKind::Hca => 1,
        NodeKind::Router => 2,
    }
}

fn is_end_node(kind: NodeKind) -> bool {
    kind != NodeKind::Switch
}

// ---------------------------------------------------------------------------------------------
// Phase 1: lines into records.

/// How a node's GUID was set.
#[derive(Clone, Copy)]
enum GuidOrigin {
    /// By a `…guid=` line, at this span.
    Explicit(SourceSpan),
    /// Counted on from the previous node of the kind (or the ibsim default base).
    Counted,
}

struct NodeRec<'a> {
    kind: NodeKind,
    id: &'a str,
    id_span: SourceSpan,
    port_count: u32,
    count_span: SourceSpan,
    desc: Option<(&'a str, SourceSpan)>,
    guid: Guid,
    guid_origin: GuidOrigin,
    system_guid: Option<Guid>,
    vendor_id: u32,
    device_id: u32,
    lid: Option<(u16, SourceSpan)>,
    ports: Vec<PortRec<'a>>,
}

#[derive(Clone, Copy, Default)]
struct Rate {
    width: Option<Width>,
    speed: Option<Speed>,
    text_span: Option<SourceSpan>,
}

#[derive(Clone, Copy, Default)]
struct PortOpts {
    w: Option<u64>,
    s: Option<u64>,
    e: Option<u64>,
}

struct PortRec<'a> {
    line_span: SourceSpan,
    port: u32,
    port_span: SourceSpan,
    local_guid: Option<(Guid, SourceSpan)>,
    remote_id: &'a str,
    remote_span: SourceSpan,
    remote_port: u32,
    remote_port_span: SourceSpan,
    remote_guid: Option<(Guid, SourceSpan)>,
    local_lid: Option<(u16, SourceSpan)>,
    local_lmc: Option<(u8, SourceSpan)>,
    remote_lid: Option<(u16, SourceSpan)>,
    rate: Option<(Rate, &'a str)>,
    opts: PortOpts,
}

struct File<'a> {
    nodes: Vec<NodeRec<'a>>,
}

/// ibsim's GUID counters and the per-node settings that apply to the next header.
struct Pending {
    abs: [u64; 3],
    cur: [u64; 3],
    origin: [Option<SourceSpan>; 3],
    system_guid: Option<Guid>,
    vendor_id: u32,
    device_id: u32,
}

fn read_lines<'a>(cx: &mut Cx<'_>, text: &'a str) -> File<'a> {
    let mut nodes: Vec<NodeRec<'a>> = Vec::new();
    let mut pending = Pending {
        abs: [0x20_0000, 0x10_0000, 0],
        cur: [0x20_0000, 0x10_0000, 0],
        origin: [None; 3],
        system_guid: None,
        vendor_id: 0,
        device_id: 0,
    };
    // Whether port lines may follow (we are inside a node record).
    let mut in_node = false;
    // Inside the record of a header that did not read: its port lines are skipped (the
    // header's error covers them).
    let mut in_broken = false;
    for line in lines(text) {
        let mut sc = Scan::new(line.text, line.start);
        let indented = sc.skip_ws();
        if sc.at_end() {
            in_node = false;
            in_broken = false;
            continue;
        }
        if indented {
            let label = match nodes.last() {
                Some(node) if in_node => {
                    format!(
                        "ibsim takes this line as the end of the port list of `{}`",
                        node.id
                    )
                }
                _ => "ibsim ignores this line".to_owned(),
            };
            cx.warn(
                Code::IndentedLine,
                sp(line.start, line.text.len()),
                "line starts with whitespace",
                label,
                "remove the leading whitespace so that ibsim reads the line as weft does",
            );
        }
        let first = sc.peek();
        if first == Some(b'#') {
            continue;
        }
        if first == Some(b'[') || first == Some(b'@') {
            if in_broken {
                continue;
            }
            if !in_node {
                cx.error(
                    Code::PortOutsideNode,
                    sp(sc.abs(), sc.rest().len()),
                    "port line outside a node record",
                    "no node header above this line",
                    "port lines directly follow their node's header line, with no blank line in \
                     between; ibsim ignores this line",
                );
                continue;
            }
            if first == Some(b'@') {
                cx.error(
                    Code::AliasUnsupported,
                    sp(sc.abs(), sc.rest().len()),
                    "ibsim port aliases (`@`) are not supported",
                    "alias",
                    "write the remote node id and port instead of an alias",
                );
                continue;
            }
            let kind = nodes.last().map(|n| n.kind).unwrap_or(NodeKind::Switch);
            if let Some(rec) = parse_port_line(cx, &mut sc, kind, &line) {
                if let Some(node) = nodes.last_mut() {
                    node.ports.push(rec);
                }
            }
            continue;
        }
        // Any other line ends a node record. ibsim consumes that line without parsing it unless
        // it already read as many port lines as the node has ports.
        if in_node {
            if let Some(node) = nodes.last() {
                if (node.ports.len() as u64) < u64::from(node.port_count) {
                    cx.warn(
                        Code::MissingBlankLine,
                        sp(line.start, line.text.len()),
                        format!("no blank line ends the record of `{}`", node.id),
                        "ibsim takes this line as the end of the port list and skips it",
                        "put a blank line between node records",
                    );
                }
            }
            in_node = false;
        }
        in_broken = false;
        let (word, word_at) = sc.take(|b| b.is_ascii_alphabetic());
        let word_span = sp(word_at, word.len());
        match word {
            "Switch" | "Hca" | "Ca" | "Rt" => {
                let kind = match word {
                    "Switch" => NodeKind::Switch,
                    "Rt" => NodeKind::Router,
                    _ => NodeKind::Hca,
                };
                match parse_header(cx, &mut sc, kind, word, &mut pending) {
                    Some(node) => {
                        nodes.push(node);
                        in_node = true;
                    }
                    None => in_broken = true,
                }
            }
            "switchguid" | "caguid" | "hcaguids" | "rtguid" => {
                let k = match word {
                    "switchguid" => 0,
                    "rtguid" => 2,
                    _ => 1,
                };
                parse_guid_base(cx, &mut sc, word, k, &mut pending);
            }
            "vendid" | "devid" => {
                if let Some((v, _)) = parse_assignment(cx, &mut sc, word, false) {
                    match u32::try_from(v) {
                        Ok(v) if word == "vendid" => pending.vendor_id = v,
                        Ok(v) => pending.device_id = v,
                        Err(_) => cx.error(
                            Code::BadNumber,
                            sp(line.start, line.text.len()),
                            format!("`{word}` value is out of range"),
                            "too large",
                            "vendor and device ids are at most 32 bits",
                        ),
                    }
                }
            }
            "sysimgguid" => {
                if let Some((v, _)) = parse_assignment(cx, &mut sc, word, false) {
                    pending.system_guid = Some(Guid(v));
                }
            }
            "include" => cx.error(
                Code::IncludeUnsupported,
                sp(line.start, line.text.len()),
                "`include` is not supported",
                "include line",
                "paste the included file into this one",
            ),
            "do" | "pdebug" | "module" | "width" | "speed" | "extspeed" => {
                let what = match word {
                    "do" => "ibsim console commands have no effect on the topology weft reads",
                    "pdebug" => "parser debugging only concerns ibsim",
                    "module" => "node id prefixes are not supported; node ids are read as written",
                    _ => {
                        "default enabled rates only concern ibsim; weft takes link rates from \
                         the `4xEDR` annotations"
                    }
                };
                cx.warn(
                    Code::IgnoredDirective,
                    word_span,
                    format!("`{word}` lines are ignored"),
                    "ignored",
                    what,
                );
            }
            _ => {
                let help = match suggest(word) {
                    Some(k) => format!("did you mean `{k}`?"),
                    None => "node headers start with `Switch`, `Ca`, `Hca` or `Rt`; assignments \
                             are `vendid=`, `devid=`, `sysimgguid=`, `switchguid=`, `caguid=` and \
                             `rtguid=`; comments start with `#`"
                        .to_owned(),
                };
                cx.error(
                    Code::UnknownLine,
                    first_token_span(&line),
                    "unrecognised line",
                    "expected a node header, a port line, a `key=value` line or a comment",
                    help,
                );
            }
        }
    }
    File { nodes }
}

/// Keywords a misspelt line word is compared with.
const KEYWORDS: [&str; 10] = [
    "Switch",
    "Hca",
    "Ca",
    "Rt",
    "switchguid",
    "caguid",
    "rtguid",
    "vendid",
    "devid",
    "sysimgguid",
];

/// The keyword `word` is most likely a typo of (edit distance at most 2, and less than half
/// the word), if any.
fn suggest(word: &str) -> Option<&'static str> {
    if word.len() < 3 {
        return None;
    }
    KEYWORDS
        .iter()
        .map(|k| (edit_distance(word, k), *k))
        .filter(|&(d, k)| d <= 2 && d * 2 < k.len())
        .min()
        .map(|(_, k)| k)
}

/// Optimal string alignment distance (Levenshtein plus transpositions), on bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    let at = |i: usize, j: usize| i * w + j;
    for i in 0..=a.len() {
        if let Some(x) = d.get_mut(at(i, 0)) {
            *x = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(x) = d.get_mut(at(0, j)) {
            *x = j;
        }
    }
    let get = |d: &[usize], i: usize, j: usize| d.get(at(i, j)).copied().unwrap_or(usize::MAX);
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let (ai, bj) = (a.get(i - 1), b.get(j - 1));
            let cost = usize::from(ai != bj);
            let mut v = (get(&d, i - 1, j).saturating_add(1))
                .min(get(&d, i, j - 1).saturating_add(1))
                .min(get(&d, i - 1, j - 1).saturating_add(cost));
            if i > 1 && j > 1 && ai == b.get(j - 2) && a.get(i - 2) == bj {
                v = v.min(get(&d, i - 2, j - 2).saturating_add(1));
            }
            if let Some(x) = d.get_mut(at(i, j)) {
                *x = v;
            }
        }
    }
    get(&d, a.len(), b.len())
}

/// Span of the first word of a line.
fn first_token_span(line: &Line<'_>) -> SourceSpan {
    let trimmed = line.text.trim_start_matches([' ', '\t']);
    let start = line.start + (line.text.len() - trimmed.len());
    let len = trimmed.find([' ', '\t']).unwrap_or(trimmed.len());
    sp(start, len.max(1))
}

/// `key=value` (or `key+value` when `relative_ok`): the value and whether it was relative.
fn parse_assignment(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    key: &str,
    relative_ok: bool,
) -> Option<(u64, bool)> {
    sc.skip_ws();
    let relative = if sc.eat(b'=') {
        false
    } else if relative_ok && sc.eat(b'+') {
        true
    } else {
        cx.error(
            Code::MalformedAssignment,
            sp(sc.abs(), sc.rest().len().max(1)),
            format!("malformed `{key}` line"),
            "expected `=` and a value",
            format!("write `{key}=0x…`"),
        );
        return None;
    };
    sc.skip_ws();
    let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
    let Some(v) = parse_uint(tok) else {
        let label = if tok.is_empty() {
            "expected a number".to_owned()
        } else {
            format!("`{tok}` is not a number")
        };
        cx.error(
            Code::BadNumber,
            sp(at, tok.len().max(1)),
            format!("bad `{key}` value"),
            label,
            "numbers are decimal or `0x` hex",
        );
        return None;
    };
    // ibnetdiscover writes the port GUID of switch port 0 in parentheses after a switch GUID.
    if sc.peek() == Some(b'(') {
        let open = sc.abs();
        sc.eat(b'(');
        let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
        if parse_hex(tok).is_none() {
            cx.error(
                Code::BadNumber,
                sp(at, tok.len().max(1)),
                format!("bad port GUID in `{key}` line"),
                "expected a hex GUID",
                "write `switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)`",
            );
            return None;
        }
        if !sc.eat(b')') {
            cx.error(
                Code::MalformedAssignment,
                sp(open, sc.abs() - open),
                format!("malformed `{key}` line"),
                "expected `)` after the GUID",
                "write `switchguid=0x7cfe900300bdd8f0(7cfe900300bdd8f0)`",
            );
            return None;
        }
    }
    sc.skip_ws();
    if !sc.at_end() && sc.peek() != Some(b'#') {
        cx.error(
            Code::MalformedAssignment,
            sp(sc.abs(), sc.rest().len()),
            format!("malformed `{key}` line"),
            "unexpected text after the value",
            "an assignment line holds one value; a comment starts with `#`",
        );
        return None;
    }
    Some((v, relative))
}

fn parse_guid_base(cx: &mut Cx<'_>, sc: &mut Scan<'_>, key: &str, k: usize, p: &mut Pending) {
    let value_at = {
        let mut probe = Scan::new(sc.line, sc.base);
        probe.pos = sc.pos;
        probe.skip_ws();
        probe.eat(b'=');
        probe.eat(b'+');
        probe.skip_ws();
        probe.abs()
    };
    let Some((v, relative)) = parse_assignment(cx, sc, key, true) else {
        return;
    };
    let value_span = sp(value_at, sc.abs().saturating_sub(value_at).max(1));
    let (Some(abs), Some(cur), Some(origin)) =
        (p.abs.get_mut(k), p.cur.get_mut(k), p.origin.get_mut(k))
    else {
        return;
    };
    if relative {
        *cur = abs.wrapping_add(v);
    } else {
        *abs = v;
        *cur = v;
    }
    *origin = Some(value_span);
}

fn parse_header<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    kind: NodeKind,
    keyword: &str,
    p: &mut Pending,
) -> Option<NodeRec<'a>> {
    let example = match kind {
        NodeKind::Switch => "Switch 36 \"S-7cfe900300bdd8f0\" # \"sw1\"",
        NodeKind::Hca => "Ca 1 \"H-0002c90300a1b2c0\" # \"cn001 HCA-1\"",
        NodeKind::Router => "Rt 1 \"R-0002c90300a1b2c0\" # \"router1\"",
    };
    let help = format!("a node header looks like `{example}`");
    if !sc.skip_ws() {
        cx.error(
            Code::MalformedHeader,
            sp(sc.abs(), sc.rest().len().max(1)),
            format!("malformed `{keyword}` header"),
            "expected whitespace and a port count",
            help,
        );
        return None;
    }
    let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
    let count_span = sp(at, tok.len().max(1));
    if tok.is_empty() {
        cx.error(
            Code::MalformedHeader,
            count_span,
            format!("malformed `{keyword}` header"),
            "expected a port count",
            help,
        );
        return None;
    }
    let port_count = match parse_uint(tok) {
        Some(n @ 1..=255) => n as u32,
        Some(_) => {
            cx.error(
                Code::BadNumber,
                count_span,
                format!("port count `{tok}` is out of range"),
                "not 1 to 255",
                "a node has 1 to 255 ports, not counting a switch's management port 0",
            );
            return None;
        }
        None => {
            cx.error(
                Code::BadNumber,
                count_span,
                format!("bad port count `{tok}`"),
                "expected a decimal number",
                help,
            );
            return None;
        }
    };
    sc.skip_ws();
    if sc.peek() != Some(b'"') {
        cx.error(
            Code::MalformedHeader,
            sp(sc.abs(), sc.rest().len().max(1)),
            format!("malformed `{keyword}` header"),
            "expected a quoted node id",
            help,
        );
        return None;
    }
    let (id, id_span) = match sc.quoted() {
        Ok(q) => q,
        Err(span) => {
            cx.error(
                Code::MalformedHeader,
                span,
                format!("malformed `{keyword}` header"),
                "this node id is not closed by `\"`",
                help,
            );
            return None;
        }
    };
    if id.is_empty() {
        cx.error(
            Code::MalformedHeader,
            id_span,
            format!("malformed `{keyword}` header"),
            "empty node id",
            help,
        );
        return None;
    }
    if id.contains('@') {
        cx.error(
            Code::AliasUnsupported,
            id_span,
            "ibsim aliases (`@`) are not supported",
            "alias",
            "node ids may not contain `@`",
        );
        return None;
    }
    sc.skip_ws();
    let mut desc = None;
    let mut lid = None;
    if sc.eat(b'#') {
        let ann = parse_annotation(cx, sc, false);
        desc = ann.first_quoted.filter(|(d, _)| !d.is_empty());
        if desc.is_none() {
            desc = ann.unquoted_desc.filter(|(d, _)| !d.is_empty());
        }
        lid = ann.lids.first().copied().filter(|(l, _)| *l != 0);
        if let Some(&(lmc, span)) = ann.lmcs.first() {
            check_lmc(cx, lmc, span);
        }
    } else if !sc.at_end() {
        // The node id is known, so keep the node: its port lines and the references to it
        // then do not cause more errors.
        cx.error(
            Code::MalformedHeader,
            sp(sc.abs(), sc.rest().len()),
            format!("malformed `{keyword}` header"),
            "expected `#` or the end of the line after the node id",
            help,
        );
    }
    let k = kind_index(kind);
    let guid = p.cur.get(k).copied().unwrap_or(0);
    let origin = match p.origin.get_mut(k).and_then(Option::take) {
        Some(span) => GuidOrigin::Explicit(span),
        None => GuidOrigin::Counted,
    };
    let step = if kind == NodeKind::Switch {
        1
    } else {
        u64::from(port_count) + 1
    };
    if let Some(c) = p.cur.get_mut(k) {
        *c = c.wrapping_add(step);
    }
    let node = NodeRec {
        kind,
        id,
        id_span,
        port_count,
        count_span,
        desc,
        guid: Guid(guid),
        guid_origin: origin,
        system_guid: p.system_guid.take(),
        vendor_id: std::mem::take(&mut p.vendor_id),
        device_id: p.device_id,
        lid,
        ports: Vec::new(),
    };
    Some(node)
}

fn check_lmc(cx: &mut Cx<'_>, lmc: u64, span: SourceSpan) -> Option<u8> {
    if lmc > 7 {
        cx.error(
            Code::BadLmc,
            span,
            format!("`lmc {lmc}` is out of range"),
            "not 0 to 7",
            "the LMC is 0 to 7",
        );
        None
    } else {
        Some(lmc as u8)
    }
}

/// What a `# …` annotation says.
#[derive(Default)]
struct Annotation<'a> {
    /// The first quoted string (a description: the node's own in a header, the remote node's
    /// in a port line).
    first_quoted: Option<(&'a str, SourceSpan)>,
    /// How many `lid` values came before `first_quoted` (on an end node's port line, those are
    /// the port's own; the ones after are the remote port's).
    lids_before_quote: usize,
    /// A description written without quotes (ibsim accepts it in headers).
    unquoted_desc: Option<(&'a str, SourceSpan)>,
    lids: Vec<(u16, SourceSpan)>,
    lmcs: Vec<(u64, SourceSpan)>,
    rate: Option<(Rate, &'a str)>,
}

/// Parses the text after `#`: quoted strings, `lid N`, `lmc N`, `enhanced|base port 0` and a
/// rate such as `4xEDR`. Unknown words are skipped.
fn parse_annotation<'a>(cx: &mut Cx<'_>, sc: &mut Scan<'a>, port_line: bool) -> Annotation<'a> {
    let mut ann = Annotation::default();
    let mut first_token = true;
    let mut unquoted_start: Option<usize> = None;
    let mut unquoted_end = 0usize;
    let mut keyword_seen = false;
    loop {
        sc.skip_ws();
        let Some(b) = sc.peek() else { break };
        if b == b'"' {
            match sc.quoted() {
                Ok((s, span)) => {
                    if ann.first_quoted.is_none() {
                        ann.first_quoted = Some((s, span));
                        ann.lids_before_quote = ann.lids.len();
                    }
                }
                Err(span) => {
                    cx.error(
                        if port_line {
                            Code::MalformedPort
                        } else {
                            Code::MalformedHeader
                        },
                        span,
                        "unterminated node description",
                        "this description is not closed by `\"`",
                        "node descriptions are quoted: `# \"cn001 HCA-1\"`",
                    );
                    break;
                }
            }
            first_token = false;
            continue;
        }
        let (word, at) = sc.take(|b| b != b' ' && b != b'\t' && b != b'"');
        if word.is_empty() {
            // A lone non-ASCII byte sequence: skip one char.
            let skip = sc.rest().chars().next().map(char::len_utf8).unwrap_or(1);
            sc.pos += skip;
            continue;
        }
        match word {
            "lid" | "lmc" => {
                keyword_seen = true;
                sc.skip_ws();
                let (tok, tok_at) = sc.take(|b| b.is_ascii_alphanumeric());
                let span = sp(at, tok_at + tok.len() - at);
                let Some(v) = parse_uint(tok) else {
                    cx.error(
                        Code::BadNumber,
                        sp(tok_at, tok.len().max(1)),
                        format!("bad `{word}` value"),
                        if tok.is_empty() {
                            "expected a number".to_owned()
                        } else {
                            format!("`{tok}` is not a number")
                        },
                        "numbers are decimal or `0x` hex",
                    );
                    continue;
                };
                if word == "lid" {
                    match u16::try_from(v) {
                        Ok(l) if l <= MAX_UNICAST_LID => ann.lids.push((l, span)),
                        _ => {
                            cx.error(
                                Code::BadLid,
                                span,
                                format!("`lid {v}` is not a unicast LID"),
                                "out of range",
                                "unicast LIDs are 1 to 0xbfff; 0 means no LID",
                            );
                        }
                    }
                } else {
                    ann.lmcs.push((v, span));
                }
            }
            "enhanced" | "base" => keyword_seen = true,
            _ => {
                if let Some(rate) = parse_rate(word, sp(at, word.len())) {
                    keyword_seen = true;
                    match rate {
                        Ok(r) => ann.rate = Some((r, word)),
                        Err(()) => cx.warn(
                            Code::UnknownRate,
                            sp(at, word.len()),
                            format!("unknown link rate `{word}`"),
                            "ignored",
                            "widths are 1x, 2x, 4x, 8x and 12x; speeds are SDR, DDR, QDR, \
                             FDR10, FDR, EDR, HDR, NDR and XDR",
                        ),
                    }
                } else if !keyword_seen && (first_token || unquoted_start.is_some()) {
                    unquoted_start.get_or_insert(at);
                    unquoted_end = at + word.len();
                }
            }
        }
        first_token = false;
    }
    if ann.first_quoted.is_none() {
        if let Some(start) = unquoted_start {
            let rel_start = start - sc.base;
            let rel_end = unquoted_end - sc.base;
            if let Some(s) = sc.line.get(rel_start..rel_end) {
                ann.unquoted_desc = Some((s, sp(start, rel_end - rel_start)));
            }
        }
    }
    ann
}

/// `4xEDR` → a rate; `None` when the word does not look like a rate at all, `Some(Err)` when it
/// does but names an unknown width or speed.
fn parse_rate(word: &str, span: SourceSpan) -> Option<Result<Rate, ()>> {
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = word.get(digits..)?;
    let speed_text = rest.strip_prefix('x')?;
    if speed_text.is_empty() || !speed_text.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let width = word
        .get(..digits)
        .and_then(|d| d.parse::<u64>().ok())
        .and_then(Width::from_lanes);
    let speed = Speed::parse(speed_text);
    match (width, speed) {
        (Some(w), Some(s)) => Some(Ok(Rate {
            width: Some(w),
            speed: Some(s),
            text_span: Some(span),
        })),
        _ => Some(Err(())),
    }
}

fn parse_port_number(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    what: &str,
    help: &str,
) -> Option<(u32, SourceSpan)> {
    let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
    let span = sp(at, tok.len().max(1));
    if tok.is_empty() {
        cx.error(
            Code::MalformedPort,
            span,
            "malformed port line",
            format!("expected {what}"),
            help,
        );
        return None;
    }
    match tok.parse::<u32>() {
        Ok(n) if tok.bytes().all(|b| b.is_ascii_digit()) => Some((n, span)),
        _ => {
            cx.error(
                Code::BadNumber,
                span,
                format!("bad port number `{tok}`"),
                "expected a decimal number",
                help,
            );
            None
        }
    }
}

fn parse_port_guid(cx: &mut Cx<'_>, sc: &mut Scan<'_>, help: &str) -> Option<(Guid, SourceSpan)> {
    let open = sc.abs();
    sc.eat(b'(');
    let (tok, at) = sc.take(|b| b.is_ascii_alphanumeric());
    let Some(g) = parse_hex(tok) else {
        cx.error(
            Code::BadNumber,
            sp(at, tok.len().max(1)),
            "bad port GUID",
            if tok.is_empty() {
                "expected a hex GUID".to_owned()
            } else {
                format!("`{tok}` is not a hex GUID")
            },
            help,
        );
        return None;
    };
    if !sc.eat(b')') {
        cx.error(
            Code::MalformedPort,
            sp(open, sc.abs() - open + 1),
            "malformed port line",
            "expected `)` after the port GUID",
            help,
        );
        return None;
    }
    Some((Guid(g), sp(open, sc.abs() - open)))
}

fn parse_port_line<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    kind: NodeKind,
    line: &Line<'a>,
) -> Option<PortRec<'a>> {
    let help = if is_end_node(kind) {
        "an end node's port line looks like `[1](2c90300a1b2c1) \"S-7cfe900300bdd8f0\"[1] \
         # lid 5 lmc 0 \"sw1\" lid 1 4xEDR`"
    } else {
        "a switch port line looks like `[1] \"H-0002c90300a1b2c0\"[1](2c90300a1b2c1) \
         # \"cn001 HCA-1\" lid 5 4xEDR`"
    };
    let line_span = {
        let trimmed = line.text.trim_end_matches([' ', '\t']);
        let start = sc.abs();
        sp(start, (line.start + trimmed.len()).saturating_sub(start))
    };
    sc.eat(b'[');
    let (port, port_span) = parse_port_number(cx, sc, "a port number after `[`", help)?;
    if !sc.eat(b']') {
        cx.error(
            Code::MalformedPort,
            sp(sc.abs(), 1),
            "malformed port line",
            "expected `]` after the port number",
            help,
        );
        return None;
    }
    let local_guid = if sc.peek() == Some(b'(') {
        Some(parse_port_guid(cx, sc, help)?)
    } else {
        None
    };
    sc.skip_ws();
    if sc.peek() != Some(b'"') {
        cx.error(
            Code::MalformedPort,
            sp(sc.abs(), sc.rest().len().max(1)),
            "malformed port line",
            "expected the quoted id of the node at the other end",
            help,
        );
        return None;
    }
    let (remote_id, remote_span) = match sc.quoted() {
        Ok(q) => q,
        Err(span) => {
            cx.error(
                Code::MalformedPort,
                span,
                "malformed port line",
                "this node id is not closed by `\"`",
                help,
            );
            return None;
        }
    };
    if remote_id.contains('@') {
        cx.error(
            Code::AliasUnsupported,
            remote_span,
            "ibsim aliases (`@`) are not supported",
            "alias",
            "write the remote node id and port instead of an alias",
        );
        return None;
    }
    if remote_id.is_empty() {
        cx.error(
            Code::MalformedPort,
            remote_span,
            "malformed port line",
            "empty node id",
            help,
        );
        return None;
    }
    let (remote_port, remote_port_span) = if sc.eat(b'[') {
        let r = parse_port_number(cx, sc, "a port number after `[`", help)?;
        if !sc.eat(b']') {
            cx.error(
                Code::MalformedPort,
                sp(sc.abs(), 1),
                "malformed port line",
                "expected `]` after the port number",
                help,
            );
            return None;
        }
        r
    } else {
        // ibsim: no `[n]` directly after the id means port 1.
        let mut probe = Scan::new(sc.line, sc.base);
        probe.pos = sc.pos;
        probe.skip_ws();
        if probe.peek() == Some(b'[') {
            let at = probe.abs();
            let len = probe.rest().find(']').map(|i| i + 1).unwrap_or(1);
            cx.error(
                Code::AmbiguousRemotePort,
                sp(at, len),
                "a space separates the remote port from the node id",
                "ibsim ignores this and uses port 1",
                format!(
                    "write `\"{remote_id}\"{}` with no space",
                    probe.rest().get(..len).unwrap_or("[…]")
                ),
            );
            return None;
        }
        (1, remote_span)
    };
    let remote_guid = if sc.peek() == Some(b'(') {
        Some(parse_port_guid(cx, sc, help)?)
    } else {
        None
    };
    // ibsim port options, then the annotation.
    let mut opts = PortOpts::default();
    loop {
        sc.skip_ws();
        match sc.peek() {
            None => break,
            Some(b'#') => break,
            Some(_) => {}
        }
        let (word, at) = sc.take(|b| b != b' ' && b != b'\t' && b != b'#');
        let word_span = sp(at, word.len().max(1));
        let parsed = word
            .split_once('=')
            .and_then(|(k, v)| Some((k, parse_uint(v)?)));
        let Some((key, value)) = parsed else {
            cx.error(
                Code::MalformedPort,
                word_span,
                "malformed port line",
                "expected a port option (`w=`, `s=`, `e=`) or `#`",
                help,
            );
            return None;
        };
        let (slot, max, min) = match key {
            "w" => (&mut opts.w, 31, 1),
            "s" => (&mut opts.s, 7, 0),
            "e" => (&mut opts.e, 15, 0),
            _ => {
                cx.error(
                    Code::MalformedPort,
                    word_span,
                    format!("unknown port option `{key}=`"),
                    "unknown option",
                    "ibsim port options are `w=` (enabled widths), `s=` (enabled speeds) and \
                     `e=` (enabled extended speeds)",
                );
                return None;
            }
        };
        if value < min || value > max {
            cx.error(
                Code::BadNumber,
                word_span,
                format!("port option `{word}` is out of range"),
                format!("not {min} to {max}"),
                "`w=` is a width mask 1 to 31, `s=` a speed mask 0 to 7 (0 means QDR), `e=` an \
                 extended speed mask 0 to 15",
            );
            return None;
        }
        *slot = Some(value);
    }
    let mut rec = PortRec {
        line_span,
        port,
        port_span,
        local_guid,
        remote_id,
        remote_span,
        remote_port,
        remote_port_span,
        remote_guid,
        local_lid: None,
        local_lmc: None,
        remote_lid: None,
        rate: None,
        opts,
    };
    if sc.eat(b'#') {
        let ann = parse_annotation(cx, sc, true);
        rec.rate = ann.rate;
        if is_end_node(kind) {
            // `# lid 5 lmc 0 "sw1" lid 1 4xEDR`: lids before the description are ours.
            let local_count = if ann.first_quoted.is_some() {
                ann.lids_before_quote
            } else {
                1
            };
            let mut lids = ann.lids.into_iter();
            if local_count >= 1 {
                rec.local_lid = lids.next();
            }
            rec.remote_lid = lids.last();
            if let Some(&(lmc, span)) = ann.lmcs.first() {
                rec.local_lmc = check_lmc(cx, lmc, span).map(|l| (l, span));
            }
        } else {
            rec.remote_lid = ann.lids.last().copied();
        }
    }
    Some(rec)
}

// ---------------------------------------------------------------------------------------------
// Phase 2: checks.

/// A (node index, port) end.
type End = (usize, u32);

/// One link to build: its ends, in the order of the first sighting, and the sightings.
struct LinkPlan {
    a: End,
    b: End,
    /// (node index, port-line index) of each end's sighting, when that end lists the link.
    seen: [Option<(usize, usize)>; 2],
}

struct Checked {
    /// The links to build, in the order of their first sighting.
    links: Vec<LinkPlan>,
    /// Resolved port GUIDs of end nodes, per node index, for ports with a sighting.
    port_guids: BTreeMap<End, Guid>,
}

fn node_name(n: &NodeRec<'_>) -> String {
    format!("`{}`", n.id)
}

fn check(cx: &mut Cx<'_>, file: &File<'_>) -> Checked {
    let nodes = &file.nodes;
    // Node ids.
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    let mut dup = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(&first) = by_id.get(n.id) {
            let first_span = nodes.get(first).map(|f| f.id_span).unwrap_or(n.id_span);
            let d = cx
                .diag(
                    Code::DuplicateNodeId,
                    Severity::Error,
                    n.id_span,
                    format!("node {} is declared twice", node_name(n)),
                    "declared again here",
                )
                .with_secondary(first_span, "first declared here")
                .with_help("node ids are unique; rename one of the nodes");
            cx.push(d);
            if let Some(f) = dup.get_mut(i) {
                *f = true;
            }
        } else {
            by_id.insert(n.id, i);
        }
    }
    // Node GUIDs.
    let mut by_guid: BTreeMap<Guid, usize> = BTreeMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        if let Some(&first) = by_guid.get(&n.guid) {
            let Some(f) = nodes.get(first) else { continue };
            let (span, label) = guid_site(n);
            let (fspan, flabel) = guid_site(f);
            let d = cx
                .diag(
                    Code::DuplicateGuid,
                    Severity::Error,
                    span,
                    format!(
                        "GUID `{}` belongs to two nodes, {} and {}",
                        n.guid,
                        node_name(f),
                        node_name(n)
                    ),
                    label,
                )
                .with_secondary(fspan, flabel)
                .with_help(
                    "node GUIDs are unique; without a `switchguid=`, `caguid=` or `rtguid=` line \
                     a node's GUID counts on from the previous node of its kind, as in ibsim",
                );
            cx.push(d);
        } else {
            by_guid.insert(n.guid, i);
        }
    }
    // Sightings: the first listing of each (node, port).
    let mut sight: BTreeMap<End, (usize, usize, End)> = BTreeMap::new();
    let mut order: Vec<(usize, usize, End, End)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        for (j, p) in n.ports.iter().enumerate() {
            if !port_in_range(cx, n, p.port, p.port_span) {
                continue;
            }
            let Some(&r) = by_id.get(p.remote_id) else {
                cx.error(
                    Code::UnknownNode,
                    p.remote_span,
                    format!("node `{}` is not declared", p.remote_id),
                    "no header declares this node",
                    format!(
                        "every node a port line names needs its own record, starting with a \
                         header line such as `{} \"{}\"`",
                        match p.remote_id.get(..2) {
                            Some("S-") => "Switch 36",
                            Some("R-") => "Rt 1",
                            Some("H-") => "Ca 1",
                            _ => "Switch 36",
                        },
                        p.remote_id
                    ),
                );
                continue;
            };
            let Some(rn) = nodes.get(r) else { continue };
            if !port_in_range(cx, rn, p.remote_port, p.remote_port_span) {
                continue;
            }
            let here: End = (i, p.port);
            let there: End = (r, p.remote_port);
            if let Some(&(fi, fj, ftarget)) = sight.get(&here) {
                let Some(first) = nodes.get(fi).and_then(|f| f.ports.get(fj)) else {
                    continue;
                };
                if ftarget == there {
                    let d = cx
                        .diag(
                            Code::DuplicatePortLine,
                            Severity::Warning,
                            p.line_span,
                            format!("port {} of {} is listed twice", p.port, node_name(n)),
                            "listed again here",
                        )
                        .with_secondary(first.line_span, "first listed here")
                        .with_help("remove one of the two lines");
                    cx.push(d);
                } else {
                    let d = cx
                        .diag(
                            Code::PortWiredTwice,
                            Severity::Error,
                            p.port_span,
                            format!("port {} of {} is wired twice", p.port, node_name(n)),
                            format!("wired to `{}` port {} here", p.remote_id, p.remote_port),
                        )
                        .with_secondary(
                            first.port_span,
                            format!(
                                "and to `{}` port {} here",
                                first.remote_id, first.remote_port
                            ),
                        )
                        .with_help("a port takes one cable; remove one of the two lines");
                    cx.push(d);
                }
                continue;
            }
            sight.insert(here, (i, j, there));
            order.push((i, j, here, there));
        }
    }
    // Links: match each sighting with the other end.
    let mut links: Vec<LinkPlan> = Vec::new();
    let mut claimed: BTreeMap<End, usize> = BTreeMap::new();
    for &(i, j, here, there) in &order {
        let (Some(n), Some(p)) = (nodes.get(i), nodes.get(i).and_then(|n| n.ports.get(j))) else {
            continue;
        };
        let Some(rn) = nodes.get(there.0) else {
            continue;
        };
        if here == there {
            cx.error(
                Code::SelfLink,
                p.line_span,
                format!("port {} of {} is wired to itself", p.port, node_name(n)),
                "a cable from this port back to itself",
                "a cable connects two different ports",
            );
            continue;
        }
        if let Some(&l) = claimed.get(&here) {
            // The second sighting of a link made from the other end.
            if let Some(link) = links.get_mut(l) {
                let slot = if link.a == here { 0 } else { 1 };
                if let Some(s) = link.seen.get_mut(slot) {
                    *s = Some((i, j));
                }
            }
            continue;
        }
        match sight.get(&there) {
            Some(&(_, _, otarget)) if otarget == here => {
                let l = links.len();
                links.push(LinkPlan {
                    a: here,
                    b: there,
                    seen: [Some((i, j)), None],
                });
                claimed.insert(here, l);
                claimed.insert(there, l);
            }
            Some(&(oi, oj, otarget)) => {
                let Some(other) = nodes.get(oi).and_then(|o| o.ports.get(oj)) else {
                    continue;
                };
                let d = cx
                    .diag(
                        Code::LinkEndsDisagree,
                        Severity::Error,
                        p.line_span,
                        format!(
                            "the ends of the link from {} port {} disagree",
                            node_name(n),
                            p.port
                        ),
                        format!(
                            "{} port {} says it is wired to `{}` port {}",
                            node_name(n),
                            p.port,
                            rn.id,
                            there.1
                        ),
                    )
                    .with_secondary(
                        other.line_span,
                        format!(
                            "but `{}` port {} says it is wired to `{}` port {}",
                            rn.id,
                            there.1,
                            nodes.get(otarget.0).map(|o| o.id).unwrap_or("?"),
                            otarget.1
                        ),
                    )
                    .with_help("fix one of the two lines so that both ends name each other");
                cx.push(d);
            }
            None => {
                if let Some(&l) = claimed.get(&there) {
                    let prev = links
                        .get(l)
                        .and_then(|link| link.seen.first().copied().flatten())
                        .and_then(|(pi, pj)| Some((nodes.get(pi)?, nodes.get(pi)?.ports.get(pj)?)));
                    let mut d = cx.diag(
                        Code::PortWiredTwice,
                        Severity::Error,
                        p.line_span,
                        format!("port {} of `{}` is wired twice", there.1, rn.id),
                        format!(
                            "{} port {} says it is wired to `{}` port {}",
                            node_name(n),
                            p.port,
                            rn.id,
                            there.1
                        ),
                    );
                    if let Some((pn, pp)) = prev {
                        d = d.with_secondary(
                            pp.line_span,
                            format!("and {} port {} says so too", node_name(pn), pp.port),
                        );
                    }
                    cx.push(d.with_help("a port takes one cable; remove one of the two lines"));
                    continue;
                }
                let l = links.len();
                links.push(LinkPlan {
                    a: here,
                    b: there,
                    seen: [Some((i, j)), None],
                });
                claimed.insert(here, l);
                claimed.insert(there, l);
                cx.warn(
                    Code::OneSidedLink,
                    p.line_span,
                    format!(
                        "the link from {} port {} to `{}` port {} is listed by one end only",
                        node_name(n),
                        p.port,
                        rn.id,
                        there.1
                    ),
                    "listed here only",
                    format!(
                        "ibnetdiscover lists every link from both ends, and ibsim refuses a link \
                         listed once; add `[{}] \"{}\"[{}]` to `{}`",
                        there.1, n.id, p.port, rn.id
                    ),
                );
            }
        }
    }
    // Rates agree.
    for link in &links {
        let [Some(sa), Some(sb)] = link.seen else {
            continue;
        };
        let (Some(pa), Some(pb)) = (port_at(nodes, sa), port_at(nodes, sb)) else {
            continue;
        };
        if let (Some((ra, ta)), Some((rb, tb))) = (pa.rate, pb.rate) {
            if ra.width != rb.width || ra.speed != rb.speed {
                let (Some(sa_span), Some(sb_span)) = (ra.text_span, rb.text_span) else {
                    continue;
                };
                let na = nodes.get(link.a.0).map(|n| n.id).unwrap_or("?");
                let nb = nodes.get(link.b.0).map(|n| n.id).unwrap_or("?");
                let d = cx
                    .diag(
                        Code::RateMismatch,
                        Severity::Error,
                        sb_span,
                        format!(
                            "the ends of the link between `{na}` port {} and `{nb}` port {} \
                             report different rates",
                            link.a.1, link.b.1
                        ),
                        format!("`{tb}` here"),
                    )
                    .with_secondary(sa_span, format!("`{ta}` here"))
                    .with_help("both ends of a link run at the same width and speed");
                cx.push(d);
            }
        }
    }
    let port_guids = check_port_guids(cx, nodes, &dup, &by_id);
    Checked { links, port_guids }
}

fn port_at<'f, 'a>(nodes: &'f [NodeRec<'a>], at: (usize, usize)) -> Option<&'f PortRec<'a>> {
    nodes.get(at.0).and_then(|n| n.ports.get(at.1))
}

/// Where a node's GUID comes from, for diagnostics.
fn guid_site(n: &NodeRec<'_>) -> (SourceSpan, String) {
    match n.guid_origin {
        GuidOrigin::Explicit(span) => (
            span,
            format!("{} gets GUID `{}` here", node_name(n), n.guid),
        ),
        GuidOrigin::Counted => (
            n.id_span,
            format!("{} gets GUID `{}` by counting", node_name(n), n.guid),
        ),
    }
}

fn port_in_range(cx: &mut Cx<'_>, n: &NodeRec<'_>, port: u32, span: SourceSpan) -> bool {
    if port >= 1 && port <= n.port_count {
        return true;
    }
    let help = if port == 0 {
        "port 0 is a switch's internal management port and takes no cable; cabled ports are \
         numbered from 1"
            .to_owned()
    } else {
        format!(
            "ports of {} are numbered 1 to {}",
            node_name(n),
            n.port_count
        )
    };
    let d = cx
        .diag(
            Code::PortOutOfRange,
            Severity::Error,
            span,
            format!("{} has no port {port}", node_name(n)),
            format!("port {port}"),
        )
        .with_secondary(
            n.count_span,
            format!(
                "{} is declared with {} ports here",
                node_name(n),
                n.port_count
            ),
        )
        .with_help(help);
    cx.push(d);
    false
}

/// Resolves end-node port GUIDs (own line first, then a peer's `(guid)`, else node GUID + port)
/// and checks that every sighting agrees; switch ports carry the node GUID.
fn check_port_guids(
    cx: &mut Cx<'_>,
    nodes: &[NodeRec<'_>],
    dup: &[bool],
    by_id: &BTreeMap<&str, usize>,
) -> BTreeMap<End, Guid> {
    // Every claim about a port's GUID: (end, guid, span), own lines first.
    let mut claims: Vec<(End, Guid, SourceSpan)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        for p in &n.ports {
            if let Some((g, span)) = p.local_guid {
                claims.push(((i, p.port), g, span));
            }
        }
    }
    for (i, n) in nodes.iter().enumerate() {
        if dup.get(i).copied().unwrap_or(true) {
            continue;
        }
        for p in &n.ports {
            if let (Some((g, span)), Some(&r)) = (p.remote_guid, by_id.get(p.remote_id)) {
                claims.push(((r, p.remote_port), g, span));
            }
        }
    }
    let mut resolved: BTreeMap<End, (Guid, Option<SourceSpan>)> = BTreeMap::new();
    for &(end, g, span) in &claims {
        let Some(n) = nodes.get(end.0) else { continue };
        if end.1 == 0 || end.1 > n.port_count {
            continue; // already reported
        }
        let expected = if n.kind == NodeKind::Switch {
            Some((n.guid, None))
        } else {
            resolved.get(&end).copied()
        };
        match expected {
            None => {
                resolved.insert(end, (g, Some(span)));
            }
            Some((want, _)) if want == g => {}
            Some((want, first)) => {
                let mut d = cx.diag(
                    Code::PortGuidMismatch,
                    Severity::Error,
                    span,
                    format!("port {} of {} has two port GUIDs", end.1, node_name(n)),
                    format!("`{g}` here"),
                );
                d = match first {
                    Some(first) => d
                        .with_secondary(first, format!("`{want}` here"))
                        .with_help("a port has one port GUID; fix one of the two"),
                    None => d.with_help(format!(
                        "the ports of switch {} carry its node GUID `{want}`",
                        node_name(n)
                    )),
                };
                cx.push(d);
            }
        }
    }
    resolved
        .into_iter()
        .filter(|(end, _)| nodes.get(end.0).is_some_and(|n| n.kind != NodeKind::Switch))
        .map(|(end, (g, _))| (end, g))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Phase 3: build.

fn build(
    cx: &mut Cx<'_>,
    file: &File<'_>,
    checked: &Checked,
    opts: &ParseOptions,
) -> Option<(crate::Fabric, LidAssignment)> {
    let nodes = &file.nodes;
    let names = assign_names(cx, nodes, opts);
    let mut b = FabricBuilder::new(opts.fabric_name.clone());
    let mut ids: Vec<NodeId> = Vec::with_capacity(nodes.len());
    for (i, (n, name)) in nodes.iter().zip(names).enumerate() {
        let port_count = u8::try_from(n.port_count).unwrap_or(u8::MAX);
        let mut spec = NodeSpec::new(name, n.kind, n.guid, port_count);
        spec.system_guid = n.system_guid.filter(|&g| g != n.guid);
        spec.vendor_id = n.vendor_id;
        spec.device_id = n.device_id;
        if n.kind != NodeKind::Switch {
            let guids: Vec<Guid> = (1..=u32::from(port_count))
                .map(|p| {
                    checked
                        .port_guids
                        .get(&(i, p))
                        .copied()
                        .unwrap_or(Guid(n.guid.0.wrapping_add(u64::from(p))))
                })
                .collect();
            let derived = guids
                .iter()
                .zip(1u64..)
                .all(|(g, p)| g.0 == n.guid.0.wrapping_add(p));
            if !derived {
                spec.port_guids = Some(guids);
            }
        }
        match b.add_node(spec) {
            Ok(id) => ids.push(id),
            Err(e) => {
                internal(cx, n.id_span, &e.to_string());
                return None;
            }
        }
    }
    for link in &checked.links {
        let ends = (
            ids.get(link.a.0).copied(),
            u8::try_from(link.a.1).ok(),
            ids.get(link.b.0).copied(),
            u8::try_from(link.b.1).ok(),
        );
        let (Some(an), Some(ap), Some(bn), Some(bp)) = ends else {
            continue;
        };
        let id = match b.add_link(PortRef::new(an, ap), PortRef::new(bn, bp)) {
            Ok(id) => id,
            Err(e) => {
                let span = nodes.get(link.a.0).map(|n| n.id_span).unwrap_or(sp(0, 0));
                internal(cx, span, &e.to_string());
                return None;
            }
        };
        let (width, speed) = link_rate(nodes, link);
        if width.is_some() || speed.is_some() {
            b.set_link_rate(id, speed, width);
        }
    }
    let lids = collect_lids(cx, nodes, &ids);
    b.set_lmc(lids.lmc);
    Some((b.finish(), lids))
}

fn internal(cx: &mut Cx<'_>, span: SourceSpan, what: &str) {
    cx.error(
        Code::Internal,
        span,
        format!("internal error while building the fabric: {what}"),
        "here",
        "this is a bug in weft; please report it with this file",
    );
}

/// The rate of a link: the `4xEDR` annotation of either end, else what the ibsim port options
/// (`w=`, `s=`, `e=`) of the ends have in common.
fn link_rate(nodes: &[NodeRec<'_>], link: &LinkPlan) -> (Option<Width>, Option<Speed>) {
    let sightings: Vec<&PortRec<'_>> = link
        .seen
        .iter()
        .flatten()
        .filter_map(|&at| port_at(nodes, at))
        .collect();
    if let Some((rate, _)) = sightings.iter().find_map(|p| p.rate) {
        return (rate.width, rate.speed);
    }
    let common = |get: fn(&PortOpts) -> Option<u64>| -> Option<u64> {
        sightings
            .iter()
            .filter_map(|p| get(&p.opts))
            .reduce(|a, b| a & b)
    };
    // IBA masks: width 1=1x 2=4x 4=8x 8=12x 16=2x; speed 1=SDR 2=DDR 4=QDR (0 means QDR in
    // ibsim); extended speed 1=FDR 2=EDR 4=HDR 8=NDR.
    let width = common(|o| o.w).and_then(|m| {
        [
            (8, Width::X12),
            (4, Width::X8),
            (2, Width::X4),
            (16, Width::X2),
            (1, Width::X1),
        ]
        .into_iter()
        .find(|(bit, _)| m & bit != 0)
        .map(|(_, w)| w)
    });
    let ext = common(|o| o.e).and_then(|m| {
        [
            (8, Speed::NDR),
            (4, Speed::HDR),
            (2, Speed::EDR),
            (1, Speed::FDR),
        ]
        .into_iter()
        .find(|(bit, _)| m & bit != 0)
        .map(|(_, s)| s)
    });
    let base = common(|o| o.s.map(|s| if s == 0 { 4 } else { s })).and_then(|m| {
        [(4, Speed::QDR), (2, Speed::DDR), (1, Speed::SDR)]
            .into_iter()
            .find(|(bit, _)| m & bit != 0)
            .map(|(_, s)| s)
    });
    (width, ext.or(base))
}

/// Names: the name-map entry for the GUID, else the description, else the node id; a name
/// already taken gets ` (0x<guid>)` appended (and ` #2`, ` #3`, … if even that is taken).
fn assign_names(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], opts: &ParseOptions) -> Vec<String> {
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    let mut names = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let (base, span) = match (opts.name_map.get(&n.guid), n.desc) {
            (Some(mapped), _) => (mapped.clone(), n.id_span),
            (None, Some((desc, span))) => (desc.to_owned(), span),
            (None, None) => (n.id.to_owned(), n.id_span),
        };
        let mut name = base.clone();
        if let Some(&first) = taken.get(&name) {
            name = format!("{base} ({})", n.guid);
            let mut k = 2u32;
            while taken.contains_key(&name) {
                name = format!("{base} ({}) #{k}", n.guid);
                k = k.saturating_add(1);
            }
            let first_span = nodes
                .get(first)
                .map(|f| f.desc.map(|(_, s)| s).unwrap_or(f.id_span))
                .unwrap_or(span);
            let d = cx
                .diag(
                    Code::DuplicateName,
                    Severity::Warning,
                    span,
                    format!("two nodes are named `{base}`"),
                    format!("renamed to `{name}`"),
                )
                .with_secondary(first_span, "first used here")
                .with_help("give every node a unique description, or use a node name map");
            cx.push(d);
        }
        taken.insert(name.clone(), i);
        names.push(name);
    }
    names
}

/// LIDs seen: a switch's from its header (or a peer's `lid` annotation), an end node's per port
/// from its port lines (or a peer's). The LMC is the first one an end-node port line gives.
fn collect_lids(cx: &mut Cx<'_>, nodes: &[NodeRec<'_>], ids: &[NodeId]) -> LidAssignment {
    let mut lids = LidAssignment::default();
    let mut lmc: Option<(u8, SourceSpan)> = None;
    let mut set = |node: usize, port: u8, lid: u16| {
        if lid == 0 {
            return;
        }
        if let Some(&id) = ids.get(node) {
            lids.base
                .entry(id)
                .or_default()
                .entry(PortNum(port))
                .or_insert(Lid(lid));
        }
    };
    // Own annotations first, so that they win over what peers say.
    for (i, n) in nodes.iter().enumerate() {
        if let Some((l, _)) = n.lid {
            set(i, 0, l);
        }
        for p in &n.ports {
            if let (Some((l, _)), Ok(port)) = (p.local_lid, u8::try_from(p.port)) {
                if n.kind != NodeKind::Switch {
                    set(i, port, l);
                }
            }
            if let Some((m, span)) = p.local_lmc {
                match lmc {
                    None => lmc = Some((m, span)),
                    Some((first, first_span)) if first != m => {
                        let d = cx
                            .diag(
                                Code::LmcMismatch,
                                Severity::Warning,
                                span,
                                "end-node ports use different LMCs",
                                format!("`lmc {m}` here"),
                            )
                            .with_secondary(first_span, format!("`lmc {first}` here"))
                            .with_help(format!(
                                "weft uses one LMC for the fabric, the first one seen (`{first}`)"
                            ));
                        cx.push(d);
                    }
                    Some(_) => {}
                }
            }
        }
    }
    let by_id: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .rev()
        .map(|(i, n)| (n.id, i))
        .collect();
    for n in nodes {
        for p in &n.ports {
            let (Some((l, _)), Some(&r)) = (p.remote_lid, by_id.get(p.remote_id)) else {
                continue;
            };
            let Some(rn) = nodes.get(r) else { continue };
            let port = if rn.kind == NodeKind::Switch {
                Some(0)
            } else {
                u8::try_from(p.remote_port).ok()
            };
            if let Some(port) = port {
                set(r, port, l);
            }
        }
    }
    lids.lmc = lmc.map(|(m, _)| m).unwrap_or(0);
    lids
}
