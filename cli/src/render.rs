//! The verifier's results for people: the verdict in sentences, credit loops channel by
//! channel, failure patterns with their witnesses, partition breaches, routes hop by hop.
//! `verify`, `audit`, `check` and `build` show their proofs with these; the findings carry
//! the same violations to JSON and SARIF ([`crate::findings`]).

use crate::findings;
use std::fmt::Write as _;
use weft_fabric::FabricState;
use weft_verifier::{
    CreditLoop, FailureKind, FailurePattern, Outcome, Property, Report, Route, Scope,
};

/// An outcome in a word (with the reason it is unknown).
fn outcome_word(o: &Outcome) -> String {
    match o {
        Outcome::Proven => "proven".to_owned(),
        Outcome::Violated => "violated".to_owned(),
        Outcome::Unknown(why) => format!("unknown ({why})"),
    }
}

/// A count with thin groups of three digits: `13 284`.
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// What was proven, in words: "deadlock freedom and connectivity, all 13 284 LIDs, HCA and
/// switch pairs".
pub(crate) fn proven_sentence(
    properties: &[weft_verifier::Property],
    scope: Scope,
    lids: u64,
    hca_lids: u64,
    switch_lids: u64,
) -> String {
    let names: Vec<&str> = properties.iter().map(|p| p.noun()).collect();
    let what = match names.as_slice() {
        [] => "nothing".to_owned(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    match scope {
        Scope::HcaToHca => format!(
            "{what}, {} HCA LIDs, HCA pairs only (switch LIDs not covered)",
            group(hca_lids)
        ),
        _ => format!(
            "{what}, all {} LIDs ({} HCA, {} switch), HCA and switch pairs",
            group(lids),
            group(hca_lids),
            group(switch_lids)
        ),
    }
}

pub(crate) fn ch(c: &weft_verifier::Channel) -> String {
    format!(
        "`{}` port {} → `{}` port {} on VL {}",
        c.node.name, c.port, c.to.name, c.to_port, c.vl
    )
}

/// A route as `H1 ─1→ L1 ─5→ S1 ✗`.
pub(crate) fn route_line(r: &Route) -> String {
    let mut s = String::new();
    for (k, h) in r.hops.iter().enumerate() {
        if k > 0 {
            s.push(' ');
        }
        s += &format!("`{}`", h.node.name);
        match (h.out_port, h.vl) {
            (Some(o), Some(v)) => s += &format!(" ─{o}/VL{v}→"),
            (Some(o), None) => s += &format!(" ─{o}→ ✗"),
            (None, _) if k + 1 == r.hops.len() => {}
            (None, _) => {}
        }
    }
    s
}

pub(crate) fn route_name(r: &Route) -> String {
    format!(
        "`{}`{} → `{}` (LID {}, SL {})",
        r.src.node.name,
        if r.src.port == 0 {
            String::new()
        } else {
            format!(" port {}", r.src.port)
        },
        r.dst.node.name,
        r.dlid.0,
        r.sl
    )
}

/// What the properties asked for came to, in one line each, plus the sentence of what was
/// proven when everything was.
pub(crate) fn verdict_lines(t: &mut String, r: &Report) {
    if r.is_proven() {
        let switch_lids = r.stats.switch_destinations;
        let _ = writeln!(
            t,
            "✓ {} ({} routes, {} channels, {} VL(s))",
            proven_sentence(
                &r.properties,
                r.scope,
                r.stats.destinations,
                r.stats.destinations - switch_lids,
                switch_lids
            ),
            group(r.stats.routes),
            group(r.stats.channels),
            r.stats.vls
        );
        if let Some(i) = &r.isolation {
            let _ = writeln!(
                t,
                "  isolation: the P_Key tables of {} end ports enforce exactly the {} declared partition(s){}",
                group(i.ports as u64),
                i.partitions,
                if i.classes > 0 {
                    format!(", and {} tenant(s)' traffic stays on its class's SLs and VLs", i.classes)
                } else {
                    String::new()
                }
            );
            let _ = writeln!(t, "  the SM {}", sm_line(i));
        }
        if let Some(a) = &r.apm {
            let _ = writeln!(
                t,
                "  APM: every one of {} (source, destination) pairs has an alternate path sharing no cable between switches with its primary",
                group(a.pairs)
            );
        }
        if let (Some(m), true) = (
            &r.multicast,
            r.properties.contains(&Property::MulticastConnected),
        ) {
            let _ = writeln!(t, "  multicast: {}", multicast_line(m));
        }
        traffic_line(t, r);
        return;
    }
    for &p in &r.properties {
        let line = match (r.outcome(p), p) {
            (Outcome::Proven, _) => format!("✓ {}: proven", p.noun()),
            (Outcome::Unknown(why), _) => format!("? {}: unknown ({why})", p.noun()),
            (Outcome::Violated, Property::DeadlockFree) => format!(
                "× {}: {} credit loop(s)",
                p.noun(),
                group(r.credit_loops_total)
            ),
            (Outcome::Violated, Property::ApmDisjoint) => format!(
                "× {}: {} pair(s) of end ports share a cable between their primary and alternate paths",
                p.noun(),
                group(r.apm.as_ref().map_or(0, |a| a.shared_pairs))
            ),
            (Outcome::Violated, Property::Isolated) => format!(
                "× {}: {}",
                p.noun(),
                r.isolation.as_ref().map_or_else(String::new, isolation_count)
            ),
            (Outcome::Violated, Property::MulticastConnected) => {
                let m = r.multicast.as_ref();
                format!(
                    "× {}: {} (sender, receiver) pair(s) or looping sender(s) fail, in {} pattern(s)",
                    p.noun(),
                    group(m.map_or(0, |m| m.failed)),
                    m.map_or(0, |m| m.failures.len())
                )
            }
            (Outcome::Violated, _) => format!(
                "× {}: {} route(s) fail, in {} pattern(s)",
                p.noun(),
                group(r.failed_routes),
                r.failures.len()
            ),
        };
        // A violation carries its finding's code; an unknown found nothing to tag.
        if *r.outcome(p) == Outcome::Violated {
            let _ = writeln!(t, "{line} [{}]", p.code());
        } else {
            let _ = writeln!(t, "{line}");
        }
    }
    traffic_line(t, r);
}

/// What traffic the verdict covers, in one line.
fn traffic_line(t: &mut String, r: &Report) {
    let _ = writeln!(t, "  traffic: {}", r.traffic.describe());
}

/// A verification for people: what was checked, the credit loops and failed-route patterns
/// among `findings` (other findings are rendered elsewhere), the verdict lines and the z3
/// engine's answer.
pub(crate) fn human(
    state: &FabricState,
    report: Option<&Report>,
    z3: Option<&weft_verifier::z3::Z3Report>,
    findings: &[findings::Finding],
    origin: &str,
    max_listed: usize,
) -> String {
    let mut t = String::new();
    if let Some(r) = report {
        let s = &r.stats;
        let _ = writeln!(
            t,
            "verifying `{}` ({origin}), scope {}: {} sources, {} destinations, {} routes, {} channels, {} dependencies, {} VL(s)",
            r.fabric,
            r.scope.as_str(),
            group(s.sources),
            group(s.destinations),
            group(s.routes),
            group(s.channels),
            group(s.dependencies),
            s.vls
        );
        t += &findings::human_loops(findings);
        if r.credit_loops_total > r.credit_loops.len() as u64 {
            let _ = writeln!(
                t,
                "\n… and {} more credit loop(s) (`--max-listed` shows more)",
                group(r.credit_loops_total - r.credit_loops.len() as u64)
            );
        }
        let shown = r.failures.len().min(max_listed.max(1));
        t += &findings::human_patterns(findings, shown);
        if r.failures.len() > shown {
            let rest: u64 = r.failures.iter().skip(shown).map(|p| p.routes).sum();
            let _ = writeln!(
                t,
                "\n… and {} more pattern(s) of failed routes ({} routes; `--max-listed` shows more)",
                r.failures.len() - shown,
                group(rest)
            );
        }
        if !r.failures.is_empty() {
            let hca_hca = r.failures.iter().any(|p| {
                p.source.kind != weft_fabric::NodeKind::Switch
                    && p.destination.kind != weft_fabric::NodeKind::Switch
            });
            if !hca_hca {
                let _ = writeln!(t, "\n  HCA→HCA routes: none fail");
            }
        }
        if let Some(i) = r.isolation.as_ref().filter(|i| !i.breaches.is_empty()) {
            human_isolation(&mut t, i);
        }
        if let Some(a) = r.apm.as_ref().filter(|a| !a.shared.is_empty()) {
            let _ = writeln!(
                t,
                "\n× {} pair(s) of end ports have primary and alternate paths through one cable [{}]",
                group(a.shared_pairs),
                Property::ApmDisjoint.code()
            );
            for s in &a.shared {
                let _ = writeln!(t, "  {}", s.describe());
            }
        }
        if let Some(m) = r.multicast.as_ref().filter(|m| !m.failures.is_empty()) {
            let _ = writeln!(
                t,
                "\n× multicast: {} failed (sender, receiver) pair(s) and looping sender(s), in {} pattern(s) [{}]",
                group(m.failed),
                m.failures.len(),
                Property::MulticastConnected.code()
            );
            for f in &m.failures {
                let _ = writeln!(t, "  {}", f.describe());
            }
        }
        let _ = writeln!(t);
        verdict_lines(&mut t, r);
        if let Some(c) = &r.certificate {
            let _ = writeln!(
                t,
                "  certificate: {} channels ranked, {} destinations labelled",
                group(c.deadlock_free.channels.len() as u64),
                group(c.connected.destinations.len() as u64)
            );
        }
    }
    if let Some(z) = z3 {
        let _ = writeln!(
            t,
            "z3: deadlock free {}, connected {} ({} channels, {} dependencies, {} routes)",
            outcome_word(&z.verdict.deadlock_free),
            outcome_word(&z.verdict.connected),
            z.channels,
            z.dependencies,
            z.routes
        );
        if report.is_none() {
            t += &findings::human_loops(findings);
            let _ = writeln!(
                t,
                "  traffic: {}",
                weft_verifier::Traffic::of(state).describe()
            );
        }
    }
    t
}

/// Where the SM runs, as the isolation check took it (a verb phrase).
pub(crate) fn sm_line(i: &weft_verifier::Isolation) -> String {
    if i.sm.is_empty() {
        return "runs where the state does not say (`sm on NODE` in the source, `--sm NODE`): \
                every end port holds a default-partition key, the SM's own port is not checked"
            .to_owned();
    }
    let ports: Vec<String> =
        i.sm.iter()
            .map(|e| format!("`{}` port {}", e.node.name, e.port))
            .collect();
    format!(
        "runs on {}, a full member of the default partition every end port reaches",
        ports.join(", ")
    )
}

/// How many pairs break the declared partitions (and, with classes, leave them).
fn isolation_count(i: &weft_verifier::Isolation) -> String {
    let mut t = format!(
        "{} pair(s) of end ports break the declared partitions",
        group(i.pairs)
    );
    if i.sm_breaches > 0 {
        t += &format!(
            "; {} port(s) keep end ports from the SM",
            group(i.sm_breaches)
        );
    }
    if i.classes > 0 {
        t += &format!(
            "; {} pair(s) or hop(s) leave their tenant's class",
            group(i.off_class)
        );
    }
    t
}

/// The pairs of end ports that break the declared partitions.
fn human_isolation(t: &mut String, i: &weft_verifier::Isolation) {
    let _ = writeln!(
        t,
        "\n× {} [{}]",
        isolation_count(i),
        Property::Isolated.code()
    );
    for b in &i.breaches {
        let _ = writeln!(t, "  {}", b.describe());
    }
    let listed: u64 = i.breaches.iter().map(|b| b.pairs).sum();
    if listed < i.pairs {
        let _ = writeln!(
            t,
            "  … and {} more pair(s) (`--max-listed` shows more)",
            group(i.pairs - listed)
        );
    }
}

pub(crate) fn human_loop(t: &mut String, l: &CreditLoop, k: usize, n: u64) {
    let _ = writeln!(
        t,
        "\n× credit loop {} of {n}: {} channels in a cycle of dependencies [{}]",
        k + 1,
        l.channels.len(),
        Property::DeadlockFree.code()
    );
    for d in &l.cycle {
        let _ = writeln!(t, "  │ {}", ch(&d.from));
        let _ = writeln!(
            t,
            "  │   waits for {} — route {}",
            ch(&d.to),
            route_name(&d.route)
        );
    }
    let _ = writeln!(t, "  ╰─ back to the first channel");
    if l.channels.len() > l.cycle.len() {
        let shown = l.channels.len().min(12);
        let _ = writeln!(t, "  channels of the loop:");
        for c in l.channels.iter().take(shown) {
            let _ = writeln!(t, "    {}", ch(c));
        }
        if l.channels.len() > shown {
            let _ = writeln!(t, "    … and {} more", l.channels.len() - shown);
        }
    }
    let _ = writeln!(
        t,
        "  help: packets holding each channel wait for the next; break the cycle with up/down routing or move a route to another VL (SL2VL)"
    );
}

/// One sentence for a pattern: "402 084 level-3 switch → level-3 switch routes fail at the
/// source: no forwarding entry (255)".
pub(crate) fn pattern_sentence(p: &FailurePattern) -> String {
    let place = if p.at_source {
        "at the source".to_owned()
    } else if p.at_nodes == 1 {
        match p.witnesses.first() {
            Some(w) => format!("at `{}`", w.at.name),
            None => format!("at one {}", p.at.describe()),
        }
    } else {
        format!("at {} {}", group(p.at_nodes), p.at.describe_plural())
    };
    format!(
        "{} {} → {} route(s) fail {place}: {}",
        group(p.routes),
        p.source.describe(),
        p.destination.describe(),
        p.reason.describe()
    )
}

pub(crate) fn human_pattern(t: &mut String, p: &FailurePattern) {
    let _ = writeln!(
        t,
        "\n× {} [{}]",
        pattern_sentence(p),
        Property::Connected.code()
    );
    let _ = writeln!(
        t,
        "  {} source port(s), {} destination LID(s){}",
        group(p.sources),
        group(p.destinations),
        if p.at_source {
            String::new()
        } else {
            format!(", failing at {} node(s)", group(p.at_nodes))
        }
    );
    for w in &p.witnesses {
        // A route that fails where it starts has no hops worth drawing.
        let hops = if w.route.hops.len() > 1 {
            format!("{} — ", route_line(&w.route))
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "  e.g. {}: {hops}`{}` {}",
            route_name(&w.route),
            w.at.name,
            w.reason.describe()
        );
    }
    let help = match p.reason {
        FailureKind::Unset => "set the entries for these LIDs on those switches",
        FailureKind::Loop => "the LFTs send these destinations round in a circle",
        FailureKind::PortDown | FailureKind::PortUnwired => "reroute around the dead port",
        FailureKind::VlNotOperational | FailureKind::Sl2VlUnassigned => {
            "map the SL to a VL every port on the path supports"
        }
        FailureKind::VlAboveMaxVls => {
            "map the SL to a VL below max_vls, or let the SM operate more VLs"
        }
        FailureKind::VlNotScheduled => {
            "give the VL a weight above 0 in the port's high or low VL arbitration table"
        }
        _ => "point the entries at the ports toward the destinations",
    };
    let _ = writeln!(t, "  help: {help}");
}

/// What a proven multicast delivery covered: the pairs and groups, or, with no (sender,
/// receiver) pair to deliver (a group of one member, senders down), that there was nothing
/// to deliver and no copy looped.
pub(crate) fn multicast_line(m: &weft_verifier::McReport) -> String {
    let groups = m.traffic.multicast_groups;
    if m.pairs == 0 {
        format!(
            "nothing to deliver: {groups} group(s), none with a live sender and another receiver; no copy comes back to a switch"
        )
    } else {
        format!(
            "each of {} (sender, receiver) pairs of {groups} group(s) gets exactly one copy, and no copy comes back to a switch",
            group(m.pairs)
        )
    }
}
