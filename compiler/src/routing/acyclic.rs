//! A directed graph kept acyclic as it grows: an edge is added only when it closes no cycle.
//!
//! Engines use it for channel dependency graphs, choosing routes one entry at a time so that
//! the dependencies stay acyclic on one VL. Every node carries a label, and every edge goes
//! from a lower label to a higher one (a topological order kept across insertions). An edge
//! that agrees with the labels costs nothing. One that does not, `u → v`, searches from both
//! ends at once, one node per side in turn, inside the labels between the two (the two-way
//! search of Haeupler, Kavitha, Mathew, Sen and Tarjan, "Incremental cycle detection,
//! topological ordering, and strong component maintenance", TALG 2012): backward from `u`
//! over the nodes that reach it, forward from `v` over the nodes it reaches. Meeting the other
//! end is a cycle. Otherwise the first side to run out moves as a block to the other end of
//! the window, in its own order: the nodes reaching `u` just below `v`'s label, or the nodes
//! `v` reaches just above `u`'s. Labels leave gaps for that; when a gap is used up, every
//! label is spread out again in the same order. The first order is Kahn's, from the shared
//! [`weft_fabric::graph`].

use weft_fabric::graph::{self, Ready};

/// A growing acyclic graph over nodes `0..n`.
#[derive(Clone, Debug)]
pub(super) struct Acyclic {
    out: Vec<Vec<u32>>,
    into: Vec<Vec<u32>>,
    /// Each node's label: every edge goes from a lower label to a higher one.
    ord: Vec<u64>,
    /// Search marks, per side: a node is marked when its stamp equals `epoch`.
    back: Side,
    fwd: Side,
    epoch: u32,
}

/// One side of the two-way search: its marks, the nodes found and the nodes still to expand.
#[derive(Clone, Debug, Default)]
struct Side {
    stamp: Vec<u32>,
    seen: Vec<u32>,
    stack: Vec<u32>,
}

impl Side {
    fn start(&mut self, x: u32, epoch: u32) {
        self.seen.clear();
        self.stack.clear();
        self.seen.push(x);
        self.stack.push(x);
        self.stamp[x as usize] = epoch;
    }
}

/// What one step of a side found.
enum Step {
    /// The side has no node left to expand: its set is complete.
    Done,
    /// It met the other end of the new edge.
    Cycle,
    /// Still going.
    More,
}

