//! QoS classes onto service levels and virtual lanes.
//!
//! Each class has lanes (one; `vftree(maxvl: N)`: N; `dftree`: a fast and a slow one) and the
//! routing has layers (1, or what the `layered` engine needed). A class takes `lanes × layers`
//! consecutive SLs, from its `sl = N` or after the previous class, and as many consecutive VLs
//! of the budget, from its `vl = N` or the lowest free ones. Lane `l`, layer `y` of a class is
//! its SL `first + l × layers + y`, which every port maps to VL `first VL + l × layers + y`: a
//! layer's routes never share a VL with another layer's, in any class or lane.
//!
//! [`apply`] writes what this means into a state: the SL→VL table of every switch (one map
//! for every input and output port pair) and every end port, a VL arbitration table on every
//! cabled port that schedules every VL used (each class's VLs, or with no classes declared
//! the routing layers' VLs at weight 1), the data VLs the SM operates ([`max_vls`]), and the
//! path SLs of every (source, destination) pair — the set of the SLs each class uses for
//! it, since a pair may carry every class's traffic.

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use crate::routing::Lanes;
use crate::{ClassMatch, LaneScheme, QosClass};
use weft_fabric::{FabricState, Lid, LidRange, NodeId, PortRef, SlSet, SwitchSls, VlArb, VlWeight};

/// The high-priority limit written when some class has `priority = high`: 4 × 4 KB of
/// high-priority data before a low-priority packet gets its turn (OpenSM's documented example
/// value; 0 would allow a single packet, 255 no limit).
pub const HIGH_LIMIT: u8 = 4;

/// Two classes matching one service ID: OpenSM's QoS policy gives a PathRecord query to the
/// first match rule that fits it (weft writes the classes' rules in declaration order), so
/// the later class would silently lose that traffic. Identical, nested and partly
/// overlapping ranges are all refused: a service ID gets one SL, so no two classes can share
/// it. One error per pair of classes, at the later class's range, naming both classes and
/// both ranges.
pub fn overlapping_service_ids(classes: &[QosClass], source: SourceId) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (i, j, x, y) in overlapping_pairs(classes) {
        let (Some(earlier), Some(later)) = (classes.get(i), classes.get(j)) else {
            continue;
        };
        let (lo, hi) = (x.first.max(y.first), x.last.min(y.last));
        let ids = if lo == hi {
            format!("service ID {lo:#x}")
        } else {
            format!("service IDs {lo:#x}..={hi:#x}")
        };
        out.push(
            Diagnostic::error(
                Code::OverlappingServiceIds,
                format!(
                    "classes `{}` and `{}` both match {ids}",
                    earlier.name, later.name
                ),
            )
            .label(
                source,
                y.span,
                format!("`{}` matches {}", later.name, range_text(&y)),
            )
            .label(
                source,
                x.span,
                format!("`{}` matches {}", earlier.name, range_text(&x)),
            )
            .help(format!(
                "OpenSM gives a service ID to the first class whose rule matches it, so \
                 `{}` would never carry this traffic; give each service ID to one class",
                later.name
            )),
        );
    }
    out
}

/// Every pair of classes (earlier, later) that match a common service ID, with the first
/// two ranges (the earlier's, the later's) that share one.
fn overlapping_pairs(
    classes: &[QosClass],
) -> Vec<(usize, usize, crate::ServiceIds, crate::ServiceIds)> {
    let sorted: Vec<Vec<crate::ServiceIds>> = classes
        .iter()
        .map(|c| {
            let mut v = c.matches.service_ids.clone();
            v.sort_by_key(|r| (r.first, r.last));
            v
        })
        .collect();
    let mut out = Vec::new();
    for (j, b) in sorted.iter().enumerate() {
        for (i, a) in sorted.iter().enumerate().take(j) {
            if let Some((x, y)) = first_overlap(a, b) {
                out.push((i, j, *x, *y));
            }
        }
    }
    out
}

fn range_text(r: &crate::ServiceIds) -> String {
    if r.first == r.last {
        format!("{:#x}", r.first)
    } else {
        format!("{:#x}..={:#x}", r.first, r.last)
    }
}

/// The first pair of ranges, one of each list (each sorted by first ID), that share an ID.
fn first_overlap<'a>(
    a: &'a [crate::ServiceIds],
    b: &'a [crate::ServiceIds],
) -> Option<(&'a crate::ServiceIds, &'a crate::ServiceIds)> {
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        if x.last < y.first {
            i += 1;
        } else if y.last < x.first {
            j += 1;
        } else {
            return Some((x, y));
        }
    }
    None
}

