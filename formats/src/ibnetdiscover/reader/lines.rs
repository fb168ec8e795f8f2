//! Phase 1: every line classified and parsed into records with byte spans: headers,
//! assignments (`switchguid=` and the like), directives, and the GUIDs they set.

use super::*;
use weft_fabric::closest;

// Phase 1: lines into records.

/// How a node's GUID was set.
#[derive(Clone, Copy)]
pub(super) enum GuidOrigin {
    /// By a `…guid=` line, at this span.
    Explicit(SourceSpan),
    /// Counted on from the previous node of the kind (or the ibsim default base).
    Counted,
}

pub(super) struct NodeRec<'a> {
    pub(super) kind: NodeKind,
    /// The node id (`"S-7cfe900300bdd8f0"` in a header; made up by the readers of the
    /// other formats, which print none).
    pub(super) id: Cow<'a, str>,
    pub(super) id_span: SourceSpan,
    /// How diagnostics name the node when its id is made up from a GUID the input does not
    /// hold (an end node of the reports, whose node GUID is guessed): by what the input says.
    pub(super) shown: Option<String>,
    pub(super) port_count: u32,
    pub(super) count_span: SourceSpan,
    pub(super) desc: Option<(&'a str, SourceSpan)>,
    pub(super) guid: Guid,
    pub(super) guid_origin: GuidOrigin,
    pub(super) system_guid: Option<Guid>,
    pub(super) vendor_id: u32,
    pub(super) device_id: u32,
    /// A switch's LID as its header gives it (0 or 0xffff: none yet).
    pub(super) lid: Option<(u16, SourceSpan)>,
    pub(super) ports: Vec<PortRec<'a>>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Rate {
    pub(super) width: Option<Width>,
    pub(super) speed: Option<Speed>,
    pub(super) text_span: Option<SourceSpan>,
}

#[derive(Clone, Copy, Default)]
pub(super) struct PortOpts {
    pub(super) w: Option<u64>,
    pub(super) s: Option<u64>,
    pub(super) e: Option<u64>,
}

pub(super) struct PortRec<'a> {
    pub(super) line_span: SourceSpan,
    pub(super) port: u32,
    pub(super) port_span: SourceSpan,
    pub(super) local_guid: Option<(Guid, SourceSpan)>,
    pub(super) remote_id: Cow<'a, str>,
    pub(super) remote_span: SourceSpan,
    pub(super) remote_port: u32,
    pub(super) remote_port_span: SourceSpan,
    pub(super) remote_guid: Option<(Guid, SourceSpan)>,
    pub(super) local_lid: Option<(u16, SourceSpan)>,
    pub(super) local_lmc: Option<(u8, SourceSpan)>,
    pub(super) remote_lid: Option<(u16, SourceSpan)>,
    pub(super) rate: Option<(Rate, &'a str)>,
    pub(super) opts: PortOpts,
}

pub(super) struct File<'a> {
    pub(super) nodes: Vec<NodeRec<'a>>,
    /// The format read (for the help lines of later phases).
    pub(super) format: InputFormat,
}

/// ibsim's GUID counters and the per-node settings that apply to the next header.
pub(super) struct Pending {
    pub(super) abs: [u64; 3],
    pub(super) cur: [u64; 3],
    pub(super) origin: [Option<SourceSpan>; 3],
    pub(super) system_guid: Option<Guid>,
    pub(super) vendor_id: u32,
    pub(super) device_id: u32,
}

pub(super) fn read_lines<'a>(cx: &mut Cx<'_>, text: &'a str) -> File<'a> {
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
        if might_be_noise(&sc) && noise::skip(cx, &line) {
            // Transparent: a record it interrupts goes on after it.
            continue;
        }
        if indented {
            warn_indented(cx, &line, nodes.last().filter(|_| in_node));
        }
        let first = sc.peek();
        if first == Some(b'#') {
            continue;
        }
        if first == Some(b'[') || first == Some(b'@') {
            if !in_broken {
                let node = nodes.last_mut().filter(|_| in_node);
                read_port_line(cx, &mut sc, &line, node);
            }
            continue;
        }
        // Any other line ends a node record.
        if in_node {
            if let Some(node) = nodes.last() {
                warn_unended_record(cx, &line, node);
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
            _ => read_directive(cx, &mut sc, &line, word, word_span, &mut pending),
        }
    }
    warn_missing_ws(cx);
    File {
        nodes,
        format: InputFormat::Topology,
    }
}

