//! VL arbitration of one output port, as IBA describes it: a high- and a low-priority table of
//! (VL, weight) entries, each served by weighted round robin; the high table first, until it
//! has sent `high_limit × 4096` bytes while a low-priority packet waited, then one low-priority
//! packet. A port without tables sends VL 0 only.

use weft_fabric::VlArb;

/// Bytes of high-priority traffic per unit of the high limit.
const HIGH_LIMIT_UNIT: u64 = 4096;

/// One weighted round robin table and where it stands.
#[derive(Clone, Debug, Default)]
struct Wrr {
    /// (VL, weight in 64-byte units), entries of weight 0 left out.
    entries: Vec<(u8, u32)>,
    /// The entry being served.
    at: usize,
    /// What is left of its weight (0: not started).
    left: u32,
}

impl Wrr {
    fn new(table: &[weft_fabric::VlWeight]) -> Wrr {
        Wrr {
            entries: table
                .iter()
                .filter(|e| e.weight > 0)
                .map(|e| (e.vl, u32::from(e.weight)))
                .collect(),
            at: 0,
            left: 0,
        }
    }

    /// Whether an entry names a VL in `ready`.
    fn serves(&self, ready: u16) -> bool {
        self.entries.iter().any(|&(vl, _)| bit(ready, vl))
    }

    /// The VL to send from: the entry being served if its VL is ready, else the next entry
    /// (in table order, wrapping) whose VL is.
    fn pick(&mut self, ready: u16) -> Option<u8> {
        let n = self.entries.len();
        for step in 0..n {
            let i = (self.at + step) % n;
            if let Some(&(vl, weight)) = self.entries.get(i) {
                if bit(ready, vl) {
                    if step > 0 || self.left == 0 {
                        self.at = i;
                        self.left = weight;
                    }
                    return Some(vl);
                }
            }
        }
        None
    }

    /// A packet of `blocks` 64-byte units left on the entry being served: its weight is used
    /// up by that much, and the next entry's turn comes when none is left.
    fn sent(&mut self, blocks: u32) {
        self.left = self.left.saturating_sub(blocks);
        if self.left == 0 && !self.entries.is_empty() {
            self.at = (self.at + 1) % self.entries.len();
        }
    }
}

fn bit(mask: u16, vl: u8) -> bool {
    vl < 16 && mask & (1 << vl) != 0
}

/// The arbiter of one output port.
#[derive(Clone, Debug)]
pub struct Arbiter {
    tables: Option<Box<Tables>>,
}

#[derive(Clone, Debug)]
struct Tables {
    high: Wrr,
    low: Wrr,
    /// `None`: unlimited (255).
    limit: Option<u64>,
    /// High-priority bytes sent since the last low-priority packet.
    high_bytes: u64,
    /// Which table the last pick came from.
    last_high: bool,
}

impl Arbiter {
    /// The arbiter of a port with these tables (`None`: VL 0 only).
    pub fn new(arb: Option<&VlArb>) -> Arbiter {
        Arbiter {
            tables: arb.map(|a| {
                Box::new(Tables {
                    high: Wrr::new(&a.high),
                    low: Wrr::new(&a.low),
                    limit: (a.high_limit != 255).then(|| u64::from(a.high_limit) * HIGH_LIMIT_UNIT),
                    high_bytes: 0,
                    last_high: false,
                })
            }),
        }
    }

    /// Whether the port can ever send on `vl`.
    pub fn schedules(&self, vl: u8) -> bool {
        match &self.tables {
            None => vl == 0,
            Some(t) => t.high.serves(1 << (vl & 15)) || t.low.serves(1 << (vl & 15)),
        }
    }

    /// The VL to send next among `ready` (bit `v`: VL `v` has a packet with credits).
    pub fn pick(&mut self, ready: u16) -> Option<u8> {
        let Some(t) = self.tables.as_deref_mut() else {
            return bit(ready, 0).then_some(0);
        };
        let high = t.high.serves(ready);
        let low = t.low.serves(ready);
        let low_due = low && t.limit.is_some_and(|l| t.high_bytes >= l);
        if high && !low_due {
            t.last_high = true;
            return t.high.pick(ready);
        }
        if low {
            t.last_high = false;
            return t.low.pick(ready);
        }
        None
    }

    /// The packet picked last ([`Arbiter::pick`]) was sent: `bytes` long, `blocks` credits.
    pub fn sent(&mut self, bytes: u64, blocks: u32) {
        if let Some(t) = self.tables.as_deref_mut() {
            if t.last_high {
                t.high.sent(blocks);
                t.high_bytes = t.high_bytes.saturating_add(bytes);
            } else {
                t.low.sent(blocks);
                t.high_bytes = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_fabric::VlWeight;

    fn w(vl: u8, weight: u8) -> VlWeight {
        VlWeight { vl, weight }
    }

    /// How many of `n` packets (33 credits each) each VL gets when every VL of `ready`
    /// always has one.
    fn shares(a: &mut Arbiter, ready: u16, n: usize) -> [usize; 4] {
        let mut c = [0; 4];
        for _ in 0..n {
            let v = a.pick(ready).unwrap();
            c[usize::from(v)] += 1;
            a.sent(2112, 33);
        }
        c
    }

    #[test]
    fn no_table_sends_vl0_only() {
        let mut a = Arbiter::new(None);
        assert_eq!(a.pick(0b10), None);
        assert_eq!(a.pick(0b11), Some(0));
        assert!(a.schedules(0) && !a.schedules(1));
    }

    #[test]
    fn weights_share_the_link() {
        // VL 0 weight 99 (3 packets of 33 credits), VL 1 weight 33 (one): 3:1.
        let arb = VlArb {
            high_limit: 0,
            high: vec![],
            low: vec![w(0, 99), w(1, 33)],
        };
        let mut a = Arbiter::new(Some(&arb));
        assert_eq!(shares(&mut a, 0b11, 400), [300, 100, 0, 0]);
        // Equal weights: equal shares; a VL with nothing to send gives its turn away.
        let eq = VlArb {
            high_limit: 0,
            high: vec![],
            low: vec![w(0, 4), w(1, 4), w(2, 4)],
        };
        let mut a = Arbiter::new(Some(&eq));
        assert_eq!(shares(&mut a, 0b111, 300), [100, 100, 100, 0]);
        assert_eq!(shares(&mut a, 0b101, 300), [150, 0, 150, 0]);
        // Weight 0 never schedules.
        let zero = VlArb {
            high_limit: 0,
            high: vec![],
            low: vec![w(0, 4), w(1, 0)],
        };
        let mut a = Arbiter::new(Some(&zero));
        assert_eq!(a.pick(0b10), None);
        assert!(!a.schedules(1));
    }

    #[test]
    fn high_table_first_within_its_limit() {
        // High: VL 3; low: VL 0. Limit 1 (4096 bytes): two 2112-byte high packets, then one low.
        let arb = VlArb {
            high_limit: 1,
            high: vec![w(3, 4)],
            low: vec![w(0, 4)],
        };
        let mut a = Arbiter::new(Some(&arb));
        assert_eq!(shares(&mut a, 0b1001, 300), [100, 0, 0, 200]);
        // Unlimited (255): low never goes while high has packets.
        let arb = VlArb {
            high_limit: 255,
            ..arb
        };
        let mut a = Arbiter::new(Some(&arb));
        assert_eq!(shares(&mut a, 0b1001, 50), [0, 0, 0, 50]);
        assert_eq!(shares(&mut a, 0b0001, 5), [5, 0, 0, 0]);
    }
}
