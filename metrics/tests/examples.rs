//! Quality metrics of weft's routing on the example fat-trees.

#![expect(clippy::panic, reason = "test helpers fail by panicking")]

use weft_compiler::build::build;
use weft_compiler::{check, NoFiles};
use weft_fabric::FabricState;
use weft_metrics::{self as metrics, QualityOptions};

fn example(name: &str) -> FabricState {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let c = check(name, &src, &NoFiles);
    assert!(!c.has_errors(), "{:?}", c.diagnostics);
    let e = c.elaborated.unwrap_or_else(|| panic!("no fabric"));
    match build(&e) {
        Ok(b) => b.state.into_inner(),
        Err(d) => panic!("build failed: {d:?}"),
    }
}

#[test]
fn fat_tree_648_is_balanced_and_shift_optimal() {
    let st = example("cluster-648.weft");
    let q = metrics::quality(&st, &QualityOptions::default());
    assert_eq!(q.hosts, 648);
    assert_eq!(q.switches, 54);
    // check_lft_balance: no switch has two switch-facing ports more than one LID apart.
    assert_eq!(q.balance.switches, 54);
    assert_eq!(q.balance.unbalanced, 0, "{:#?}", q.balance.per_switch);
    assert_eq!(q.balance.unbalanced_by_direction, 0);
    // Every leaf's 18 up ports carry 630 / 18 = 35 remote hosts; every spine port one leaf's 18.
    for u in &q.balance.per_switch {
        let want = if u.level == Some(1) { 35 } else { 18 };
        assert!(u.ports.values().all(|&c| c == want), "{u:?}");
    }
    // Every shift, every k in 1..648: no link carries two flows.
    assert!(q.shift.all);
    assert_eq!(q.shift.shifts, 647);
    assert_eq!(q.shift.unroutable, 0);
    assert_eq!(q.shift.max_load, 1);
    // fat_tree's routes are shortest: every pair has an up*/down* path and takes one.
    let e = &q.hop_excess;
    assert_eq!((e.updown_pairs, e.without_updown), (648 * 647, 0));
    assert_eq!((e.over_updown, e.over_shortest), (0, 0), "{:?}", e.worst);
    // All-to-all: each leaf→spine link carries the flows of the leaf's 18 hosts to 35 hosts.
    assert_eq!(q.all_to_all.unroutable, 0);
    assert_eq!(q.all_to_all.max_load, 18 * 35);
    // Hops: 36 × 18 × 17 same-leaf pairs of 2 links, the rest 4.
    assert_eq!(q.hops.histogram.get(&2), Some(&(36 * 18 * 17)));
    assert_eq!(q.hops.histogram.get(&4), Some(&(648 * 647 - 36 * 18 * 17)));
    assert_eq!(q.hops.unroutable.total(), 0);
    // sFtree: every switch reaches every switch.
    assert_eq!(q.switch_to_switch.pairs, 54 * 53);
    assert_eq!(q.switch_to_switch.unroutable.total(), 0);
    assert_eq!(q.bisections.count, 1000);
    assert!(
        q.bisections.ebb.is_some_and(|e| e > 0.5 && e <= 1.0),
        "{:?}",
        q.bisections.ebb
    );
}

#[test]
fn quality_does_not_depend_on_the_thread_count() {
    let st = example("lab-16.weft");
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| metrics::quality(&st, &QualityOptions::default()))
    };
    let one = run(1);
    assert_eq!(one, run(3));
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        serde_json::to_string(&run(2)).unwrap()
    );
}
