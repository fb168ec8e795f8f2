//! The graph algorithms weft's crates share, on nodes numbered `0..n`: Kahn's topological
//! order ([`kahn`]), and on a graph in compressed sparse row form ([`Csr`]) Tarjan's strongly
//! connected components, a shortest cycle inside one component, and a topological rank per
//! node.
//!
//! They live in the model crate because it is the only crate both the compiler (its engines
//! keep channel dependency graphs acyclic) and the verifier (it proves them acyclic) may
//! depend on; the planner orders its writes with [`kahn`] too. Nothing here knows what the
//! nodes stand for. Every result is deterministic: it depends on the node numbering only,
//! never on hashing or timing.

use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// Which ready node (no untaken predecessor) Kahn's algorithm takes next. The order found
/// depends on it; whether the graph is acyclic, and which nodes are left on or behind a
/// cycle, do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ready {
    /// The first to become ready (the nodes ready at the start queued in increasing order).
    Fifo,
    /// The lowest-numbered ready node: the lexicographically smallest topological order.
    Lowest,
    /// The last to become ready (a stack): the cheapest, when only the outcome matters.
    Lifo,
}

/// What Kahn's algorithm found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kahn {
    /// The nodes taken, in order: each after all its predecessors. Every node when the graph
    /// is acyclic.
    pub order: Vec<u32>,
    /// Per node, its in-edges from nodes never taken: non-zero exactly on the nodes that lie
    /// on a cycle or are reachable from one (all zero when the graph is acyclic).
    pub waiting: Vec<u32>,
}

impl Kahn {
    /// Whether every node was taken: the graph has no cycle.
    pub fn is_acyclic(&self) -> bool {
        self.order.len() == self.waiting.len()
    }
}

/// The ready nodes, taken in one of the [`Ready`] disciplines.
enum Queue {
    Fifo(VecDeque<u32>),
    Lowest(BinaryHeap<std::cmp::Reverse<u32>>),
    Lifo(Vec<u32>),
}

impl Queue {
    fn push(&mut self, v: u32) {
        match self {
            Queue::Fifo(q) => q.push_back(v),
            Queue::Lowest(q) => q.push(std::cmp::Reverse(v)),
            Queue::Lifo(q) => q.push(v),
        }
    }

    fn pop(&mut self) -> Option<u32> {
        match self {
            Queue::Fifo(q) => q.pop_front(),
            Queue::Lowest(q) => q.pop().map(|std::cmp::Reverse(v)| v),
            Queue::Lifo(q) => q.pop(),
        }
    }
}

/// Kahn's algorithm on nodes `0..n` whose successors are `succ(v)` (`succ` is asked twice
/// per node, and must answer the same; a successor `≥ n` is ignored; an edge listed twice
/// counts twice). Taking the ready nodes as `ready` says.
pub fn kahn<I>(n: usize, succ: impl Fn(u32) -> I, ready: Ready) -> Kahn
where
    I: IntoIterator<Item = u32>,
{
    let mut waiting = vec![0u32; n];
    for v in 0..n as u32 {
        for w in succ(v) {
            if let Some(d) = waiting.get_mut(w as usize) {
                *d += 1;
            }
        }
    }
    let first = (0..n as u32).filter(|&v| get(&waiting, v) == 0);
    let mut queue = match ready {
        Ready::Fifo => Queue::Fifo(first.collect()),
        Ready::Lowest => Queue::Lowest(first.map(std::cmp::Reverse).collect()),
        Ready::Lifo => Queue::Lifo(first.collect()),
    };
    let mut order = Vec::with_capacity(n);
    while let Some(v) = queue.pop() {
        order.push(v);
        for w in succ(v) {
            if let Some(d) = waiting.get_mut(w as usize) {
                *d -= 1;
                if *d == 0 {
                    queue.push(w);
                }
            }
        }
    }
    Kahn { order, waiting }
}

/// A directed graph on nodes `0..n` in compressed sparse row form: each node's successors in
/// one slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    offs: Vec<u32>,
    targets: Vec<u32>,
}

