//! The bench's result for people.

use crate::{word, Checked, Out};
use std::fmt::Write as _;

/// The report as a table and notes.
pub(crate) fn human(o: &Out) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "fabric: {} ({} switches, {} nodes)",
        o.fabric, o.switches, o.nodes
    );
    for (scope, v) in &o.opensm_ftree_verdict {
        let _ = writeln!(s, "OpenSM ftree's tables at the start ({scope}): {v}");
    }
    for c in &o.changes {
        let _ = writeln!(s, "\n== {} ==", c.what);
        let _ = writeln!(
            s,
            "OpenSM: {} → {}, SUBNET UP after {:.1} s ({} sweep(s))",
            c.trigger,
            c.engine.as_deref().unwrap_or("(engine not logged)"),
            c.seconds,
            c.sweeps
        );
        for e in &c.opensm_errors {
            let _ = writeln!(s, "  its log: {e}");
        }
        let _ = writeln!(
            s,
            "  LFT blocks written (its log):       {:>7} on {} switch(es), {} of them unchanged",
            c.blocks_written, c.switches_written, c.blocks_written_unchanged
        );
        let _ = writeln!(
            s,
            "  LFT blocks that differ (read back): {:>7} on {} switch(es), {} entries",
            c.blocks_changed, c.switches_changed, c.entries_changed
        );
        for ch in &c.checks {
            checked(&mut s, ch);
        }
    }
    s
}

/// One scope's checks of a change, and weft's plans for it.
pub(crate) fn checked(s: &mut String, ch: &Checked) {
    let _ = writeln!(s, "  pairs: {}", ch.scope);
    let one = &ch.one_step;
    let _ = writeln!(
        s,
        "    every mix of its writes:  loop-free {}, deadlock-free {}, connected {}",
        word(&one.loop_free),
        word(&one.deadlock_free),
        word(&one.connected)
    );
    if !one.is_proven() {
        let _ = writeln!(s, "      {}", weft_plan::why(one));
    }
    let io = &ch.in_order;
    let _ = writeln!(
        s,
        "    in its order, one SMP at a time: {} unsafe state(s) in the {} checked of {} \
         ({} forwarding loop, {} credit loop, {} broken route){}{}",
        io.unsafe_steps,
        io.steps,
        io.of,
        io.forwarding_loops,
        io.credit_loops,
        io.broken_routes,
        if io.stopped {
            "; stopped there (--unsafe-states)"
        } else {
            ""
        },
        if io.unlogged_entries > 0 {
            format!(
                "; {} changed entries in no logged write",
                io.unlogged_entries
            )
        } else {
            String::new()
        }
    );
    if let (Some((i, sw, b)), Some(c)) = (&io.first_unsafe, &io.first_check) {
        let _ = writeln!(
            s,
            "      the first: after SMP {i} of those it sent (`{sw}` block {b})"
        );
        let _ = writeln!(s, "        {}", weft_plan::why(c));
    }
    let _ = writeln!(s, "    the new tables on their own: {}", ch.after_verdict);
    for p in &ch.weft_plan {
        if p.ok {
            let _ = writeln!(
                s,
                "    weft plan from {} tables: {} LFT SMPs in {} step(s){}{}, {} ({:.1} s)",
                p.from,
                p.lft_smps.unwrap_or(0),
                p.steps.unwrap_or(0),
                p.lower_bound
                    .map(|b| format!(", lower bound {b}"))
                    .unwrap_or_default(),
                p.how
                    .as_ref()
                    .map(|h| format!(" ({h})"))
                    .unwrap_or_default(),
                if p.all_proven == Some(true) {
                    "every step proven"
                } else {
                    "NOT every step proven"
                },
                p.seconds
            );
        } else {
            let _ = writeln!(
                s,
                "    weft plan from {} tables: refused ({:.1} s): {}",
                p.from,
                p.seconds,
                p.refusal.as_deref().unwrap_or("")
            );
        }
    }
}
