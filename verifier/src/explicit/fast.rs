//! The explicit engine's fast paths: route states propagated through a destination's labelled
//! in-tree, hop by hop in decreasing label order, recording every channel dependency; the
//! one-VL and one-map shortcuts when every hop keeps its VL; end nodes handled per switch
//! with a memo. Each answers `false` when some route fails, and the slow path takes over.

use super::dest::{
    add_state, bits, memo_way, owner_switch, sls_of, Memo, Scratch, MEMO_LEAVE, MEMO_WAYS, NO_LABEL,
};
use crate::channels::DepSet;
use crate::net::{Attach, Dest, Net, Source, Step, NO_INDEX};
use weft_fabric::SlSet;
/// The fast path when every hop is on VL 0 (switches without SL2VL rows, end nodes injecting
/// the destination's SLs on VL 0, path SLs by destination only, every end node cabled to a
/// switch): a route's state is just where it is, so each switch that carries traffic records
/// one dependency per switch feeding it and its end nodes' dependencies (once per output
/// port). `false` when some route fails.
pub(super) fn one_vl_path(
    net: &Net<'_>,
    attach: &Attach,
    d: Dest,
    uniform_sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    if uniform_sls == 0 {
        return true;
    }
    let owner_k = owner_switch(net, d);
    for (k, list) in attach.by_switch.iter().enumerate() {
        let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
        if senders == 0 {
            continue;
        }
        if uniform_sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0
            || scr.label.get(k).copied().unwrap_or(NO_LABEL) == NO_LABEL
        {
            return false;
        }
        let x = net.switches.get(k).copied().unwrap_or(0);
        if let Some(Step::Out { out, .. }) = scr.step.get(k).copied() {
            // A dependency is recorded only for a hop that is taken.
            if !net.sends(x, out, 0) {
                return false;
            }
            let done = net
                .dirport(x, out)
                .and_then(|p| scr.group_done.get_mut(p as usize));
            if let Some(done) = done.filter(|d| !**d) {
                *done = true;
                for &(i, _) in list {
                    if i != 0 && i != out {
                        deps.insert(k as u32, i, 0, out, 0);
                    }
                }
            }
        }
        if !carry(net, scr, deps, k as u32) {
            return false;
        }
    }
    true
}

/// The fast path when one SL→VL map serves every hop ([`Attach::one_map`]): a route keeps
/// one VL end to end, so a switch's traffic toward the destination is the set of VLs it
/// carries. Each source switch's group adds the VLs of its SLs where it enters and carries them
/// on ([`carry_vls`]); its end nodes' dependencies are recorded once per output port and VL.
/// `false` when some route fails (then the general path finds which).
pub(super) fn one_map_path(
    net: &Net<'_>,
    attach: &Attach,
    d: Dest,
    map: &[u8; 16],
    uniform_sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    let owner_k = owner_switch(net, d);
    for (k, list) in attach.by_switch.iter().enumerate() {
        let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
        if senders == 0 {
            continue;
        }
        let sls = if attach.uniform {
            uniform_sls
        } else {
            scr.group_sls.get(k).copied().unwrap_or(0)
        };
        if sls == 0 {
            continue;
        }
        if sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0
            || scr.label.get(k).copied().unwrap_or(NO_LABEL) == NO_LABEL
        {
            return false;
        }
        let mut vls = 0u16;
        for sl in bits(sls) {
            match map.get(usize::from(sl)) {
                Some(&v) if v < 15 => vls |= 1 << v,
                _ => return false,
            }
        }
        let x = net.switches.get(k).copied().unwrap_or(0);
        if let Some(Step::Out { out, .. }) = scr.step.get(k).copied() {
            // A dependency is recorded only for a hop that is taken.
            if bits(vls).any(|v| !net.sends(x, out, v)) {
                return false;
            }
            if let Some(done) = net
                .dirport(x, out)
                .and_then(|p| scr.group_vls.get_mut(p as usize))
            {
                let new = vls & !*done;
                if new != 0 {
                    *done |= new;
                    for &(i, _) in list {
                        if i != 0 && i != out {
                            for v in bits(new) {
                                deps.insert(k as u32, i, v, out, v);
                            }
                        }
                    }
                }
            }
        }
        if !carry_vls(net, scr, deps, k as u32, vls) {
            return false;
        }
    }
    true
}

