//! What `weft watch` makes of each read: the proof, the difference from the reference, the
//! cabling, the repair, the events and the metrics.

use super::backoff::Decision;
use super::metrics::KindLabel;
use super::{now, prove, Events, Read, ReadAt, Repair, Run, Verdict};
use crate::findings::{Finding, Level};
use crate::Fatal;
use serde_json::{json, Value};
use weft_deploy::watch::{self, Change, Difference, Watcher};
use weft_deploy::Mad;
use weft_fabric::code::Coded as _;
use weft_fabric::{FabricState, Guid};

/// What a repair did.
enum Repaired {
    /// Nothing to repair, or not asked.
    No,
    /// Written to the plan file (steps); applied too.
    Planned { steps: usize, applied: bool },
    /// Not planned: why.
    Not(String),
}

impl Run<'_> {
    /// The reference the state read is compared with: the desired state, else the first
    /// state read.
    fn reference(&self) -> Option<&FabricState> {
        self.desired
            .as_ref()
            .map(|d| d.state())
            .or(self.reference.as_ref())
    }

    /// A node's name in the reference (else its GUID).
    fn name(&self, g: Guid) -> String {
        self.reference()
            .and_then(|r| {
                r.fabric
                    .find_guid(g)
                    .map(|id| r.fabric.node(id).name().to_owned())
            })
            .unwrap_or_else(|| format!("{:#018x}", g.0))
    }

    fn change_json(&self, c: &Change) -> Value {
        match c {
            Change::PortStateChange { switch } => {
                json!({"kind": "port_state_change", "switch": self.name(*switch), "guid": format!("{:#018x}", switch.0)})
            }
            Change::Top { switch, was, now } => {
                json!({"kind": "linear_fdb_top", "switch": self.name(*switch), "was": was, "now": now})
            }
            Change::Unanswered { switch, error } => {
                json!({"kind": "unanswered", "switch": switch.map(|g| self.name(g)), "code": error.code(), "error": error.to_string()})
            }
            Change::MasterSm { was, now } => json!({"kind": "master_sm", "was": was, "now": now}),
            Change::Ports { switch, ports } => {
                json!({"kind": "ports", "switch": self.name(*switch), "ports": ports})
            }
            Change::Blocks { switch, blocks } => {
                json!({"kind": "lft_blocks", "switch": self.name(*switch), "blocks": blocks})
            }
        }
    }

    fn change_human(&self, c: &Change) -> String {
        match c {
            Change::PortStateChange { switch } => {
                format!("PortStateChange on `{}`", self.name(*switch))
            }
            Change::Top { switch, was, now } => {
                format!("LinearFDBTop of `{}` {was} → {now}", self.name(*switch))
            }
            Change::Unanswered {
                switch: Some(g),
                error,
            } => format!("`{}` did not answer ({error})", self.name(*g)),
            Change::Unanswered {
                switch: None,
                error,
            } => format!("the local port did not answer ({error})"),
            Change::MasterSm { was, now } => format!(
                "master SM LID {} → {now}",
                was.map_or_else(|| "?".to_owned(), |w| w.to_string())
            ),
            Change::Ports { switch, ports } => format!(
                "ports {ports:?} of `{}` no longer as discovered",
                self.name(*switch)
            ),
            Change::Blocks { switch, blocks } => format!(
                "LFT block(s) {blocks:?} of `{}` changed",
                self.name(*switch)
            ),
        }
    }

    /// The sweep's counters.
    fn count(
        &self,
        light: bool,
        light_smps: usize,
        heavy_smps: Option<usize>,
        changes: usize,
        took: std::time::Duration,
    ) {
        let m = &self.metrics;
        let kind = |k: &str| KindLabel { kind: k.to_owned() };
        if light {
            m.sweeps.get_or_create(&kind("light")).inc();
            m.smps
                .get_or_create(&kind("light"))
                .inc_by(light_smps as u64);
        }
        m.duration
            .get_or_create(&kind(if heavy_smps.is_some() {
                "heavy"
            } else {
                "light"
            }))
            .set(took.as_secs_f64());
        if let Some(smps) = heavy_smps {
            m.sweeps.get_or_create(&kind("heavy")).inc();
            m.smps.get_or_create(&kind("heavy")).inc_by(smps as u64);
        }
        m.changes.inc_by(changes as u64);
    }

    /// The read the verdict is on, and the last full one, as figures.
    fn gauge_read_at(&self) {
        let m = &self.metrics;
        m.verdict_sweep
            .set(i64::try_from(self.verdict_of.sweep).unwrap_or(i64::MAX));
        m.verdict_full.set(i64::from(self.verdict_of.full));
        m.verdict_time.set(self.verdict_of.unix());
        if let Some(r) = &self.last_full {
            m.last_full_time.set(r.unix());
        }
    }

    /// Proves the state read again when the sweep read anything (a verdict is proven again
    /// only on a new read; a partial read is unknown); the findings.
    fn judge(
        &mut self,
        live: Option<&FabricState>,
        heavy: Option<&(bool, usize, Option<String>)>,
        unanswered: usize,
    ) -> Vec<Finding> {
        if heavy.is_none() && live.is_some() {
            return Vec::new();
        }
        self.verdict = match (live, heavy.and_then(|h| h.2.clone())) {
            (Some(st), _) => prove(st, &self.artifact, &self.verdict),
            (None, why) => Verdict::unknown(
                &format!(
                    "a read the fabric did not answer: {}",
                    why.unwrap_or_default()
                ),
                Vec::new(),
                &self.verdict,
            ),
        };
        self.verdict_of = ReadAt {
            sweep: self.sweep,
            full: heavy.is_some_and(|h| h.0),
            time: std::time::SystemTime::now(),
        };
        if self.verdict_of.full && live.is_some() && unanswered == 0 {
            self.last_full = Some(self.verdict_of);
        }
        self.verdict.findings.clone()
    }

    /// One event per finding.
    fn emit_findings(&self, events: &mut Events, found: &[Finding]) -> Result<(), Fatal> {
        for f in found {
            let mut v = serde_json::to_value(f)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("event".into(), "finding".into());
                o.insert("time".into(), now().into());
                o.insert("sweep".into(), self.sweep.into());
                o.insert("verdict_of".into(), self.verdict_of.json());
            }
            let human = format!(
                "  {} {}: {} [{}]",
                if f.level == Level::Error {
                    "×"
                } else {
                    "note"
                },
                self.artifact,
                f.message,
                f.code
            );
            events.emit(&human, v)?;
        }
        Ok(())
    }

    /// Evaluates a read: events, metrics; the exit status `--once` gives.
    pub(super) fn evaluate(
        &mut self,
        watcher: &Watcher,
        mad: &mut Mad,
        events: &mut Events,
        read: Read,
    ) -> Result<u8, Fatal> {
        let (because, rerouted, unanswered_light) = facts(&read);
        let (light_smps, heavy, changes, took) = match &read {
            Read::First { smps, t, .. } => (0, Some((true, *smps, None)), Vec::new(), *t),
            Read::Sweep { s, t } => {
                self.sweep += 1;
                (
                    s.light.smps(),
                    s.heavy.as_ref().map(|h| {
                        (
                            h.full,
                            h.smps,
                            h.error.as_ref().map(|e| format!("{e} [{}]", e.code())),
                        )
                    }),
                    s.changes.clone(),
                    *t,
                )
            }
        };
        self.count(
            matches!(read, Read::Sweep { .. }),
            light_smps,
            heavy.as_ref().map(|h| h.1),
            changes.len(),
            took,
        );
        // Reads the fabric did not answer in this sweep: its light sweep's (the first
        // read's too), or a heavy read that failed.
        let unanswered =
            unanswered_light + usize::from(heavy.as_ref().is_some_and(|h| h.2.is_some()));
        let live = watcher.state();
        let mut found = self.judge(live, heavy.as_ref(), unanswered);
        self.metrics.set_verdict(&self.verdict.outcomes);
        self.gauge_read_at();
        if self.reference.is_none() && self.desired.is_none() {
            self.reference = live.cloned();
        }
        let diff = match (live, self.reference()) {
            (Some(st), Some(r)) => Some(watch::difference(st, r)),
            _ => None,
        };
        if let Some(d) = &diff {
            self.metrics.ports_down.set(2 * d.cables_down.len() as i64);
            self.metrics.tables_differing.set(d.blocks.len() as i64);
            self.metrics.switches_differing.set(d.switches() as i64);
        }
        let cabling = match (&self.design, live) {
            (Some(design), Some(st)) if heavy.is_some() => crate::diff::cabling(
                design,
                &st.fabric,
                self.args.matching.mode(),
                &self.artifact,
            )?,
            _ => Vec::new(),
        };
        found.extend(cabling.iter().cloned());
        let repaired = match (&diff, live) {
            (Some(d), Some(st)) if self.desired.is_some() => self.repair(st, d, mad)?,
            _ => Repaired::No,
        };
        let plan_file = self.args.plan_file.display().to_string();
        let (planned, applied) = match &repaired {
            Repaired::Planned { steps, applied } => (Some(*steps), *applied),
            _ => (None, false),
        };
        let v = json!({
            "event": "sweep",
            "time": now(),
            "sweep": self.sweep,
            "smps": {"light": light_smps, "heavy": heavy.as_ref().map(|h| h.1)},
            "heavy": heavy.as_ref().map(|h| if h.0 { "full" } else { "partial" }),
            "full_because": because,
            "rerouted": rerouted,
            "seconds": took.as_secs_f64(),
            "changes": changes.iter().map(|c| self.change_json(c)).collect::<Vec<_>>(),
            "verdict": self.verdict.json(),
            "proven": self.verdict.proven(),
            "verdict_of": self.verdict_of.json(),
            "last_full": self.last_full.map(|r| r.json()),
            "unanswered": unanswered,
            "difference": diff,
            "plan": planned.map(|steps| json!({"file": plan_file, "steps": steps, "applied": applied})),
            "repair": match &repaired { Repaired::Not(why) => Some(why.clone()), _ => None },
        });
        let mut h = format!("{} sweep {}: ", now(), self.sweep);
        h += &match &heavy {
            None => format!(
                "{light_smps} SMPs, no change; verdict of sweep {} ({} read)",
                self.verdict_of.sweep,
                if self.verdict_of.full {
                    "full"
                } else {
                    "partial"
                }
            ),
            Some((full, smps, _)) => format!(
                "{} change(s){}; {} read, {smps} SMPs; {}",
                changes.len(),
                if changes.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        changes
                            .iter()
                            .map(|c| self.change_human(c))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                },
                if *full { "full" } else { "partial" },
                self.verdict.human()
            ),
        };
        if unanswered > 0 {
            h += &format!("\n  {unanswered} read(s) the fabric did not answer");
        }
        if let Some(b) = because
            .as_ref()
            .filter(|_| matches!(read, Read::Sweep { .. }))
        {
            h += &format!("\n  a full read: {b}");
        }
        if rerouted > 0 {
            h += &format!(
                "\n  {rerouted} switch(es) reached again on routes around the cables down"
            );
        }
        if let Some(d) = diff.as_ref().filter(|d| !d.is_empty()) {
            h += &format!("\n  against the reference: {}", difference_human(d));
        }
        match &repaired {
            Repaired::Planned { steps, applied } => {
                h += &format!(
                    "\n  repair plan written to {plan_file} ({steps} step(s), each proven){}",
                    if *applied { "; applied" } else { "" }
                );
            }
            Repaired::Not(why) => h += &format!("\n  no repair: {why}"),
            Repaired::No => {}
        }
        events.emit(&h, v)?;
        self.emit_findings(events, &found)?;
        let different = diff.as_ref().is_some_and(|d| !d.is_empty())
            || cabling.iter().any(|f| f.level == Level::Error);
        Ok(exit_status(self.verdict.proven(), unanswered, different))
    }

    /// The repair against the desired state: planned when the state read is not proven, or
    /// its tables differ where no cable or node is lost; applied with `--repair apply`, once
    /// per change, backing off when the fabric changes again soon after a repair.
    fn repair(
        &mut self,
        live: &FabricState,
        d: &Difference,
        mad: &mut Mad,
    ) -> Result<Repaired, Fatal> {
        let Some(desired) = &self.desired else {
            return Ok(Repaired::No);
        };
        self.repairs.observe(self.sweep, d);
        let lost = !d.cables_down.is_empty() || !d.nodes_gone.is_empty();
        let needed = self.verdict.proven() == Some(false) || (!d.blocks.is_empty() && !lost);
        if !needed || d.is_empty() {
            return Ok(Repaired::No);
        }
        match self.repairs.decide(self.sweep, self.args.backoff) {
            Decision::Repair => {}
            Decision::Tried => {
                return Ok(Repaired::Not("tried once for this change already".into()))
            }
            Decision::Fought { times } => {
                return Ok(Repaired::Not(format!(
                    "this difference came back after {times} repairs of it: another writer restores it; not repairing again (weft apply repairs it by hand)"
                )))
            }
            Decision::BackOff { applied, steady } => {
                return Ok(Repaired::Not(format!(
                    "the fabric changed again soon after the repair of sweep {applied}: another writer? backing off until it holds still for {} sweeps ({steady} so far)",
                    self.args.backoff
                )))
            }
        }
        self.repairs.tried(None);
        let (old, new) = match watch::repair_states(live, desired) {
            Ok(s) => s,
            Err(e) => return Ok(Repaired::Not(format!("{e} [{}]", e.code()))),
        };
        let planned = match weft_plan::plan(&old, &new, &weft_plan::Options::default()) {
            Ok(p) => p,
            Err(e) => return Ok(Repaired::Not(format!("no plan: {e}"))),
        };
        if planned.plan.steps.is_empty() {
            return Ok(Repaired::Not("the plan has no step".into()));
        }
        crate::output::write_file(&self.args.plan_file, planned.plan.to_json().as_bytes())
            .map_err(Fatal::Run)?;
        self.metrics.plans_written.inc();
        let steps = planned.plan.steps.len();
        if self.args.repair != Repair::Apply {
            return Ok(Repaired::Planned {
                steps,
                applied: false,
            });
        }
        let opts = weft_deploy::ApplyOptions::new(self.args.journal.clone(), self.lock_dir.clone());
        match weft_deploy::apply(mad, &planned.plan, &opts, &mut |_| {}) {
            Ok(_) => {
                self.metrics.plans_applied.inc();
                self.repairs.tried(Some(self.sweep));
                self.force_full = true;
                Ok(Repaired::Planned {
                    steps,
                    applied: true,
                })
            }
            Err(e) => Ok(Repaired::Not(format!(
                "the apply failed: {e} [{}]",
                e.code()
            ))),
        }
    }
}

