//! QoS classes onto SLs and VLs: [`allocate`] places each class on `lanes × layers`
//! consecutive SLs and VLs within the budget (or says which class does not fit and why), and
//! [`overlapping_service_ids`] refuses classes whose `match` rules share a service ID.

use crate::code::Code;
use crate::diagnostic::{Diagnostic, SourceId};
use crate::{ClassMatch, LaneScheme, QosClass};
use weft_fabric::{Sl, Vl};
use weft_formats::opensm::ConfClass;

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
    pub sl: Sl,
    /// First VL.
    pub vl: Vl,
    /// Its VL arbitration weight, for the class as a whole.
    pub weight: u8,
    /// High priority.
    pub high: bool,
    /// The traffic that is this class.
    pub matches: ClassMatch,
}

impl ClassLanes {
    /// The SL of lane `lane` and layer `layer` when routes have `layers` layers.
    pub fn sl_of(&self, lane: u8, layer: u8, layers: u8) -> Sl {
        Sl(self.sl.0 + lane * layers + layer)
    }

    /// SLs (and VLs) the class takes.
    pub fn width(&self, layers: u8) -> u8 {
        self.scheme.lanes() * layers
    }

    /// The VL arbitration weight of each of its VLs: its weight split over them, rounded up
    /// (at least 1).
    pub fn weight_per_vl(&self, layers: u8) -> u8 {
        self.weight.div_ceil(self.width(layers).max(1)).max(1)
    }
}

/// Every class placed, and the SL→VL map all ports share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneMap {
    /// Routing layers.
    pub layers: u8,
    /// Classes in declaration order.
    pub classes: Vec<ClassLanes>,
    /// VL per SL ([`LaneMap::DROP`]: the SL is not used, packets on it are dropped).
    pub sl2vl: [Vl; 16],
    /// The VL budget it was placed in.
    pub budget: u8,
    /// Whether the description declared classes (else one implicit class on SL 0).
    pub declared: bool,
    /// The SL and VL of their own the multicast pass gave the groups no routing layer's VL
    /// admits a tree on (`sl2vl` maps the one to the other; no class uses either): set by
    /// [`LaneMap::give_multicast`], `None` until then.
    pub multicast: Option<(Sl, Vl)>,
}

impl LaneMap {
    /// The VL of an SL no class uses: VL 15, on which a data packet is dropped.
    pub const DROP: Vl = Vl(15);

    /// The VLs the SLs in use map to.
    fn data_vls(&self) -> impl Iterator<Item = Vl> + '_ {
        self.sl2vl.iter().copied().filter(|&v| v != LaneMap::DROP)
    }

    /// Distinct data VLs used.
    pub fn vls_used(&self) -> u8 {
        let mask = self.data_vls().fold(0u16, |m, v| m | 1 << v.0);
        mask.count_ones() as u8
    }

    /// Data VLs a port must operate to carry them: the highest used, plus one.
    pub fn vls(&self) -> u8 {
        self.data_vls().map(|v| v.0 + 1).max().unwrap_or(1)
    }

    /// The SL→VL map as the state's tables hold it.
    pub fn sl2vl_table(&self) -> [u8; 16] {
        self.sl2vl.map(|v| v.0)
    }

    /// Each class's SLs, VLs, priority and weight, for the comments of OpenSM's
    /// `opensm.conf` ([`weft_formats::opensm::write_qos_conf`]), which the state cannot give.
    pub fn conf_classes(&self) -> Vec<ConfClass> {
        self.classes
            .iter()
            .map(|c| ConfClass {
                name: c.name.clone(),
                first_sl: c.sl,
                first_vl: c.vl,
                width: c.width(self.layers),
                high: c.high,
                weight: c.weight,
            })
            .chain(self.multicast.map(|(sl, vl)| ConfClass {
                name: "multicast".to_owned(),
                first_sl: sl,
                first_vl: vl,
                width: 1,
                high: false,
                weight: self.multicast_weight(),
            }))
            .collect()
    }

    /// The VL arbitration weight of the multicast groups' VL of their own: that of one VL of
    /// the class their SL would be in otherwise (the first class without `match`, else the
    /// first), rounded up.
    pub fn multicast_weight(&self) -> u8 {
        let class = self
            .classes
            .iter()
            .find(|c| c.matches.is_empty())
            .or_else(|| self.classes.first());
        class.map_or(1, |c| c.weight_per_vl(self.layers))
    }

    /// Whether every route stays on SL 0 and VL 0 (no tables to write).
    pub fn trivial(&self) -> bool {
        !self.declared && self.layers == 1 && self.multicast.is_none()
    }

    /// The SL and VL multicast groups could have to themselves: the lowest SL no class uses
    /// (nor one of `taken`) and the lowest VL of the budget no SL maps to. `Err` says what
    /// is missing: [`Spare::Sls`] when every SL is taken, else [`Spare::Vls`] with the budget
    /// that VL would need.
    pub fn spare(&self, taken: &[u8]) -> Result<(Sl, Vl), Spare> {
        let sl = (0u8..16)
            .find(|&s| {
                self.sl2vl.get(usize::from(s)) == Some(&LaneMap::DROP) && !taken.contains(&s)
            })
            .ok_or(Spare::Sls)?;
        let used = self.data_vls().fold(0u16, |m, v| m | 1 << v.0);
        let vl = (0u8..15)
            .find(|&v| used >> v & 1 == 0)
            .ok_or(Spare::Vls { needed: None })?;
        if vl >= self.budget {
            return Err(Spare::Vls {
                needed: Some(vl + 1),
            });
        }
        Ok((Sl(sl), Vl(vl)))
    }

    /// Gives the multicast groups SL `sl` on VL `vl` ([`LaneMap::spare`]'s). A map that was
    /// [`trivial`](LaneMap::trivial) had no tables, every SL on VL 0: the SLs of `on_vl0`
    /// (groups' declared SLs) stay there once tables are written, as SL 0 does.
    pub fn give_multicast(&mut self, sl: Sl, vl: Vl, on_vl0: &[u8]) {
        if self.trivial() {
            for &s in on_vl0 {
                if let Some(v) = self.sl2vl.get_mut(usize::from(s)) {
                    *v = Vl(0);
                }
            }
        }
        if let Some(v) = self.sl2vl.get_mut(usize::from(sl.0)) {
            *v = vl;
        }
        self.multicast = Some((sl, vl));
    }
}

/// What [`LaneMap::spare`] did not find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spare {
    /// Every SL is used.
    Sls,
    /// Every VL of the budget is used; `needed` is the budget a VL of their own would take
    /// (`None`: past the 15 data VLs IBA has).
    Vls {
        /// The budget needed.
        needed: Option<u8>,
    },
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
        sl2vl: [LaneMap::DROP; 16],
        budget,
        declared,
        multicast: None,
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
                *v = Vl(vl + k);
            }
        }
        next_sl = sl + width;
        map.classes.push(ClassLanes {
            name: c.name.clone(),
            scheme: c.lanes,
            sl: Sl(sl),
            vl: Vl(vl),
            weight: c.weight,
            high: c.high,
            matches: c.matches.clone(),
        });
    }
    Ok(map)
}

/// `VL v` or `VLs v..=last` for a class taking `width` VLs from `v`.
fn vl_span(v: u8, width: u8) -> String {
    if width > 1 {
        format!("VLs {v}..={}", v + width - 1)
    } else {
        format!("VL {v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
