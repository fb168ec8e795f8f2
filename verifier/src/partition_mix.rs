//! `isolated` while P_Key writes land: what a plan's P_Key steps must keep.
//!
//! A step's P_Key blocks (and a VF's LID and table, two SMPs) land in any order, so while it
//! lands each end port may hold, block by block, what it held before the step or what the
//! step writes: the keys it *may* hold are the union of the two. Two end ports may talk in
//! some mix when their may-hold tables share a partition (not partition 0) and one of the
//! two keys is a full membership — the tables of two ports land independently, so any
//! combination of the two happens.
//!
//! * **Every mix**: two end ports talk in a mix only through a partition each of them is a
//!   member of before the plan (its table then) or is declared a member of after it, one of
//!   the two a full member (in the table before, or as declared). So no port ever talks
//!   outside the partitions it belongs to at one end of the plan or the other: a host moving
//!   from tenant `a` to `b` may talk to `a`'s members and `b`'s while the plan lands, but
//!   no member of `a` alone ever talks to a member of `b` alone, and a VM's VF left behind
//!   and the VF it moves to may both be members for a while. (A pair whose partition
//!   changes may be cut for a while.) When nothing is declared, the tables the plan leaves
//!   stand for the declaration.
//! * **The end**: after the last step, the tables are isolated against the declared
//!   partitions exactly, as [`crate::isolation`] checks a state (no leak, no cut).
//!
//! Ports are grouped by (may-hold table, the memberships it is allowed, declared
//! memberships); pairs of groups are compared, so the cost follows the number of distinct
//! groups, not the square of the ports.

use crate::isolation::{declared_talk, end_point, tables_talk, Breach, BreachKind, End};
use crate::report::Outcome;
use std::collections::{BTreeMap, BTreeSet};
use weft_fabric::{Lid, Membership, PKey, PortRef, ValidState};
use weft_formats::plan::PKEY_BLOCK;

/// One P_Key write of a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PkeyWrite {
    /// A 32-entry block of a physical end port's table.
    Port {
        /// The port.
        at: PortRef,
        /// The block.
        block: u16,
        /// Its entries after (0: an empty slot; fewer than 32: the rest empty).
        new: Vec<u16>,
    },
    /// A VF's LID and table (block 0, written whole).
    Vf {
        /// The VF, by hypervisor port and index.
        at: (PortRef, u8),
        /// Its LID after.
        lid: Option<Lid>,
        /// Its table after.
        new: Vec<u16>,
    },
}

/// The partitions a plan leads to, as declarations per end port.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// The partitions: name and number.
    pub partitions: Vec<(String, u16)>,
    /// Each member end port's memberships: (index into `partitions`, membership).
    pub members: BTreeMap<End, Vec<(usize, Membership)>>,
    /// The ports the SM runs on: full members of the default partition, which every end
    /// port must reach.
    pub sm: BTreeSet<End>,
}

impl Declared {
    /// The partitions `state` declares, by end port: each member port, and each VF a member
    /// VM runs on.
    pub fn of_state(state: &ValidState) -> Declared {
        let vf_of: BTreeMap<&str, End> = state
            .lids
            .vports
            .iter()
            .filter_map(|v| Some((v.vm.as_deref()?, (v.host, Some(v.vf)))))
            .collect();
        let mut d = Declared::default();
        for (i, p) in state.partitions.iter().enumerate() {
            d.partitions.push((p.name.clone(), p.pkey));
            for (&r, &m) in &p.members {
                d.members.entry((r, None)).or_default().push((i, m));
            }
            for (vm, &m) in &p.vms {
                if let Some(&e) = vf_of.get(vm.as_str()) {
                    d.members.entry(e).or_default().push((i, m));
                }
            }
        }
        for m in d.members.values_mut() {
            m.sort_unstable();
        }
        d.sm = state.sm.iter().map(|&p| (p, None)).collect();
        d
    }
}

/// An end port's tables through the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Tables {
    /// Now (before the step being checked), slot by slot.
    now: Vec<u16>,
    /// Whether it has a LID now (one without talks to no one).
    live: bool,
    /// The memberships it may talk through in a mix, as keys: those of its table before the
    /// plan (when it had a LID), those declared for it, and (nothing declared) those of its
    /// table after the plan.
    allowed: Vec<u16>,
}