impl Acyclic {
    /// The graph of `edges` over `n` nodes; `None` when they already hold a cycle.
    pub(super) fn new(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Option<Acyclic> {
        let mut out = vec![Vec::new(); n];
        let mut into = vec![Vec::new(); n];
        for (u, v) in edges {
            out[u as usize].push(v);
            into[v as usize].push(u);
        }
        for list in out.iter_mut().chain(into.iter_mut()) {
            list.sort_unstable();
            list.dedup();
        }
        // Kahn's algorithm, lowest node first so the order is deterministic.
        let kahn = graph::kahn(n, |v| out[v as usize].iter().copied(), Ready::Lowest);
        if !kahn.is_acyclic() {
            return None;
        }
        let order = kahn.order;
        let side = || Side {
            stamp: vec![0; n],
            ..Side::default()
        };
        let mut g = Acyclic {
            out,
            into,
            ord: vec![0; n],
            back: side(),
            fwd: side(),
            epoch: 0,
        };
        g.spread(&order);
        Some(g)
    }

    /// Whether `u → v` is in the graph.
    pub(super) fn contains(&self, u: u32, v: u32) -> bool {
        self.out[u as usize].binary_search(&v).is_ok()
    }

    /// Adds `u → v` unless it would close a cycle; returns whether the edge is in the graph.
    pub(super) fn insert(&mut self, u: u32, v: u32) -> bool {
        if u == v {
            return false;
        }
        if self.contains(u, v) {
            return true;
        }
        loop {
            let (low, high) = (self.ord[v as usize], self.ord[u as usize]);
            if low > high {
                self.link(u, v);
                return true;
            }
            self.epoch = self.epoch.wrapping_add(1);
            if self.epoch == 0 {
                self.back.stamp.fill(0);
                self.fwd.stamp.fill(0);
                self.epoch = 1;
            }
            self.back.start(u, self.epoch);
            self.fwd.start(v, self.epoch);
            let moved = loop {
                match self.step_back(v, low) {
                    Step::Cycle => return false,
                    Step::Done => break self.place_below(low),
                    Step::More => {}
                }
                match self.step_fwd(u, high) {
                    Step::Cycle => return false,
                    Step::Done => break self.place_above(high),
                    Step::More => {}
                }
            };
            if moved {
                self.link(u, v);
                return true;
            }
            // No room between the labels: spread them out and look again.
            let mut order: Vec<u32> = (0..self.ord.len() as u32).collect();
            order.sort_unstable_by_key(|&x| (self.ord[x as usize], x));
            self.spread(&order);
        }
    }

    /// A shortest path from `from` to `to` (both included), `None` when there is none.
    pub(super) fn path(&self, from: u32, to: u32) -> Option<Vec<u32>> {
        let mut parent: Vec<u32> = vec![u32::MAX; self.out.len()];
        let mut queue = std::collections::VecDeque::from([from]);
        parent[from as usize] = from;
        while let Some(x) = queue.pop_front() {
            if x == to {
                let mut path = vec![to];
                let mut y = to;
                while y != from {
                    y = parent[y as usize];
                    path.push(y);
                }
                path.reverse();
                return Some(path);
            }
            for &y in &self.out[x as usize] {
                if parent[y as usize] == u32::MAX {
                    parent[y as usize] = x;
                    queue.push_back(y);
                }
            }
        }
        None
    }

    /// Removes `u → v` if present (the labels stay topological: fewer edges, fewer
    /// constraints).
    pub(super) fn remove(&mut self, u: u32, v: u32) {
        if let Ok(at) = self.out[u as usize].binary_search(&v) {
            self.out[u as usize].remove(at);
        }
        if let Ok(at) = self.into[v as usize].binary_search(&u) {
            self.into[v as usize].remove(at);
        }
    }

    /// Labels `order` (a topological order) evenly over the whole range.
    fn spread(&mut self, order: &[u32]) {
        let gap = u64::MAX / (order.len() as u64 + 2);
        for (i, &x) in order.iter().enumerate() {
            self.ord[x as usize] = gap * (i as u64 + 1);
        }
    }

    fn link(&mut self, u: u32, v: u32) {
        let out = &mut self.out[u as usize];
        if let Err(at) = out.binary_search(&v) {
            out.insert(at, v);
        }
        let into = &mut self.into[v as usize];
        if let Err(at) = into.binary_search(&u) {
            into.insert(at, u);
        }
    }

    /// Expands one node of the backward side: the nodes reaching `u` with labels above `low`
    /// (`v`'s label); meeting `v` is a cycle.
    fn step_back(&mut self, v: u32, low: u64) -> Step {
        let Some(x) = self.back.stack.pop() else {
            return Step::Done;
        };
        for &p in &self.into[x as usize] {
            if p == v {
                return Step::Cycle;
            }
            let b = &mut self.back;
            if self.ord[p as usize] > low && b.stamp[p as usize] != self.epoch {
                b.stamp[p as usize] = self.epoch;
                b.seen.push(p);
                b.stack.push(p);
            }
        }
        Step::More
    }

    /// Expands one node of the forward side: the nodes `v` reaches with labels below `high`
    /// (`u`'s label); meeting `u` is a cycle.
    fn step_fwd(&mut self, u: u32, high: u64) -> Step {
        let Some(x) = self.fwd.stack.pop() else {
            return Step::Done;
        };
        for &s in &self.out[x as usize] {
            if s == u {
                return Step::Cycle;
            }
            let f = &mut self.fwd;
            if self.ord[s as usize] < high && f.stamp[s as usize] != self.epoch {
                f.stamp[s as usize] = self.epoch;
                f.seen.push(s);
                f.stack.push(s);
            }
        }
        Step::More
    }

    /// Moves the backward set (everything reaching `u` above `low`) just below `low`, above
    /// all its other predecessors, in its own order. False when the labels leave no room.
    fn place_below(&mut self, low: u64) -> bool {
        let mut set = std::mem::take(&mut self.back.seen);
        let floor = set
            .iter()
            .flat_map(|&x| &self.into[x as usize])
            .filter(|&&p| self.back.stamp[p as usize] != self.epoch)
            .map(|&p| self.ord[p as usize])
            .max()
            .unwrap_or(0);
        let fits = self.relabel(&mut set, floor, low);
        self.back.seen = set;
        fits
    }

    /// Moves the forward set (everything `v` reaches below `high`) just above `high`, below
    /// all its other successors, in its own order. False when the labels leave no room.
    fn place_above(&mut self, high: u64) -> bool {
        let mut set = std::mem::take(&mut self.fwd.seen);
        let ceiling = set
            .iter()
            .flat_map(|&x| &self.out[x as usize])
            .filter(|&&s| self.fwd.stamp[s as usize] != self.epoch)
            .map(|&s| self.ord[s as usize])
            .min()
            .unwrap_or(u64::MAX);
        let fits = self.relabel(&mut set, high, ceiling);
        self.fwd.seen = set;
        fits
    }

    /// Gives `set`, in its current order, evenly spaced labels strictly between `floor` and
    /// `ceiling`; false (nothing changed) when there is no room.
    fn relabel(&mut self, set: &mut [u32], floor: u64, ceiling: u64) -> bool {
        let slots = set.len() as u64 + 1;
        let gap = ceiling.saturating_sub(floor) / slots;
        if ceiling <= floor || gap == 0 {
            return false;
        }
        set.sort_unstable_by_key(|&x| self.ord[x as usize]);
        for (i, &x) in set.iter().enumerate() {
            self.ord[x as usize] = floor + gap * (i as u64 + 1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Acyclic;

    /// A reference: is `to` reachable from `from`?
    fn reaches(edges: &[(u32, u32)], from: u32, to: u32) -> bool {
        let mut seen = vec![from];
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == to {
                return true;
            }
            for &(a, b) in edges {
                if a == x && !seen.contains(&b) {
                    seen.push(b);
                    stack.push(b);
                }
            }
        }
        false
    }

    #[test]
    fn a_cyclic_start_is_refused() {
        assert!(Acyclic::new(3, [(0, 1), (1, 2), (2, 0)]).is_none());
        assert!(Acyclic::new(3, [(0, 1), (1, 2)]).is_some());
    }

    /// Random insertions (and some removals) agree with a reachability reference, and the
    /// labels stay topological; from spread labels, and from labels one apart (every move
    /// then runs out of room and spreads them first).
    #[test]
    fn insertions_refuse_exactly_the_edges_that_close_a_cycle() {
        for crowded in [false, true] {
            random_insertions(crowded);
        }
    }

    fn random_insertions(crowded: bool) {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n) as u32
        };
        for round in 0..200 {
            let n = 2 + round % 30;
            let mut g = Acyclic::new(n as usize, []).expect("no edges, no cycle");
            if crowded {
                for (i, o) in g.ord.iter_mut().enumerate() {
                    *o = i as u64 + 1;
                }
            }
            let mut edges: Vec<(u32, u32)> = Vec::new();
            let (mut added, mut refused) = (0, 0);
            for _ in 0..n * 3 {
                let (u, v) = (next(n as u64), next(n as u64));
                let closes = u == v || reaches(&edges, v, u);
                assert_eq!(g.insert(u, v), !closes, "{u} -> {v} over {edges:?}");
                if closes {
                    refused += 1;
                    if u != v {
                        let path = g.path(v, u).expect("a path closing the cycle");
                        assert_eq!((path.first(), path.last()), (Some(&v), Some(&u)));
                        for w in path.windows(2) {
                            assert!(edges.contains(&(w[0], w[1])), "{path:?}");
                        }
                    }
                } else if !edges.contains(&(u, v)) {
                    added += 1;
                    edges.push((u, v));
                }
                if next(4) == 0 && !edges.is_empty() {
                    let (a, b) = edges.swap_remove(next(edges.len() as u64) as usize);
                    g.remove(a, b);
                    assert!(!g.contains(a, b));
                }
                for &(a, b) in &edges {
                    assert!(g.ord[a as usize] < g.ord[b as usize], "{a} -> {b}");
                }
            }
            assert!(added > 0 && (n < 4 || refused > 0), "{added} {refused}");
        }
    }
}