/// One class placed on SLs and VLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassLanes {
    /// The class name (`default` for the implicit class).
    pub name: String,
    /// Its lane scheme.
    pub scheme: LaneScheme,
    /// First SL.
    pub sl: u8,
    /// First VL.
    pub vl: u8,
    /// Its VL arbitration weight, for the class as a whole.
    pub weight: u8,
    /// High priority.
    pub high: bool,
    /// The traffic that is this class.
    pub matches: ClassMatch,
}

impl ClassLanes {
    /// The SL of lane `lane` and layer `layer` when routes have `layers` layers.
    pub fn sl_of(&self, lane: u8, layer: u8, layers: u8) -> u8 {
        self.sl + lane * layers + layer
    }

    /// SLs (and VLs) the class takes.
    pub fn width(&self, layers: u8) -> u8 {
        self.scheme.lanes() * layers
    }
}

/// Every class placed, and the SL→VL map all ports share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneMap {
    /// Routing layers.
    pub layers: u8,
    /// Classes in declaration order.
    pub classes: Vec<ClassLanes>,
    /// VL per SL (15: the SL is not used, packets on it are dropped).
    pub sl2vl: [u8; 16],
    /// The VL budget it was placed in.
    pub budget: u8,
    /// Whether the description declared classes (else one implicit class on SL 0).
    pub declared: bool,
}

impl LaneMap {
    /// Distinct data VLs used.
    pub fn vls_used(&self) -> u8 {
        let mut mask = 0u16;
        for &v in self.sl2vl.iter().filter(|&&v| v != 15) {
            mask |= 1 << v;
        }
        mask.count_ones() as u8
    }

    /// Data VLs a port must operate to carry them: the highest used, plus one.
    pub fn vls(&self) -> u8 {
        self.sl2vl
            .iter()
            .filter(|&&v| v != 15)
            .map(|&v| v + 1)
            .max()
            .unwrap_or(1)
    }

    /// Whether every route stays on SL 0 and VL 0 (no tables to write).
    pub fn trivial(&self) -> bool {
        !self.declared && self.layers == 1
    }
}

/// Lanes all classes take together: the layered engine may use `budget / lanes` layers.
pub fn total_lanes(classes: &[QosClass]) -> u8 {
    classes
        .iter()
        .map(|c| c.lanes.lanes())
        .fold(0u8, u8::saturating_add)
        .max(1)
}

