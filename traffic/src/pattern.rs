//! Traffic patterns: which end node each generated packet goes to.
//!
//! Hosts are numbered in fabric order (node order, then port order), as `weft report`
//! numbers them. A pattern is parsed from its spec ([`Traffic::parse`]) and drawn from per
//! host with that host's own seeded generator, so the destinations a host draws do not
//! depend on what the others do.

use crate::SimError;
use weft_fabric::rng::SplitMix64;

/// Parts per million in one percent.
const PPM_PER_PERCENT: f64 = 10_000.0;

/// A traffic pattern, as `--traffic` names it.
#[derive(Clone, Debug, PartialEq)]
pub enum Traffic {
    /// Every packet to an end node other than the sender, uniformly at random.
    Uniform,
    /// `hotspot:N[:SHARE]`: the hosts are cut into `N` groups of consecutive hosts (sizes
    /// differing by at most one); the first host of each group is its hot-spot, and every
    /// other host of the group sends `SHARE` of its packets to it (default 5 %), the rest
    /// uniformly at random to any other end node (hot-spots included). On the 648-host
    /// two-level tree this is the vFtree and dFtree papers' scenario: hot-spot node 1 with
    /// every node contributing; nodes 1, 217, 433 with groups 1–216, 217–432, 433–648; nodes
    /// 1, 73, …, 577 with groups of 72. `@FROM-UNTIL` (`hotspot:1:5%@20us-60us`) limits the
    /// hot-spot traffic to that span of simulated time (from `FROM`, before `UNTIL`; `UNTIL`
    /// left out: to the end): outside it, every host sends uniformly at random.
    Hotspot {
        /// Number of hot-spots.
        count: usize,
        /// Share of each contributor's packets to its hot-spot, in parts per million.
        share_ppm: u32,
        /// When the hot-spot traffic runs (`None`: the whole run).
        window: Option<Window>,
    },
    /// `shift:K`: host `i` sends every packet to host `i + K` (modulo the host count).
    Shift(usize),
    /// `all-to-all`: host `i` sends to `i + 1`, `i + 2`, … in turn, skipping itself.
    AllToAll,
    /// `permutation`: a random single-cycle permutation of the hosts drawn from the seed;
    /// each host sends every packet to its successor in the cycle.
    Permutation,
    /// A per-job traffic file ([`crate::Jobs`]): each job's pattern among its own hosts.
    Jobs(crate::Jobs),
    /// `multicast:MLID[:SHARE]`: the hosts that are members of the state's group `MLID`
    /// send `SHARE` of their packets to the group (default 100 %), the rest uniformly at
    /// random to any other end node; the other hosts send nothing. A group with send-only
    /// members is a feed: only those send. The switches replicate by their MFTs; the
    /// members that joined to receive (full or non-member) get the copies.
    Multicast {
        /// The group's multicast LID (`0xC000..=0xFFFE`).
        mlid: u16,
        /// Share of each sender's packets to the group, in parts per million.
        share_ppm: u32,
    },
}

/// The destination [`Pattern::draw`] gives for a packet to the multicast group.
pub(crate) const GROUP: u32 = u32::MAX;

/// A span of simulated time, in nanoseconds: from `from_ns`, before `until_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start.
    pub from_ns: u64,
    /// End (`None`: the end of the run).
    pub until_ns: Option<u64>,
}

impl Window {
    /// Whether time `ps` (picoseconds) is inside.
    pub(crate) fn holds(&self, ps: u64) -> bool {
        ps >= self.from_ns.saturating_mul(1000)
            && self.until_ns.is_none_or(|u| ps < u.saturating_mul(1000))
    }
}

/// A time for a window: `0`, or a duration such as `300us`.
pub(crate) fn parse_time(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .parse::<f64>()
        .is_ok_and(|v| v == 0.0)
    {
        return Some(0);
    }
    crate::parse_duration(t).ok()
}