impl Csr {
    /// The graph of `edges` on `n` nodes; `edges` sorted (by source, then target) and
    /// without duplicates, every node below `n`.
    pub fn new(n: usize, edges: &[(u32, u32)]) -> Csr {
        let mut offs = vec![0u32; n + 1];
        for &(a, _) in edges {
            if let Some(o) = offs.get_mut(a as usize + 1) {
                *o += 1;
            }
        }
        for i in 0..n {
            let prev = offs.get(i).copied().unwrap_or(0);
            if let Some(o) = offs.get_mut(i + 1) {
                *o += prev;
            }
        }
        let targets = edges.iter().map(|&(_, b)| b).collect();
        Csr { offs, targets }
    }

    /// The graph of the edges `each` gives (it is called twice: once to count them, once to
    /// place them), in any order, every node below `n`: [`Csr::new`] of the same edges
    /// sorted, without holding them as a list. `None` when an edge comes twice.
    pub fn from_visits(n: usize, each: impl Fn(&mut dyn FnMut(u32, u32))) -> Option<Csr> {
        let mut offs = vec![0u32; n + 1];
        each(&mut |a, _| {
            if let Some(o) = offs.get_mut(a as usize + 1) {
                *o += 1;
            }
        });
        for i in 0..n {
            let prev = offs.get(i).copied().unwrap_or(0);
            if let Some(o) = offs.get_mut(i + 1) {
                *o += prev;
            }
        }
        let mut targets = vec![0u32; offs.get(n).copied().unwrap_or(0) as usize];
        let mut next = offs.clone();
        each(&mut |a, b| {
            if let Some(c) = next.get_mut(a as usize) {
                if let Some(t) = targets.get_mut(*c as usize) {
                    *t = b;
                }
                *c += 1;
            }
        });
        for v in 0..n {
            let a = offs.get(v).copied().unwrap_or(0) as usize;
            let b = offs.get(v + 1).copied().unwrap_or(0) as usize;
            if let Some(slice) = targets.get_mut(a..b) {
                slice.sort_unstable();
                if slice.windows(2).any(|w| w.first() == w.get(1)) {
                    return None;
                }
            }
        }
        Some(Csr { offs, targets })
    }

    /// The number of edges.
    pub fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// Every edge, sorted (by source, then target).
    pub fn edges(&self) -> Vec<(u32, u32)> {
        (0..self.len() as u32)
            .flat_map(|v| self.succ(v).iter().map(move |&w| (v, w)))
            .collect()
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.offs.len().saturating_sub(1)
    }

    /// Whether the graph has no node.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The successors of `v`, in the order of the edges given (empty for a node out of range).
    #[inline]
    pub fn succ(&self, v: u32) -> &[u32] {
        let a = self.offs.get(v as usize).copied().unwrap_or(0) as usize;
        let b = self.offs.get(v as usize + 1).copied().unwrap_or(0) as usize;
        self.targets.get(a..b).unwrap_or(&[])
    }