/// Places the classes on SLs and VLs for routes of `layers` layers within `budget` VLs.
/// `budget_at` is where the budget was said, for the error.
pub fn allocate(
    classes: &[QosClass],
    layers: u8,
    budget: u8,
    source: SourceId,
    budget_at: (crate::Span, String),
) -> Result<LaneMap, Diagnostic> {
    let implicit = [QosClass {
        name: "default".into(),
        span: budget_at.0,
        sl: None,
        vl: None,
        lanes: LaneScheme::Single,
        lanes_span: None,
        weight: 1,
        high: false,
        matches: ClassMatch::default(),
    }];
    let declared = !classes.is_empty();
    let list = if declared { classes } else { &implicit[..] };
    let mut map = LaneMap {
        layers,
        classes: Vec::new(),
        sl2vl: [15; 16],
        budget,
        declared,
    };
    // Which class holds each SL and VL.
    let mut sl_owner: [Option<usize>; 16] = [None; 16];
    let mut vl_owner: [Option<usize>; 15] = [None; 15];
    let mut next_sl = 0u8;
    let name_of = |i: usize| list.get(i).map_or("?", |c| c.name.as_str());
    let span_of = |i: usize| list.get(i).map_or(budget_at.0, |c| c.span);
    let owner = |t: &[Option<usize>], x: u8| t.get(usize::from(x)).copied().flatten();
    let total: u32 = list
        .iter()
        .map(|c| u32::from(c.lanes.lanes()) * u32::from(layers))
        .sum();
    for (i, c) in list.iter().enumerate() {
        let width = c.lanes.lanes().saturating_mul(layers);
        let sl = c.sl.map_or(next_sl, |(s, _)| s);
        let at = c.sl.map_or(c.span, |(_, sp)| sp);
        if u32::from(sl) + u32::from(width) > 16 {
            return Err(Diagnostic::error(
                Code::VlBudgetExceeded,
                format!(
                    "class `{}` needs {width} SL(s) ({} lane(s) × {layers} layer(s)) from SL {sl}, past SL 15",
                    c.name,
                    c.lanes.lanes()
                ),
            )
            .label(source, at, format!("SLs {sl}..={}", u32::from(sl) + u32::from(width) - 1))
            .help(format!(
                "the classes need {total} SLs in all and there are 16; start it lower with \
                 `sl = N`, or give classes fewer lanes"
            )));
        }
        if let Some((shared, other)) =
            (sl..sl + width).find_map(|s| owner(&sl_owner, s).map(|o| (s, o)))
        {
            return Err(Diagnostic::error(
                Code::VlBudgetExceeded,
                format!(
                    "classes `{}` and `{}` both use SL {shared}",
                    name_of(other),
                    c.name
                ),
            )
            .label(source, at, format!("`{}` takes SLs {sl}..={}", c.name, sl + width - 1))
            .label(source, span_of(other), format!("`{}` declared here", name_of(other)))
            .help("move one with `sl = N`, or remove the `sl` settings and let classes follow each other"));
        }
        let vl = match c.vl {
            Some((v, sp)) => {
                // Every VL the class takes from `v` on, not only the first.
                if let Some((shared, other)) =
                    (v..v.saturating_add(width)).find_map(|x| owner(&vl_owner, x).map(|o| (x, o)))
                {
                    return Err(Diagnostic::error(
                        Code::VlBudgetExceeded,
                        format!(
                            "classes `{}` and `{}` both use VL {shared}",
                            name_of(other),
                            c.name
                        ),
                    )
                    .label(source, sp, vl_span(v, width))
                    .label(
                        source,
                        span_of(other),
                        format!("`{}` declared here", name_of(other)),
                    )
                    .help("give each class its own VLs"));
                }
                if v + width > budget {
                    return Err(Diagnostic::error(
                        Code::VlBudgetExceeded,
                        format!(
                            "class `{}` is pinned to VL {v}{} but the budget is {budget} data VL(s) (VLs 0..={})",
                            c.name,
                            if width > 1 { format!(" and takes {width} VLs") } else { String::new() },
                            budget - 1
                        ),
                    )
                    .label(source, sp, format!("VL {v}"))
                    .label(source, budget_at.0, budget_at.1.clone())
                    .help("pin it to a VL within the budget, or raise `vls { budget = … }`"));
                }
                v
            }
            None => {
                let free = (0..budget.saturating_sub(width.saturating_sub(1))).find(|&v| {
                    (v..v + width)
                        .all(|w| vl_owner.get(usize::from(w)).is_some_and(Option::is_none))
                });
                let Some(v) = free else {
                    let used = vl_owner.iter().filter(|o| o.is_some()).count();
                    return Err(Diagnostic::error(
                        Code::VlBudgetExceeded,
                        format!(
                            "class `{}` needs {width} VL(s) ({} lane(s) × {layers} layer(s)) but only {} of the {budget} budgeted are left",
                            c.name,
                            c.lanes.lanes(),
                            usize::from(budget).saturating_sub(used)
                        ),
                    )
                    .label(source, c.lanes_span.unwrap_or(c.span), format!("{width} VL(s)"))
                    .label(source, budget_at.0, budget_at.1.clone())
                    .help(format!(
                        "the classes need {total} VLs in all; raise `vls {{ budget = … }}` (up to the ports' VLCap) or give classes fewer lanes"
                    )));
                };
                v
            }
        };
        for k in 0..width {
            if let Some(o) = sl_owner.get_mut(usize::from(sl + k)) {
                *o = Some(i);
            }
            if let Some(o) = vl_owner.get_mut(usize::from(vl + k)) {
                *o = Some(i);
            }
            if let Some(v) = map.sl2vl.get_mut(usize::from(sl + k)) {
                *v = vl + k;
            }
        }
        next_sl = sl + width;
        map.classes.push(ClassLanes {
            name: c.name.clone(),
            scheme: c.lanes,
            sl,
            vl,
            weight: c.weight,
            high: c.high,
            matches: c.matches.clone(),
        });
    }
    Ok(map)
}

/// The lane Algorithm 1 ([`vftree_matrix`]) gives the pair of leaves `a`, `b` over `maxvl`
/// lanes, without the matrix: each pair `s < d` is set once, while source `s` is processed, to
/// `s`'s start plus the number of leaves between them, and the other half mirrors it.
pub fn vftree_lane(a: usize, b: usize, maxvl: u8) -> u8 {
    let m = usize::from(maxvl.max(1));
    if a == b {
        return 0;
    }
    let (s, d) = (a.min(b), a.max(b));
    let start = if ((s * 2) / m) % 2 == 1 {
        (s * 2) % m + 1
    } else {
        (s * 2) % m
    };
    ((start + d - s - 1) % m) as u8
}

/// `VL v` or `VLs v..=last` for a class taking `width` VLs from `v`.
fn vl_span(v: u8, width: u8) -> String {
    if width > 1 {
        format!("VLs {v}..={}", v + width - 1)
    } else {
        format!("VL {v}")
    }
}

