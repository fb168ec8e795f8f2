//! Cabling against the design: which cables of a fabric differ from the ones a design says.
//!
//! [`compare`] matches the found fabric's nodes to the design's as [`MatchMode`] says — by
//! node GUID, by name, by place in the graph, or (`auto`) each of these in turn for the nodes
//! still unmatched — and compares the cables as unordered pairs of (node, port).
//!
//! By name: a design node named `N` matches the found node whose name (node description) is
//! exactly `N`, else the one whose first word (the text before its first space) is `N`
//! (`leaf01` matches `leaf01 HCA-1`); two found nodes at the same step is an error naming
//! both ([`MatchError::AmbiguousName`]), never a guess. By position: see [`MatchMode::Position`]
//! and the private `position`; a node that would be at two places is an error. A design may
//! also be a cabling spreadsheet ([`table`]). A design's cable is every link of the design (a `faults` block's down
//! links included: the cable is still designed); a found cable is a link that carries traffic
//! ([`Fabric::live_peer`]), as a live read sees it.
//!
//! Every difference is one [`Difference`], sorted: a design cable whose ends are not joined
//! on the found fabric is *miswired* when one of its ends is joined to something else (a swap
//! of two cables is two miswired cables), else *missing*; a found cable whose ends are both
//! free in the design is *extra* (a found cable touching a designed port is the miswired
//! cable's other half, not reported twice); a joined cable whose found speed or width is
//! recorded and differs from the design's is a speed or width difference (the design's: what
//! its link records, else the slower speed and narrower width of its two ports'
//! capabilities; a found link that records none is not compared); a design node no found
//! node matches is a missing node, a found node no design node matches an extra node.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use weft_fabric::{Fabric, LinkState};
use weft_fabric::{Guid, NodeId, PortNum, PortRef, Speed, Width};

pub mod table;

/// One end of a cable: the node's name and GUID (the design's, when the node is matched),
/// and the port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct End {
    /// The node's name.
    pub node: String,
    /// The node's GUID.
    #[serde(with = "weft_fabric::guid_hex")]
    pub guid: Guid,
    /// The port.
    pub port: PortNum,
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.node, self.port)
    }
}

/// A node as a difference names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NodeName {
    /// Its name.
    pub node: String,
    /// Its GUID.
    #[serde(with = "weft_fabric::guid_hex")]
    pub guid: Guid,
}

/// One difference between a design's cabling and a found fabric's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Difference {
    /// A design node no found node matches.
    MissingNode(NodeName),
    /// A found node no design node matches.
    ExtraNode(NodeName),
    /// A design cable whose ends are not joined, one or both of them joined to something
    /// else: what each end is joined to instead (`None`: to nothing).
    Miswired {
        /// One end as designed.
        a: End,
        /// The other end as designed.
        b: End,
        /// What `a` is joined to on the found fabric.
        a_joined: Option<End>,
        /// What `b` is joined to on the found fabric.
        b_joined: Option<End>,
    },
    /// A design cable absent from the found fabric, both its ends free there.
    Missing {
        /// One end.
        a: End,
        /// The other end.
        b: End,
    },
    /// A found cable whose ends are both free in the design.
    Extra {
        /// One end.
        a: End,
        /// The other end.
        b: End,
    },
    /// A cable at another lane speed than the design's.
    Speed {
        /// One end.
        a: End,
        /// The other end.
        b: End,
        /// The design's speed.
        expected: Speed,
        /// The found speed.
        found: Speed,
    },
    /// A cable at another width than the design's.
    Width {
        /// One end.
        a: End,
        /// The other end.
        b: End,
        /// The design's width.
        expected: Width,
        /// The found width.
        found: Width,
    },
}