    /// Tarjan's strongly connected components with more than one node (iterative, so deep
    /// graphs do not overflow the stack), each sorted, ordered by their smallest node. The
    /// graph must have no self loops (a node with one is not reported).
    pub fn cyclic_sccs(&self) -> Vec<Vec<u32>> {
        let n = self.len();
        const UNSEEN: u32 = u32::MAX;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut out = Vec::new();
        let mut next = 0u32;
        // Call stack of (node, position in its successor list).
        let mut call: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if index.get(root as usize) != Some(&UNSEEN) || self.succ(root).is_empty() {
                continue;
            }
            call.push((root, 0));
            set(&mut index, root, next);
            set(&mut low, root, next);
            next += 1;
            stack.push(root);
            set(&mut on_stack, root, true);
            while let Some(&mut (v, ref mut pos)) = call.last_mut() {
                let succ = self.succ(v);
                if let Some(&w) = succ.get(*pos) {
                    *pos += 1;
                    if get(&index, w) == UNSEEN {
                        set(&mut index, w, next);
                        set(&mut low, w, next);
                        next += 1;
                        stack.push(w);
                        set(&mut on_stack, w, true);
                        call.push((w, 0));
                    } else if get(&on_stack, w) {
                        let lw = get(&index, w).min(get(&low, v));
                        set(&mut low, v, lw);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    let l = get(&low, parent).min(get(&low, v));
                    set(&mut low, parent, l);
                }
                if get(&low, v) == get(&index, v) {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        set(&mut on_stack, w, false);
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        comp.sort_unstable();
                        out.push(comp);
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// A shortest cycle through the smallest node of `scc` (sorted), inside `scc`, as its
    /// nodes from that one on (breadth-first, successors in order: the first shortest one);
    /// empty when there is none.
    pub fn cycle_in(&self, scc: &[u32]) -> Vec<u32> {
        let Some(&start) = scc.first() else {
            return Vec::new();
        };
        let inside = |v: u32| scc.binary_search(&v).is_ok();
        let mut parent: BTreeMap<u32, u32> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for &w in self.succ(v) {
                if w == start {
                    let mut cyc = vec![v];
                    let mut c = v;
                    while c != start {
                        match parent.get(&c) {
                            Some(&p) => {
                                cyc.push(p);
                                c = p;
                            }
                            None => break,
                        }
                    }
                    cyc.reverse();
                    return cyc;
                }
                if inside(w) && !parent.contains_key(&w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        Vec::new()
    }

    /// A rank per node that strictly increases along every edge — the position in Kahn's
    /// [`Ready::Fifo`] order — or `None` when the graph has a cycle.
    pub fn topo_ranks(&self) -> Option<Vec<u32>> {
        let k = kahn(self.len(), |v| self.succ(v).iter().copied(), Ready::Fifo);
        if !k.is_acyclic() {
            return None;
        }
        let mut rank = vec![0u32; self.len()];
        for (r, &v) in k.order.iter().enumerate() {
            set(&mut rank, v, r as u32);
        }
        Some(rank)
    }
}

fn get<T: Copy + Default>(v: &[T], i: u32) -> T {
    v.get(i as usize).copied().unwrap_or_default()
}

fn set<T>(v: &mut [T], i: u32, x: T) {
    if let Some(s) = v.get_mut(i as usize) {
        *s = x;
    }
}

#[cfg(test)]
mod tests {
    //! Every algorithm against brute force on random small graphs: reachability by repeated
    //! relaxation, cycles by "a node reaches itself".

    #![expect(
        clippy::needless_range_loop,
        reason = "brute force reads best as index loops"
    )]

    use super::*;
    use proptest::prelude::*;

    /// `reach[a][b]`: a path of one edge or more leads from `a` to `b`.
    fn reach(n: usize, edges: &[(u32, u32)]) -> Vec<Vec<bool>> {
        let mut r = vec![vec![false; n]; n];
        for &(a, b) in edges {
            r[a as usize][b as usize] = true;
        }
        for k in 0..n {
            let via = r[k].clone();
            for row in r.iter_mut() {
                if row[k] {
                    for (x, &y) in row.iter_mut().zip(&via) {
                        *x |= y;
                    }
                }
            }
        }
        r
    }

    /// A random graph on 2 to 10 nodes without self loops, edges sorted and unique.
    fn graph() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
        (2usize..=10).prop_flat_map(|n| {
            // A target other than the source: skip over it.
            let edge = (0..n as u32, 0..n as u32 - 1).prop_map(|(a, b)| (a, b + u32::from(b >= a)));
            (
                Just(n),
                proptest::collection::btree_set(edge, 0..=3 * n)
                    .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Tarjan's components are exactly the classes of mutually reachable nodes with more
        /// than one node, sorted; each cycle found is a shortest cycle through the smallest
        /// node, inside its component.
        #[test]
        fn sccs_and_cycles_match_brute_force((n, edges) in graph()) {
            let g = Csr::new(n, &edges);
            let r = reach(n, &edges);
            let mut expected: Vec<Vec<u32>> = Vec::new();
            for v in 0..n {
                let class: Vec<u32> = (0..n)
                    .filter(|&w| w == v || (r[v][w] && r[w][v]))
                    .map(|w| w as u32)
                    .collect();
                if class.len() > 1 && class[0] == v as u32 {
                    expected.push(class);
                }
            }
            expected.sort();
            let sccs = g.cyclic_sccs();
            prop_assert_eq!(&sccs, &expected);
            for scc in &sccs {
                let cyc = g.cycle_in(scc);
                prop_assert_eq!(cyc.first(), scc.first());
                for (j, &a) in cyc.iter().enumerate() {
                    let b = cyc[(j + 1) % cyc.len()];
                    prop_assert!(edges.binary_search(&(a, b)).is_ok(), "{a}→{b} is no edge");
                    prop_assert!(scc.binary_search(&a).is_ok());
                }
                // Shortest: no closed walk of fewer edges through the start inside the scc.
                let start = scc[0];
                let mut frontier = vec![start];
                for len in 1..cyc.len() {
                    let mut next = Vec::new();
                    for &v in &frontier {
                        for &w in g.succ(v) {
                            prop_assert!(w != start, "a cycle of {len} edges exists");
                            if scc.binary_search(&w).is_ok() && !next.contains(&w) {
                                next.push(w);
                            }
                        }
                    }
                    frontier = next;
                }
            }
        }

        /// Kahn, whichever node it takes next: it takes exactly the nodes no cycle reaches,
        /// each after its predecessors, and leaves each other node waiting on its in-edges
        /// from untaken nodes; `Lowest` gives the smallest order, `topo_ranks` a rank that
        /// increases along every edge exactly when the graph is acyclic.
        #[test]
        fn kahn_matches_brute_force((n, edges) in graph()) {
            let r = reach(n, &edges);
            let on_cycle = |v: usize| r[v][v];
            let behind = |w: usize| on_cycle(w) || (0..n).any(|v| on_cycle(v) && r[v][w]);
            let g = Csr::new(n, &edges);
            for ready in [Ready::Fifo, Ready::Lowest, Ready::Lifo] {
                let k = kahn(n, |v| g.succ(v).iter().copied(), ready);
                let mut taken = vec![false; n];
                for &v in &k.order {
                    prop_assert!(!taken[v as usize]);
                    for &(a, b) in &edges {
                        if b == v {
                            prop_assert!(taken[a as usize], "{v} before its predecessor {a}");
                        }
                    }
                    taken[v as usize] = true;
                }
                for w in 0..n {
                    prop_assert_eq!(taken[w], !behind(w), "node {}", w);
                    let from_untaken = edges
                        .iter()
                        .filter(|&&(a, b)| b as usize == w && !taken[a as usize])
                        .count() as u32;
                    prop_assert_eq!(k.waiting[w], from_untaken);
                }
                prop_assert_eq!(k.is_acyclic(), (0..n).all(|v| !on_cycle(v)));
                if ready == Ready::Lowest {
                    // Greedy smallest ready node, step by step.
                    let mut indeg = vec![0u32; n];
                    for &(_, b) in &edges {
                        indeg[b as usize] += 1;
                    }
                    let mut done = vec![false; n];
                    let mut expected = Vec::new();
                    while let Some(v) = (0..n).find(|&v| !done[v] && indeg[v] == 0) {
                        done[v] = true;
                        expected.push(v as u32);
                        for &(a, b) in &edges {
                            if a as usize == v {
                                indeg[b as usize] -= 1;
                            }
                        }
                    }
                    prop_assert_eq!(&k.order, &expected);
                }
            }
            match g.topo_ranks() {
                Some(rank) => {
                    prop_assert!(k_acyclic(&r, n));
                    for &(a, b) in &edges {
                        prop_assert!(rank[a as usize] < rank[b as usize]);
                    }
                    let mut sorted = rank.clone();
                    sorted.sort_unstable();
                    prop_assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
                }
                None => prop_assert!(!k_acyclic(&r, n)),
            }
        }
    }

    fn k_acyclic(r: &[Vec<bool>], n: usize) -> bool {
        (0..n).all(|v| !r[v][v])
    }

    #[test]
    fn a_three_cycle_behind_a_chain() {
        // 0 → 1 → 2 → 3 → 1, 3 → 4: {1, 2, 3} is the component, 4 waits behind it.
        let edges = [(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)];
        let g = Csr::new(5, &edges);
        assert_eq!(g.cyclic_sccs(), vec![vec![1, 2, 3]]);
        assert_eq!(g.cycle_in(&[1, 2, 3]), vec![1, 2, 3]);
        assert_eq!(g.topo_ranks(), None);
        let k = kahn(5, |v| g.succ(v).iter().copied(), Ready::Lifo);
        assert_eq!(k.order, vec![0]);
        assert_eq!(k.waiting, vec![0, 1, 1, 1, 1]);
    }
}