/// Adds `vls` to what switch index `k` sends on and carries the VLs new there down the next
/// hops, recording the dependency where each switch hands them to the next; `false` when a
/// hop's VL is not operational or not scheduled.
fn carry_vls(net: &Net<'_>, scr: &mut Scratch, deps: &DepSet, mut k: u32, mut vls: u16) -> bool {
    loop {
        let Some(have) = scr.vl_mask.get_mut(k as usize) else {
            return false;
        };
        let new = vls & !*have;
        if new == 0 {
            return true;
        }
        if *have == 0 {
            scr.touched.push(k);
        }
        *have |= new;
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        match scr.step.get(k as usize).copied() {
            Some(Step::Arrive) => return true,
            Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) => {
                if bits(new).any(|v| !net.sends(x, out, v)) {
                    return false;
                }
                if last {
                    return true;
                }
                let m = net.switch_of(to);
                if let Some(Step::Out { out: next, .. }) = scr.step.get(m as usize).copied() {
                    // A dependency is recorded only for a hop that is taken.
                    let y = net.switches.get(m as usize).copied().unwrap_or(0);
                    if bits(new).any(|v| !net.sends(y, next, v)) {
                        return false;
                    }
                    for v in bits(new) {
                        deps.insert(m, to_port, v, next, v);
                    }
                }
                k = m;
                vls = new;
            }
            _ => return false,
        }
    }
}

/// Marks the switches traffic entering switch index `k` passes through (stopping at one
/// already marked) and records the dependency where each hands it to the next; `false` when a
/// hop's VL 0 is not operational or not scheduled.
fn carry(net: &Net<'_>, scr: &mut Scratch, deps: &DepSet, mut k: u32) -> bool {
    loop {
        match scr.queued.get_mut(k as usize) {
            Some(q) if !*q => *q = true,
            _ => return true,
        }
        scr.touched.push(k);
        let x = net.switches.get(k as usize).copied().unwrap_or(0);
        match scr.step.get(k as usize).copied() {
            Some(Step::Arrive) => return true,
            Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) => {
                if !net.sends(x, out, 0) {
                    return false;
                }
                if last {
                    return true;
                }
                let m = net.switch_of(to);
                if let Some(Step::Out { out: next, .. }) = scr.step.get(m as usize).copied() {
                    // A dependency is recorded only for a hop that is taken.
                    let y = net.switches.get(m as usize).copied().unwrap_or(0);
                    if !net.sends(y, next, 0) {
                        return false;
                    }
                    deps.insert(m, to_port, 0, next, 0);
                }
                k = m;
            }
            _ => return false,
        }
    }
}