/// `ns` in the largest unit that divides it (`300us`, `1ms`, `0ns`).
fn show_ns(ns: u64) -> String {
    for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
        if ns > 0 && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

impl Traffic {
    /// Parses a spec: `uniform`, `hotspot:N[:SHARE][@FROM-UNTIL]` (SHARE a percentage, `5`
    /// or `5%`, above 0 and at most 100; FROM and UNTIL durations such as `0`, `20us`,
    /// `1ms`, UNTIL after FROM or left out), `shift:K` (K ≥ 1), `all-to-all`, `permutation`,
    /// `multicast:MLID[:SHARE]` (MLID hexadecimal `0xc000` or decimal, `0xC000..=0xFFFE`;
    /// SHARE as for hot-spots, default 100 %).
    pub fn parse(spec: &str) -> Result<Traffic, SimError> {
        let bad = |why: &str| SimError::Traffic {
            spec: spec.to_owned(),
            why: why.to_owned(),
        };
        let (body, window) = match spec.trim().split_once('@') {
            None => (spec.trim(), None),
            Some((body, span)) => {
                if !body.starts_with("hotspot") {
                    return Err(bad(
                        "only hot-spot traffic takes a time span (`hotspot:N[:SHARE]@FROM-UNTIL`)",
                    ));
                }
                let (from, until) = span.split_once('-').ok_or_else(|| {
                    bad("give the time span as `@FROM-UNTIL` (`@0-300us`) or `@FROM-` (to the end)")
                })?;
                let from_ns = parse_time(from).ok_or_else(|| {
                    bad("FROM in `@FROM-UNTIL` must be a time such as `0`, `20us` or `1ms`")
                })?;
                let until_ns = if until.trim().is_empty() {
                    None
                } else {
                    let u = parse_time(until).ok_or_else(|| {
                        bad("UNTIL in `@FROM-UNTIL` must be a time such as `300us` or `1ms`, or left out")
                    })?;
                    if u <= from_ns {
                        return Err(bad("UNTIL in `@FROM-UNTIL` must be after FROM"));
                    }
                    Some(u)
                };
                (body, Some(Window { from_ns, until_ns }))
            }
        };
        let mut parts = body.split(':');
        let kind = parts.next().unwrap_or("");
        let args: Vec<&str> = parts.collect();
        let t =
            match (kind, args.as_slice()) {
                ("uniform", []) => Traffic::Uniform,
                ("all-to-all", []) => Traffic::AllToAll,
                ("permutation", []) => Traffic::Permutation,
                ("hotspot", [n, rest @ ..]) if rest.len() <= 1 => {
                    let count: usize = n
                        .parse()
                        .map_err(|_| bad("the hot-spot count must be a whole number"))?;
                    if count == 0 {
                        return Err(bad("there must be at least one hot-spot"));
                    }
                    let share_ppm = match rest.first() {
                        None => 5 * PPM_PER_PERCENT as u32,
                        Some(s) => {
                            let pct: f64 =
                                s.strip_suffix('%').unwrap_or(s).parse().map_err(|_| {
                                    bad("SHARE must be a percentage such as `5` or `5%`")
                                })?;
                            if !(pct > 0.0 && pct <= 100.0) {
                                return Err(bad("SHARE must be above 0 % and at most 100 %"));
                            }
                            (pct * PPM_PER_PERCENT).round() as u32
                        }
                    };
                    Traffic::Hotspot {
                        count,
                        share_ppm,
                        window,
                    }
                }
                ("multicast", [m, rest @ ..]) if rest.len() <= 1 => {
                    let m = m.trim();
                    let lid = match m.strip_prefix("0x").or_else(|| m.strip_prefix("0X")) {
                        Some(hex) => u16::from_str_radix(hex, 16).ok(),
                        None => m.parse::<u16>().ok(),
                    };
                    let mlid = lid
                        .and_then(weft_fabric::Mlid::new)
                        .ok_or_else(|| {
                            bad("MLID must be a multicast LID from 0xc000 to 0xfffe (`0xc000`)")
                        })?
                        .get();
                    let share_ppm = match rest.first() {
                        None => 100 * PPM_PER_PERCENT as u32,
                        Some(s) => {
                            let pct: f64 =
                                s.strip_suffix('%').unwrap_or(s).parse().map_err(|_| {
                                    bad("SHARE must be a percentage such as `50` or `50%`")
                                })?;
                            if !(pct > 0.0 && pct <= 100.0) {
                                return Err(bad("SHARE must be above 0 % and at most 100 %"));
                            }
                            (pct * PPM_PER_PERCENT).round() as u32
                        }
                    };
                    Traffic::Multicast { mlid, share_ppm }
                }
                ("multicast", _) => return Err(bad("give `multicast:MLID` or `multicast:MLID:SHARE`")),
                ("shift", [k]) => {
                    let k: usize = k
                        .parse()
                        .map_err(|_| bad("the shift must be a whole number"))?;
                    if k == 0 {
                        return Err(bad("`shift:0` sends every host to itself"));
                    }
                    Traffic::Shift(k)
                }
                ("uniform" | "all-to-all" | "permutation", _) => {
                    return Err(bad("this pattern takes no argument"))
                }
                ("hotspot", _) => {
                    return Err(bad(
                        "give `hotspot:N`, `hotspot:N:SHARE` or either with `@FROM-UNTIL`",
                    ))
                }
                ("shift", _) => return Err(bad("give `shift:K`")),
                _ => return Err(bad(
                    "known patterns: uniform, hotspot:N[:SHARE], shift:K, all-to-all, permutation, multicast:MLID[:SHARE]",
                )),
            };
        Ok(t)
    }

    /// The canonical spec (`hotspot:1:5%`).
    pub fn spec(&self) -> String {
        match self {
            Traffic::Uniform => "uniform".into(),
            Traffic::Hotspot {
                count,
                share_ppm,
                window,
            } => {
                let span = window.map_or(String::new(), |w| {
                    format!(
                        "@{}-{}",
                        show_ns(w.from_ns),
                        w.until_ns.map_or(String::new(), show_ns)
                    )
                });
                format!(
                    "hotspot:{count}:{}%{span}",
                    f64::from(*share_ppm) / PPM_PER_PERCENT
                )
            }
            Traffic::Shift(k) => format!("shift:{k}"),
            Traffic::AllToAll => "all-to-all".into(),
            Traffic::Permutation => "permutation".into(),
            Traffic::Jobs(j) => format!("file:{}", j.file),
            Traffic::Multicast { mlid, share_ppm } => format!(
                "multicast:{mlid:#06x}:{}%",
                f64::from(*share_ppm) / PPM_PER_PERCENT
            ),
        }
    }
}

/// A pattern laid over `hosts` hosts.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    traffic: Traffic,
    hosts: u32,
    /// Per host: its hot-spot (hot-spot traffic), its fixed destination (shift, permutation).
    target: Vec<Option<u32>>,
    /// All-to-all: the next offset per host.
    next: Vec<u32>,
    /// A job file: each job's pattern over its own hosts.
    jobs: Vec<JobRun>,
    /// A job file: per host, its job and its index among the job's hosts.
    job_of: Vec<Option<(u32, u32)>>,
}