/// Paper III's Algorithm 1: the lane of every (source leaf, destination leaf) pair of `n`
/// leaves over `maxvl` lanes. Symmetric; a leaf's own traffic is on lane 0.
pub fn vftree_matrix(n: usize, maxvl: u8) -> Vec<Vec<u8>> {
    let m = usize::from(maxvl.max(1));
    // Row-major, `None` until set.
    let mut vl: Vec<Option<u8>> = vec![None; n * n];
    let mut set = |a: usize, b: usize, v: usize| {
        if let Some(slot) = vl.get_mut(a * n + b).filter(|s| s.is_none()) {
            *slot = Some(v as u8);
        }
    };
    for s in 0..n {
        // A starting lane per source so the sequences of consecutive sources overlap less.
        let mut v = if ((s * 2) / m) % 2 == 1 {
            (s * 2) % m + 1
        } else {
            (s * 2) % m
        };
        for d in s + 1..n {
            set(s, d, v);
            set(d, s, v);
            v = (v + 1) % m;
        }
        // Intra-leaf traffic on the first lane.
        set(s, s, 0);
    }
    vl.chunks(n.max(1))
        .take(n)
        .map(|row| row.iter().map(|v| v.unwrap_or(0)).collect())
        .collect()
}

/// The leaf switches of a fabric in declaration order: switches with an end node cabled to
/// them (down or not), with their index among the leaves.
pub fn leaves(state: &FabricState) -> Vec<Option<u32>> {
    let f = &state.fabric;
    let mut leaf = vec![false; f.nodes().len()];
    for l in f.links() {
        for (me, peer) in [(l.a, l.b), (l.b, l.a)] {
            if f.node(me.node).is_switch() && !f.node(peer.node).is_switch() {
                if let Some(l) = leaf.get_mut(me.node.index()) {
                    *l = true;
                }
            }
        }
    }
    let mut next = 0u32;
    leaf.into_iter()
        .map(|is| {
            is.then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// Writes the lane map into `state`: SL→VL tables, VL arbitration and path SLs (`lanes`: the
/// routing's layer per source switch and LID, when it has layers).
pub fn apply(state: &mut FabricState, map: &LaneMap, lanes: Option<&Lanes>) {
    if map.trivial() {
        return;
    }
    // One map for every (input, output) port pair of every switch, and every end port's
    // injection.
    for sw in state.switches.values_mut() {
        sw.sl2vl.clear();
        sw.sl2vl_all = Some(map.sl2vl);
    }
    let ends: Vec<NodeId> = state
        .fabric
        .node_ids()
        .filter(|&id| !state.fabric.node(id).is_switch())
        .collect();
    for id in ends {
        state.set_node_injection(id, map.sl2vl);
    }
    state.max_vls = Some(max_vls(map));
    // Every VL a route may take is scheduled on every port that sends it: the classes' VLs,
    // or without classes the implicit one's (one per routing layer).
    let arb = vlarb(map);
    let cabled: Vec<PortRef> = state
        .fabric
        .node_ids()
        .flat_map(|id| {
            state
                .fabric
                .node(id)
                .ports
                .iter()
                .filter(|p| p.link.is_some())
                .map(move |p| PortRef::new(id, p.num.0))
        })
        .collect();
    for p in cabled {
        state.ports.entry(p).or_default().vlarb = Some(arb.clone());
    }
    path_sls(state, map, lanes);
}

/// The data VLs the SM is to operate on every port: the smallest PortInfo setting (1, 2, 4, 8
/// or 15 VLs) holding every VL used.
pub fn max_vls(map: &LaneMap) -> u8 {
    [1u8, 2, 4, 8, 15]
        .into_iter()
        .find(|&n| n >= map.vls())
        .unwrap_or(15)
}

/// OpenSM's `max_op_vls` for `n` data VLs (PortInfo:OperationalVLs: 1 = VL 0, 2 = VLs 0–1,
/// 3 = VLs 0–3, 4 = VLs 0–7, 5 = VLs 0–14).
fn op_vls_code(n: u8) -> u8 {
    match n {
        0 | 1 => 1,
        2 => 2,
        3 | 4 => 3,
        5..=8 => 4,
        _ => 5,
    }
}

/// The VL arbitration table every port gets: each class's VLs in its priority's table, its
/// weight split over them (rounded up).
fn vlarb(map: &LaneMap) -> VlArb {
    let mut arb = VlArb {
        high_limit: 0,
        high: Vec::new(),
        low: Vec::new(),
    };
    for c in &map.classes {
        let width = c.width(map.layers);
        let weight = c.weight.div_ceil(width.max(1)).max(1);
        let table = if c.high { &mut arb.high } else { &mut arb.low };
        for k in 0..width {
            table.push(VlWeight {
                vl: c.vl + k,
                weight,
            });
        }
    }
    if !arb.high.is_empty() {
        arb.high_limit = HIGH_LIMIT;
    }
    arb
}

/// What decides the SLs of a (source switch, destination LID) pair: the routing's layer for
/// it, and for vFtree classes the leaves at both ends.
struct Pairs<'a> {
    map: &'a LaneMap,
    lanes: Option<&'a Lanes>,
    /// Per node: its index among the leaves.
    leaf_of_node: Vec<Option<u32>>,
    /// Leaves.
    n_leaves: usize,
    /// Per class: its vFtree lanes (`maxvl`).
    vftree: Vec<Option<u8>>,
    /// Per LID: its owner.
    owners: Vec<Option<(NodeId, weft_fabric::PortNum)>>,
    /// Per LID: the leaf its owner sits on.
    dst_leaf: Vec<Option<u32>>,
}

impl<'a> Pairs<'a> {
    fn new(state: &FabricState, map: &'a LaneMap, lanes: Option<&'a Lanes>) -> Pairs<'a> {
        let leaf_of_node = leaves(state);
        let n_leaves = leaf_of_node.iter().flatten().count();
        let vftree = map
            .classes
            .iter()
            .map(|c| match c.scheme {
                LaneScheme::Vftree { maxvl } => Some(maxvl),
                _ => None,
            })
            .collect();
        let owners = state.lids.owners(&state.fabric);
        let dst_leaf = owners
            .iter()
            .map(|o| {
                let (n, p) = (*o)?;
                let sw = state.source_switch(PortRef::new(n, p.0))?;
                leaf_of_node.get(sw.index()).copied().flatten()
            })
            .collect();
        Pairs {
            map,
            lanes,
            leaf_of_node,
            n_leaves,
            vftree,
            owners,
            dst_leaf,
        }
    }

    /// Whether SLs differ between pairs toward one destination.
    fn per_pair(&self) -> bool {
        self.lanes.is_some() || self.vftree.iter().any(Option::is_some)
    }

    /// Whether switch `x`'s sources may send unlike the default.
    fn varies_from(&self, x: NodeId) -> bool {
        self.leaf_of_node
            .get(x.index())
            .copied()
            .flatten()
            .is_some()
            || self.lanes.is_some_and(|l| l.by_source.contains_key(&x))
    }

    /// The SLs class `c` uses from the sources at switch `x` toward `lid` (`None` for `x`: a
    /// source at no switch): the first is what the SA answers (dFtree: the fast lane), then
    /// the slow lane for dFtree.
    fn class_sls(&self, c: usize, x: Option<NodeId>, lid: usize) -> (u8, Option<u8>) {
        let layers = self.map.layers;
        let Some(class) = self.map.classes.get(c) else {
            return (0, None);
        };
        let layer = x
            .and_then(|x| self.lanes.and_then(|l| l.by_source.get(&x)))
            .and_then(|r| r.get(lid).copied())
            .unwrap_or(0);
        match class.scheme {
            LaneScheme::Single => (class.sl_of(0, layer, layers), None),
            LaneScheme::Dftree => (
                class.sl_of(0, layer, layers),
                Some(class.sl_of(1, layer, layers)),
            ),
            LaneScheme::Vftree { .. } => {
                let src_leaf = x.and_then(|x| self.leaf_of_node.get(x.index()).copied().flatten());
                let dst_leaf = self.dst_leaf.get(lid).copied().flatten();
                let lane = match (src_leaf, dst_leaf, self.vftree.get(c)) {
                    (Some(a), Some(b), Some(&Some(m))) => vftree_lane(a as usize, b as usize, m),
                    _ => 0,
                };
                (class.sl_of(lane, layer, layers), None)
            }
        }
    }

    /// Every SL any class uses from switch `x`'s sources toward `lid`.
    fn set(&self, x: Option<NodeId>, lid: usize) -> u16 {
        (0..self.map.classes.len())
            .map(|c| self.class_sls(c, x, lid))
            .fold(0u16, |s, (a, b)| s | 1 << a | b.map_or(0, |b| 1 << b))
    }
}

/// The path SLs: per (source switch, destination LID), the SLs of every class — its lane
/// for the pair (vFtree: from the leaves' matrix; dFtree: both) on the routes' layer. Ranges
/// equal to the default (what a source at no leaf sends on layer 0) are left to it.
fn path_sls(state: &mut FabricState, map: &LaneMap, lanes: Option<&Lanes>) {
    let pairs = Pairs::new(state, map, lanes);
    let default = pairs.set(None, 0);
    state.path_sl.default = SlSet(default);
    if !pairs.per_pair() {
        return;
    }
    let mut rows: Vec<SwitchSls> = Vec::new();
    for &x in state.switches.keys() {
        if !pairs.varies_from(x) {
            continue;
        }
        // Without layers a pair's set depends on the two leaves only: one per destination
        // leaf (the last entry for destinations at no leaf), worked out once per source.
        let by_leaf: Option<Vec<u16>> = pairs.lanes.is_none().then(|| {
            let n = pairs.n_leaves;
            let mut lid_of_leaf = vec![None; n + 1];
            for (lid, leaf) in pairs.dst_leaf.iter().enumerate() {
                let k = leaf.map_or(n, |l| l as usize);
                if let Some(slot) = lid_of_leaf.get_mut(k).filter(|s| s.is_none()) {
                    *slot = Some(lid);
                }
            }
            lid_of_leaf
                .iter()
                .map(|l| l.map_or(default, |lid| pairs.set(Some(x), lid)))
                .collect()
        });
        let leaves_n = by_leaf.as_ref().map_or(0, |b| b.len().saturating_sub(1));
        let mut open: Option<SwitchSls> = None;
        for (lid, o) in pairs.owners.iter().enumerate() {
            if o.is_none() || lid == 0 {
                continue;
            }
            let s = match &by_leaf {
                Some(b) => {
                    let k = pairs
                        .dst_leaf
                        .get(lid)
                        .copied()
                        .flatten()
                        .map_or(leaves_n, |l| l as usize);
                    b.get(k).copied().unwrap_or(default)
                }
                None => pairs.set(Some(x), lid),
            };
            let lid = Lid(lid as u16);
            match &mut open {
                Some(r) if r.sls.0 == s && u32::from(r.lids.hi.0) + 1 == u32::from(lid.0) => {
                    r.lids.hi = lid;
                }
                _ => {
                    if let Some(r) = open.take().filter(|r| r.sls.0 != default) {
                        rows.push(r);
                    }
                    open = Some(SwitchSls {
                        switch: x,
                        lids: LidRange::one(lid),
                        sls: SlSet(s),
                    });
                }
            }
        }
        if let Some(r) = open.take().filter(|r| r.sls.0 != default) {
            rows.push(r);
        }
    }
    state.path_sl.by_switch = rows;
}

/// OpenSM's QoS configuration for the lane map (`opensm -Q -F opensm.conf`): the SL→VL table
/// every port gets, the VL arbitration tables, the high-priority limit, and the operational
/// VLs to enable ([`max_vls`], as `max_op_vls` — what OpenSM sets PortInfo:OperationalVLs
/// from — and as `qos_max_vls`).
pub fn opensm_conf(map: &LaneMap, fabric: &str) -> String {
    let arb = vlarb(map);
    let list = |t: &[VlWeight]| -> String {
        if t.is_empty() {
            // An entry of weight 0 is skipped: an empty table.
            return "0:0".to_owned();
        }
        t.iter()
            .map(|w| format!("{}:{}", w.vl, w.weight))
            .collect::<Vec<_>>()
            .join(",")
    };
    let max_vls = max_vls(map);
    let mut out = format!(
        "# OpenSM QoS settings written by weft for fabric `{fabric}`; load with\n\
         # `opensm -Q -F opensm.conf` (SL→VL and VL arbitration are the same on every port).\n"
    );
    for c in &map.classes {
        let w = c.width(map.layers);
        out.push_str(&format!(
            "# class `{}`: SL {}..={} on VL {}..={}, {} priority, weight {}\n",
            c.name,
            c.sl,
            c.sl + w - 1,
            c.vl,
            c.vl + w - 1,
            if c.high { "high" } else { "low" },
            c.weight
        ));
    }
    out.push_str("qos TRUE\n");
    // `qos_max_vls` is documentation to OpenSM's core (only torus-2QoS reads it);
    // `max_op_vls` is what limits the operational VLs it sets on every link.
    out.push_str(&format!("max_op_vls {}\n", op_vls_code(max_vls)));
    out.push_str(&format!("qos_max_vls {max_vls}\n"));
    out.push_str(&format!("qos_high_limit {}\n", arb.high_limit));
    out.push_str(&format!("qos_vlarb_high {}\n", list(&arb.high)));
    out.push_str(&format!("qos_vlarb_low {}\n", list(&arb.low)));
    let sl2vl: Vec<String> = map.sl2vl.iter().map(u8::to_string).collect();
    out.push_str(&format!("qos_sl2vl {}\n", sl2vl.join(",")));
    out
}

/// The largest `qos-policy.conf` weft writes (bytes); past it OpenSM's parser would spend
/// longer than a sweep, and `state.json` holds every path SL anyway.
pub const QOS_POLICY_BYTES: usize = 64 << 20;

/// Why `qos-policy.conf` was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The file would exceed [`QOS_POLICY_BYTES`].
    #[error("it would exceed {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// A class's SL toward one destination switch's ports differs between them, which port
    /// groups by switch cannot say (no weft engine routes so).
    #[error("class `{class}` sends from `{from}` toward the ports at `{to}` on more than one SL")]
    Uneven {
        /// The class.
        class: String,
        /// The source switch.
        from: String,
        /// The destination switch.
        to: String,
    },
}