/// Propagates route states through the labelled in-tree; `false` when some route fails
/// (then the slow path takes over). End nodes cabled to a switch are handled per switch, not
/// one by one: with destination-only path SLs they all send the same SLs, so what their
/// traffic does at the switch depends only on the switch's output port (memoised).
pub(super) fn fast_path(
    net: &Net<'_>,
    sources: &[Source],
    attach: &Attach,
    d: Dest,
    scr: &mut Scratch,
    deps: &DepSet,
) -> bool {
    let label_of = |scr: &Scratch, n: u32| -> u16 {
        let k = net.switch_of(n);
        scr.label.get(k as usize).copied().unwrap_or(NO_LABEL)
    };
    let mut max_label = 0u16;
    // One end-node source on its own.
    let single = |scr: &mut Scratch, s: Source, max_label: &mut u16| -> bool {
        let sls = sls_of(net, s, d);
        match net.out_step(s.node, s.port, d) {
            Step::Out {
                to, to_port, last, ..
            } => {
                for sl in sls.iter() {
                    if net.injection_vl(s.node, s.port, sl.0).is_err() {
                        return false;
                    }
                }
                if last {
                    return true;
                }
                let l = label_of(scr, to);
                if l == NO_LABEL {
                    return false;
                }
                *max_label = (*max_label).max(l);
                let k = net.switch_of(to);
                for sl in sls.iter() {
                    if let Ok(v) = net.injection_vl(s.node, s.port, sl.0) {
                        add_state(net, scr, k, to_port, v, SlSet::one(sl).0);
                    }
                }
                true
            }
            _ => false,
        }
    };
    let uniform_sls = net.st.path_sl.for_destination(d.lid).0;
    if attach.grouped {
        for &j in &attach.loose {
            let Some(&s) = sources.get(j as usize) else {
                continue;
            };
            if (s.node, s.port) != d.owner && !single(scr, s, &mut max_label) {
                return false;
            }
        }
        // The switch the destination's own end node is cabled to (it does not send to itself).
        let owner_k = owner_switch(net, d);
        if uniform_sls != 0 || !attach.uniform {
            for (k, list) in attach.by_switch.iter().enumerate() {
                let senders = list.len() - usize::from(k == owner_k && !list.is_empty());
                if senders == 0 {
                    continue;
                }
                // Per group when the SLs depend on the source switch (set by `dest_pass`).
                let sls = if attach.uniform {
                    uniform_sls
                } else {
                    scr.group_sls.get(k).copied().unwrap_or(0)
                };
                if let Some(g) = scr.group_sls.get_mut(k) {
                    *g = sls;
                }
                if sls == 0 {
                    continue;
                }
                if sls & !attach.valid_and.get(k).copied().unwrap_or(0) != 0 {
                    return false;
                }
                let l = scr.label.get(k).copied().unwrap_or(NO_LABEL);
                if l == NO_LABEL {
                    return false;
                }
                max_label = max_label.max(l);
                scr.touched.push(k as u32);
                if let Some(h) = scr.hca.get_mut(k) {
                    *h = true;
                }
            }
        }
    } else {
        for &s in sources {
            if (s.node, s.port) == d.owner {
                continue;
            }
            if net.is_switch(s.node) {
                let l = label_of(scr, s.node);
                if l == NO_LABEL {
                    return false;
                }
                max_label = max_label.max(l);
                let k = net.switch_of(s.node);
                add_state(net, scr, k, 0, 0, sls_of(net, s, d).0);
            } else if !single(scr, s, &mut max_label) {
                return false;
            }
        }
    }
    // Buckets by label, highest first.
    let mut buckets = std::mem::take(&mut scr.buckets);
    for b in buckets.iter_mut() {
        b.clear();
    }
    if buckets.len() < usize::from(max_label) + 1 {
        buckets.resize(usize::from(max_label) + 1, Vec::new());
    }
    for &k in &scr.touched {
        let l = scr.label.get(k as usize).copied().unwrap_or(NO_LABEL);
        if let (Some(b), Some(q)) = (
            buckets.get_mut(usize::from(l)),
            scr.queued.get_mut(k as usize),
        ) {
            if !*q {
                *q = true;
                b.push(k);
            }
        }
    }
    let ok = propagate(net, attach, scr, deps, &mut buckets, max_label);
    scr.buckets = buckets;
    ok
}