/// One job of a job file, laid over its hosts.
#[derive(Clone, Debug)]
struct JobRun {
    pattern: Pattern,
    /// Its hosts (simulation host indices), in list order.
    members: Vec<u32>,
    /// Generation time span, in picoseconds, and interval scale (its load).
    from_ps: u64,
    until_ps: Option<u64>,
    load: Option<f64>,
}

/// When a host generates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Active {
    /// Now.
    Now,
    /// Not yet: from this time (picoseconds).
    From(u64),
    /// Never again (no job, or its job ended).
    Never,
}

impl Pattern {
    /// The pattern over `hosts` hosts; `seed` draws the permutation.
    pub(crate) fn new(traffic: &Traffic, hosts: usize, seed: u64) -> Result<Pattern, SimError> {
        if hosts < 2 {
            return Err(SimError::TooFewHosts(hosts));
        }
        let n = hosts as u32;
        let target: Vec<Option<u32>> = match traffic {
            Traffic::Hotspot { count, .. } => {
                if *count > hosts {
                    return Err(SimError::TooManyHotspots {
                        count: *count,
                        hosts,
                    });
                }
                // Group g holds hosts i with ⌊i·N/H⌋ = g, from ⌈g·H/N⌉: sizes differ by at
                // most one.
                let (c, h) = (*count as u64, u64::from(n));
                (0..h)
                    .map(|i| Some(((i * c / h) * h).div_ceil(c) as u32))
                    .collect()
            }
            Traffic::Shift(k) => {
                if *k % hosts == 0 {
                    return Err(SimError::Traffic {
                        spec: traffic.spec(),
                        why: format!(
                            "a shift by a multiple of {hosts} hosts sends every host to itself"
                        ),
                    });
                }
                (0..n)
                    .map(|i| Some(((i as usize + k) % hosts) as u32))
                    .collect()
            }
            Traffic::Permutation => {
                let mut order: Vec<u32> = (0..n).collect();
                SplitMix64(seed ^ 0x7065_726d_7574_6521).shuffle(&mut order);
                let mut t = vec![None; hosts];
                for (j, &h) in order.iter().enumerate() {
                    let succ = order.get((j + 1) % hosts).copied();
                    if let Some(slot) = t.get_mut(h as usize) {
                        *slot = succ;
                    }
                }
                t
            }
            Traffic::Uniform | Traffic::AllToAll | Traffic::Jobs(_) | Traffic::Multicast { .. } => {
                vec![None; hosts]
            }
        };
        Ok(Pattern {
            traffic: traffic.clone(),
            hosts: n,
            target,
            next: vec![1; hosts],
            jobs: Vec::new(),
            job_of: Vec::new(),
        })
    }

