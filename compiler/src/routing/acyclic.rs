//! A directed graph kept acyclic as it grows: an edge is added only when it closes no cycle.
//!
//! Engines use it for channel dependency graphs, choosing routes one entry at a time so that
//! the dependencies stay acyclic on one VL. A topological order is maintained across
//! insertions (Pearce and Kelly, "A dynamic topological sort algorithm for directed acyclic
//! graphs", JEA 2007): an edge that agrees with the order costs nothing; one that does not is
//! checked and the order repaired only between its two ends.

/// A growing acyclic graph over nodes `0..n`.
#[derive(Clone, Debug)]
pub struct Acyclic {
    out: Vec<Vec<u32>>,
    into: Vec<Vec<u32>>,
    /// Position of each node in a topological order (edges go from lower to higher).
    ord: Vec<u32>,
    /// Visit marks: a node is marked when its stamp equals `epoch`.
    stamp: Vec<u32>,
    epoch: u32,
}

impl Acyclic {
    /// The graph of `edges` over `n` nodes; `None` when they already hold a cycle.
    pub fn new(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Option<Acyclic> {
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
        let mut indegree: Vec<usize> = into.iter().map(Vec::len).collect();
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> = (0..n as u32)
            .filter(|&v| indegree[v as usize] == 0)
            .map(std::cmp::Reverse)
            .collect();
        let mut ord = vec![0u32; n];
        let mut next = 0u32;
        while let Some(std::cmp::Reverse(v)) = ready.pop() {
            ord[v as usize] = next;
            next += 1;
            for &w in &out[v as usize] {
                indegree[w as usize] -= 1;
                if indegree[w as usize] == 0 {
                    ready.push(std::cmp::Reverse(w));
                }
            }
        }
        (next as usize == n).then_some(Acyclic {
            out,
            into,
            ord,
            stamp: vec![0; n],
            epoch: 0,
        })
    }

    /// Whether `u → v` is in the graph.
    pub fn contains(&self, u: u32, v: u32) -> bool {
        self.out[u as usize].binary_search(&v).is_ok()
    }

    /// Adds `u → v` unless it would close a cycle; returns whether the edge is in the graph.
    pub fn insert(&mut self, u: u32, v: u32) -> bool {
        let (ui, vi) = (u as usize, v as usize);
        if u == v {
            return false;
        }
        if self.contains(u, v) {
            return true;
        }
        let (low, high) = (self.ord[vi], self.ord[ui]);
        if low > high {
            self.link(u, v);
            return true;
        }
        // Everything reachable from v inside the window [low, high]: reaching u is a cycle.
        self.epoch += 1;
        let Some(forward) = self.search(v, high, true, u) else {
            return false;
        };
        // Everything reaching u inside the window.
        let backward = self.search(u, low, false, u32::MAX).unwrap_or_default();
        // Those reaching u move before those reached from v, each keeping its relative order,
        // into the positions both sets held.
        let by_order = |set: Vec<u32>, ord: &[u32]| {
            let mut set = set;
            set.sort_unstable_by_key(|&x| ord[x as usize]);
            set
        };
        let backward = by_order(backward, &self.ord);
        let forward = by_order(forward, &self.ord);
        let mut slots: Vec<u32> = backward
            .iter()
            .chain(&forward)
            .map(|&x| self.ord[x as usize])
            .collect();
        slots.sort_unstable();
        for (&x, slot) in backward.iter().chain(&forward).zip(slots) {
            self.ord[x as usize] = slot;
        }
        self.link(u, v);
        true
    }

    /// Removes `u → v` if present (the order stays topological: fewer edges, fewer
    /// constraints).
    pub fn remove(&mut self, u: u32, v: u32) {
        if let Ok(at) = self.out[u as usize].binary_search(&v) {
            self.out[u as usize].remove(at);
        }
        if let Ok(at) = self.into[v as usize].binary_search(&u) {
            self.into[v as usize].remove(at);
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

    /// Depth-first search from `start` along out-edges (`forward`) or in-edges, staying at
    /// order positions up to `bound` (forward) or from `bound` (backward). `None` when `stop`
    /// is reached; otherwise the nodes visited.
    fn search(&mut self, start: u32, bound: u32, forward: bool, stop: u32) -> Option<Vec<u32>> {
        let mut seen = vec![start];
        let mut stack = vec![start];
        self.stamp[start as usize] = self.epoch;
        while let Some(x) = stack.pop() {
            let next = if forward {
                &self.out[x as usize]
            } else {
                &self.into[x as usize]
            };
            for &y in next {
                if y == stop {
                    return None;
                }
                let o = self.ord[y as usize];
                let inside = if forward { o <= bound } else { o >= bound };
                if inside && self.stamp[y as usize] != self.epoch {
                    self.stamp[y as usize] = self.epoch;
                    seen.push(y);
                    stack.push(y);
                }
            }
        }
        Some(seen)
    }
}

#[cfg(test)]
#[allow(clippy::expect_used)]
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
    /// maintained order stays topological.
    #[test]
    fn insertions_refuse_exactly_the_edges_that_close_a_cycle() {
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
            let mut edges: Vec<(u32, u32)> = Vec::new();
            let (mut added, mut refused) = (0, 0);
            for _ in 0..n * 3 {
                let (u, v) = (next(n as u64), next(n as u64));
                let closes = u == v || reaches(&edges, v, u);
                assert_eq!(g.insert(u, v), !closes, "{u} -> {v} over {edges:?}");
                if closes {
                    refused += 1;
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
