//! The `mad` backend on ibsim: real SMPs through libibmad, read back independently with
//! `smpquery` and `ibroute`.
//!
//! libibmad reaches ibsim only through the `libumad2sim.so` preload, which must be in the
//! process before libibumad opens a device. So each test starts an ibsim and re-executes this
//! test binary under it (`Ibsim::run_env` sets `LD_PRELOAD` and `IBSIM_SOCKNAME`), running
//! only the [`child`] test with `WEFT_MAD_CASE` naming what to do; the child asserts what it
//! sees in-process and prints `WEFT <key> <value>` lines for the parent, which then checks the
//! fabric with the diagnostics tools. Without `WEFT_MAD_CASE`, [`child`] does nothing.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use std::time::{Duration, Instant};
use weft_deploy::smp::{self, LinkState, NodeType, SwitchInfo, LFT_BLOCK, PKEY_BLOCK};
use weft_deploy::{
    Attr, DrPath, Mad, MadError, MadOptions, Payload, SmpError, Target, Transport, TransportExt,
};
use weft_tests::ibsim::{self, Ibsim};

/// What the child is to do.
const CASE: &str = "WEFT_MAD_CASE";
/// The child's `MadOptions::window` (default: the default).
const WINDOW: &str = "WEFT_MAD_WINDOW";

/// Two leaves, two spines, four one-port HCAs; H1 comes first, so ibsim attaches its clients
/// (the SM's port) there. L1 ports 3, 4, 7, 8 and S1 ports 3–8 have no cable.
const NET: &str = "\
caguid=0x0002c90300000010
Hca\t1 \"H1\"
[1]\t\"L1\"[1]

caguid=0x0002c90300000020
Hca\t1 \"H2\"
[1]\t\"L1\"[2]

caguid=0x0002c90300000030
Hca\t1 \"H3\"
[1]\t\"L2\"[1]

caguid=0x0002c90300000040
Hca\t1 \"H4\"
[1]\t\"L2\"[2]

switchguid=0x0002c90300000100
Switch\t8 \"L1\"
[1]\t\"H1\"[1]
[2]\t\"H2\"[1]
[5]\t\"S1\"[1]
[6]\t\"S2\"[1]

switchguid=0x0002c90300000200
Switch\t8 \"L2\"
[1]\t\"H3\"[1]
[2]\t\"H4\"[1]
[5]\t\"S1\"[2]
[6]\t\"S2\"[2]

switchguid=0x0002c90300000300
Switch\t8 \"S1\"
[1]\t\"L1\"[5]
[2]\t\"L2\"[5]

switchguid=0x0002c90300000400
Switch\t8 \"S2\"
[1]\t\"L1\"[6]
[2]\t\"L2\"[6]
";

const H1: u64 = 0x0002_c903_0000_0010;
const H3: u64 = 0x0002_c903_0000_0030;
const L1: u64 = 0x0002_c903_0000_0100;
const L2: u64 = 0x0002_c903_0000_0200;
const S1: u64 = 0x0002_c903_0000_0300;

/// S1, two hops from H1: H1 port 1 → L1, L1 port 5 → S1.
fn s1() -> DrPath {
    DrPath(vec![1, 5])
}

/// H3, four hops from H1 (through L1, S1 and L2).
fn h3() -> DrPath {
    DrPath(vec![1, 5, 2, 1])
}

/// The LFT block 0 the tests write: LIDs 1–8 alternate between ports 1 and 2, LID 0 and the
/// rest are unrouted (255).
fn lft_block() -> Payload {
    let mut p = [0xff; LFT_BLOCK];
    for (lid, port) in p.iter_mut().enumerate().take(9).skip(1) {
        *port = 1 + (lid % 2) as u8;
    }
    p
}

