//! What a finished run measured: the report, its notes and its per-job figures.

use super::*;

impl Sim<'_> {
    pub(super) fn name(&self, p: PortRef) -> String {
        let n = self
            .st
            .fabric
            .nodes()
            .get(p.node.index())
            .map_or("?", |n| n.name());
        format!("{n}:{}", p.port.0)
    }

    /// Notes on what the state asks for that is not simulated.
    pub(super) fn notes(&self) -> Vec<String> {
        let ps = &self.st.path_sl;
        let several = ps.default.len() > 1
            || ps.by_dlid.iter().any(|e| e.sls.len() > 1)
            || ps.by_switch.iter().any(|e| e.sls.len() > 1)
            || ps.by_source.iter().any(|e| e.sls.len() > 1);
        let mut notes = Vec::new();
        if several {
            let lanes = "the state's dFtree lane pairs name each pair's fast and slow SL";
            notes.push(match self.p.dftree {
                DftreeMode::Off => "some pairs have several path SLs (QoS classes, dFtree lanes): the simulated traffic carries no service ID and dFtree's loop is off, so a dFtree pair's flow takes its fast lane and any other its pair's lowest SL".to_owned(),
                DftreeMode::Loop => format!("some pairs have several path SLs: the simulated traffic carries no service ID; dFtree's run-time loop moves flows between lanes ({lanes})"),
                DftreeMode::Oracle => format!("some pairs have several path SLs: the simulated traffic carries no service ID; dFtree's best case puts every packet toward a hot-spot on its slow lane from the start, every other on its fast lane ({lanes})"),
            });
            if self.p.dftree == DftreeMode::Loop && self.p.receive_rate >= 1.0 {
                notes.push("end nodes sink at line rate (receive rate 1): a switch port facing one never waits for credits, so dFtree's loop finds no end-node hot-spot; give a receive rate below 1".to_owned());
            }
        }
        notes
    }

    pub(super) fn report(&mut self, traffic: &Traffic, seed: u64) -> Report {
        let end = self.end;
        self.close_books();
        let window = end - self.warm;
        let gbps = |bytes: u64| bytes as f64 * 8000.0 / window as f64;
        let h = self.hosts.len();
        let throughput = stats(&mut self.recv.iter().map(|&b| gbps(b)));
        let classes = self.classes(traffic, &gbps);
        let latency = percentiles(&mut self.latencies);
        let loads = self.link_loads(window);
        let congestion_trees = self.congestion_trees(&loads, window);
        let jobs = self.job_reports(traffic, &gbps);
        let stall_total_ns = self.stall_ps.iter().sum::<u64>() as f64 / PS as f64;
        let (hottest, stalled) = ranked(loads, self.p.top);
        Report {
            fabric: self.st.fabric.name.clone(),
            traffic: traffic.spec(),
            seed,
            params: self.p.clone(),
            window_ns: window / PS,
            hosts: h,
            vls: self.nvl as u8,
            payload_bytes: self.payload,
            throughput_per_node_gbps: throughput,
            classes,
            latency_ns: latency,
            packets: self.counts,
            hottest_links: hottest,
            stalled_ports: stalled,
            stall_total_ns,
            congestion_trees,
            jobs,
            notes: self.notes(),
            dftree: self.dft.take().map(|d| {
                d.finish(
                    |h| {
                        self.hosts
                            .get(h as usize)
                            .map_or_else(|| format!("host {h}"), |x| self.name(x.port))
                    },
                    |(g, p)| {
                        self.st.fabric.find_guid(weft_fabric::Guid(g)).map_or_else(
                            || format!("{:#018x}:{p}", g),
                            |n| self.name(PortRef::new(n, p)),
                        )
                    },
                )
            }),
            multicast: self.mc.as_ref().map(|m| McReport {
                mlid: m.mlid.to_string(),
                sl: m.sl.0,
                senders: m.sender.iter().filter(|&&x| x).count(),
                receivers: m.receiver.iter().filter(|&&x| x).count(),
                delivered: m.delivered,
                delivered_gbps_per_receiver: stats(
                    &mut m
                        .bytes
                        .iter()
                        .zip(&m.receiver)
                        .filter(|x| *x.1)
                        .map(|(&b, _)| gbps(b)),
                ),
                dropped_no_mft_entry: m.no_entry,
                dropped_at_non_receiver: m.non_receiver,
            }),
            events: self.events,
            wall: std::time::Duration::ZERO,
        }
    }

    /// Closes the stalls still open and counts where every packet is.
    fn close_books(&mut self) {
        let end = self.end;
        // Close the stalls still open.
        for i in 0..self.stall_since.len() {
            if let Some(since) = self.stall_since.get_mut(i).and_then(Option::take) {
                self.stalled(i, end.saturating_sub(since.max(self.warm)));
            }
        }
        // Where every packet is.
        let nsw = self.chans.len() * self.nvl;
        let buffered: usize = self.bufs.iter().take(nsw).map(VecDeque::len).sum();
        let queued: usize = self.bufs.iter().skip(nsw).map(VecDeque::len).sum();
        let on_wire = self
            .heap
            .iter()
            .filter(|i| matches!(i.ev, Ev::Arrive { .. }))
            .count();
        self.counts.in_flight = (buffered + on_wire) as u64 + self.receiving;
        self.counts.queued_at_source = queued as u64;
    }

    /// Under hot-spot traffic: the hot spots, and the throughput of the hosts that send to
    /// them and of every host.
    fn classes(&self, traffic: &Traffic, gbps: &dyn Fn(u64) -> f64) -> Option<Classes> {
        let h = self.hosts.len();
        matches!(traffic, Traffic::Hotspot { .. }).then(|| {
            let contrib: Vec<usize> = (0..h)
                .filter(|&i| self.pattern.hotspot_of(i as u32).is_some())
                .collect();
            Classes {
                hotspots: (0..h as u32)
                    .filter(|&i| self.pattern.is_hotspot(i))
                    .filter_map(|i| self.hosts.get(i as usize).map(|x| self.name(x.port)))
                    .collect(),
                contributors: ClassThroughput {
                    nodes: contrib.len(),
                    gbps: stats(
                        &mut contrib
                            .iter()
                            .map(|&i| gbps(self.to_hot.get(i).copied().unwrap_or(0))),
                    ),
                },
                victims: ClassThroughput {
                    nodes: h,
                    gbps: stats(
                        &mut self
                            .by_src
                            .iter()
                            .zip(&self.to_hot)
                            .map(|(a, b)| gbps(a - b)),
                    ),
                },
            }
        })
    }

    /// Every channel's load over the window of `window` ps.
    fn link_loads(&self, window: u64) -> Vec<LinkLoad> {
        self.chans
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let bytes = self.sent_bytes.get(i).copied().unwrap_or(0);
                LinkLoad {
                    from: self.name(c.from),
                    to: self.name(c.to),
                    gbps: c.mbps as f64 / 1000.0,
                    utilisation: bytes as f64 * 8e6 / c.mbps.max(1) as f64 / window as f64,
                    xmit_wait_ns: self.stall_ps.get(i).copied().unwrap_or(0) as f64 / PS as f64,
                }
            })
            .collect()
    }

    /// The congestion trees the channels' stalls make.
    fn congestion_trees(&self, loads: &[LinkLoad], window: u64) -> Vec<crate::CongestionTree> {
        crate::trees::find(
            &self
                .chans
                .iter()
                .zip(loads)
                .enumerate()
                .map(|(i, (c, l))| crate::trees::Port {
                    from: l.from.clone(),
                    to: l.to.clone(),
                    end_node: c.to_host.and_then(|h| {
                        let x = self.hosts.get(h as usize)?;
                        Some(
                            self.st
                                .fabric
                                .nodes()
                                .get(x.port.node.index())?
                                .name()
                                .to_owned(),
                        )
                    }),
                    utilisation: l.utilisation,
                    stall_ps: self.stall_ps.get(i).copied().unwrap_or(0),
                    stall_to: self.stall_to.get(i).cloned().unwrap_or_default(),
                })
                .collect::<Vec<_>>(),
            window,
        )
    }

    /// Per job of a job file: its throughput per node and latency.
    pub(super) fn job_reports(
        &mut self,
        traffic: &Traffic,
        gbps: &dyn Fn(u64) -> f64,
    ) -> Vec<JobReport> {
        let Traffic::Jobs(jobs) = traffic else {
            return Vec::new();
        };
        jobs.jobs
            .iter()
            .enumerate()
            .map(|(j, job)| {
                let members: Vec<u32> = (0..self.hosts.len() as u32)
                    .filter(|&h| self.pattern.job(h) == Some(j))
                    .collect();
                let th: Vec<f64> = members
                    .iter()
                    .map(|&h| gbps(self.recv.get(h as usize).copied().unwrap_or(0)))
                    .collect();
                let n = th.len().max(1) as f64;
                let lat = self
                    .job_lat
                    .get_mut(j)
                    .map(std::mem::take)
                    .unwrap_or_default();
                let mut lat = lat;
                lat.sort_unstable();
                let pct = |q: f64| -> f64 {
                    if lat.is_empty() {
                        return 0.0;
                    }
                    let i = ((lat.len() as f64 * q).ceil() as usize).clamp(1, lat.len()) - 1;
                    lat.get(i).map_or(0.0, |&x| x as f64 / PS as f64)
                };
                JobReport {
                    name: job.name.clone(),
                    pattern: job.traffic.spec(),
                    hosts: members.len(),
                    load: self
                        .pattern
                        .load_of(members.first().copied().unwrap_or(0), self.p.load),
                    from_ns: job.from_ns,
                    until_ns: job.until_ns,
                    throughput_per_node_gbps: Throughput {
                        mean: th.iter().sum::<f64>() / n,
                        min: th
                            .iter()
                            .copied()
                            .fold(f64::INFINITY, f64::min)
                            .min(f64::MAX),
                        max: th.iter().copied().fold(0.0, f64::max),
                    },
                    latency_ns: Latency {
                        p50: pct(0.5),
                        p99: pct(0.99),
                        max: lat.last().map_or(0.0, |&x| x as f64 / PS as f64),
                    },
                }
            })
            .collect()
    }
}