/// Checks a plan's P_Key steps one after another (see the module's doc).
#[derive(Clone, Debug)]
pub struct PkeyMix<'a> {
    state: &'a ValidState,
    declared: Declared,
    ends: BTreeMap<End, Tables>,
}

/// What checking a step (or the end) found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MixCheck {
    /// Proven, violated (with `breach`), or unknown (why).
    pub outcome: Outcome,
    /// A pair of end ports that may talk in some mix though nothing allows it (a leak), or,
    /// at the end, a pair the tables keep apart that a declared partition holds (a cut).
    pub breach: Option<Breach>,
    /// Whether this is the check of the tables after the last step (not of a step's mixes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_plan: bool,
}

impl MixCheck {
    /// Proven, with no breach.
    pub fn proven() -> MixCheck {
        MixCheck {
            outcome: Outcome::Proven,
            breach: None,
            after_plan: false,
        }
    }
}

/// The keys a table holds: its non-empty slots, sorted, each once.
fn keys(slots: &[u16]) -> Vec<u16> {
    let mut k: Vec<u16> = slots.iter().copied().filter(|&k| k & 0x7fff != 0).collect();
    k.sort_unstable();
    k.dedup();
    k
}

fn apply(now: &mut Vec<u16>, w: &PkeyWrite) {
    match w {
        PkeyWrite::Port { block, new, .. } => {
            let first = usize::from(*block) * PKEY_BLOCK;
            if now.len() < first + PKEY_BLOCK {
                now.resize(first + PKEY_BLOCK, 0);
            }
            for (k, slot) in now.iter_mut().skip(first).take(PKEY_BLOCK).enumerate() {
                *slot = new.get(k).copied().unwrap_or(0);
            }
        }
        PkeyWrite::Vf { new, .. } => now.clone_from(new),
    }
}

fn end_of(w: &PkeyWrite) -> End {
    match w {
        PkeyWrite::Port { at, .. } => (*at, None),
        PkeyWrite::Vf { at, .. } => (at.0, Some(at.1)),
    }
}

impl<'a> PkeyMix<'a> {
    /// Starts from the tables of `state` (a port without one holds the default key, a VF
    /// without a LID talks to no one), or, where `read` gives one, from that table slot by
    /// slot (as read off a fabric: empty slots where they are); `steps` are every step's
    /// P_Key writes, to know the tables the plan leaves (they stand for the declaration when
    /// nothing is declared).
    pub fn new(
        state: &'a ValidState,
        declared: Declared,
        steps: &[Vec<PkeyWrite>],
        read: Option<&BTreeMap<End, Vec<u16>>>,
    ) -> Self {
        let f = &state.fabric;
        let table = |e: End, t: Option<&Vec<PKey>>| -> Vec<u16> {
            if let Some(slots) = read.and_then(|r| r.get(&e)) {
                return slots.clone();
            }
            t.map_or_else(
                || vec![PKey::DEFAULT.0],
                |t| t.iter().map(|k| k.0).collect(),
            )
        };
        // Every end port: its table and whether it has a LID, before the plan.
        let mut start: BTreeMap<End, (Vec<u16>, bool)> = BTreeMap::new();
        for (&n, lids) in &state.lids.base {
            if f.nodes().get(n.index()).is_none_or(|x| x.is_switch()) {
                continue;
            }
            for &p in lids.keys() {
                let r = PortRef { node: n, port: p };
                let t = table(
                    (r, None),
                    state.ports.get(&r).and_then(|s| s.pkeys.as_ref()),
                );
                start.insert((r, None), (t, true));
            }
        }
        for v in &state.lids.vports {
            let t = table((v.host, Some(v.vf)), v.pkeys.as_ref());
            start.insert((v.host, Some(v.vf)), (t, v.lid.is_some()));
        }
        // After the plan.
        let mut end = start.clone();
        for w in steps.iter().flatten() {
            let e = end.entry(end_of(w)).or_insert_with(|| (Vec::new(), false));
            apply(&mut e.0, w);
            if let PkeyWrite::Vf { lid, .. } = w {
                e.1 = lid.is_some();
            }
        }
        let nothing_declared = declared.partitions.is_empty();
        let ends = end
            .into_iter()
            .map(|(e, (after, live_after))| {
                let (now, live) = start.get(&e).cloned().unwrap_or_default();
                let mut allowed = if live { keys(&now) } else { Vec::new() };
                for &(i, m) in declared.members.get(&e).into_iter().flatten() {
                    if let Some((_, base)) = declared.partitions.get(i) {
                        allowed.push(m.pkey(*base).0);
                    }
                }
                if nothing_declared && live_after {
                    allowed.extend(keys(&after));
                }
                (
                    e,
                    Tables {
                        now,
                        live,
                        allowed: keys(&allowed),
                    },
                )
            })
            .collect();
        PkeyMix {
            state,
            declared,
            ends,
        }
    }