impl Difference {
    /// A short name of the kind: `miswired`, `missing`, `extra`, `speed`, `width`,
    /// `missing_node`, `extra_node`.
    pub fn kind(&self) -> &'static str {
        match self {
            Difference::MissingNode(_) => "missing_node",
            Difference::ExtraNode(_) => "extra_node",
            Difference::Miswired { .. } => "miswired",
            Difference::Missing { .. } => "missing",
            Difference::Extra { .. } => "extra",
            Difference::Speed { .. } => "speed",
            Difference::Width { .. } => "width",
        }
    }

    /// The cable ends it names: both ends of a cable, and for a miswired one what each is
    /// joined to instead; none for a node's.
    pub fn ends(&self) -> Vec<&End> {
        match self {
            Difference::MissingNode(_) | Difference::ExtraNode(_) => Vec::new(),
            Difference::Miswired {
                a,
                b,
                a_joined,
                b_joined,
            } => [Some(a), Some(b), a_joined.as_ref(), b_joined.as_ref()]
                .into_iter()
                .flatten()
                .collect(),
            Difference::Missing { a, b }
            | Difference::Extra { a, b }
            | Difference::Speed { a, b, .. }
            | Difference::Width { a, b, .. } => vec![a, b],
        }
    }
}

fn joined(e: &Option<End>) -> String {
    e.as_ref()
        .map_or_else(|| "nothing".to_owned(), ToString::to_string)
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::MissingNode(n) => write!(f, "node {} ({}) is missing", n.node, n.guid),
            Difference::ExtraNode(n) => {
                write!(f, "node {} ({}) is not in the design", n.node, n.guid)
            }
            Difference::Miswired {
                a,
                b,
                a_joined,
                b_joined,
            } => write!(
                f,
                "cable {a} – {b} is miswired: {a} is joined to {}, {b} to {}",
                joined(a_joined),
                joined(b_joined)
            ),
            Difference::Missing { a, b } => write!(f, "cable {a} – {b} is missing"),
            Difference::Extra { a, b } => write!(f, "cable {a} – {b} is not in the design"),
            Difference::Speed {
                a,
                b,
                expected,
                found,
            } => write!(
                f,
                "cable {a} – {b} runs at {}, the design says {}",
                found.as_str(),
                expected.as_str()
            ),
            Difference::Width {
                a,
                b,
                expected,
                found,
            } => write!(
                f,
                "cable {a} – {b} is {} wide, the design says {}",
                lanes_text(*found),
                lanes_text(*expected)
            ),
        }
    }
}

/// `1x`, `4x`, …: how a width is written.
fn lanes_text(w: Width) -> String {
    format!("{}x", w.lanes())
}

/// A port in the design's terms: a design node's (matched or not), or an unmatched found
/// node's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Design(NodeId, PortNum),
    Found(NodeId, PortNum),
}

/// How nodes of the found fabric are matched to the design's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// By node GUID only.
    Guids,
    /// By name only (the node description; see [`compare`]).
    Names,
    /// By place in the graph only: no GUID, no name. The nodes whose port-labelled view of
    /// the whole fabric (colour refinement over both fabrics) is one design node's and one
    /// found node's are matched; from there, through port numbers: the design node on port
    /// `p` of a matched node, cabled to its port `q`, is the found node on port `p` of the
    /// matched node, cabled to its port `q`. A node reached as two is an error; no node
    /// matched at all is an error ([`MatchError::NoPosition`]).
    Position,
    /// By GUID, then by name, then by place for the nodes still unmatched, extended from the
    /// nodes matched so far.
    #[default]
    Auto,
}

impl MatchMode {
    /// Every mode, as the CLI names them.
    pub const ALL: [MatchMode; 4] = [
        MatchMode::Names,
        MatchMode::Guids,
        MatchMode::Position,
        MatchMode::Auto,
    ];

    /// The mode's name: `guids`, `names`, `position`, `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchMode::Guids => "guids",
            MatchMode::Names => "names",
            MatchMode::Position => "position",
            MatchMode::Auto => "auto",
        }
    }

    fn guids(self) -> bool {
        matches!(self, MatchMode::Guids | MatchMode::Auto)
    }

    fn names(self) -> bool {
        matches!(self, MatchMode::Names | MatchMode::Auto)
    }

    fn position(self) -> bool {
        matches!(self, MatchMode::Position | MatchMode::Auto)
    }
}

/// How a comparison runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// How nodes are matched.
    pub mode: MatchMode,
    /// Whether the design's GUIDs are real (a spreadsheet's are made up: never matched, and
    /// a matched design node is named with its found node's GUID).
    pub design_guids: bool,
    /// Whether a design link that records no rate expects its ports' capabilities (a
    /// spreadsheet's expects only what its columns say).
    pub design_caps: bool,
}