/// The P_Key block 0 the tests write on H3.
fn pkeys() -> [u16; PKEY_BLOCK] {
    let mut k = [0u16; PKEY_BLOCK];
    k[..4].copy_from_slice(&[0xffff, 0x8001, 0x7fff, 0x8abc]);
    k
}

fn target(path: DrPath, attr: Attr, modifier: u32) -> Target {
    Target {
        path,
        attr,
        modifier,
    }
}

/// The simulator, or `None` (after `require`'s SKIP message) when the tools are missing.
fn start(test: &str, programs: &[&str]) -> Option<Ibsim> {
    let tools = ibsim::require(test, programs)?;
    Some(Ibsim::start(&tools, NET, None).unwrap_or_else(|e| panic!("{e}")))
}

/// Runs `case` in a copy of this test binary attached to `sim`; its `WEFT` lines.
fn in_child(sim: &Ibsim, case: &str) -> Vec<(String, String)> {
    in_child_with(sim, case, None)
}

/// [`in_child`] with the `Mad` opened with a batch window of `window`.
fn in_child_with(sim: &Ibsim, case: &str, window: Option<u32>) -> Vec<(String, String)> {
    let exe = std::env::current_exe().unwrap();
    let exe = exe.to_str().unwrap();
    let window = window.map(|w| w.to_string());
    let mut env = vec![(CASE, case)];
    if let Some(w) = &window {
        env.push((WINDOW, w.as_str()));
    }
    let out = sim
        .run_env(
            exe,
            &["--exact", "mad::child", "--nocapture", "--test-threads=1"],
            &env,
            Duration::from_secs(120),
        )
        .unwrap_or_else(|e| panic!("child `{case}`: {e}"));
    let facts: Vec<(String, String)> = out
        .stdout
        .lines()
        // The harness prints `test child ... ` before the first line without a newline.
        .filter_map(|l| l.split_once("WEFT ").map(|(_, fact)| fact))
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap_or((l, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    assert!(
        facts.iter().any(|(k, v)| k == "done" && v == case),
        "child `{case}` did not run to its end:\n{}\n{}",
        out.stdout,
        out.stderr
    );
    facts
}

fn fact<'a>(facts: &'a [(String, String)], key: &str) -> &'a str {
    facts
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no `{key}` in {facts:?}"))
}