/// OpenSM's QoS policy (`opensm -Q -Y qos-policy.conf`) under which its SA answers every
/// PathRecord with the SL weft chose: a port group per switch (its port 0 and the end ports
/// cabled to it), a QoS level per SL used, and match rules — per class in declaration order
/// (its `match` criteria), per source switch whose SLs vary, the destination switches that
/// take each SL other than the class's usual one, then the class's usual SL. The first class
/// without `match` (else the first class) takes the rest, and its usual SL is `DEFAULT`.
/// dFtree answers the fast lane (hosts move flows to the slow one themselves).
pub fn qos_policy(
    state: &FabricState,
    map: &LaneMap,
    lanes: Option<&Lanes>,
) -> Result<String, PolicyError> {
    use std::fmt::Write as _;
    let pairs = Pairs::new(state, map, lanes);
    let f = &state.fabric;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# OpenSM QoS policy written by weft for fabric `{}`: with `opensm -Q -Y qos-policy.conf`\n\
         # the SA answers PathRecords with the SLs weft verified.",
        f.name
    );
    // Port groups: per switch, its port 0 and the end ports cabled to it.
    let group = |x: NodeId| format!("weft-{:016x}", f.node(x).guid().0);
    let mut members: std::collections::BTreeMap<NodeId, Vec<u64>> = Default::default();
    for (&n, ports) in &state.lids.base {
        for &p in ports.keys() {
            let src = PortRef::new(n, p.0);
            let Some(x) = state.source_switch(src) else {
                continue;
            };
            let guid = f
                .node(n)
                .port(p)
                .map_or(f.node(n).guid().0, |port| port.guid.0);
            let group = members.entry(x).or_default();
            group.push(guid);
            // The VFs behind the port send from the same switch (their own GUIDs).
            group.extend(
                state
                    .lids
                    .vports
                    .iter()
                    .filter(|v| v.host == src)
                    .map(|v| v.guid.0),
            );
        }
    }
    out.push_str("\nport-groups\n");
    for (x, guids) in &mut members {
        guids.sort_unstable();
        guids.dedup();
        let list: Vec<String> = guids.iter().map(|g| format!("{g:#018x}")).collect();
        let _ = write!(
            out,
            "    port-group\n        name: {}\n        use: {}\n        port-guid: {}\n    end-port-group\n",
            group(*x),
            f.node(*x).name(),
            list.join(", ")
        );
    }
    out.push_str("end-port-groups\n");
    let default_class = map
        .classes
        .iter()
        .position(|c| c.matches.is_empty())
        .unwrap_or(0);
    let usual = |c: usize| pairs.class_sls(c, None, 0).0;
    out.push_str("\nqos-levels\n");
    // A level per SL some class owns.
    let used = map
        .sl2vl
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 15)
        .fold(0u16, |m, (sl, _)| m | 1 << sl);
    let _ = write!(
        out,
        "    qos-level\n        name: DEFAULT\n        sl: {}\n    end-qos-level\n",
        usual(default_class)
    );
    for sl in (0..16u8).filter(|s| used & (1 << s) != 0) {
        let _ = write!(
            out,
            "    qos-level\n        name: SL{sl}\n        sl: {sl}\n    end-qos-level\n"
        );
    }
    out.push_str("end-qos-levels\n\nqos-match-rules\n");
    // A tenant's traffic (on its P_Key) is its class's, before any other rule.
    for p in &state.partitions {
        let Some(c) = &p.class else { continue };
        if let Some(sl) = (0..16u8).find(|&sl| c.sls.0 & (1 << sl) != 0) {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: tenant {} (class {})\n        pkey: {:#06x}\n        qos-level-name: SL{sl}\n    end-qos-match-rule\n",
                p.name, c.name, p.pkey
            );
        }
    }
    // Per destination switch: one LID of each port there (the SLs are by switch).
    let mut by_dst: std::collections::BTreeMap<NodeId, Vec<usize>> = Default::default();
    for (lid, o) in pairs.owners.iter().enumerate() {
        if let Some((n, p)) = o {
            if let Some(y) = state.source_switch(PortRef::new(*n, p.0)) {
                by_dst.entry(y).or_default().push(lid);
            }
        }
    }
    let order: Vec<usize> = (0..map.classes.len())
        .filter(|&c| c != default_class)
        .chain(std::iter::once(default_class))
        .collect();
    for c in order {
        let Some(class) = map.classes.get(c) else {
            continue;
        };
        let mut criteria = String::new();
        if !class.matches.service_ids.is_empty() {
            let ids: Vec<String> = class
                .matches
                .service_ids
                .iter()
                .map(|r| {
                    if r.first == r.last {
                        format!("{:#x}", r.first)
                    } else {
                        format!("{:#x}-{:#x}", r.first, r.last)
                    }
                })
                .collect();
            let _ = writeln!(criteria, "        service-id: {}", ids.join(", "));
        }
        let common = usual(c);
        if pairs.per_pair() {
            for &x in members.keys().filter(|&&x| pairs.varies_from(x)) {
                // Destination switches per SL other than the usual one.
                let mut by_sl: std::collections::BTreeMap<u8, Vec<NodeId>> = Default::default();
                for (&y, lids) in &by_dst {
                    let mut sls = lids.iter().map(|&l| pairs.class_sls(c, Some(x), l).0);
                    let Some(first) = sls.next() else { continue };
                    if sls.any(|s| s != first) {
                        return Err(PolicyError::Uneven {
                            class: class.name.clone(),
                            from: f.node(x).name().to_owned(),
                            to: f.node(y).name().to_owned(),
                        });
                    }
                    if first != common {
                        by_sl.entry(first).or_default().push(y);
                    }
                }
                for (sl, ys) in by_sl {
                    let names: Vec<String> = ys.iter().map(|&y| group(y)).collect();
                    let _ = write!(
                        out,
                        "    qos-match-rule\n        use: class {} from {}\n{criteria}        source: {}\n        destination: {}\n        qos-level-name: SL{sl}\n    end-qos-match-rule\n",
                        class.name,
                        f.node(x).name(),
                        group(x),
                        names.join(", ")
                    );
                    if out.len() > QOS_POLICY_BYTES {
                        return Err(PolicyError::TooLarge {
                            limit: QOS_POLICY_BYTES,
                        });
                    }
                }
            }
        }
        if !criteria.is_empty() {
            let _ = write!(
                out,
                "    qos-match-rule\n        use: class {}\n{criteria}        qos-level-name: SL{common}\n    end-qos-match-rule\n",
                class.name
            );
        }
    }
    out.push_str("end-qos-match-rules\n");
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Paper III's properties: symmetric, intra-leaf on lane 0, lanes below `maxvl`, and with
    /// 4 lanes the first lane of consecutive sources cycles 0, 2, 1, 3.
    #[test]
    fn vftree_matrix_properties() {
        for maxvl in 2..=15u8 {
            for n in [1usize, 2, 5, 36] {
                let m = vftree_matrix(n, maxvl);
                for (a, row) in m.iter().enumerate() {
                    assert_eq!(row[a], 0);
                    for (b, &v) in row.iter().enumerate() {
                        assert_eq!(v, m[b][a], "symmetric");
                        assert!(v < maxvl);
                    }
                }
            }
        }
        // The closed form the compiler uses is the matrix.
        for maxvl in 1..=15u8 {
            for n in [1usize, 3, 17, 40] {
                let m = vftree_matrix(n, maxvl);
                for (a, row) in m.iter().enumerate() {
                    for (b, &v) in row.iter().enumerate() {
                        assert_eq!(vftree_lane(a, b, maxvl), v, "{a} {b} over {maxvl}");
                    }
                }
            }
        }
        let m = vftree_matrix(36, 4);
        let starts: Vec<u8> = (0..8).map(|s| m[s][s + 1]).collect();
        assert_eq!(starts, [0, 2, 1, 3, 0, 2, 1, 3]);
    }

    /// The pairs of classes found sharing a service ID are exactly those that do, on random
    /// small ranges (identical, nested, partial, adjacent, overlapping within one class).
    #[test]
    fn overlapping_pairs_are_exactly_the_classes_sharing_an_id() {
        let mut seed: u64 = 25;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..2000 {
            let classes: Vec<QosClass> = (0..1 + next(4))
                .map(|c| {
                    let service_ids = (0..next(4))
                        .map(|_| {
                            let first = next(24);
                            crate::ServiceIds {
                                first,
                                last: first + next(5),
                                span: crate::Span::default(),
                            }
                        })
                        .collect();
                    QosClass {
                        name: format!("c{c}"),
                        span: crate::Span::default(),
                        sl: None,
                        vl: None,
                        lanes: LaneScheme::Single,
                        lanes_span: None,
                        weight: 1,
                        high: false,
                        matches: ClassMatch { service_ids },
                    }
                })
                .collect();
            let ids = |c: &QosClass| -> std::collections::BTreeSet<u64> {
                c.matches
                    .service_ids
                    .iter()
                    .flat_map(|r| r.first..=r.last)
                    .collect()
            };
            let mut want = Vec::new();
            for j in 0..classes.len() {
                for i in 0..j {
                    if !ids(&classes[i]).is_disjoint(&ids(&classes[j])) {
                        want.push((i, j));
                    }
                }
            }
            let found = overlapping_pairs(&classes);
            let got: Vec<(usize, usize)> = found.iter().map(|&(i, j, _, _)| (i, j)).collect();
            assert_eq!(got, want, "{classes:?}");
            for (_, _, x, y) in found {
                assert!(x.first.max(y.first) <= x.last.min(y.last), "{x:?} {y:?}");
            }
        }
    }
}