/// The exit status `--once` gives: 2 when a read of the sweep went unanswered or a property
/// is unknown (never 0 from a partial read, even when the state read before it is proven), 1
/// when one is refuted or anything differs, else 0.
pub(super) fn exit_status(proven: Option<bool>, unanswered: usize, different: bool) -> u8 {
    match proven {
        _ if unanswered > 0 => 2,
        None => 2,
        Some(false) => 1,
        Some(true) if different => 1,
        Some(true) => 0,
    }
}

/// A difference for people, on one line.
fn difference_human(d: &Difference) -> String {
    let mut parts = Vec::new();
    for (g, blocks) in d.blocks_by_switch() {
        let name = d
            .blocks
            .iter()
            .find(|b| b.switch == g)
            .map_or("", |b| b.name.as_str());
        parts.push(format!("`{name}` LFT block(s) {blocks:?} differ"));
    }
    for c in &d.cables_down {
        parts.push(format!(
            "cable `{}`/{} – `{}`/{} down",
            c.a.1, c.a.2, c.b.1, c.b.2
        ));
    }
    for c in &d.cables_new {
        parts.push(format!(
            "cable `{}`/{} – `{}`/{} new",
            c.a.1, c.a.2, c.b.1, c.b.2
        ));
    }
    for (_, n) in &d.nodes_gone {
        parts.push(format!("node `{n}` gone"));
    }
    for (_, n) in &d.nodes_new {
        parts.push(format!("node `{n}` new"));
    }
    parts.join("; ")
}

