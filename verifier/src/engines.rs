//! Running the explicit engine, z3, or both on one state, and holding them to one verdict: the
//! comparison `weft verify --engine both` makes. Both engines see the same options; under
//! adaptive routing each verdict is first weakened the same way
//! ([`Verdict::under_adaptive_routing`]); then two verdicts that differ in any property are a
//! [`Disagreement`] (a bug in weft), never a result.

use crate::z3::{Z3Report, Z3};
use crate::{Options, Report, Verdict};
use weft_fabric::ValidState;

/// Which engines run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engines {
    /// The explicit engine only.
    Explicit,
    /// z3 only.
    Z3,
    /// Both, which must agree.
    Both,
}

/// What the engines found.
#[derive(Clone, Debug)]
pub struct Run {
    /// The explicit engine's report, when it ran.
    pub explicit: Option<Report>,
    /// z3's, when it ran.
    pub z3: Option<Z3Report>,
    /// The verdict (the engines', one when both ran).
    pub verdict: Verdict,
}

/// The two engines reached different verdicts on one state.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "the explicit and z3 engines disagree (explicit: {}, z3: {}); please report this",
    json(explicit),
    json(z3)
)]
pub struct Disagreement {
    /// The explicit engine's verdict.
    pub explicit: Box<Verdict>,
    /// z3's.
    pub z3: Box<Verdict>,
}

fn json(v: &Verdict) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("({e})"))
}

/// Runs `engines` on `state` with `opts` (z3 with the settings of `z3`), the verdicts weakened
/// for adaptive routing when `adaptive_routing`; refuses two verdicts that differ.
pub fn run(
    state: &ValidState,
    opts: &Options,
    engines: Engines,
    z3: Z3,
    adaptive_routing: bool,
) -> Result<Run, Disagreement> {
    let mut explicit = (engines != Engines::Z3).then(|| crate::verify(state, opts));
    let mut z3 = (engines != Engines::Explicit).then(|| z3.run(state, opts));
    if adaptive_routing {
        if let Some(r) = explicit.as_mut() {
            r.under_adaptive_routing();
        }
        if let Some(z) = z3.as_mut() {
            z.verdict.under_adaptive_routing();
        }
    }
    let verdict = agree(
        explicit.as_ref().map(|r| &r.verdict),
        z3.as_ref().map(|z| &z.verdict),
    )?;
    Ok(Run {
        explicit,
        z3,
        verdict,
    })
}

/// The one verdict of the engines that ran: equal verdicts when both did. (Neither ran:
/// `engines` always names one, so this is unknown on every property.)
fn agree(explicit: Option<&Verdict>, z3: Option<&Verdict>) -> Result<Verdict, Disagreement> {
    match (explicit, z3) {
        (Some(e), Some(z)) if e != z => Err(Disagreement {
            explicit: Box::new(e.clone()),
            z3: Box::new(z.clone()),
        }),
        (Some(v), _) | (None, Some(v)) => Ok(v.clone()),
        (None, None) => {
            let unknown = || crate::Outcome::Unknown("no engine ran".to_owned());
            Ok(Verdict {
                deadlock_free: unknown(),
                connected: unknown(),
                isolated: None,
                apm_disjoint: None,
                multicast_connected: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;
    use crate::Outcome;

    fn proven_state() -> ValidState {
        let f = testkit::fat_tree2(2, 2, 2);
        let lids = testkit::sequential_lids(&f);
        testkit::valid(testkit::route_updown(&f, lids))
    }

    #[test]
    fn the_engines_that_run_give_one_verdict() {
        let st = proven_state();
        let opts = Options::default();
        let e = run(&st, &opts, Engines::Explicit, Z3::default(), false).unwrap();
        assert!(e.explicit.is_some() && e.z3.is_none());
        assert_eq!(e.verdict.deadlock_free, Outcome::Proven);
        assert_eq!(e.verdict.connected, Outcome::Proven);
        let z = run(&st, &opts, Engines::Z3, Z3::default(), false).unwrap();
        assert!(z.explicit.is_none() && z.z3.is_some());
        let b = run(&st, &opts, Engines::Both, Z3::default(), false).unwrap();
        assert!(b.explicit.is_some() && b.z3.is_some());
        if crate::z3::BUILT_IN {
            assert_eq!(b.verdict, e.verdict);
            assert_eq!(z.verdict, e.verdict);
        }
        // Adaptive routing: proven routes become unknown, in the explicit engine's certificate
        // too.
        let a = run(&st, &opts, Engines::Explicit, Z3::default(), true).unwrap();
        assert!(matches!(a.verdict.deadlock_free, Outcome::Unknown(_)));
        assert!(a.explicit.unwrap().certificate.is_none());
    }

    #[test]
    fn different_verdicts_are_a_disagreement() {
        let st = proven_state();
        let proven = run(
            &st,
            &Options::default(),
            Engines::Explicit,
            Z3::default(),
            false,
        )
        .unwrap()
        .verdict;
        let mut other = proven.clone();
        other.connected = Outcome::Unknown("timeout".into());
        assert_eq!(agree(Some(&proven), Some(&proven)), Ok(proven.clone()));
        assert_eq!(agree(None, Some(&other)), Ok(other.clone()));
        let d = agree(Some(&proven), Some(&other)).unwrap_err();
        assert_eq!((&*d.explicit, &*d.z3), (&proven, &other));
        let m = d.to_string();
        assert!(
            m.starts_with("the explicit and z3 engines disagree (explicit: {")
                && m.ends_with("}); please report this"),
            "{m}"
        );
    }
}