impl Options {
    /// For a design that is a fabric (a description, a state, an imported dump).
    pub fn fabric(mode: MatchMode) -> Options {
        Options {
            mode,
            design_guids: true,
            design_caps: true,
        }
    }

    /// For a design read from a cabling spreadsheet ([`table::read`]).
    pub fn table(mode: MatchMode) -> Options {
        Options {
            mode,
            design_guids: false,
            design_caps: false,
        }
    }
}

/// Why nodes cannot be matched: matching would have to guess.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum MatchError {
    /// Two found nodes match a design node's name equally well.
    #[error("the design's `{name}` matches two nodes by name, `{first}` and `{second}`")]
    #[diagnostic(
        code(weft::cabling::ambiguous_name),
        help("name the device as its node description says it, whole")
    )]
    AmbiguousName {
        /// The design node's name.
        name: String,
        /// One found node.
        first: String,
        /// Another.
        second: String,
    },
    /// Two found nodes are at a design node's place (reached through different cables).
    #[error(
        "the design's `{name}` is at the place of two found nodes, `{first}` (through {first_via}) and `{second}` (through {second_via})"
    )]
    #[diagnostic(
        code(weft::cabling::ambiguous_position),
        help("the cabling around it differs too much to match by position: match by names or GUIDs (`--match names`)")
    )]
    AmbiguousPosition {
        /// The design node.
        name: String,
        /// One found node.
        first: String,
        /// The matched port it is reached through, `node/port`.
        first_via: String,
        /// Another.
        second: String,
        /// The port it is reached through.
        second_via: String,
    },
    /// A found node is at the place of two design nodes.
    #[error(
        "the found `{name}` is at the place of two design nodes, `{first}` (through {first_via}) and `{second}` (through {second_via})"
    )]
    #[diagnostic(
        code(weft::cabling::ambiguous_position),
        help("the cabling around it differs too much to match by position: match by names or GUIDs (`--match names`)")
    )]
    AmbiguousFound {
        /// The found node.
        name: String,
        /// One design node.
        first: String,
        /// The port of the design it is reached through.
        first_via: String,
        /// Another.
        second: String,
        /// The port it is reached through.
        second_via: String,
    },
    /// Matching by position only, and no node's place is unique on both sides.
    #[error("no node could be matched by position: no node's place in the design is the place of exactly one found node")]
    #[diagnostic(
        code(weft::cabling::no_position),
        help("position matching starts from nodes whose place is unique; with the fabrics this different, match by names or GUIDs")
    )]
    NoPosition,
    /// `--match guids` with a design that has no GUIDs (a cabling spreadsheet).
    #[error("the design is a cabling spreadsheet, which has no GUIDs to match by")]
    #[diagnostic(
        code(weft::cabling::no_guids),
        help("match a spreadsheet by names or position (`--match names`, `position` or `auto`)")
    )]
    NoGuids,
}

/// A design node matched to a found node by position.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Placed {
    /// The design node.
    pub design: String,
    /// The found node it is.
    pub found: NodeName,
}

/// What [`compare`] finds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// Every difference, sorted.
    pub differences: Vec<Difference>,
    /// The nodes matched by position (not by GUID or name), by design name.
    pub by_position: Vec<Placed>,
    /// Every matched design node's name, with the name of the found node it is (however it
    /// was matched): where a difference's design end is on the found fabric.
    pub found_names: BTreeMap<String, String>,
}

/// How the found fabric's nodes match the design's.
struct Matching {
    /// Per found node: the design node it matches.
    to_design: Vec<Option<NodeId>>,
    /// Per design node: the found node it matches.
    to_found: Vec<Option<NodeId>>,
    /// The pairs (design, found) matched by position.
    by_position: Vec<(NodeId, NodeId)>,
}

impl Matching {
    fn free_design(&self, d: NodeId) -> bool {
        self.to_found.get(d.index()).is_some_and(Option::is_none)
    }

    fn free_found(&self, f: NodeId) -> bool {
        self.to_design.get(f.index()).is_some_and(Option::is_none)
    }

    fn pair(&mut self, d: NodeId, f: NodeId) {
        if let Some(s) = self.to_design.get_mut(f.index()) {
            *s = Some(d);
        }
        if let Some(s) = self.to_found.get_mut(d.index()) {
            *s = Some(f);
        }
    }
}