    /// Checks one step (every mix of `writes` landing over the tables the steps before it
    /// left), then moves on to the tables it leaves.
    pub fn step(&mut self, writes: &[PkeyWrite]) -> MixCheck {
        if writes.is_empty() {
            return MixCheck::proven();
        }
        // What each port may hold while the step lands.
        let mut may: BTreeMap<End, (Vec<u16>, bool)> = BTreeMap::new();
        let mut after: BTreeMap<End, (Vec<u16>, bool)> = BTreeMap::new();
        for w in writes {
            let e = end_of(w);
            let Some(t) = self.ends.get(&e) else { continue };
            let a = after.entry(e).or_insert_with(|| (t.now.clone(), t.live));
            apply(&mut a.0, w);
            if let PkeyWrite::Vf { lid, .. } = w {
                a.1 = lid.is_some();
            }
        }
        // What each port holds in every mix, as far as reaching the SM goes: the keys of the
        // blocks the step does not write; of a written block, the full default key when both
        // its contents hold it, and a default key (limited) when both hold one of the two.
        let mut must: BTreeMap<End, (Vec<u16>, bool)> = BTreeMap::new();
        for (e, (t, live)) in &after {
            let Some(cur) = self.ends.get(e) else {
                continue;
            };
            let mut k = keys(&cur.now);
            k.extend(keys(t));
            may.insert(*e, (keys(&k), cur.live || *live));
            let len = cur.now.len().max(t.len());
            let written: BTreeSet<usize> = writes
                .iter()
                .filter(|w| end_of(w) == *e)
                .flat_map(|w| match w {
                    PkeyWrite::Port { block, .. } => vec![usize::from(*block)],
                    // A VF's table is written whole.
                    PkeyWrite::Vf { .. } => (0..len.div_ceil(PKEY_BLOCK).max(1)).collect(),
                })
                .collect();
            let mut held = Vec::new();
            for b in 0..len.div_ceil(PKEY_BLOCK).max(1) {
                let cut = |v: &[u16]| -> Vec<u16> {
                    keys(
                        v.get(b * PKEY_BLOCK..((b + 1) * PKEY_BLOCK).min(v.len()))
                            .unwrap_or(&[]),
                    )
                };
                let before = cut(&cur.now);
                if written.contains(&b) {
                    let after = cut(t);
                    let full = |v: &[u16]| v.contains(&PKey::DEFAULT.0);
                    let member = |v: &[u16]| v.iter().any(|k| k & 0x7fff == 0x7fff);
                    if full(&before) && full(&after) {
                        held.push(PKey::DEFAULT.0);
                    } else if member(&before) && member(&after) {
                        held.push(0x7fff);
                    }
                } else {
                    held.extend(before);
                }
            }
            must.insert(*e, (keys(&held), cur.live && *live));
        }
        let mut check = self.compare(&may, |x, _, y, _| tables_talk(x, y).is_some());
        if check.outcome == Outcome::Proven {
            check = self.sm_reached(&must, &may);
        }
        for (e, (t, live)) in after {
            if let Some(cur) = self.ends.get_mut(&e) {
                cur.now = t;
                cur.live = live;
            }
        }
        check
    }