/// The warning for an indented line: ibsim ends `node`'s port list there (the node whose
/// record the line is in, if any) or ignores the line.
fn warn_indented(cx: &mut Cx<'_>, line: &Line<'_>, node: Option<&NodeRec<'_>>) {
    let label = match node {
        Some(node) => format!(
            "ibsim takes this line as the end of the port list of `{}`",
            node.id
        ),
        None => "ibsim ignores this line".to_owned(),
    };
    cx.warn(
        Code::IndentedLine,
        sp(line.start, line.text.len()),
        "line starts with whitespace",
        label,
        "remove the leading whitespace so that ibsim reads the line as weft does",
    );
}

/// A line starting with `[` or `@`: a port line of `node` (the record it is in, if any), or
/// the error that says why it is not one.
fn read_port_line<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    line: &Line<'a>,
    node: Option<&mut NodeRec<'a>>,
) {
    let Some(node) = node else {
        cx.error(
            Code::PortOutsideNode,
            sp(sc.abs(), sc.rest().len()),
            "port line outside a node record",
            "no node header above this line",
            "port lines directly follow their node's header line, with no blank line in \
             between; ibsim ignores this line",
        );
        return;
    };
    if sc.peek() == Some(b'@') {
        cx.error(
            Code::AliasUnsupported,
            sp(sc.abs(), sc.rest().len()),
            "ibsim port aliases (`@`) are not supported",
            "alias",
            "write the remote node id and port instead of an alias",
        );
        return;
    }
    if let Some(rec) = parse_port_line(cx, sc, node.kind, line) {
        node.ports.push(rec);
    }
}