/// A node's colour and its cables' (port, far port, far colour): what colour refinement
/// tells nodes apart by.
type Signature = (u32, Vec<(PortNum, PortNum, u32)>);

/// A fabric's cables both ways round: (node, port) → (node, port).
type Cabling = BTreeMap<(NodeId, PortNum), (NodeId, PortNum)>;

/// The design's cables: every link.
fn design_cabling(design: &Fabric) -> Cabling {
    let mut c = BTreeMap::new();
    for l in design.links() {
        c.insert((l.a.node, l.a.port), (l.b.node, l.b.port));
        c.insert((l.b.node, l.b.port), (l.a.node, l.a.port));
    }
    c
}

/// The found cables: the links that carry traffic.
fn found_cabling(found: &Fabric) -> Cabling {
    let up = |n: NodeId| found.nodes().get(n.index()).is_some_and(|x| !x.down);
    let mut c = BTreeMap::new();
    for l in found.links() {
        if l.state != LinkState::Up || !up(l.a.node) || !up(l.b.node) {
            continue;
        }
        c.insert((l.a.node, l.a.port), (l.b.node, l.b.port));
        c.insert((l.b.node, l.b.port), (l.a.node, l.a.port));
    }
    c
}

fn name_of(f: &Fabric, n: NodeId) -> String {
    f.nodes()
        .get(n.index())
        .map_or_else(String::new, |x| x.name().to_owned())
}

/// A name's first word: the text before its first space, when it has one.
fn first_word(name: &str) -> Option<&str> {
    name.split_once(' ')
        .map(|(w, _)| w)
        .filter(|w| !w.is_empty())
}

fn matching(design: &Fabric, found: &Fabric, opts: &Options) -> Result<Matching, MatchError> {
    let mut m = Matching {
        to_design: vec![None; found.nodes().len()],
        to_found: vec![None; design.nodes().len()],
        by_position: Vec::new(),
    };
    if opts.mode == MatchMode::Guids && !opts.design_guids {
        return Err(MatchError::NoGuids);
    }
    // By GUID first.
    if opts.mode.guids() && opts.design_guids {
        for (d, node) in design.node_ids().zip(design.nodes()) {
            if let Some(f) = found.find_guid(node.guid()) {
                if m.free_found(f) {
                    m.pair(d, f);
                }
            }
        }
    }
    // By name, among the nodes still free: the found node named exactly as the design node,
    // else the one whose first word is its name; two of either is ambiguous.
    if opts.mode.names() {
        for tier in [false, true] {
            let mut by: BTreeMap<&str, Vec<NodeId>> = BTreeMap::new();
            for (f, node) in found.node_ids().zip(found.nodes()) {
                if !m.free_found(f) {
                    continue;
                }
                let key = if tier {
                    first_word(node.name())
                } else {
                    Some(node.name())
                };
                if let Some(k) = key {
                    by.entry(k).or_default().push(f);
                }
            }
            for (d, node) in design.node_ids().zip(design.nodes()) {
                if !m.free_design(d) {
                    continue;
                }
                match by.get(node.name()).map(Vec::as_slice) {
                    Some([f]) => m.pair(d, *f),
                    Some([a, b, ..]) => {
                        return Err(MatchError::AmbiguousName {
                            name: node.name().to_owned(),
                            first: name_of(found, *a),
                            second: name_of(found, *b),
                        })
                    }
                    _ => {}
                }
            }
        }
    }
    if opts.mode.position() {
        let anchored = m.to_found.iter().any(Option::is_some);
        position(design, found, &mut m)?;
        if opts.mode == MatchMode::Position && !anchored && m.by_position.is_empty() {
            return Err(MatchError::NoPosition);
        }
    }
    Ok(m)
}

