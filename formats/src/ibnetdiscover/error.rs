//! Diagnostics of the ibnetdiscover reader and errors of the writer.
//!
//! A reader diagnostic is data: a stable [`Code`], a severity, a message, a primary span with a
//! label, optional secondary spans and a help line. [`ParseErrors`] carries the source text and
//! every error found, so one report shows all of them.

use miette::{Diagnostic, LabeledSpan, NamedSource, Severity, SourceSpan};
use std::fmt;
use std::sync::Arc;

/// Stable codes of reader diagnostics (`weft::ibnet::…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Code {
    /// A line that is no header, port, assignment, comment or known directive.
    UnknownLine,
    /// A node header line (`Switch 36 "S-…"`) that does not parse.
    MalformedHeader,
    /// A port line (`[1] "S-…"[2]`) that does not parse.
    MalformedPort,
    /// A `key=value` line (`vendid=`, `switchguid=`, …) that does not parse.
    MalformedAssignment,
    /// A number or GUID that does not parse or is out of range.
    BadNumber,
    /// A port line that belongs to no node record.
    PortOutsideNode,
    /// An `include` line.
    IncludeUnsupported,
    /// An ibsim port alias (`@`).
    AliasUnsupported,
    /// A port line whose remote port is separated from the remote node id by a space.
    AmbiguousRemotePort,
    /// A reference to a node no record describes (discovery cut short): an error, or with
    /// [`ParseOptions::partial`](super::ParseOptions::partial) a warning and the link dropped.
    UnknownNode,
    /// Two headers declare the same node id.
    DuplicateNodeId,
    /// Two nodes have the same node GUID.
    DuplicateGuid,
    /// A port number that the node does not have.
    PortOutOfRange,
    /// One port wired to two different peers.
    PortWiredTwice,
    /// The two ends of a link name different peers.
    LinkEndsDisagree,
    /// A port wired to itself.
    SelfLink,
    /// Two sightings of one port disagree on its port GUID.
    PortGuidMismatch,
    /// Two ports carry one port GUID (a switch's ports carry its node GUID). A port GUID
    /// equal to another node's node GUID is not one: the two are separate name spaces.
    DuplicatePortGuid,
    /// A node or port GUID of 0 (reserved), or an end node's port GUIDs counted on from its
    /// node GUID past 0xffffffffffffffff.
    BadGuid,
    /// Warning: the two ends of a link report different widths or speeds (the link takes the
    /// narrower width and the slower speed).
    RateMismatch,
    /// A LID outside the unicast range.
    BadLid,
    /// An LMC above 7.
    BadLmc,
    /// A line of a node name map that does not parse.
    MalformedNameMap,
    /// A GUID listed twice in a node name map.
    DuplicateNameMapEntry,
    /// Warning: a directive weft ignores (`do`, `pdebug`, `module`, `width`, `speed`, `extspeed`).
    IgnoredDirective,
    /// Warning: a link listed by one end only.
    OneSidedLink,
    /// Warning: a node name that had to be made unique.
    DuplicateName,
    /// Warning: the same port line twice.
    DuplicatePortLine,
    /// Warning: a record not followed by a blank line, so ibsim would skip the next line.
    MissingBlankLine,
    /// Warning: a line indented with whitespace, which ibsim ignores.
    IndentedLine,
    /// Warning: end-node ports with different LMCs.
    LmcMismatch,
    /// Warning: a link rate (`4xEDR`) weft does not know.
    UnknownRate,
    /// Warning: a terminal-log header (PuTTY's `=~=~=~…`, `script`'s `Script started on`),
    /// skipped.
    TerminalLog,
    /// Warning: a shell prompt line (`root@host:~# ibnetdiscover`), skipped.
    ShellPrompt,
    /// Warning: a message of libibmad, libibumad, libibnetdisc or an InfiniBand tool captured
    /// from standard error (`ibwarn: …`, `src/query_smp.c:195; …`), skipped.
    ToolStderr,
    /// Warning: a chassis header of grouped output (`ibnetdiscover -g`: `Non-Chassis Nodes`,
    /// `Chassis 3 (guid 0x…)`), skipped.
    GroupedHeader,
    /// Warning: ports at `lid 0` or `lid 65535` (not yet assigned by an SM) while others have
    /// LIDs; they are imported without one.
    UnassignedLid,
    /// Warning: a format without port counts (`ibnetdiscover -p`, `iblinkinfo`); each node
    /// gets the highest port number seen.
    PortCountGuessed,
    /// Warning: a format without the node GUIDs of end nodes (`ibnetdiscover -p`,
    /// `iblinkinfo`); each is taken as its port GUID minus the port number.
    NodeGuidGuessed,
    /// A line of an `ibnetdiscover -p` or `iblinkinfo` report, or of a `subnet.lst`, that
    /// does not parse.
    MalformedReportLine,
    /// Warning: a file whose lines lack the whitespace the format puts between fields
    /// (`Switch41 "S-…"# "…"`: a terminal that dropped the tabs); read as if it were there.
    MissingWhitespace,
    /// Warning: nodes of an `ibnetdiscover -p` report seen only as the peers of other nodes'
    /// ports (an excerpt); made up from those lines.
    PeerOnlyNode,
    /// An `iblinkinfo` peer that cannot be told apart: no LID and a name several nodes have.
    AmbiguousPeer,
    /// A dump that describes no node (empty, blank, or only comments and noise: a discovery
    /// that failed), in every format and reading mode; the message quotes what it holds.
    NoNodes,
    /// A file in a known format that is no topology (an LFT dump, a guid2lid, ibdm's
    /// topology file, …), refused by name.
    ForeignFormat,
    /// Warning: a loopback cable, from a port to another port of the same node.
    Loopback,
    /// Two ports given the same LID (or overlapping LID ranges under the LMC).
    DuplicateLid,
    /// An internal inconsistency (a bug in the reader); never expected.
    Internal,
}

