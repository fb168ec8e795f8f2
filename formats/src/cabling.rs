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

    // Designed cables, both ways round: every link of the design, at the rate it records,
    // else the slower speed and narrower width of its two ports' capabilities.
    let caps = |n: NodeId| {
        design
            .nodes()
            .get(n.index())
            .filter(|_| opts.design_caps)
            .map(|x| x.spec.caps)
    };
    let mut designed: BTreeMap<Key, (Key, Option<Speed>, Option<Width>)> = BTreeMap::new();
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
    // Found cables, both ways round: the links that carry traffic.
    let up = |n: NodeId| found.nodes().get(n.index()).is_some_and(|x| !x.down);
    let mut cabled: BTreeMap<Key, (Key, Option<Speed>, Option<Width>)> = BTreeMap::new();
    for l in found.links() {
        if l.state != LinkState::Up || !up(l.a.node) || !up(l.b.node) {
            continue;
        }
        let (a, b) = (key_of_found(l.a), key_of_found(l.b));
        cabled.insert(a, (b, l.speed, l.width));
        cabled.insert(b, (a, l.speed, l.width));
    }

    let mut out = Vec::new();
    let pair = |a: Key, b: Key| -> Option<(End, End)> {
        let (a, b) = (end_of(a)?, end_of(b)?);
        Some(if a <= b { (a, b) } else { (b, a) })
    };
    for (&a, &(b, speed, width)) in &designed {
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
    for (&a, &(b, _, _)) in &cabled {
        if a > b || designed.contains_key(&a) || designed.contains_key(&b) {
            continue;
        }
        if let Some((ea, eb)) = pair(a, b) {
            out.push(Difference::Extra { a: ea, b: eb });
        }
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use proptest::prelude::*;
    use weft_fabric::{FabricBuilder, NodeKind, NodeSpec};

    /// The differences, matching nodes as `weft diff` does by default.
    fn diffs(design: &Fabric, found: &Fabric) -> Vec<Difference> {
        compare(design, found, &Options::fabric(MatchMode::Auto))
            .unwrap()
            .differences
    }

    /// A cable: (node, port) at each end, and a recorded width.
    type Cable = ((usize, u8), (usize, u8), Option<Width>);

    /// A fabric of the nodes `(name, guid, kind, ports)` added in `order`, and `cables`.
    fn build(nodes: &[(&str, u64, NodeKind, u8)], order: &[usize], cables: &[Cable]) -> Fabric {
        let mut b = FabricBuilder::new("t");
        let mut ids = vec![NodeId(0); nodes.len()];
        for &i in order {
            let (name, guid, kind, ports) = nodes[i];
            ids[i] = b
                .add_node(NodeSpec::new(name, kind, Guid(guid), ports))
                .unwrap();
        }
        for &((na, pa), (nb, pb), width) in cables {
            let l = b
                .add_link(PortRef::new(ids[na], pa), PortRef::new(ids[nb], pb))
                .unwrap();
            b.set_link_rate(l, None, width);
        }
        b.finish()
    }

    const NODES: [(&str, u64, NodeKind, u8); 5] = [
        ("sw", 0x10, NodeKind::Switch, 8),
        ("h0", 0x20, NodeKind::Hca, 1),
        ("h1", 0x21, NodeKind::Hca, 1),
        ("h2", 0x22, NodeKind::Hca, 1),
        ("h3", 0x23, NodeKind::Hca, 1),
    ];
    const X4: Option<Width> = Some(Width::X4);

    fn design_cables() -> Vec<Cable> {
        (1..=4).map(|h| ((0, h as u8), (h, 1), X4)).collect()
    }

    fn design() -> Fabric {
        build(&NODES, &[0, 1, 2, 3, 4], &design_cables())
    }

    fn end(node: &str, guid: u64, port: u8) -> End {
        End {
            node: node.to_owned(),
            guid: Guid(guid),
            port: PortNum(port),
        }
    }

    #[test]
    fn identical_fabrics_differ_in_nothing() {
        assert_eq!(diffs(&design(), &design()), vec![]);
    }

    #[test]
    fn two_cables_swapped_are_two_miswired_cables_naming_both_ends() {
        let mut cables = design_cables();
        cables[0].0 = (0, 2);
        cables[1].0 = (0, 1);
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        let d = diffs(&design(), &found);
        assert_eq!(
            d,
            vec![
                Difference::Miswired {
                    a: end("h0", 0x20, 1),
                    b: end("sw", 0x10, 1),
                    a_joined: Some(end("sw", 0x10, 2)),
                    b_joined: Some(end("h1", 0x21, 1)),
                },
                Difference::Miswired {
                    a: end("h1", 0x21, 1),
                    b: end("sw", 0x10, 2),
                    a_joined: Some(end("sw", 0x10, 1)),
                    b_joined: Some(end("h0", 0x20, 1)),
                },
            ]
        );
        assert_eq!(
            d[0].to_string(),
            "cable h0/1 – sw/1 is miswired: h0/1 is joined to sw/2, sw/1 to h1/1"
        );
    }

    #[test]
    fn a_cable_removed_is_one_missing_cable() {
        let mut cables = design_cables();
        cables.remove(2);
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        assert_eq!(
            diffs(&design(), &found),
            vec![Difference::Missing {
                a: end("h2", 0x22, 1),
                b: end("sw", 0x10, 3),
            }]
        );
    }

    #[test]
    fn a_cable_at_1x_is_one_width_difference() {
        let mut cables = design_cables();
        cables[3].2 = Some(Width::X1);
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        let d = diffs(&design(), &found);
        assert_eq!(
            d,
            vec![Difference::Width {
                a: end("h3", 0x23, 1),
                b: end("sw", 0x10, 4),
                expected: Width::X4,
                found: Width::X1,
            }]
        );
        assert_eq!(
            d[0].to_string(),
            "cable h3/1 – sw/4 is 1x wide, the design says 4x"
        );
        // Unrecorded in the design: its ports' widths (4x by default) are expected.
        let unrecorded = build(&NODES, &[0, 1, 2, 3, 4], &[((0, 4), (4, 1), None)]);
        let narrow = build(
            &NODES,
            &[0, 1, 2, 3, 4],
            &[((0, 4), (4, 1), Some(Width::X1))],
        );
        assert_eq!(diffs(&unrecorded, &narrow).len(), 1);
        // Unrecorded where found: not compared.
        cables[3].2 = None;
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        assert_eq!(diffs(&design(), &found), vec![]);
    }

    #[test]
    fn a_cable_moved_to_a_free_port_is_miswired_and_an_extra_cable_is_extra() {
        let mut cables = design_cables();
        cables[0].0 = (0, 5); // h0 moved from sw/1 to sw/5
        cables.push(((0, 6), (0, 7), None)); // a loop between two free ports
        let found = build(&NODES, &[0, 1, 2, 3, 4], &cables);
        assert_eq!(
            diffs(&design(), &found),
            vec![
                Difference::Miswired {
                    a: end("h0", 0x20, 1),
                    b: end("sw", 0x10, 1),
                    a_joined: Some(end("sw", 0x10, 5)),
                    b_joined: None,
                },
                Difference::Extra {
                    a: end("sw", 0x10, 6),
                    b: end("sw", 0x10, 7),
                },
            ]
        );
    }

    #[test]
    fn nodes_match_by_guid_else_by_name_else_by_position() {
        let mut nodes = NODES;
        nodes[1].0 = "renamed"; // same GUID: matched
        nodes[2].1 = 0x99; // same name: matched
        nodes[3] = ("other", 0x98, NodeKind::Hca, 1); // neither: at h2's place
        let found = build(&nodes, &[4, 3, 2, 1, 0], &design_cables());
        let c = compare(&design(), &found, &Options::fabric(MatchMode::Auto)).unwrap();
        assert_eq!(c.differences, vec![]);
        assert_eq!(
            c.by_position,
            vec![Placed {
                design: "h2".to_owned(),
                found: NodeName {
                    node: "other".to_owned(),
                    guid: Guid(0x98)
                }
            }]
        );
        // By names only: the renamed node and `other` are not matched.
        let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
        assert_eq!(
            c.differences
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "node h0 (0x0000000000000020) is missing",
                "node h2 (0x0000000000000022) is missing",
                "node other (0x0000000000000098) is not in the design",
                "node renamed (0x0000000000000020) is not in the design",
                "cable h0/1 – sw/1 is miswired: h0/1 is joined to nothing, sw/1 to renamed/1",
                "cable h2/1 – sw/3 is miswired: h2/1 is joined to nothing, sw/3 to other/1",
            ]
        );
        assert_eq!(c.by_position, vec![]);
        // By GUIDs only: h1's GUID changed.
        let c = compare(&design(), &found, &Options::fabric(MatchMode::Guids)).unwrap();
        assert_eq!(
            c.differences
                .iter()
                .filter(|d| d.kind() == "missing_node")
                .count(),
            2
        );
    }

    #[test]
    fn a_name_matches_whole_else_its_first_word_and_two_matches_are_an_error() {
        let mut nodes = NODES;
        nodes[1].0 = "h0 HCA-1"; // first word
        nodes[2].0 = "h1"; // whole
        nodes[3].0 = "h2x HCA-1"; // neither: `h2x` is not `h2`
        let found = build(&nodes, &[0, 1, 2, 3, 4], &design_cables());
        let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
        let text: Vec<String> = c.differences.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "node h2 (0x0000000000000022) is missing",
                "node h2x HCA-1 (0x0000000000000022) is not in the design",
                "cable h2/1 – sw/3 is miswired: h2/1 is joined to nothing, sw/3 to h2x HCA-1/1",
            ]
        );
        // A whole name wins over a first word.
        let mut both = NODES.to_vec();
        both.push(("h0 HCA-2", 0x30, NodeKind::Hca, 1));
        let found = build(&both, &[0, 1, 2, 3, 4, 5], &design_cables());
        let c = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap();
        assert_eq!(c.differences.len(), 1, "{:?}", c.differences);
        // Two first words: an error naming both.
        let mut two = NODES.to_vec();
        two[1].0 = "h0 HCA-1";
        two.push(("h0 HCA-2", 0x30, NodeKind::Hca, 1));
        let found = build(&two, &[0, 1, 2, 3, 4, 5], &design_cables());
        let e = compare(&design(), &found, &Options::fabric(MatchMode::Names)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the design's `h0` matches two nodes by name, `h0 HCA-1` and `h0 HCA-2`"
        );
    }

    /// A two-level fabric: spine `s` (ports 1–4 to leaves' 33, 34), leaves `l0`, `l1`, each
    /// with hosts on ports 1 and 2; nodes named with `prefix`, GUIDs from `base`.
    fn two_level(prefix: &str, base: u64, skip: &[usize]) -> Fabric {
        let names: Vec<String> = ["s", "l0", "l1", "h0", "h1", "h2", "h3"]
            .iter()
            .map(|n| format!("{prefix}{n}"))
            .collect();
        let nodes: Vec<(&str, u64, NodeKind, u8)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let kind = if i < 3 {
                    NodeKind::Switch
                } else {
                    NodeKind::Hca
                };
                (
                    n.as_str(),
                    base + i as u64,
                    kind,
                    if i < 3 { 36 } else { 1 },
                )
            })
            .collect();
        let cables: Vec<Cable> = [
            ((0, 1), (1, 33)),
            ((0, 2), (2, 33)),
            ((0, 3), (1, 34)),
            ((0, 4), (2, 34)),
            ((1, 1), (3, 1)),
            ((1, 2), (4, 1)),
            ((2, 1), (5, 1)),
            ((2, 2), (6, 1)),
        ]
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(_, (a, b))| (a, b, X4))
        .collect();
        build(&nodes, &(0..7).collect::<Vec<_>>(), &cables)
    }

    #[test]
    fn a_renamed_fabric_matches_by_position() {
        let design = two_level("", 0x100, &[]);
        let renamed = two_level("vendor-", 0x900, &[]);
        let c = compare(&design, &renamed, &Options::fabric(MatchMode::Position)).unwrap();
        assert_eq!(c.differences, vec![]);
        let pairs: Vec<(String, String)> = c
            .by_position
            .iter()
            .map(|p| (p.design.clone(), p.found.node.clone()))
            .collect();
        let want: Vec<(String, String)> = ["h0", "h1", "h2", "h3", "l0", "l1", "s"]
            .iter()
            .map(|n| ((*n).to_owned(), format!("vendor-{n}")))
            .collect();
        assert_eq!(pairs, want);
        // Every design node, with the found node it is.
        let names: Vec<(String, String)> = c.found_names.clone().into_iter().collect();
        assert_eq!(names, want);
        // By names alone nothing matches: every node and cable missing and extra.
        let c = compare(&design, &renamed, &Options::fabric(MatchMode::Names)).unwrap();
        assert_eq!(c.differences.len(), 7 + 7 + 8 + 8, "{:?}", c.differences);
        assert!(c.found_names.is_empty());
    }

    #[test]
    fn position_extends_from_a_named_node_through_a_fabric_that_differs() {
        // The spine keeps its name; everything else renamed; l1's second uplink removed.
        let design = two_level("", 0x100, &[]);
        let mut found = two_level("vendor-", 0x900, &[3]);
        let mut b = FabricBuilder::new("t");
        let mut ids = Vec::new();
        for n in found.nodes() {
            let mut spec = n.spec.clone();
            if spec.name == "vendor-s" {
                spec.name = "s".to_owned();
            }
            ids.push(b.add_node(spec).unwrap());
        }
        for l in found.links() {
            let id = b
                .add_link(
                    PortRef::new(ids[l.a.node.index()], l.a.port.0),
                    PortRef::new(ids[l.b.node.index()], l.b.port.0),
                )
                .unwrap();
            b.set_link_rate(id, l.speed, l.width);
        }
        found = b.finish();
        let c = compare(&design, &found, &Options::fabric(MatchMode::Auto)).unwrap();
        assert_eq!(
            c.differences
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["cable l1/34 – s/4 is missing"]
        );
        assert_eq!(c.by_position.len(), 6);
        // From nothing, the structures differ: no node's place is unique.
        let found = two_level("vendor-", 0x900, &[3]);
        let e = compare(&design, &found, &Options::fabric(MatchMode::Position)).unwrap_err();
        assert_eq!(e, MatchError::NoPosition);
    }

    #[test]
    fn a_node_at_two_places_is_an_error() {
        // The design cables sw/1 – t/1 and sw/2 – t/2; the found fabric sw/1 – x/1 and
        // sw/2 – y/2: `t` is at `x`'s place through one cable and at `y`'s through the other.
        let dn = [
            ("sw", 0x10, NodeKind::Switch, 8),
            ("t", 0x11, NodeKind::Switch, 8),
        ];
        let design = build(&dn, &[0, 1], &[((0, 1), (1, 1), X4), ((0, 2), (1, 2), X4)]);
        let fnodes = [
            ("sw", 0x10, NodeKind::Switch, 8),
            ("x", 0x21, NodeKind::Switch, 8),
            ("y", 0x22, NodeKind::Switch, 8),
        ];
        let found = build(
            &fnodes,
            &[0, 1, 2],
            &[((0, 1), (1, 1), X4), ((0, 2), (2, 2), X4)],
        );
        let e = compare(&design, &found, &Options::fabric(MatchMode::Auto)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the design's `t` is at the place of two found nodes, `x` (through sw/1) and `y` (through sw/2)"
        );
    }

    #[test]
    fn a_down_link_found_is_a_missing_cable() {
        let mut b = FabricBuilder::new("t");
        let s = b
            .add_node(NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 8))
            .unwrap();
        let h = b
            .add_node(NodeSpec::new("h0", NodeKind::Hca, Guid(0x20), 1))
            .unwrap();
        let l = b.add_link(PortRef::new(s, 1), PortRef::new(h, 1)).unwrap();
        let design = b.fabric().clone();
        b.set_link_down(l);
        let found = b.finish();
        assert_eq!(diffs(&design, &found).len(), 1);
        assert_eq!(diffs(&design, &found)[0].kind(), "missing");
    }

    /// A random fabric: `n` switches of 8 ports, cables between free ports.
    fn random_fabric() -> impl Strategy<Value = (usize, Vec<Cable>, Vec<usize>)> {
        (2usize..8).prop_flat_map(|n| {
            let cables = proptest::collection::vec(
                (
                    (0..n, 1u8..=8),
                    (0..n, 1u8..=8),
                    proptest::option::of(0u64..3),
                ),
                0..24,
            );
            let order = Just((0..n).collect::<Vec<_>>()).prop_shuffle();
            (Just(n), cables, order).prop_map(|(n, raw, order)| {
                let mut used = std::collections::BTreeSet::new();
                let mut cables = Vec::new();
                for (a, b, w) in raw {
                    if a == b || used.contains(&a) || used.contains(&b) {
                        continue;
                    }
                    used.insert(a);
                    used.insert(b);
                    let w = w.and_then(|w| Width::from_lanes(1 << w));
                    cables.push((a, b, w));
                }
                (n, cables, order)
            })
        })
    }

    proptest! {
        #[test]
        fn a_fabric_compared_with_itself_in_another_order_differs_in_nothing(
            (n, cables, order) in random_fabric()
        ) {
            let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
            let nodes: Vec<(&str, u64, NodeKind, u8)> = names
                .iter()
                .enumerate()
                .map(|(i, s)| (s.as_str(), 0x100 + i as u64, NodeKind::Switch, 8))
                .collect();
            let design = build(&nodes, &(0..n).collect::<Vec<_>>(), &cables);
            let mut reversed = cables.clone();
            reversed.reverse();
            let found = build(&nodes, &order, &reversed);
            prop_assert_eq!(diffs(&design, &found), vec![]);
        }

        #[test]
        fn a_fabric_with_k_cables_swapped_differs_in_exactly_those_swaps(
            (n, cables, _) in random_fabric(),
            k in 0usize..6,
            seed in any::<u64>(),
        ) {
            let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
            let nodes: Vec<(&str, u64, NodeKind, u8)> = names
                .iter()
                .enumerate()
                .map(|(i, s)| (s.as_str(), 0x100 + i as u64, NodeKind::Switch, 8))
                .collect();
            let order: Vec<usize> = (0..n).collect();
            let design = build(&nodes, &order, &cables);
            // k disjoint pairs of cables (chosen by a seeded shuffle), each pair's far ends
            // exchanged.
            let mut idx: Vec<usize> = (0..cables.len()).collect();
            let mut rng = weft_fabric::rng::SplitMix64(seed);
            for i in (1..idx.len()).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                idx.swap(i, j);
            }
            let k = k.min(cables.len() / 2);
            let mut swapped = cables.clone();
            let end = |(node, port): (usize, u8)| End {
                node: names[node].clone(),
                guid: Guid(0x100 + node as u64),
                port: PortNum(port),
            };
            let mut expected = Vec::new();
            for p in 0..k {
                let (x, y) = (idx[2 * p], idx[2 * p + 1]);
                let ((a1, b1, _), (a2, b2, _)) = (cables[x], cables[y]);
                swapped[x].1 = b2;
                swapped[y].1 = b1;
                // Cable a1–b1: a1 now joined to b2, b1 to a2; cable a2–b2 the other way.
                for (a, b, a_to, b_to) in [(a1, b1, b2, a2), (a2, b2, b1, a1)] {
                    let (ea, eb) = (end(a), end(b));
                    let (ja, jb) = (Some(end(a_to)), Some(end(b_to)));
                    expected.push(if ea <= eb {
                        Difference::Miswired { a: ea, b: eb, a_joined: ja, b_joined: jb }
                    } else {
                        Difference::Miswired { a: eb, b: ea, a_joined: jb, b_joined: ja }
                    });
                }
            }
            expected.sort();
            let found = build(&nodes, &order, &swapped);
            // Every node keeps its GUID and name: each mode that uses them finds the swaps.
            for mode in [MatchMode::Auto, MatchMode::Names, MatchMode::Guids] {
                let c = compare(&design, &found, &Options::fabric(mode)).unwrap();
                prop_assert_eq!(&c.differences, &expected, "{}", mode.as_str());
                prop_assert_eq!(&c.by_position, &vec![]);
            }
        }
    }
}