fn smpquery(sim: &Ibsim, args: &[&str]) -> String {
    sim.run_retrying(
        "smpquery",
        args,
        Duration::from_secs(30),
        Duration::from_secs(90),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .stdout
}

/// The in-process half of each case; a no-op unless `WEFT_MAD_CASE` is set (by `in_child`).
#[test]
fn child() {
    let Ok(case) = std::env::var(CASE) else {
        return;
    };
    let window = std::env::var(WINDOW)
        .map(|w| w.parse().unwrap())
        .unwrap_or(MadOptions::DEFAULT_WINDOW);
    let mut mad = Mad::open(&MadOptions {
        window,
        ..MadOptions::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    match case.as_str() {
        "nodeinfo" => nodeinfo(&mut mad),
        "lft" => lft(&mut mad),
        "portinfo" => portinfo(&mut mad),
        "pkeys" => pkey_table(&mut mad),
        "errors" => errors(&mut mad),
        "many" => many(&mut mad),
        "batch" => batch(&mut mad),
        "mixed" => mixed(&mut mad),
        other => panic!("unknown case {other}"),
    }
    println!("WEFT done {case}");
}

fn nodeinfo(mad: &mut Mad) {
    let local = mad.node_info(&DrPath::local()).unwrap();
    assert_eq!(local.node_type, NodeType::Ca);
    assert_eq!(local.node_guid, H1);
    assert_eq!(
        local.port_guid,
        H1 + 1,
        "ibsim: port GUID = node GUID + port"
    );
    assert_eq!(local.local_port, 1);
    let l1 = mad.node_info(&DrPath(vec![1])).unwrap();
    assert_eq!(
        (l1.node_type, l1.node_guid, l1.local_port),
        (NodeType::Switch, L1, 1)
    );
    let s1 = mad.node_info(&s1()).unwrap();
    assert_eq!(s1.node_type, NodeType::Switch);
    assert_eq!((s1.node_guid, s1.port_guid, s1.num_ports), (S1, S1, 8));
    assert_eq!(
        s1.local_port, 1,
        "S1 is entered by its port 1 (from L1 port 5)"
    );
    assert_eq!(mad.node_info(&DrPath(vec![1, 5, 2])).unwrap().node_guid, L2);
    assert_eq!(mad.node_info(&h3()).unwrap().node_guid, H3);
    println!("WEFT s1 {:#018x}", s1.node_guid);
}

fn lft(mad: &mut Mad) {
    // LinearFDBTop first: ibroute reads no LID past it.
    let (mut si, mut raw) = mad.switch_info(&s1()).unwrap();
    si.linear_fdb_top = (LFT_BLOCK - 1) as u16;
    si.encode_into(&mut raw);
    let back = mad.set(&target(s1(), Attr::SwitchInfo, 0), &raw).unwrap();
    assert_eq!(SwitchInfo::decode(&back).linear_fdb_top, 63);
    let block = lft_block();
    let t = target(s1(), Attr::Lft, 0);
    assert_eq!(mad.set(&t, &block).unwrap(), block, "the Set's response");
    assert_eq!(mad.lft_block(&s1(), 0).unwrap(), block, "a Get after it");
    // The other leaf is untouched.
    assert_ne!(mad.lft_block(&DrPath(vec![1]), 0).unwrap(), block);
    println!("WEFT top {}", SwitchInfo::decode(&back).linear_fdb_top);
}

fn portinfo(mad: &mut Mad) {
    let (mut pi, mut raw) = mad.port_info(&s1(), 0).unwrap();
    assert_eq!(pi.lid, 0, "no SM has run");
    pi.lid = 0x42;
    pi.link_state = LinkState::NoChange; // ibsim refuses a state change on port 0
    pi.encode_into(&mut raw);
    let back = mad
        .set(&target(s1(), Attr::PortInfo, 0), &raw)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(smp::PortInfo::decode(&back).lid, 0x42);
    assert_eq!(mad.port_info(&s1(), 0).unwrap().0.lid, 0x42);
}

fn pkey_table(mad: &mut Mad) {
    let before = mad.pkey_block(&h3(), None, 0).unwrap();
    assert_eq!(
        before[0], 0xffff,
        "ibsim's default table: the full default P_Key"
    );
    let t = target(h3(), Attr::PKeyTable, smp::pkey_modifier(0, None));
    let back = mad.set(&t, &smp::encode_pkeys(&pkeys())).unwrap();
    assert_eq!(smp::decode_pkeys(&back), pkeys());
    assert_eq!(mad.pkey_block(&h3(), None, 0).unwrap(), pkeys());
}

fn errors(mad: &mut Mad) {
    let tries = MadOptions::default().retries + 1;
    // L1 port 3 has no cable: ibsim drops the SMP and says so at once (umad status
    // ETIMEDOUT), which libibmad reports as it reports a timeout.
    for path in [DrPath(vec![1, 3]), DrPath(vec![1, 5, 7])] {
        let t = target(path, Attr::NodeInfo, 0);
        let start = Instant::now();
        let err = mad.get(&t).unwrap_err();
        assert_eq!(
            err,
            SmpError::Timeout {
                target: t.clone(),
                tries
            }
        );
        println!("WEFT noroute_ms {}", start.elapsed().as_millis());
        let err = mad.set(&t, &[0; 64]).unwrap_err();
        assert!(matches!(err, SmpError::Timeout { .. }), "{err}");
    }
    // An LFT on a channel adapter: "method/attribute not supported".
    let t = target(DrPath::local(), Attr::Lft, 0);
    assert_eq!(
        mad.get(&t).unwrap_err(),
        SmpError::Status {
            target: t,
            status: 0x0c
        }
    );
    // PortInfo of port 9 of an 8-port switch: "invalid attribute or modifier".
    let t = target(s1(), Attr::PortInfo, 9);
    let err = mad.get(&t).unwrap_err();
    assert_eq!(
        err,
        SmpError::Status {
            target: t,
            status: 0x1c
        }
    );
    assert!(
        err.to_string().contains("invalid attribute or modifier"),
        "{err}"
    );
    // The port still works after them.
    assert_eq!(mad.node_info(&s1()).unwrap().node_guid, S1);
}

/// 1 000 different LFT blocks written one after another to the same switch, each read back
/// at once: every response and every read-back is the block just written (no answer matched
/// to the wrong request).
fn many(mad: &mut Mad) {
    let top = target(s1(), Attr::SwitchInfo, 0);
    let (mut si, mut raw) = mad.switch_info(&s1()).unwrap();
    si.linear_fdb_top = (LFT_BLOCK - 1) as u16;
    si.encode_into(&mut raw);
    mad.set(&top, &raw).unwrap();
    let t = target(s1(), Attr::Lft, 0);
    for i in 0..1000u32 {
        let mut block = [0xffu8; 64];
        for (k, e) in block.iter_mut().enumerate() {
            *e = ((i as usize + k) % 9) as u8;
        }
        assert_eq!(mad.set(&t, &block).unwrap(), block, "write {i}");
        assert_eq!(mad.get(&t).unwrap(), block, "read-back {i}");
    }
    println!("WEFT many 1000");
}

/// The four switches, by directed route from H1: L1, S1, S2, L2.
fn switches() -> [DrPath; 4] {
    [
        DrPath(vec![1]),
        DrPath(vec![1, 5]),
        DrPath(vec![1, 6]),
        DrPath(vec![1, 5, 2]),
    ]
}

/// LFT blocks the batch test writes to each switch (LIDs 0 to 7 999).
const BATCH_BLOCKS: u16 = 125;

/// The output port the batch test writes for `lid` on switch `sw` (0–3): 1–8, or 255 (no
/// route) for every seventh LID.
fn batch_port(sw: usize, lid: u32) -> u8 {
    if (lid + sw as u32).is_multiple_of(7) {
        0xff
    } else {
        1 + ((lid / 3 + sw as u32) % 8) as u8
    }
}

fn batch_block(sw: usize, block: u16) -> Payload {
    let mut p = [0u8; LFT_BLOCK];
    for (k, e) in p.iter_mut().enumerate() {
        *e = batch_port(sw, u32::from(block) * LFT_BLOCK as u32 + k as u32);
    }
    p
}

/// 500 LFT-block Sets to the four switches in one batch (the switches taking turns), each
/// response the block written, then the 500 read back in one batch.
fn batch(mad: &mut Mad) {
    // LinearFDBTop first (one at a time), so ibroute reads every LID written.
    for path in switches() {
        let (mut si, mut raw) = mad.switch_info(&path).unwrap();
        si.linear_fdb_top = BATCH_BLOCKS * LFT_BLOCK as u16 - 1;
        si.encode_into(&mut raw);
        mad.set(&target(path, Attr::SwitchInfo, 0), &raw).unwrap();
    }
    let writes: Vec<(Target, Payload)> = (0..BATCH_BLOCKS)
        .flat_map(|block| {
            switches().into_iter().enumerate().map(move |(sw, path)| {
                (
                    target(path, Attr::Lft, u32::from(block)),
                    batch_block(sw, block),
                )
            })
        })
        .collect();
    assert_eq!(writes.len(), 500);
    let start = Instant::now();
    let results = mad.set_all(&writes);
    let set_ms = start.elapsed().as_millis();
    assert_eq!(results.len(), writes.len());
    for (i, (r, (t, block))) in results.iter().zip(&writes).enumerate() {
        assert_eq!(
            r.as_ref().unwrap(),
            block,
            "Set {i} ({t}): its own response"
        );
    }
    let targets: Vec<Target> = writes.iter().map(|(t, _)| t.clone()).collect();
    let start = Instant::now();
    let back = mad.get_all(&targets);
    let get_ms = start.elapsed().as_millis();
    assert_eq!(back.len(), writes.len());
    for (i, (r, (t, block))) in back.iter().zip(&writes).enumerate() {
        assert_eq!(
            r.as_ref().unwrap(),
            block,
            "Get {i} ({t}): reads back as written"
        );
    }
    println!("WEFT batch {}", writes.len());
    println!("WEFT set_ms {set_ms}");
    println!("WEFT get_ms {get_ms}");
}

/// Batches mixing SMPs that land, SMPs into a directed route that leads nowhere and SMPs the
/// node rejects: one result per SMP, each its own, in the batch's order.
fn mixed(mad: &mut Mad) {
    let tries = MadOptions::default().retries + 1;
    let nowhere = [DrPath(vec![1, 3]), DrPath(vec![1, 5, 7])];
    let s2 = DrPath(vec![1, 6]);
    let mut gets = Vec::new();
    let mut want: Vec<Result<u64, SmpError>> = Vec::new();
    for k in 0..10 {
        let good = [
            (DrPath(vec![1]), L1),
            (s1(), S1),
            (h3(), H3),
            (DrPath(vec![1, 5, 2]), L2),
        ];
        let (path, guid) = good[k % good.len()].clone();
        gets.push(target(path, Attr::NodeInfo, 0));
        want.push(Ok(guid));
        let t = target(nowhere[k % 2].clone(), Attr::NodeInfo, 0);
        gets.push(t.clone());
        want.push(Err(SmpError::Timeout { target: t, tries }));
        // PortInfo of port 9 of an 8-port switch; an LFT on a channel adapter.
        let t = target(s1(), Attr::PortInfo, 9);
        gets.push(t.clone());
        want.push(Err(SmpError::Status {
            target: t,
            status: 0x1c,
        }));
        let t = target(DrPath::local(), Attr::Lft, 0);
        gets.push(t.clone());
        want.push(Err(SmpError::Status {
            target: t,
            status: 0x0c,
        }));
    }
    let got: Vec<Result<u64, SmpError>> = mad
        .get_all(&gets)
        .into_iter()
        .map(|r| r.map(|p| smp::NodeInfo::decode(&p).node_guid))
        .collect();
    assert_eq!(got, want);

    // Sets: blocks that land on S1 and S2, a block past ibsim's 768 (invalid modifier), a
    // block into nowhere.
    let mut sets = Vec::new();
    let mut want = Vec::new();
    for k in 0..12u32 {
        let mut block = [0xffu8; LFT_BLOCK];
        block[k as usize] = 1 + (k % 8) as u8;
        let path = if k % 2 == 0 { s1() } else { s2.clone() };
        sets.push((target(path, Attr::Lft, k), block));
        want.push(Ok(block));
        let t = target(s1(), Attr::Lft, 768 + k);
        sets.push((t.clone(), block));
        want.push(Err(SmpError::Status {
            target: t,
            status: 0x1c,
        }));
        if k % 3 == 0 {
            let t = target(nowhere[(k as usize / 3) % 2].clone(), Attr::Lft, k);
            sets.push((t.clone(), block));
            want.push(Err(SmpError::Timeout { target: t, tries }));
        }
    }
    assert_eq!(mad.set_all(&sets), want);
    // What landed reads back, one at a time.
    for ((t, block), w) in sets.iter().zip(&want) {
        if w.is_ok() {
            assert_eq!(&mad.get(t).unwrap(), block, "{t}");
        }
    }
    // The port still works after them, one at a time and in a batch.
    assert_eq!(mad.node_info(&s1()).unwrap().node_guid, S1);
    let one = mad.get_all(&[target(h3(), Attr::NodeInfo, 0)]);
    assert_eq!(
        smp::NodeInfo::decode(one[0].as_ref().unwrap()).node_guid,
        H3
    );
    assert!(mad.get_all(&[]).is_empty());
    println!("WEFT mixed {}", gets.len() + sets.len());
}

#[test]
fn node_info_of_the_local_node_and_of_a_switch_two_hops_away() {
    let Some(sim) = start(
        "node_info_of_the_local_node_and_of_a_switch_two_hops_away",
        &["smpquery"],
    ) else {
        return;
    };
    let facts = in_child(&sim, "nodeinfo");
    // The same GUID as libibmad's own tool reads.
    let out = smpquery(&sim, &["-D", "nodeinfo", "0,1,5"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("Guid:") && l.ends_with(fact(&facts, "s1"))),
        "{out}"
    );
}

#[test]
fn an_lft_block_set_reads_back_in_process_and_with_ibroute() {
    let Some(sim) = start(
        "an_lft_block_set_reads_back_in_process_and_with_ibroute",
        &["ibroute"],
    ) else {
        return;
    };
    let facts = in_child(&sim, "lft");
    assert_eq!(fact(&facts, "top"), "63");
    let out = sim
        .run_retrying(
            "ibroute",
            &["-n", "-D", "0,1,5", "0", "63"],
            Duration::from_secs(30),
            Duration::from_secs(90),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .stdout;
    // `0x0001 002 : ...` for each LID with an output port.
    let routed: Vec<(u16, u8)> = out
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let lid = u16::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
            let port = w.next()?.parse().ok()?;
            Some((lid, port))
        })
        .collect();
    let expected: Vec<(u16, u8)> = (0u16..)
        .zip(lft_block())
        .filter(|&(_, p)| p != 0xff)
        .collect();
    assert_eq!(routed, expected, "ibroute printed:\n{out}");
}

#[test]
fn a_switch_port_0_lid_set_reads_back_with_smpquery() {
    let Some(sim) = start(
        "a_switch_port_0_lid_set_reads_back_with_smpquery",
        &["smpquery"],
    ) else {
        return;
    };
    in_child(&sim, "portinfo");
    let out = smpquery(&sim, &["-D", "portinfo", "0,1,5", "0"]);
    let lid = out
        .lines()
        .find_map(|l| l.strip_prefix("Lid:"))
        .map(|v| v.trim_start_matches('.'))
        .unwrap_or_else(|| panic!("no Lid in:\n{out}"));
    assert_eq!(lid, "66", "{out}");
}

#[test]
fn a_pkey_block_set_on_an_hca_reads_back_with_smpquery() {
    let Some(sim) = start(
        "a_pkey_block_set_on_an_hca_reads_back_with_smpquery",
        &["smpquery"],
    ) else {
        return;
    };
    in_child(&sim, "pkeys");
    let out = smpquery(&sim, &["-D", "pkeys", "0,1,5,2,1"]);
    // `   0: 0xffff 0x8001 ...`, eight to a line, the whole table (64 entries on ibsim).
    let table: Vec<u16> = out
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.trim().parse::<u32>().is_ok())
        .flat_map(|(_, keys)| {
            keys.split_whitespace()
                .map(|k| u16::from_str_radix(k.trim_start_matches("0x"), 16).unwrap())
        })
        .collect();
    assert_eq!(table.len(), 64, "{out}");
    assert_eq!(&table[..PKEY_BLOCK], &pkeys(), "{out}");
    assert!(table[PKEY_BLOCK..].iter().all(|&k| k == 0), "{out}");
}

#[test]
fn unroutable_and_rejected_smps_are_typed_errors() {
    let Some(sim) = start("unroutable_and_rejected_smps_are_typed_errors", &[]) else {
        return;
    };
    let facts = in_child(&sim, "errors");
    eprintln!(
        "mad: an SMP through an unconnected port failed after {} ms",
        fact(&facts, "noroute_ms")
    );
}

#[test]
fn a_thousand_writes_each_read_back_as_written() {
    let Some(sim) = start("a_thousand_writes_each_read_back_as_written", &[]) else {
        return;
    };
    let facts = in_child(&sim, "many");
    assert_eq!(fact(&facts, "many"), "1000");
}

#[test]
fn a_batch_of_500_lft_blocks_to_four_switches_lands_and_reads_back_with_ibroute() {
    let Some(sim) = start(
        "a_batch_of_500_lft_blocks_to_four_switches_lands_and_reads_back_with_ibroute",
        &["ibroute"],
    ) else {
        return;
    };
    let facts = in_child(&sim, "batch");
    assert_eq!(fact(&facts, "batch"), "500");
    eprintln!(
        "mad: 500 LFT blocks in a batch (window {}): Sets {} ms, Gets {} ms",
        MadOptions::DEFAULT_WINDOW,
        fact(&facts, "set_ms"),
        fact(&facts, "get_ms")
    );
    let top = (BATCH_BLOCKS as u32 * LFT_BLOCK as u32 - 1).to_string();
    for (sw, path) in ["0,1", "0,1,5", "0,1,6", "0,1,5,2"].into_iter().enumerate() {
        let out = sim
            .run_retrying(
                "ibroute",
                &["-n", "-D", path, "0", &top],
                Duration::from_secs(30),
                Duration::from_secs(90),
            )
            .unwrap_or_else(|e| panic!("{e}"))
            .stdout;
        let routed: Vec<(u32, u8)> = out
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let lid = u32::from_str_radix(w.next()?.strip_prefix("0x")?, 16).ok()?;
                let port = w.next()?.parse().ok()?;
                Some((lid, port))
            })
            .collect();
        let expected: Vec<(u32, u8)> = (0..=BATCH_BLOCKS as u32 * LFT_BLOCK as u32 - 1)
            .map(|lid| (lid, batch_port(sw, lid)))
            .filter(|&(_, p)| p != 0xff)
            .collect();
        assert_eq!(routed.len(), expected.len(), "switch {path}: {out:.2000}");
        assert_eq!(routed, expected, "switch {path}");
    }
}