    /// Checks the tables the steps left against the declared partitions (no leak, no cut;
    /// the SM's ports full members of the default partition, every end port a member);
    /// unknown when nothing is declared, or when partitions are but not where the SM runs.
    pub fn end(&self) -> MixCheck {
        let unknown = |why: &str| MixCheck {
            outcome: Outcome::Unknown(why.to_owned()),
            breach: None,
            after_plan: true,
        };
        if self.declared.partitions.is_empty() {
            return unknown(crate::isolation::NOTHING_DECLARED);
        }
        let now: BTreeMap<End, (Vec<u16>, bool)> = self
            .ends
            .iter()
            .map(|(e, t)| (*e, (keys(&t.now), t.live)))
            .collect();
        let mut check = self.compare(&now, |_, dx, _, dy| declared_talk(dx, dy).is_some());
        if check.outcome == Outcome::Proven {
            check = self.cut(&now);
        }
        if check.outcome == Outcome::Proven {
            check = self.sm_reached(&now, &now);
        }
        if check.outcome == Outcome::Proven && self.declared.sm.is_empty() {
            check = unknown(crate::isolation::SM_UNDECLARED);
        }
        MixCheck {
            after_plan: true,
            ..check
        }
    }

    /// Where the SM's ports are declared: each of them holds the full default key (`held`:
    /// the keys a port holds in every mix; one not in it holds its current table), and every
    /// end port with a LID in some mix (`may`) holds a key of the default partition in every
    /// mix (it reaches the SA).
    fn sm_reached(
        &self,
        held: &BTreeMap<End, (Vec<u16>, bool)>,
        may: &BTreeMap<End, (Vec<u16>, bool)>,
    ) -> MixCheck {
        let sm = &self.declared.sm;
        if sm.is_empty() {
            return MixCheck::proven();
        }
        // A port with no table here (a switch's port 0) holds the IBA default, 0xffff.
        let keys_of = |e: &End| -> Vec<u16> {
            held.get(e).map_or_else(
                || {
                    self.ends
                        .get(e)
                        .map_or_else(|| vec![PKey::DEFAULT.0], |t| keys(&t.now))
                },
                |(k, _)| k.clone(),
            )
        };
        let breach = |kind: BreachKind, a: End, b: End| MixCheck {
            outcome: Outcome::Violated,
            breach: Some(Breach {
                kind,
                a: end_point(self.state, a),
                b: end_point(self.state, b),
                pairs: 1,
            }),
            after_plan: false,
        };
        for &p in sm {
            let k = keys_of(&p);
            if !k.contains(&PKey::DEFAULT.0) {
                let pkey = k.iter().copied().find(|k| k & 0x7fff == 0x7fff);
                return breach(BreachKind::SmNotFull { pkey }, p, p);
            }
        }
        let first = sm.iter().next().copied();
        for (e, t) in &self.ends {
            let live = may.get(e).map_or(t.live, |(_, l)| *l);
            if !live || sm.contains(e) {
                continue;
            }
            if !keys_of(e).iter().any(|k| k & 0x7fff == 0x7fff) {
                return breach(BreachKind::SmUnreachable, *e, first.unwrap_or(*e));
            }
        }
        MixCheck::proven()
    }