/// Mean, minimum and maximum of `v` (all 0 when it is empty).
fn stats(v: &mut dyn Iterator<Item = f64>) -> Throughput {
    let (mut n, mut sum, mut min, mut max) = (0usize, 0.0, f64::INFINITY, 0.0f64);
    for x in v {
        n += 1;
        sum += x;
        min = min.min(x);
        max = max.max(x);
    }
    if n == 0 {
        Throughput::default()
    } else {
        Throughput {
            mean: sum / n as f64,
            min,
            max,
        }
    }
}

/// The `top` hottest links, and the `top` most stalled ports.
fn ranked(loads: Vec<LinkLoad>, top: usize) -> (Vec<LinkLoad>, Vec<LinkLoad>) {
    let mut hottest = loads.clone();
    hottest.sort_by(|a, b| {
        b.utilisation
            .total_cmp(&a.utilisation)
            .then_with(|| a.from.cmp(&b.from))
    });
    hottest.truncate(top);
    let mut stalled: Vec<LinkLoad> = loads.into_iter().filter(|l| l.xmit_wait_ns > 0.0).collect();
    stalled.sort_by(|a, b| {
        b.xmit_wait_ns
            .total_cmp(&a.xmit_wait_ns)
            .then_with(|| a.from.cmp(&b.from))
    });
    stalled.truncate(top);
    (hottest, stalled)
}

/// The 50th and 99th percentile and the maximum of `lat` (picoseconds) in nanoseconds: the
/// values at those ranks of the sorted list, found by selection (the list is left in an
/// order of its own).
fn percentiles(lat: &mut [u64]) -> Latency {
    let n = lat.len();
    if n == 0 {
        return Latency {
            p50: 0.0,
            p99: 0.0,
            max: 0.0,
        };
    }
    let rank = |q: f64| ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
    let (i50, i99) = (rank(0.5), rank(0.99));
    let ns = |x: u64| x as f64 / PS as f64;
    let (_, &mut p99, above) = lat.select_nth_unstable(i99);
    let max = above.iter().copied().max().unwrap_or(p99);
    let p50 = if i50 < i99 {
        lat.get_mut(..i99)
            .map_or(p99, |below| *below.select_nth_unstable(i50).1)
    } else {
        p99
    };
    Latency {
        p50: ns(p50),
        p99: ns(p99),
        max: ns(max),
    }
}
