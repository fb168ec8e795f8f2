//! Phase 1, port lines: port numbers, port GUIDs, the remote end, and the annotations
//! (rates, LIDs, LMC, descriptions) of headers and port lines.

use super::*;

pub(super) fn check_lmc(cx: &mut Cx<'_>, lmc: u64, span: SourceSpan) -> Option<u8> {
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
pub(super) struct Annotation<'a> {
    /// The first quoted string (a description: the node's own in a header, the remote node's
    /// in a port line).
    pub(super) first_quoted: Option<(&'a str, SourceSpan)>,
    /// How many `lid` values came before `first_quoted` (on an end node's port line, those are
    /// the port's own; the ones after are the remote port's).
    pub(super) lids_before_quote: usize,
    /// A description written without quotes (ibsim accepts it in headers).
    pub(super) unquoted_desc: Option<(&'a str, SourceSpan)>,
    pub(super) lids: Vec<(u16, SourceSpan)>,
    pub(super) lmcs: Vec<(u64, SourceSpan)>,
    pub(super) rate: Option<(Rate, &'a str)>,
}

/// Parses the text after `#`: quoted strings, `lid N`, `lmc N`, `enhanced|base port 0` and a
/// rate such as `4xEDR`. Unknown words are skipped.
pub(super) fn parse_annotation<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    port_line: bool,
) -> Annotation<'a> {
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
                        // 0xffff: the permissive LID of a port no SM assigned one yet.
                        Ok(l) if l <= MAX_UNICAST_LID || l == 0xffff => ann.lids.push((l, span)),
                        _ => {
                            cx.error(
                                Code::BadLid,
                                span,
                                format!("`lid {v}` is not a unicast LID"),
                                "out of range",
                                "unicast LIDs are 1 to 0xbfff; 0 and 65535 mean no LID yet",
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
pub(super) fn parse_rate(word: &str, span: SourceSpan) -> Option<Result<Rate, ()>> {
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

pub(super) fn parse_port_number(
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

pub(super) fn parse_port_guid(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    help: &str,
) -> Option<(Guid, SourceSpan)> {
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

/// Skips the external port number (`[ext 12]`) grouped output (`ibnetdiscover -g`) prints
/// after the port number of a chassis port; the model numbers ports as the ASIC does.
fn skip_ext_port(sc: &mut Scan<'_>) {
    if sc.rest().starts_with("[ext ") {
        if let Some(close) = sc.rest().find(']') {
            sc.pos += close + 1;
        }
    }
}

pub(super) fn parse_port_line<'a>(
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
    skip_ext_port(sc);
    let local_guid = if sc.peek() == Some(b'(') {
        Some(parse_port_guid(cx, sc, help)?)
    } else {
        None
    };
    if !sc.skip_ws() && sc.peek() == Some(b'"') {
        cx.missing_ws(sc.abs());
    }
    let (remote_id, remote_span) = remote_node_id(cx, sc, help)?;
    let (remote_port, remote_port_span) = remote_port(cx, sc, remote_id, remote_span, help)?;
    let remote_guid = if sc.peek() == Some(b'(') {
        Some(parse_port_guid(cx, sc, help)?)
    } else {
        None
    };
    let opts = port_options(cx, sc, help)?;
    let mut rec = PortRec {
        line_span,
        port,
        port_span,
        local_guid,
        remote_id: Cow::Borrowed(remote_id),
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
        read_port_annotation(cx, sc, kind, &mut rec);
    }
    Some(rec)
}

/// The quoted id of the node at the other end of a port line, or the error that says why it
/// does not read.
fn remote_node_id<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    help: &str,
) -> Option<(&'a str, SourceSpan)> {
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
    Some((remote_id, remote_span))
}

/// The `[n]` after the remote node id (ibsim: none means port 1), refusing a `[n]` a space
/// away, which ibsim ignores.
fn remote_port(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'_>,
    remote_id: &str,
    remote_span: SourceSpan,
    help: &str,
) -> Option<(u32, SourceSpan)> {
    if sc.eat(b'[') {
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
        skip_ext_port(sc);
        Some(r)
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
        Some((1, remote_span))
    }
}

/// ibsim's port options (`w=`, `s=`, `e=`) up to the annotation's `#` or the end of the line.
fn port_options(cx: &mut Cx<'_>, sc: &mut Scan<'_>, help: &str) -> Option<PortOpts> {
    let mut opts = PortOpts::default();
    let mut first = true;
    loop {
        let spaced = sc.skip_ws();
        match sc.peek() {
            None => break,
            Some(b'#') => {
                if first && !spaced {
                    cx.missing_ws(sc.abs());
                }
                break;
            }
            Some(_) => {}
        }
        first = false;
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
    Some(opts)
}

/// A port line's `#` annotation into `rec`: the rate and the LIDs (an end node's LIDs
/// before the description are its own).
fn read_port_annotation<'a>(
    cx: &mut Cx<'_>,
    sc: &mut Scan<'a>,
    kind: NodeKind,
    rec: &mut PortRec<'a>,
) {
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
