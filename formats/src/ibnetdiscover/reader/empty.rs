//! A dump that describes no node: an empty file, blank lines, or only what a failed discovery
//! leaves (messages captured from standard error, a shell prompt, comments). Reading it as an
//! empty fabric would hide that discovery failed, so it is an error (`Code::NoNodes`) in
//! every format and reading mode, whose message says what the file holds instead, quoting it.

use super::*;

/// What a line of a dump without nodes is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Noise the reader skipped (`noise.rs`), by its warning code.
    Noise(Code),
    Comment,
    /// A line the reader took without making a node of it: an assignment or a directive
    /// (the topology format), a node header without port lines (`iblinkinfo`).
    Other,
    Blank,
}

impl Kind {
    /// Singular and plural noun, in a file of `format`.
    fn nouns(self, format: InputFormat) -> (&'static str, &'static str) {
        match self {
            Kind::Noise(Code::ToolStderr) => (
                "message captured from standard error",
                "messages captured from standard error",
            ),
            Kind::Noise(Code::ShellPrompt) => ("shell prompt", "shell prompts"),
            Kind::Noise(Code::TerminalLog) => ("terminal-log line", "terminal-log lines"),
            Kind::Noise(Code::GroupedHeader) => ("grouped-output header", "grouped-output headers"),
            Kind::Noise(_) => ("noise line", "noise lines"),
            Kind::Comment => ("comment", "comments"),
            Kind::Other if format == InputFormat::LinkInfo => (
                "node header without port lines",
                "node headers without port lines",
            ),
            Kind::Other => ("line outside a node record", "lines outside a node record"),
            Kind::Blank => ("blank line", "blank lines"),
        }
    }
}

/// Lines of one kind: how many, and the first few (quoted in the message).
struct Group<'a> {
    kind: Kind,
    count: usize,
    quoted: Vec<&'a str>,
}

/// Lines quoted per kind.
const QUOTED: usize = 2;
/// Characters of a quoted line shown before `…`.
const QUOTE_CHARS: usize = 80;

/// Reports that `text`, read as `format`, describes no node; the noise warnings the reader
/// gave (in `cx`) say which lines were noise.
pub(super) fn no_nodes(cx: &mut Cx<'_>, text: &str, format: InputFormat) {
    let noise: BTreeMap<usize, Code> = cx
        .diags
        .iter()
        .filter(|d| {
            matches!(
                d.code(),
                Code::ToolStderr | Code::ShellPrompt | Code::TerminalLog | Code::GroupedHeader
            )
        })
        .map(|d| (d.span().offset(), d.code()))
        .collect();
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut lines_total = 0;
    let mut first: Option<SourceSpan> = None;
    for line in lines(text) {
        lines_total += 1;
        let t = line.text.trim_matches([' ', '\t']);
        let lead = line.text.len() - line.text.trim_start_matches([' ', '\t']).len();
        let at = line.start + lead;
        let kind = if t.is_empty() {
            Kind::Blank
        } else if let Some(&code) = noise.get(&at) {
            Kind::Noise(code)
        } else if t.starts_with('#') {
            Kind::Comment
        } else {
            Kind::Other
        };
        if kind != Kind::Blank {
            first.get_or_insert(sp(at, t.len()));
        }
        let g = match groups.iter_mut().position(|g| g.kind == kind) {
            Some(i) => groups.get_mut(i),
            None => {
                groups.push(Group {
                    kind,
                    count: 0,
                    quoted: Vec::new(),
                });
                groups.last_mut()
            }
        };
        if let Some(g) = g {
            g.count += 1;
            if kind != Kind::Blank && g.quoted.len() < QUOTED {
                g.quoted.push(t);
            }
        }
    }
    // Blank lines last: they say the least.
    groups.sort_by_key(|g| g.kind == Kind::Blank);
    let message = if lines_total == 0 {
        "the dump is empty: it describes no node".to_owned()
    } else {
        let all_noise = groups
            .iter()
            .all(|g| matches!(g.kind, Kind::Noise(_) | Kind::Blank));
        let all_blank = groups.iter().all(|g| g.kind == Kind::Blank);
        let lines = if lines_total == 1 {
            "its only line is".to_owned()
        } else {
            format!("its {lines_total} lines are")
        };
        let what = if all_blank {
            "blank".to_owned()
        } else if all_noise {
            format!("noise: {}", listed(&groups, format))
        } else {
            listed(&groups, format)
        };
        format!("the dump describes no node: {lines} {what}")
    };
    let (span, label) = match first {
        _ if lines_total == 0 => (sp(0, 0), "empty file"),
        Some(span) => (span, "no line of the file describes a node"),
        None => (sp(0, 0), "only blank lines"),
    };
    let records = match format {
        InputFormat::Topology => {
            "`ibnetdiscover` prints a record per node it reaches (`Switch 36 \"S-…\"`, `Ca 2 \
             \"H-…\"`, each with its port lines)"
        }
        InputFormat::PortsReport => {
            "`ibnetdiscover -p` prints a line per port it reaches (`SW 12 1 0x… 4x EDR - CA …`)"
        }
        InputFormat::SubnetLst => {
            "`opensm-subnet.lst` holds a line per cabled port (`{ SW Ports:08 … PN:01 } { … } \
             PHY=4x LOG=ACT SPD=2.5`)"
        }
        InputFormat::LinkInfo => {
            "`iblinkinfo` prints a `Switch: 0x… name:` or `CA: name:` line per node it reaches, \
             each with its port lines"
        }
    };
    cx.error(
        Code::NoNodes,
        span,
        message,
        label,
        format!(
            "discovery probably failed: {records}, and nothing but errors when it cannot open \
             the local HCA port or reach the fabric; run it again on a host whose HCA port is \
             Active (`ibstat`) and import its standard output alone (`ibnetdiscover > \
             fabric.ibnetdiscover`)"
        ),
    );
}

/// `2 messages captured from standard error (`…`, `…`) and a shell prompt (`…`)`.
fn listed(groups: &[Group<'_>], format: InputFormat) -> String {
    let items: Vec<String> = groups
        .iter()
        .map(|g| {
            let (one, many) = g.kind.nouns(format);
            let counted = if g.count == 1 {
                format!("a {one}")
            } else {
                format!("{} {many}", g.count)
            };
            if g.quoted.is_empty() {
                return counted;
            }
            let mut quotes: Vec<String> = g.quoted.iter().map(|q| quote(q)).collect();
            if g.count > g.quoted.len() {
                quotes.push("…".to_owned());
            }
            format!("{counted} ({})", quotes.join(", "))
        })
        .collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// A line in backticks, cut after [`QUOTE_CHARS`] characters.
fn quote(line: &str) -> String {
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((end, _)) => format!("`{}…`", line.get(..end).unwrap_or(line)),
        None => format!("`{line}`"),
    }
}