/// A line other than a port line ends `node`'s record. ibsim consumes that line without
/// parsing it unless it already read as many port lines as the node has ports: said.
fn warn_unended_record(cx: &mut Cx<'_>, line: &Line<'_>, node: &NodeRec<'_>) {
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

/// A line starting with `word` that is not a node header: an assignment that sets what the
/// next header takes, a directive weft ignores, or an unrecognised line.
fn read_directive(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    line: &Line<'_>,
    word: &str,
    word_span: SourceSpan,
    pending: &mut Pending,
) {
    match word {
        "switchguid" | "caguid" | "hcaguids" | "rtguid" => {
            let k = match word {
                "switchguid" => 0,
                "rtguid" => 2,
                _ => 1,
            };
            parse_guid_base(cx, sc, word, k, pending);
        }
        "vendid" | "devid" => {
            if let Some((v, _)) = parse_assignment(cx, sc, word, false) {
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
            if let Some((v, _)) = parse_assignment(cx, sc, word, false) {
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
                first_token_span(line),
                "unrecognised line",
                "expected a node header, a port line, a `key=value` line or a comment",
                help,
            );
        }
    }
}

/// The once-per-file warning for fields run together (missing whitespace), if any was seen.
fn warn_missing_ws(cx: &mut Cx<'_>) {
    if let Some(at) = cx.missing_ws {
        cx.warn(
            Code::MissingWhitespace,
            at,
            "fields run together: the whitespace between them is missing (tabs stripped by a \
             terminal?)",
            "no whitespace before this",
            "read as if the whitespace were there (this is said once per file); capture \
             `ibnetdiscover` output to a file (`ibnetdiscover > fabric.txt`) rather than from \
             a terminal window",
        );
    }
}

/// The words a line of this format starts with besides [`KEYWORDS`]: an old GUID line and the
/// directives.
const OTHER_WORDS: [&str; 8] = [
    "hcaguids", "include", "do", "pdebug", "module", "width", "speed", "extspeed",
];

/// Whether the line at `sc` (after its indentation) may be noise ([`noise::classify`]): not
/// a comment, port line, alias or a line starting with a word of the format. Cheap, so that
/// the lines of the format are not classified.
fn might_be_noise(sc: &Scan<'_>) -> bool {
    let rest = sc.rest().as_bytes();
    match rest.first() {
        None | Some(b'#' | b'@') => false,
        Some(b'[') => !rest.get(1).is_some_and(u8::is_ascii_digit),
        Some(_) => {
            let word_len = rest.iter().take_while(|b| b.is_ascii_alphabetic()).count();
            let word = sc.rest().get(..word_len).unwrap_or("");
            word.is_empty() || !(KEYWORDS.contains(&word) || OTHER_WORDS.contains(&word))
        }
    }
}

/// Keywords a misspelt line word is compared with.
pub(super) const KEYWORDS: [&str; 10] = [
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

/// The keyword `word` is most likely a typo of ([`closest`], the one "did you mean" rule),
/// if any; words of one or two characters get no suggestion.
pub(super) fn suggest(word: &str) -> Option<&'static str> {
    if word.len() < 3 {
        return None;
    }
    closest(word, KEYWORDS)
}

/// Span of the first word of a line.
pub(super) fn first_token_span(line: &Line<'_>) -> SourceSpan {
    let trimmed = line.text.trim_start_matches([' ', '\t']);
    let start = line.start + (line.text.len() - trimmed.len());
    let len = trimmed.find([' ', '\t']).unwrap_or(trimmed.len());
    sp(start, len.max(1))
}

/// `key=value` (or `key+value` when `relative_ok`): the value and whether it was relative.
pub(super) fn parse_assignment(
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

pub(super) fn parse_guid_base(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    key: &str,
    k: usize,
    p: &mut Pending,
) {
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

pub(super) fn parse_header<'a>(
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
    let (port_count, count_span) = header_port_count(cx, sc, keyword, &help)?;
    let (id, id_span) = header_id(cx, sc, keyword, &help)?;
    let (desc, lid) = header_annotation(cx, sc, keyword, &help);
    let (guid, origin) = next_guid(p, kind, port_count);
    let node = NodeRec {
        shown: None,
        kind,
        id: Cow::Borrowed(id),
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

/// A header's port count (after the keyword), or the error that says why it does not read.
fn header_port_count(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    keyword: &str,
    help: &str,
) -> Option<(u32, SourceSpan)> {
    let spaced = sc.skip_ws();
    if !spaced && sc.peek().is_some_and(|b| b.is_ascii_digit()) {
        // `Switch41`: the tab went missing (a terminal capture); the count is still clear.
        cx.missing_ws(sc.abs());
    } else if !spaced {
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
        Some(n @ 1..=254) => n as u32,
        Some(_) => {
            cx.error(
                Code::BadNumber,
                count_span,
                format!("port count `{tok}` is out of range"),
                "not 1 to 254",
                "a node has 1 to 254 ports (port 255 is reserved), not counting a switch's \
                 management port 0; `weft check` refuses more",
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
    Some((port_count, count_span))
}

/// A header's quoted node id, or the error that says why it does not read.
fn header_id<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    keyword: &str,
    help: &str,
) -> Option<(&'a str, SourceSpan)> {
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
    Some((id, id_span))
}

/// A node's description and its span.
type Desc<'a> = Option<(&'a str, SourceSpan)>;

/// The description and LID a header's `#` annotation gives, if any.
fn header_annotation<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    keyword: &str,
    help: &str,
) -> (Desc<'a>, Option<(u16, SourceSpan)>) {
    if !sc.skip_ws() && sc.peek() == Some(b'#') {
        cx.missing_ws(sc.abs());
    }
    let mut desc = None;
    let mut lid = None;
    if sc.eat(b'#') {
        let ann = parse_annotation(cx, sc, false);
        desc = ann.first_quoted.filter(|(d, _)| !d.is_empty());
        if desc.is_none() {
            desc = ann.unquoted_desc.filter(|(d, _)| !d.is_empty());
        }
        lid = ann.lids.first().copied();
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
    (desc, lid)
}

/// The GUID of the next node of `kind` and how it was set; ibsim's counter moves on past the
/// node (by one for a switch, by its ports and one for others).
fn next_guid(p: &mut Pending, kind: NodeKind, port_count: u32) -> (u64, GuidOrigin) {
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
    (guid, origin)
}
