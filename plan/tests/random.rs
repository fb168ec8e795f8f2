//! The planner on random fabrics: two routings of one fabric (up/down and min-hop, on the same
//! LIDs), planned both ways. `plan` never panics; when it gives a plan, replaying its steps
//! with the transition checker proves every one, each write's `old` block is what the switch
//! holds when it lands, and the end is exactly the desired tables; when it refuses, it says
//! why (the desired state unproven, or a witness).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use weft_fabric::plan::SmpWrite;
use weft_fabric::{NodeId, ValidState};
use weft_plan::{check_steps, plan, start, Mode, Options, PlanError};
use weft_verifier::testkit::{self, Rng};
use weft_verifier::Scope;

fn lfts(st: &ValidState) -> BTreeMap<NodeId, Vec<u8>> {
    st.switches
        .iter()
        .map(|(&id, t)| (id, t.lft.ports.clone()))
        .collect()
}

#[test]
fn plans_replay_to_the_desired_tables() {
    let mut rng = Rng(0x91a7);
    let (mut planned, mut refused) = (0, 0);
    for k in 0..120 {
        let f = testkit::small_fabric(&mut rng);
        let lids = testkit::sequential_lids(&f);
        let a = testkit::valid(testkit::route_updown(&f, lids.clone()));
        let b = testkit::valid(testkit::route_minhop(&f, lids));
        for (old, new) in [(&a, &b), (&b, &a)] {
            for mode in [Mode::Fault, Mode::Drain] {
                let full = rng.below(2) == 0;
                match plan(
                    old,
                    new,
                    &Options {
                        mode,
                        scope: Scope::All,
                        full,
                    },
                ) {
                    Ok(p) => {
                        planned += 1;
                        let s = start(old, new, mode).unwrap();
                        let steps: Vec<Vec<SmpWrite>> =
                            p.plan.steps.iter().map(|st| st.writes.clone()).collect();
                        let checks = check_steps(&s, &steps, Scope::All, &Default::default());
                        assert_eq!(checks.len(), steps.len(), "case {k}");
                        assert!(checks.iter().all(|c| c.is_proven()), "case {k}");
                        // Replay the writes on a shadow of the tables.
                        let by_guid = |st: &ValidState| -> BTreeMap<weft_fabric::Guid, Vec<u8>> {
                            lfts(st)
                                .into_iter()
                                .map(|(id, t)| (st.fabric.node(id).guid(), t))
                                .collect()
                        };
                        let mut t = by_guid(&s);
                        p.plan
                            .replay_lfts(&mut t)
                            .unwrap_or_else(|e| panic!("case {k}: {e}"));
                        assert_eq!(
                            t,
                            by_guid(&p.end),
                            "case {k}: the end is the plan's end state"
                        );
                        if full {
                            assert_eq!(
                                lfts(&p.end),
                                lfts(new),
                                "case {k}: --full ends at the desired tables"
                            );
                        }
                    }
                    Err(PlanError::NoSafeOrder { check, .. }) => {
                        refused += 1;
                        assert!(!check.is_proven(), "case {k}");
                        assert!(
                            check.forwarding_loop.is_some()
                                || !check.credit_loop.is_empty()
                                || check.broken.is_some(),
                            "case {k}: a refusal has a witness: {check:?}"
                        );
                    }
                    Err(PlanError::Unproven(_)) => refused += 1,
                    Err(e) => panic!("case {k}: {e}"),
                }
            }
        }
    }
    assert!(
        planned > 20 && refused > 20,
        "{planned} planned, {refused} refused"
    );
}