    /// A job file's patterns over the simulation's hosts, named `names` (one per host).
    pub(crate) fn for_jobs(
        traffic: &Traffic,
        jobs: &crate::Jobs,
        names: &[String],
        seed: u64,
    ) -> Result<Pattern, SimError> {
        let members = crate::jobs::resolve(jobs, names)?;
        let mut job_of = vec![None; names.len()];
        let mut runs = Vec::new();
        for (j, (job, m)) in jobs.jobs.iter().zip(members).enumerate() {
            let pattern = Pattern::new(&job.traffic, m.len(), seed ^ j as u64).map_err(|e| {
                SimError::JobFile {
                    file: jobs.file.clone(),
                    line: job.line,
                    column: 1,
                    why: format!("job `{}`: {e}", job.name),
                }
            })?;
            for (l, &h) in m.iter().enumerate() {
                if let Some(slot) = job_of.get_mut(h as usize) {
                    *slot = Some((j as u32, l as u32));
                }
            }
            runs.push(JobRun {
                pattern,
                members: m,
                from_ps: job.from_ns.saturating_mul(1000),
                until_ps: job.until_ns.map(|u| u.saturating_mul(1000)),
                load: job.load,
            });
        }
        Ok(Pattern {
            traffic: traffic.clone(),
            hosts: names.len() as u32,
            target: vec![None; names.len()],
            next: Vec::new(),
            jobs: runs,
            job_of,
        })
    }

    /// Whether this is a job file's pattern.
    fn is_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// Host `h`'s job, and its index among the job's hosts.
    fn job_run(&self, h: u32) -> Option<(usize, &JobRun, u32)> {
        let (j, l) = self.job_of.get(h as usize).copied().flatten()?;
        Some((j as usize, self.jobs.get(j as usize)?, l))
    }

    /// Host `h`'s job (job files).
    pub(crate) fn job(&self, h: u32) -> Option<usize> {
        self.job_run(h).map(|x| x.0)
    }

    /// Jobs (job files; 0 otherwise).
    pub(crate) fn job_count(&self) -> usize {
        self.jobs.len()
    }

    /// Host `h`'s offered load: its job's, else the run's `load`.
    pub(crate) fn load_of(&self, h: u32, load: f64) -> f64 {
        self.job_run(h).and_then(|x| x.1.load).unwrap_or(load)
    }

    /// Whether host `h` generates at `ps`.
    pub(crate) fn active(&self, h: u32, ps: u64) -> Active {
        if !self.is_jobs() {
            return Active::Now;
        }
        match self.job_run(h) {
            None => Active::Never,
            Some((_, r, _)) if r.until_ps.is_some_and(|u| ps >= u) => Active::Never,
            Some((_, r, _)) if ps < r.from_ps => Active::From(r.from_ps),
            Some(_) => Active::Now,
        }
    }

    /// The hot-spot host `src` contributes to (hot-spot traffic, and not itself one).
    pub(crate) fn hotspot_of(&self, src: u32) -> Option<u32> {
        if self.is_jobs() {
            let (_, r, l) = self.job_run(src)?;
            return r
                .pattern
                .hotspot_of(l)
                .and_then(|x| r.members.get(x as usize).copied());
        }
        match self.traffic {
            Traffic::Hotspot { .. } => self
                .target
                .get(src as usize)
                .copied()
                .flatten()
                .filter(|&h| h != src),
            _ => None,
        }
    }