/// Matches the nodes still free by their place in the graph: first the nodes whose
/// port-labelled view of the fabric (colour refinement over both fabrics at once, each matched
/// pair its own colour) is exactly one design node's and one found node's; then, repeatedly,
/// through the cables of matched pairs — the free design node on port `p` of a matched design
/// node, cabled to its port `q`, is the free found node on port `p` of the matched found node,
/// cabled to its port `q`. A node reached as two nodes is ambiguous (an error).
fn position(design: &Fabric, found: &Fabric, m: &mut Matching) -> Result<(), MatchError> {
    let dc = design_cabling(design);
    let fc = found_cabling(found);
    let nd = design.nodes().len();
    let nf = found.nodes().len();
    if !(0..nd).any(|i| m.to_found.get(i).is_some_and(Option::is_none))
        || !(0..nf).any(|i| m.to_design.get(i).is_some_and(Option::is_none))
    {
        return Ok(());
    }
    // Colour refinement over the union: design node i is i, found node j is nd + j.
    let mut color: Vec<u32> = vec![0; nd + nf];
    for (d, f) in m.to_found.iter().enumerate() {
        if let Some(f) = f {
            let c = u32::try_from(d + 1).unwrap_or(u32::MAX);
            if let Some(x) = color.get_mut(d) {
                *x = c;
            }
            if let Some(x) = color.get_mut(nd + f.index()) {
                *x = c;
            }
        }
    }
    let adj = |cab: &Cabling, n: NodeId| -> Vec<(PortNum, NodeId, PortNum)> {
        cab.range((n, PortNum(0))..=(n, PortNum(u8::MAX)))
            .map(|(&(_, p), &(far, q))| (p, far, q))
            .collect()
    };
    let mut classes = color
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    loop {
        let mut intern: BTreeMap<Signature, u32> = BTreeMap::new();
        let mut next = Vec::with_capacity(nd + nf);
        for i in 0..nd + nf {
            let (cab, n, off) = if i < nd {
                (&dc, NodeId(u32::try_from(i).unwrap_or(u32::MAX)), 0)
            } else {
                (&fc, NodeId(u32::try_from(i - nd).unwrap_or(u32::MAX)), nd)
            };
            let sig: Vec<(PortNum, PortNum, u32)> = adj(cab, n)
                .into_iter()
                .map(|(p, far, q)| (p, q, color.get(off + far.index()).copied().unwrap_or(0)))
                .collect();
            let own = color.get(i).copied().unwrap_or(0);
            let len = u32::try_from(intern.len()).unwrap_or(u32::MAX);
            next.push(*intern.entry((own, sig)).or_insert(len));
        }
        color = next;
        let now = intern.len();
        if now <= classes {
            break;
        }
        classes = now;
    }
    // Seeds: colours of exactly one free design node and one free found node, with cables.
    let mut members: BTreeMap<u32, (Vec<NodeId>, Vec<NodeId>)> = BTreeMap::new();
    for (i, &c) in color.iter().enumerate() {
        let e = members.entry(c).or_default();
        if i < nd {
            let d = NodeId(u32::try_from(i).unwrap_or(u32::MAX));
            if m.free_design(d) && !adj(&dc, d).is_empty() {
                e.0.push(d);
            }
        } else {
            let f = NodeId(u32::try_from(i - nd).unwrap_or(u32::MAX));
            if m.free_found(f) && !adj(&fc, f).is_empty() {
                e.1.push(f);
            }
        }
    }
    // A colour also held by a matched or uncabled node is not unique: only classes whose
    // every member is free and cabled count.
    let mut total: BTreeMap<u32, usize> = BTreeMap::new();
    for &c in &color {
        *total.entry(c).or_default() += 1;
    }
    for (c, (ds, fs)) in &members {
        if let ([d], [f]) = (ds.as_slice(), fs.as_slice()) {
            if total.get(c) == Some(&2) {
                m.pair(*d, *f);
                m.by_position.push((*d, *f));
            }
        }
    }
    // Extended through the cables of matched pairs.
    let via = |fab: &Fabric, n: NodeId, p: PortNum| format!("{}/{p}", name_of(fab, n));
    loop {
        let mut to_f: BTreeMap<NodeId, BTreeMap<NodeId, String>> = BTreeMap::new();
        let mut to_d: BTreeMap<NodeId, BTreeMap<NodeId, String>> = BTreeMap::new();
        for (d, f) in m.to_found.iter().enumerate() {
            let (d, Some(f)) = (NodeId(u32::try_from(d).unwrap_or(u32::MAX)), *f) else {
                continue;
            };
            for (p, dfar, q) in adj(&dc, d) {
                let Some(&(ffar, fq)) = fc.get(&(f, p)) else {
                    continue;
                };
                if fq == q && m.free_design(dfar) && m.free_found(ffar) {
                    to_f.entry(dfar)
                        .or_default()
                        .entry(ffar)
                        .or_insert_with(|| via(found, f, p));
                    to_d.entry(ffar)
                        .or_default()
                        .entry(dfar)
                        .or_insert_with(|| via(design, d, p));
                }
            }
        }
        if to_f.is_empty() {
            break;
        }
        for (d, fs) in &to_f {
            let mut it = fs.iter();
            if let (Some((a, av)), Some((b, bv))) = (it.next(), it.next()) {
                return Err(MatchError::AmbiguousPosition {
                    name: name_of(design, *d),
                    first: name_of(found, *a),
                    first_via: av.clone(),
                    second: name_of(found, *b),
                    second_via: bv.clone(),
                });
            }
        }
        for (f, ds) in &to_d {
            let mut it = ds.iter();
            if let (Some((a, av)), Some((b, bv))) = (it.next(), it.next()) {
                return Err(MatchError::AmbiguousFound {
                    name: name_of(found, *f),
                    first: name_of(design, *a),
                    first_via: av.clone(),
                    second: name_of(design, *b),
                    second_via: bv.clone(),
                });
            }
        }
        for (d, fs) in to_f {
            if let Some((&f, _)) = fs.iter().next() {
                m.pair(d, f);
                m.by_position.push((d, f));
            }
        }
    }
    Ok(())
}