impl Code {
    /// The code as rendered, e.g. `weft::ibnet::port_wired_twice`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::UnknownLine => "weft::ibnet::unknown_line",
            Code::MalformedHeader => "weft::ibnet::malformed_header",
            Code::MalformedPort => "weft::ibnet::malformed_port",
            Code::MalformedAssignment => "weft::ibnet::malformed_assignment",
            Code::BadNumber => "weft::ibnet::bad_number",
            Code::PortOutsideNode => "weft::ibnet::port_outside_node",
            Code::IncludeUnsupported => "weft::ibnet::include_unsupported",
            Code::AliasUnsupported => "weft::ibnet::alias_unsupported",
            Code::AmbiguousRemotePort => "weft::ibnet::ambiguous_remote_port",
            Code::UnknownNode => "weft::ibnet::unknown_node",
            Code::DuplicateNodeId => "weft::ibnet::duplicate_node_id",
            Code::DuplicateGuid => "weft::ibnet::duplicate_guid",
            Code::PortOutOfRange => "weft::ibnet::port_out_of_range",
            Code::PortWiredTwice => "weft::ibnet::port_wired_twice",
            Code::LinkEndsDisagree => "weft::ibnet::link_ends_disagree",
            Code::SelfLink => "weft::ibnet::self_link",
            Code::PortGuidMismatch => "weft::ibnet::port_guid_mismatch",
            Code::DuplicatePortGuid => "weft::ibnet::duplicate_port_guid",
            Code::BadGuid => "weft::ibnet::bad_guid",
            Code::RateMismatch => "weft::ibnet::rate_mismatch",
            Code::BadLid => "weft::ibnet::bad_lid",
            Code::BadLmc => "weft::ibnet::bad_lmc",
            Code::MalformedNameMap => "weft::ibnet::malformed_name_map",
            Code::DuplicateNameMapEntry => "weft::ibnet::duplicate_name_map_entry",
            Code::IgnoredDirective => "weft::ibnet::ignored_directive",
            Code::OneSidedLink => "weft::ibnet::one_sided_link",
            Code::DuplicateName => "weft::ibnet::duplicate_name",
            Code::DuplicatePortLine => "weft::ibnet::duplicate_port_line",
            Code::MissingBlankLine => "weft::ibnet::missing_blank_line",
            Code::IndentedLine => "weft::ibnet::indented_line",
            Code::LmcMismatch => "weft::ibnet::lmc_mismatch",
            Code::UnknownRate => "weft::ibnet::unknown_rate",
            Code::TerminalLog => "weft::ibnet::terminal_log",
            Code::ShellPrompt => "weft::ibnet::shell_prompt",
            Code::ToolStderr => "weft::ibnet::tool_stderr",
            Code::GroupedHeader => "weft::ibnet::grouped_header",
            Code::UnassignedLid => "weft::ibnet::unassigned_lid",
            Code::PortCountGuessed => "weft::ibnet::port_count_guessed",
            Code::NodeGuidGuessed => "weft::ibnet::node_guid_guessed",
            Code::MalformedReportLine => "weft::ibnet::malformed_report_line",
            Code::MissingWhitespace => "weft::ibnet::missing_whitespace",
            Code::PeerOnlyNode => "weft::ibnet::peer_only_node",
            Code::AmbiguousPeer => "weft::ibnet::ambiguous_peer",
            Code::NoNodes => "weft::ibnet::no_nodes",
            Code::ForeignFormat => "weft::ibnet::foreign_format",
            Code::Loopback => "weft::ibnet::loopback",
            Code::DuplicateLid => "weft::ibnet::duplicate_lid",
            Code::Internal => "weft::ibnet::internal",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The source a diagnostic points into: a name and the text, shared between diagnostics.
pub(crate) type Source = NamedSource<Arc<str>>;

pub(crate) fn new_source(name: &str, text: &str) -> Source {
    NamedSource::new(name, Arc::<str>::from(text))
}

/// One problem (error or warning) found in an ibnetdiscover file or node name map.
///
/// It carries its source, so it renders on its own (warnings) or under a [`ParseErrors`].
#[derive(Clone, Debug)]
pub struct IbnetDiagnostic {
    code: Code,
    severity: Severity,
    message: String,
    span: SourceSpan,
    label: String,
    secondary: Vec<(SourceSpan, String)>,
    help: Option<String>,
    src: Source,
}

impl IbnetDiagnostic {
    pub(crate) fn new(
        src: &Source,
        code: Code,
        severity: Severity,
        span: SourceSpan,
        message: impl Into<String>,
        label: impl Into<String>,
    ) -> IbnetDiagnostic {
        IbnetDiagnostic {
            code,
            severity,
            message: message.into(),
            span,
            label: label.into(),
            secondary: Vec::new(),
            help: None,
            src: src.clone(),
        }
    }