    /// Whether `host` is a hot-spot.
    pub(crate) fn is_hotspot(&self, host: u32) -> bool {
        if self.is_jobs() {
            return self
                .job_run(host)
                .is_some_and(|(_, r, l)| r.pattern.is_hotspot(l));
        }
        matches!(self.traffic, Traffic::Hotspot { .. })
            && self.target.get(host as usize).copied().flatten() == Some(host)
    }

    /// Whether hot-spot traffic runs at `ps` (picoseconds): always, but for a hot-spot
    /// pattern with a window outside it.
    pub(crate) fn hot_at(&self, ps: u64) -> bool {
        match &self.traffic {
            Traffic::Hotspot {
                window: Some(w), ..
            } => w.holds(ps),
            _ => true,
        }
    }

    /// The destination of `src`'s next packet, generated at `ps` (picoseconds).
    pub(crate) fn draw(&mut self, src: u32, rng: &mut SplitMix64, ps: u64) -> u32 {
        if let Some((j, l)) = self.job_of.get(src as usize).copied().flatten() {
            if let Some(r) = self.jobs.get_mut(j as usize) {
                let d = r.pattern.draw(l, rng, ps);
                return r.members.get(d as usize).copied().unwrap_or(src);
            }
        }
        let uniform = |rng: &mut SplitMix64| {
            let d = rng.below(u64::from(self.hosts - 1)) as u32;
            if d >= src {
                d + 1
            } else {
                d
            }
        };
        match self.traffic {
            Traffic::Uniform | Traffic::Jobs(_) => uniform(rng),
            Traffic::Hotspot { share_ppm, .. } => match self.hotspot_of(src) {
                Some(h) if rng.below(1_000_000) < u64::from(share_ppm) && self.hot_at(ps) => h,
                _ => uniform(rng),
            },
            Traffic::Multicast { share_ppm, .. } => {
                if rng.below(1_000_000) < u64::from(share_ppm) {
                    GROUP
                } else {
                    uniform(rng)
                }
            }
            Traffic::Shift(_) | Traffic::Permutation => self
                .target
                .get(src as usize)
                .copied()
                .flatten()
                .unwrap_or_else(|| uniform(rng)),
            Traffic::AllToAll => {
                let Some(k) = self.next.get_mut(src as usize) else {
                    return uniform(rng);
                };
                let d = (src + *k) % self.hosts;
                *k = if *k + 1 >= self.hosts { 1 } else { *k + 1 };
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for (s, canon) in [
            ("uniform", "uniform"),
            ("hotspot:1", "hotspot:1:5%"),
            ("hotspot:9:2.5%", "hotspot:9:2.5%"),
            ("hotspot:3:10", "hotspot:3:10%"),
            ("shift:4", "shift:4"),
            ("all-to-all", "all-to-all"),
            ("permutation", "permutation"),
            ("hotspot:1:5%@0-300us", "hotspot:1:5%@0ns-300us"),
            ("hotspot:2@20us-", "hotspot:2:5%@20us-"),
            ("hotspot:1:10@1.5us-2ms", "hotspot:1:10%@1500ns-2ms"),
            ("multicast:0xc000", "multicast:0xc000:100%"),
            ("multicast:0xC001:25%", "multicast:0xc001:25%"),
            ("multicast:49153:50", "multicast:0xc001:50%"),
        ] {
            assert_eq!(
                Traffic::parse(s).map(|t| t.spec()).ok().as_deref(),
                Some(canon)
            );
        }
        for s in [
            "",
            "zipf",
            "hotspot",
            "hotspot:0",
            "hotspot:x",
            "hotspot:1:0",
            "hotspot:1:101%",
            "hotspot:1:5:6",
            "shift:0",
            "shift:-1",
            "uniform:3",
            "uniform@0-1us",
            "hotspot:1@",
            "hotspot:1@5us",
            "hotspot:1@x-1us",
            "hotspot:1@0-y",
            "hotspot:1@5us-5us",
            "hotspot:1@5us-1us",
            "multicast",
            "multicast:0x1",
            "multicast:0xffff",
            "multicast:0xc000:0",
            "multicast:0xc000:5:6",
            "multicast:zz",
            "multicast:0xc000@0-1us",
        ] {
            assert!(Traffic::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn hotspot_groups_are_the_papers_on_648_hosts() {
        let p = |n| {
            Pattern::new(
                &Traffic::Hotspot {
                    count: n,
                    share_ppm: 50_000,
                    window: None,
                },
                648,
                0,
            )
            .unwrap()
        };
        let one = p(1);
        assert!(one.is_hotspot(0));
        assert!((1..648).all(|i| one.hotspot_of(i) == Some(0)));
        let three = p(3);
        // Nodes 1, 217, 433 (counted from 1) with groups 1–216, 217–432, 433–648.
        assert_eq!(
            (0..648)
                .filter(|&i| three.is_hotspot(i))
                .collect::<Vec<_>>(),
            [0, 216, 432]
        );
        assert_eq!(three.hotspot_of(215), Some(0));
        assert_eq!(three.hotspot_of(216), None);
        assert_eq!(three.hotspot_of(217), Some(216));
        assert_eq!(three.hotspot_of(647), Some(432));
        let nine = p(9);
        assert_eq!(
            (0..648).filter(|&i| nine.is_hotspot(i)).collect::<Vec<_>>(),
            [0, 72, 144, 216, 288, 360, 432, 504, 576]
        );
        assert_eq!(nine.hotspot_of(143), Some(72));
        // Uneven: 10 hosts, 3 hot-spots: groups of 4, 3, 3 (first hosts 0, 4, 7).
        let uneven = Pattern::new(
            &Traffic::Hotspot {
                count: 3,
                share_ppm: 1,
                window: None,
            },
            10,
            0,
        )
        .unwrap();
        assert_eq!(
            (0..10)
                .filter(|&i| uneven.is_hotspot(i))
                .collect::<Vec<_>>(),
            [0, 4, 7]
        );
    }

    #[test]
    fn a_windowed_hotspot_sends_to_it_only_inside_the_window() {
        let Traffic::Hotspot { window, .. } = Traffic::parse("hotspot:1:100%@10us-20us").unwrap()
        else {
            panic!()
        };
        let mut p = Pattern::new(
            &Traffic::Hotspot {
                count: 1,
                share_ppm: 1_000_000,
                window,
            },
            8,
            0,
        )
        .unwrap();
        let mut rng = SplitMix64(3);
        let at = |p: &mut Pattern, rng: &mut SplitMix64, ns: u64| {
            (0..50).filter(|_| p.draw(5, rng, ns * 1000) == 0).count()
        };
        assert_eq!(at(&mut p, &mut rng, 10_000), 50);
        assert_eq!(at(&mut p, &mut rng, 19_999), 50);
        // Outside: uniform over the 7 others.
        let before = at(&mut p, &mut rng, 9_999);
        let after = at(&mut p, &mut rng, 20_000);
        assert!(before < 20 && after < 20, "{before} {after}");
        let e = Traffic::parse("hotspot:1@5us-1us").unwrap_err().to_string();
        assert!(
            e.contains("UNTIL in `@FROM-UNTIL` must be after FROM"),
            "{e}"
        );
        let e = Traffic::parse("shift:1@0-1us").unwrap_err().to_string();
        assert!(e.contains("only hot-spot traffic takes a time span"), "{e}");
    }

    #[test]
    fn permutation_is_one_cycle_and_nobody_sends_to_itself() {
        let mut p = Pattern::new(&Traffic::Permutation, 17, 5).unwrap();
        let mut rng = SplitMix64(1);
        let mut seen = [false; 17];
        let mut at = 0;
        for _ in 0..17 {
            let d = p.draw(at, &mut rng, 0);
            assert_ne!(d, at);
            seen[d as usize] = true;
            at = d;
        }
        assert_eq!(at, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn all_to_all_visits_every_other_host() {
        let mut p = Pattern::new(&Traffic::AllToAll, 5, 0).unwrap();
        let mut rng = SplitMix64(1);
        let d: Vec<u32> = (0..8).map(|_| p.draw(2, &mut rng, 0)).collect();
        assert_eq!(d, [3, 4, 0, 1, 3, 4, 0, 1]);
    }

    #[test]
    fn too_many_hotspots_and_shift_by_host_count_are_refused() {
        assert!(matches!(
            Pattern::new(
                &Traffic::Hotspot {
                    count: 5,
                    share_ppm: 1,
                    window: None,
                },
                4,
                0
            ),
            Err(SimError::TooManyHotspots { .. })
        ));
        assert!(Pattern::new(&Traffic::Shift(4), 4, 0).is_err());
        assert!(matches!(
            Pattern::new(&Traffic::Uniform, 1, 0),
            Err(SimError::TooFewHosts(1))
        ));
    }
}