/// Compares `found`'s cabling with `design`'s: every difference, sorted, and the nodes
/// matched by position. Nodes are matched as `opts.mode` says (see the module docs); matching
/// that would have to guess is an error.
pub fn compare(design: &Fabric, found: &Fabric, opts: &Options) -> Result<Comparison, MatchError> {
    let m = matching(design, found, opts)?;
    let key_of_found = |r: PortRef| match m.to_design.get(r.node.index()).copied().flatten() {
        Some(d) => Key::Design(d, r.port),
        None => Key::Found(r.node, r.port),
    };
    // A design node's GUID: its own, or, from a spreadsheet, its found node's (none: 0).
    let design_guid = |n: NodeId| -> Option<Guid> {
        if opts.design_guids {
            return design.nodes().get(n.index()).map(weft_fabric::Node::guid);
        }
        Some(
            m.to_found
                .get(n.index())
                .copied()
                .flatten()
                .and_then(|f| found.nodes().get(f.index()))
                .map_or(Guid(0), weft_fabric::Node::guid),
        )
    };
    let end_of = |k: Key| -> Option<End> {
        let (node, guid, port) = match k {
            Key::Design(n, p) => (design.nodes().get(n.index())?, design_guid(n)?, p),
            Key::Found(n, p) => {
                let node = found.nodes().get(n.index())?;
                (node, node.guid(), p)
            }
        };
        Some(End {
            node: node.name().to_owned(),
            guid,
            port,
        })
    };

    let designed = designed_cables(design, opts);
    let cabled = found_cables(found, &key_of_found);

    let mut out = cable_differences(&designed, &cabled, &end_of);
    for (d, node) in design.node_ids().zip(design.nodes()) {
        if m.free_design(d) {
            out.push(Difference::MissingNode(NodeName {
                node: node.name().to_owned(),
                guid: design_guid(d).unwrap_or(Guid(0)),
            }));
        }
    }
    for (f, node) in found.node_ids().zip(found.nodes()) {
        if m.to_design.get(f.index()).copied().flatten().is_none() {
            out.push(Difference::ExtraNode(NodeName {
                node: node.name().to_owned(),
                guid: node.guid(),
            }));
        }
    }
    out.sort();
    out.dedup();
    let mut by_position: Vec<Placed> = m
        .by_position
        .iter()
        .filter_map(|&(d, f)| {
            let node = found.nodes().get(f.index())?;
            Some(Placed {
                design: name_of(design, d),
                found: NodeName {
                    node: node.name().to_owned(),
                    guid: node.guid(),
                },
            })
        })
        .collect();
    by_position.sort();
    let found_names = design
        .node_ids()
        .filter_map(|d| {
            let f = m.to_found.get(d.index()).copied().flatten()?;
            Some((name_of(design, d), name_of(found, f)))
        })
        .collect();
    Ok(Comparison {
        differences: out,
        by_position,
        found_names,
    })
}

/// Cables both ways round: each end's far end, speed and width.
type Cables = BTreeMap<Key, (Key, Option<Speed>, Option<Width>)>;