    pub(crate) fn with_help(mut self, help: impl Into<String>) -> IbnetDiagnostic {
        self.help = Some(help.into());
        self
    }

    pub(crate) fn with_secondary(
        mut self,
        span: SourceSpan,
        label: impl Into<String>,
    ) -> IbnetDiagnostic {
        self.secondary.push((span, label.into()));
        self
    }

    /// The stable code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// Error or warning.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The message (lowercase, no final period).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Byte span of the primary label in the source text.
    pub fn span(&self) -> SourceSpan {
        self.span
    }

    /// The primary label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The help line, if any.
    pub fn help_text(&self) -> Option<&str> {
        self.help.as_deref()
    }

    /// This diagnostic as an error (strict reading: [`ParseOptions::strict`]); a warning says
    /// so in its help line.
    ///
    /// [`ParseOptions::strict`]: super::ParseOptions::strict
    pub(crate) fn strict(mut self) -> IbnetDiagnostic {
        if self.severity != Severity::Error {
            self.severity = Severity::Error;
            let why = "an error because warnings are errors in strict reading (`--strict`)";
            self.help = Some(match self.help.take() {
                Some(h) => format!("{h} ({why})"),
                None => why.to_owned(),
            });
        }
        self
    }

    fn renamed(mut self, name: &str) -> IbnetDiagnostic {
        self.src = NamedSource::new(name, Arc::clone(self.src.inner()));
        self
    }
}

impl fmt::Display for IbnetDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IbnetDiagnostic {}

impl Diagnostic for IbnetDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code.as_str()))
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = LabeledSpan::new_primary_with_span(Some(self.label.clone()), self.span);
        let secondary = self
            .secondary
            .iter()
            .map(|(span, label)| LabeledSpan::new_with_span(Some(label.clone()), *span));
        Some(Box::new(std::iter::once(primary).chain(secondary)))
    }
}

/// Every error found in one ibnetdiscover file or node name map, with its source.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", self.summary())]
pub struct ParseErrors {
    src: Source,
    diagnostics: Vec<IbnetDiagnostic>,
}

impl ParseErrors {
    pub(crate) fn new(src: Source, diagnostics: Vec<IbnetDiagnostic>) -> ParseErrors {
        ParseErrors { src, diagnostics }
    }

    fn summary(&self) -> String {
        let n = self.diagnostics.len();
        format!(
            "could not read `{}`: {n} error{}",
            self.src.name(),
            if n == 1 { "" } else { "s" }
        )
    }

    /// Every error, in source order.
    pub fn diagnostics(&self) -> &[IbnetDiagnostic] {
        &self.diagnostics
    }

    /// The name the source is shown under.
    pub fn source_name(&self) -> &str {
        self.src.name()
    }

    /// The same errors, shown under another source name (e.g. the path the text came from).
    pub fn with_source_name(self, name: &str) -> ParseErrors {
        ParseErrors {
            src: NamedSource::new(name, Arc::clone(self.src.inner())),
            diagnostics: self
                .diagnostics
                .into_iter()
                .map(|d| d.renamed(name))
                .collect(),
        }
    }
}

impl Diagnostic for ParseErrors {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new("weft::ibnet::invalid"))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        Some(Box::new(
            self.diagnostics.iter().map(|d| d as &'a dyn Diagnostic),
        ))
    }
}

/// Why a fabric cannot be written as an ibnetdiscover file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum WriteError {
    /// A node name that ibsim or ibnetdiscover would not reproduce.
    #[error("node name `{name}` cannot be written as a node description: {reason}")]
    #[diagnostic(
        code(weft::ibnet::unwritable_name),
        help(
            "node descriptions in ibnetdiscover files are 1 to 63 printable ASCII characters \
             without `\"`, `#` or `=`; rename the node"
        )
    )]
    UnwritableName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A node without ports, which ibsim refuses.
    #[error("node `{name}` has no ports")]
    #[diagnostic(
        code(weft::ibnet::node_without_ports),
        help("ibsim and ibnetdiscover need at least one port per node")
    )]
    NoPorts {
        /// The node.
        name: String,
    },
}