/// Of a read: why its heavy read was whole, how many switches were reached again on routes
/// around cables down, and how many of its light reads the fabric did not answer (the first
/// read's too; a switch reached again did answer).
fn facts(read: &Read) -> (Option<String>, usize, usize) {
    match read {
        Read::First { unanswered, .. } => (Some("the first read".to_owned()), 0, *unanswered),
        Read::Sweep { s, .. } => {
            let rerouted = s.heavy.as_ref().map_or(&[][..], |h| &h.rerouted[..]);
            let unanswered = s
                .changes
                .iter()
                .filter(|c| match c {
                    Change::Unanswered { switch, .. } => {
                        !switch.is_some_and(|g| rerouted.contains(&g))
                    }
                    _ => false,
                })
                .count();
            let because = s
                .heavy
                .as_ref()
                .and_then(|h| h.because.as_ref().map(ToString::to_string));
            (because, rerouted.len(), unanswered)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::exit_status;

    /// `--once` exits 2 on a sweep with a read unanswered, whatever the state read before
    /// it proves: a proven, same-as-desired fabric with one switch silent once exited 0.
    #[test]
    fn an_unanswered_read_is_never_exit_0() {
        assert_eq!(exit_status(Some(true), 0, false), 0);
        assert_eq!(exit_status(Some(true), 1, false), 2);
        assert_eq!(exit_status(Some(false), 1, true), 2);
        assert_eq!(exit_status(None, 0, false), 2);
        assert_eq!(exit_status(Some(false), 0, false), 1);
        assert_eq!(exit_status(Some(true), 0, true), 1);
    }
}