fn propagate(
    net: &Net<'_>,
    attach: &Attach,
    scr: &mut Scratch,
    deps: &DepSet,
    buckets: &mut [Vec<u32>],
    max_label: u16,
) -> bool {
    let mut pending: Vec<(u32, u8, u8, u16)> = Vec::new();
    for l in (1..=usize::from(max_label)).rev() {
        let mut idx = 0;
        while let Some(&k) = buckets.get(l).and_then(|b| b.get(idx)) {
            idx += 1;
            let x = net.switches.get(k as usize).copied().unwrap_or(0);
            let Some(Step::Out {
                out,
                to,
                to_port,
                last,
            }) = scr.step.get(k as usize).copied()
            else {
                return false;
            };
            let next_k = if last { NO_INDEX } else { net.switch_of(to) };
            pending.clear();
            if let Some(list) = scr.states.get(k as usize) {
                for &(i, vin, sls) in list {
                    for sl in bits(sls) {
                        let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                            return false;
                        };
                        if i != 0 {
                            deps.insert(k, i, vin, out, vout);
                        }
                        if next_k != NO_INDEX {
                            pending.push((next_k, to_port, vout, 1 << sl));
                        }
                    }
                }
            }
            if scr.hca.get(k as usize).copied().unwrap_or(false) {
                let sls = scr.group_sls.get(k as usize).copied().unwrap_or(0);
                match group_states(net, attach, sls, scr, deps, k, x, out) {
                    Some(m) if m.status == 1 => {
                        if next_k != NO_INDEX {
                            for &(v, s) in m.leave.iter().take(usize::from(m.n)) {
                                pending.push((next_k, to_port, v, s));
                            }
                        }
                    }
                    Some(_) => return false,
                    None => {
                        let mut leaving = Vec::new();
                        if !group_compute(net, attach, sls, deps, k, x, out, &mut leaving) {
                            return false;
                        }
                        if next_k != NO_INDEX {
                            for (v, s) in leaving {
                                pending.push((next_k, to_port, v, s));
                            }
                        }
                    }
                }
            }
            for &(nk, p, v, s) in &pending {
                if scr.label.get(nk as usize).copied() != Some(l as u16 - 1) {
                    // Labels strictly decrease along next hops; anything else is a bug guard.
                    return false;
                }
                add_state(net, scr, nk, p, v, s);
                if let Some(q) = scr.queued.get_mut(nk as usize) {
                    if !*q {
                        *q = true;
                        if let Some(b) = buckets.get_mut(l - 1) {
                            b.push(nk);
                        }
                    }
                }
            }
        }
    }
    true
}

/// The group's traffic at switch index `k` sent out on `out` with SLs `sls`, from the memo
/// or worked out and memoised (`None` when it leaves in more states than a memo entry holds;
/// then [`group_compute`] works it out each time).
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn group_states(
    net: &Net<'_>,
    attach: &Attach,
    sls: u16,
    scr: &mut Scratch,
    deps: &DepSet,
    k: u32,
    x: u32,
    out: u8,
) -> Option<Memo> {
    // A few entries per port, by SL set: with per-source path SLs one port sees a handful of
    // sets across destinations.
    let idx = net.dirport(x, out)? as usize * MEMO_WAYS + memo_way(sls);
    let m = *scr.memo.get(idx)?;
    if m.status != 0 && m.sls == sls {
        return Some(m);
    }
    let mut leaving = Vec::new();
    let ok = group_compute(net, attach, sls, deps, k, x, out, &mut leaving);
    if leaving.len() > MEMO_LEAVE {
        return None;
    }
    let mut m = Memo {
        sls,
        status: if ok { 1 } else { 2 },
        n: leaving.len() as u8,
        leave: [(0, 0); MEMO_LEAVE],
    };
    for (slot, l) in m.leave.iter_mut().zip(&leaving) {
        *slot = *l;
    }
    if let Some(e) = scr.memo.get_mut(idx) {
        *e = m;
    }
    Some(m)
}

/// The states the traffic of switch index `k`'s group (its own, and its end nodes') leaves in
/// when the switch sends the destination out on `out`, recording its dependencies; `false`
/// when a VL is not operational or not scheduled.
#[expect(
    clippy::too_many_arguments,
    reason = "each argument is a separate borrow of the caller's state; a struct built for this one call would not read better"
)]
fn group_compute(
    net: &Net<'_>,
    attach: &Attach,
    sls: u16,
    deps: &DepSet,
    k: u32,
    x: u32,
    out: u8,
    leaving: &mut Vec<(u8, u16)>,
) -> bool {
    for &(i, j) in attach
        .by_switch
        .get(k as usize)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        if i == out {
            // The destination itself (or a misdelivery, which has no label).
            continue;
        }
        let inj = attach.inj.get(j as usize).copied().unwrap_or([0; 16]);
        for sl in bits(sls) {
            let vin = inj.get(usize::from(sl)).copied().unwrap_or(0);
            let Ok(vout) = net.switch_vl(x, i, out, sl) else {
                return false;
            };
            if i != 0 {
                deps.insert(k, i, vin, out, vout);
            }
            match leaving.iter_mut().find(|(v, _)| *v == vout) {
                Some(e) => e.1 |= 1 << sl,
                None => leaving.push((vout, 1 << sl)),
            }
        }
    }
    true
}