/// Designed cables, both ways round: every link of the design, at the rate it records, else
/// the slower speed and narrower width of its two ports' capabilities.
fn designed_cables(design: &Fabric, opts: &Options) -> Cables {
    let caps = |n: NodeId| {
        design
            .nodes()
            .get(n.index())
            .filter(|_| opts.design_caps)
            .map(|x| x.spec.caps)
    };
    let mut designed = Cables::new();
    for l in design.links() {
        let (a, b) = (
            Key::Design(l.a.node, l.a.port),
            Key::Design(l.b.node, l.b.port),
        );
        let (ca, cb) = (caps(l.a.node), caps(l.b.node));
        let speed = l.speed.or_else(|| {
            let (x, y) = (ca?.speed, cb?.speed);
            Some(if x.lane_mbps() <= y.lane_mbps() { x } else { y })
        });
        let width = l.width.or_else(|| {
            let (x, y) = (ca?.width, cb?.width);
            Some(if x.lanes() <= y.lanes() { x } else { y })
        });
        designed.insert(a, (b, speed, width));
        designed.insert(b, (a, speed, width));
    }
    designed
}

/// Found cables, both ways round: the links that carry traffic, their ends keyed by
/// `key_of_found`.
fn found_cables(found: &Fabric, key_of_found: &dyn Fn(PortRef) -> Key) -> Cables {
    let up = |n: NodeId| found.nodes().get(n.index()).is_some_and(|x| !x.down);
    let mut cabled = Cables::new();
    for l in found.links() {
        if l.state != LinkState::Up || !up(l.a.node) || !up(l.b.node) {
            continue;
        }
        let (a, b) = (key_of_found(l.a), key_of_found(l.b));
        cabled.insert(a, (b, l.speed, l.width));
        cabled.insert(b, (a, l.speed, l.width));
    }
    cabled
}

/// The cables that differ: designed cables found at another rate, missing or miswired, and
/// found cables the design does not have (`end_of` names a key's end).
fn cable_differences(
    designed: &Cables,
    cabled: &Cables,
    end_of: &dyn Fn(Key) -> Option<End>,
) -> Vec<Difference> {
    let mut out = Vec::new();
    let pair = |a: Key, b: Key| -> Option<(End, End)> {
        let (a, b) = (end_of(a)?, end_of(b)?);
        Some(if a <= b { (a, b) } else { (b, a) })
    };
    for (&a, &(b, speed, width)) in designed {
        if a > b {
            continue; // each cable once
        }
        match cabled.get(&a) {
            Some(&(far, found_speed, found_width)) if far == b => {
                let Some((ea, eb)) = pair(a, b) else { continue };
                if let (Some(e), Some(f)) = (speed, found_speed) {
                    if e != f {
                        out.push(Difference::Speed {
                            a: ea.clone(),
                            b: eb.clone(),
                            expected: e,
                            found: f,
                        });
                    }
                }
                if let (Some(e), Some(f)) = (width, found_width) {
                    if e != f {
                        out.push(Difference::Width {
                            a: ea,
                            b: eb,
                            expected: e,
                            found: f,
                        });
                    }
                }
            }
            _ => {
                let a_far = cabled.get(&a).map(|&(k, _, _)| k);
                let b_far = cabled.get(&b).map(|&(k, _, _)| k);
                let Some((ea, eb)) = pair(a, b) else { continue };
                if a_far.is_none() && b_far.is_none() {
                    out.push(Difference::Missing { a: ea, b: eb });
                    continue;
                }
                // The ends as the pair ordered them, each with what it is joined to.
                let (a_far, b_far) = if end_of(a).as_ref() == Some(&ea) {
                    (a_far, b_far)
                } else {
                    (b_far, a_far)
                };
                out.push(Difference::Miswired {
                    a: ea,
                    b: eb,
                    a_joined: a_far.and_then(end_of),
                    b_joined: b_far.and_then(end_of),
                });
            }
        }
    }
    for (&a, &(b, _, _)) in cabled {
        if a > b || designed.contains_key(&a) || designed.contains_key(&b) {
            continue;
        }
        if let Some((ea, eb)) = pair(a, b) {
            out.push(Difference::Extra { a: ea, b: eb });
        }
    }
    out
}

#[cfg(test)]
mod tests;