    /// Groups every end port by what decides its pairs — `tables` (its table where given,
    /// else its current one), the memberships it is allowed, its declared memberships — and
    /// finds a pair of groups that talks by `tables` and is not `allowed` (given each side's
    /// allowed keys and declared memberships).
    fn compare(
        &self,
        tables: &BTreeMap<End, (Vec<u16>, bool)>,
        allowed: impl Fn(&[u16], &[(usize, Membership)], &[u16], &[(usize, Membership)]) -> bool,
    ) -> MixCheck {
        type Key<'k> = (Vec<u16>, &'k [u16], &'k [(usize, Membership)]);
        let mut groups: BTreeMap<Key<'_>, Vec<End>> = BTreeMap::new();
        for (e, t) in &self.ends {
            let (k, live) = tables
                .get(e)
                .map_or_else(|| (keys(&t.now), t.live), |(k, l)| (k.clone(), *l));
            // The SM talks to every end port: its ports are not compared pair by pair.
            if !live || self.declared.sm.contains(e) {
                continue;
            }
            let d = self.declared.members.get(e).map_or(&[][..], Vec::as_slice);
            groups
                .entry((k, t.allowed.as_slice(), d))
                .or_default()
                .push(*e);
        }
        let groups: Vec<(Key<'_>, Vec<End>)> = groups.into_iter().collect();
        // Candidates: a full member of a partition and any member of it.
        let mut members: BTreeMap<u16, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
        for (g, ((k, ..), _)) in groups.iter().enumerate() {
            for &key in k {
                let (full, any) = members.entry(key & 0x7fff).or_default();
                if key & 0x8000 != 0 {
                    full.push(g);
                }
                any.push(g);
            }
        }
        let mut candidates: BTreeSet<(usize, usize)> = BTreeSet::new();
        for (full, any) in members.values() {
            for &x in full {
                for &y in any {
                    candidates.insert((x.min(y), x.max(y)));
                }
            }
        }
        for (x, y) in candidates {
            let (Some(((kx, ax, dx), px)), Some(((ky, ay, dy), py))) =
                (groups.get(x), groups.get(y))
            else {
                continue;
            };
            let (a, b) = match (x == y, px.as_slice(), py.first()) {
                (true, [a, b, ..], _) => (*a, *b),
                (false, [a, ..], Some(b)) => (*a, *b),
                _ => continue,
            };
            let Some((a_pkey, b_pkey)) = tables_talk(kx, ky) else {
                continue;
            };
            if allowed(ax, dx, ay, dy) {
                continue;
            }
            let pairs = if x == y {
                let n = px.len() as u64;
                n * n.saturating_sub(1) / 2
            } else {
                (px.len() * py.len()) as u64
            };
            return MixCheck {
                outcome: Outcome::Violated,
                breach: Some(Breach {
                    kind: BreachKind::Leak { a_pkey, b_pkey },
                    a: end_point(self.state, a),
                    b: end_point(self.state, b),
                    pairs,
                }),
                after_plan: false,
            };
        }
        MixCheck::proven()
    }

    /// A pair of end ports a declared partition holds (one a full member) that the tables
    /// keep apart.
    fn cut(&self, now: &BTreeMap<End, (Vec<u16>, bool)>) -> MixCheck {
        let d = &self.declared;
        // Per partition: its live members grouped by (table, membership).
        type Members<'m> = BTreeMap<(&'m [u16], Membership), Vec<End>>;
        let mut by: BTreeMap<usize, Members<'_>> = BTreeMap::new();
        for (e, ms) in &d.members {
            if d.sm.contains(e) {
                continue;
            }
            let Some((k, true)) = now.get(e) else {
                continue;
            };
            for &(i, m) in ms {
                by.entry(i)
                    .or_default()
                    .entry((k.as_slice(), m))
                    .or_default()
                    .push(*e);
            }
        }
        for (i, groups) in by {
            let groups: Vec<_> = groups.iter().collect();
            for (n, ((ka, ma), pa)) in groups.iter().enumerate() {
                for ((kb, mb), pb) in groups.iter().skip(n) {
                    let same = std::ptr::eq(*pa, *pb);
                    let (a, b) = match (same, pa.as_slice(), pb.first()) {
                        (true, [a, b, ..], _) => (*a, *b),
                        (false, [a, ..], Some(b)) => (*a, *b),
                        _ => continue,
                    };
                    let declared = *ma == Membership::Full || *mb == Membership::Full;
                    if !declared || tables_talk(ka, kb).is_some() {
                        continue;
                    }
                    let Some((name, pkey)) = d.partitions.get(i) else {
                        continue;
                    };
                    return MixCheck {
                        after_plan: false,
                        outcome: Outcome::Violated,
                        breach: Some(Breach {
                            kind: BreachKind::Cut {
                                partition: name.clone(),
                                pkey: *pkey,
                            },
                            a: end_point(self.state, a.min(b)),
                            b: end_point(self.state, a.max(b)),
                            pairs: 1,
                        }),
                    };
                }
            }
        }
        MixCheck::proven()
    }
}