#[test]
fn a_mixed_batch_gets_one_result_per_smp_in_order_with_every_window() {
    let Some(sim) = start(
        "a_mixed_batch_gets_one_result_per_smp_in_order_with_every_window",
        &[],
    ) else {
        return;
    };
    // 1: one at a time through libibmad's RPC, as before batches; 2: the window full most of
    // the time; the default; wider than the batch.
    for window in [1, 2, MadOptions::DEFAULT_WINDOW, 1000] {
        let facts = in_child_with(&sim, "mixed", Some(window));
        assert_eq!(fact(&facts, "mixed"), "68", "window {window}");
    }
}

#[test]
fn opening_a_ca_that_is_not_there_is_an_error() {
    // In-process, without libumad2sim: no such device (or, without libibmad, no library).
    let err = Mad::open(&MadOptions {
        ca: Some("weft-no-such-ca".to_owned()),
        ..MadOptions::default()
    })
    .unwrap_err();
    match &err {
        MadError::Open { device, .. } => assert!(device.contains("weft-no-such-ca"), "{err}"),
        MadError::Load { .. } => assert!(err.to_string().contains("libibmad5"), "{err}"),
        other => panic!("{other}"),
    }
    let err = Mad::open(&MadOptions {
        ca: Some("a\0b".to_owned()),
        ..MadOptions::default()
    })
    .unwrap_err();
    assert!(
        matches!(err, MadError::CaName(_) | MadError::Load { .. }),
        "{err}"
    );
}
