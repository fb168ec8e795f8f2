//! Tests of the plan file: plans with VFs, MFT and QoS writes read back equal (one write per
//! line), the digest tells an edited plan, replay checks every old block, and a broken plan is
//! refused with its rendered errors.

use super::*;

fn fp() -> Fingerprint {
    Fingerprint {
        topology: "ab".repeat(32),
        lids: "cd".repeat(32),
        nodes: 3,
        links: 2,
        lid_ports: 3,
    }
}

fn plan() -> Plan {
    Plan {
        format: PLAN_FORMAT.to_owned(),
        version: PLAN_VERSION,
        fabric_name: "f".to_owned(),
        from: fp(),
        to: fp(),
        wire: None,
        partitions: Vec::new(),
        sm: Vec::new(),
        proof: Proof {
            scope: "all".to_owned(),
            properties: vec!["loop_free".to_owned(), "connected".to_owned()],
            path_sls: false,
        },
        recorded_digest: None,
        steps: vec![PlanStep {
            drops: Vec::new(),
            restores: Vec::new(),
            writes: vec![
                SmpWrite::Lft {
                    switch: Guid(0xf452_1403_0000_0100),
                    block: 0,
                    old: [0xff; LFT_BLOCK],
                    new: std::array::from_fn(|k| if k == 1 { 0x01 } else { 0xff }),
                },
                SmpWrite::Pkeys {
                    node: Guid(0xf452_1403_0000_0300),
                    port: 1,
                    block: 0,
                    old: vec![0x7fff],
                    new: vec![0x7fff, 0x8001],
                },
            ],
        }],
    }
}

/// A plan read back from its file: equal but for the digest it now knows.
fn read(text: &str) -> Plan {
    let mut p = Plan::from_json(text).unwrap();
    assert!(p.digest_matches(), "{text}");
    p.recorded_digest = None;
    p
}

#[test]
fn a_plan_reads_back_equal_one_write_per_line() {
    let mut p = plan();
    p.partitions = vec![PlanPartition {
        name: "a".to_owned(),
        pkey: 0x0001,
        members: vec![
            Member::Port {
                node: Guid(0xf452_1403_0000_0300),
                port: 1,
                membership: weft_fabric::Membership::Full,
            },
            Member::Vf {
                host: Guid(0x30),
                port: 1,
                vf: 2,
                guid: Guid(0x0302_0000_0000_0030),
                membership: weft_fabric::Membership::Limited,
            },
        ],
    }];
    let text = p.to_json();
    assert_eq!(read(&text), p);
    assert_eq!(p.smps(), 2);
    insta::assert_snapshot!(text);
}

/// The digest tells a plan as `weft plan` wrote it from one edited afterwards, whatever
/// the edit (a write, a partition, the proof), and not from one laid out anew.
#[test]
fn the_digest_tells_an_edited_plan() {
    let text = plan().to_json();
    assert!(Plan::from_json(&text).unwrap().digest_matches());
    // Laid out anew (pretty-printed by a tool): the same plan, the same digest.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    assert!(Plan::from_json(&pretty).unwrap().digest_matches());
    for edited in [
        text.replace("ff01", "ff02"),
        text.replace("[32767,32769]", "[32767,65535]"),
        text.replace("\"path_sls\":false", "\"path_sls\":true"),
        text.replace("\"connected\"", "\"isolated\""),
    ] {
        assert_ne!(edited, text);
        let p = Plan::from_json(&edited).unwrap();
        assert!(!p.digest_matches(), "{edited}");
    }
    // No digest at all, and a plan made in memory: no match either.
    let bare = text
        .lines()
        .filter(|l| !l.starts_with("\"digest\""))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("]\n}", "]}");
    let p = Plan::from_json(&bare.replace("\n]\n]", "\n]]")).map(|p| p.digest_matches());
    assert_ne!(p, Ok(true), "{bare}");
    assert!(!plan().digest_matches());
}

/// A plan with a wire view and a VF write: the view's vSwitch hosts and the VF's GUID
/// read back as written.
#[test]
fn a_plan_with_vfs_reads_back_equal() {
    let mut p = plan();
    let mut w = weft_fabric::WireView::default();
    w.nodes.insert(
        Guid(0x30),
        weft_fabric::WireNode {
            kind: weft_fabric::NodeKind::Hca,
            ports: 1,
        },
    );
    w.vf_hosts.insert((Guid(0x30), weft_fabric::PortNum(1)), 4);
    p.wire = Some(w);
    p.steps[0].writes.push(SmpWrite::Vport {
        node: Guid(0x30),
        port: 1,
        vf: 2,
        guid: Guid(0x0302_0000_0000_0030),
        old_lid: None,
        new_lid: Some(705),
        old_pkeys: vec![0x7fff],
        new_pkeys: vec![0x7fff, 0x8001],
    });
    let text = p.to_json();
    assert!(
        text.contains("\"vf_hosts\": [\n    \"0x0000000000000030:1 4\"]"),
        "{text}"
    );
    assert!(text.contains("\"guid\":\"0x0302000000000030\""), "{text}");
    assert_eq!(read(&text), p);
    assert_eq!(p.smps(), 4);
}

/// An MFT write reads back as written (its masks as 128 hex digits, big-endian), one SMP;
/// a block past 511 or a position past 15 is refused with the write.
#[test]
fn a_plan_with_an_mft_write_reads_back_equal() {
    let mut p = plan();
    let mut new = [0u8; 2 * MFT_BLOCK];
    new[1] = 0x06; // MLID 0xC000 + 32: ports 1 and 2
    new[63] = 0x01; // the last MLID of the block: port 0
    p.steps.push(PlanStep {
        drops: Vec::new(),
        restores: Vec::new(),
        writes: vec![SmpWrite::Mft {
            switch: Guid(0xf452_1403_0000_0100),
            block: 1,
            position: 2,
            old: [0; 2 * MFT_BLOCK],
            new,
        }],
    });
    let text = p.to_json();
    let line = format!(
        "{{\"kind\":\"mft\",\"switch\":\"0xf452140300000100\",\"block\":1,\"position\":2,\"old\":\"{}\",\"new\":\"0006{}0001\"}}",
        "0".repeat(128),
        "0".repeat(120)
    );
    assert!(text.contains(&line), "{text}");
    assert_eq!(read(&text), p);
    assert_eq!(p.smps(), 3);
    for (bad, from, to) in [
        (
            "block",
            "\"block\":1,\"position\"",
            "\"block\":512,\"position\"",
        ),
        ("position", "\"position\":2", "\"position\":16"),
    ] {
        let edited = text.replace(from, to);
        assert_ne!(edited, text);
        let e = Plan::from_json(&edited).unwrap_err().to_string();
        assert!(e.contains("\"kind\":\"mft\""), "{bad}: {e}");
    }
}

/// SL→VL and VL arbitration writes read back as written (16 VL digits; four digits an
/// arbitration entry, VL then weight), one SMP each, sorted after the other kinds; a VL
/// arbitration block outside 1–4, an entry with a VL above 15, a table of 15 or 17 VLs,
/// 33 entries or an unknown field are refused with the write.
#[test]
fn a_plan_with_qos_writes_reads_back_equal() {
    let mut p = plan();
    let sw = Guid(0xf452_1403_0000_0100);
    let mut new = [0u8; 16];
    new[1] = 1;
    new[15] = 15;
    let qos = vec![
        SmpWrite::VlArb {
            node: sw,
            port: 5,
            block: 3,
            old: Vec::new(),
            new: vec![(0, 4), (1, 255)],
        },
        SmpWrite::Sl2vl {
            node: sw,
            in_port: 3,
            out_port: 5,
            old: [0; 16],
            new,
        },
    ];
    p.steps.push(PlanStep::of(qos.clone()));
    let mut sorted = qos;
    sorted.sort();
    assert!(matches!(sorted[0], SmpWrite::Sl2vl { .. }));
    assert!(p.steps[0].writes.iter().all(|w| w < &sorted[0]));
    let text = p.to_json();
    for line in [
        "{\"kind\":\"vlarb\",\"node\":\"0xf452140300000100\",\"port\":5,\"block\":3,\"old\":\"\",\"new\":\"000401ff\"}",
        "{\"kind\":\"sl2vl\",\"node\":\"0xf452140300000100\",\"in_port\":3,\"out_port\":5,\"old\":\"0000000000000000\",\"new\":\"010000000000000f\"}",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    assert_eq!(read(&text), p);
    assert_eq!(p.smps(), 4);
    assert_eq!(p.lft_smps(), 1);
    for (bad, from, to) in [
        ("block 0", "\"block\":3", "\"block\":0"),
        ("block 5", "\"block\":3", "\"block\":5"),
        ("a VL of 16", "000401ff", "00041004"),
        ("15 VLs", "010000000000000f", "010000000000000"),
        ("17 VLs", "010000000000000f", "010000000000000f0"),
        ("not hex", "010000000000000f", "01000000000000zf"),
        ("an odd entry", "000401ff", "00040"),
        ("33 entries", "000401ff", &"0004".repeat(33)),
        (
            "an unknown field",
            "\"kind\":\"sl2vl\"",
            "\"kind\":\"sl2vl\",\"x\":1",
        ),
    ] {
        let edited = text.replace(from, to);
        assert_ne!(edited, text, "{bad}");
        let e = Plan::from_json(&edited).unwrap_err().to_string();
        assert!(
            e.contains("vlarb") || e.contains("sl2vl") || e.contains("VL") || e.contains("field"),
            "{bad}: {e}"
        );
    }
    // 32 entries are a whole block.
    let full = text.replace("000401ff", &"0e01".repeat(32));
    assert!(Plan::from_json(&full).is_ok());
    assert_eq!(vlarb_block(&[(1, 2)])[0], (1, 2));
    assert_eq!(vlarb_block(&[(1, 2)])[1], (0, 0));
}

#[test]
fn replay_checks_every_old_block() {
    let p = plan();
    let sw = Guid(0xf452_1403_0000_0100);
    // An empty table holds what the write expects (no entries): it lands.
    let mut t = std::collections::BTreeMap::new();
    p.replay_lfts(&mut t).unwrap();
    assert_eq!(t[&sw], vec![0xff, 0x01]);
    // A table that has moved on since the plan: refused, naming the block.
    let mut t = std::collections::BTreeMap::from([(sw, vec![0xff, 0x02])]);
    let e = p.replay_lfts(&mut t).unwrap_err();
    assert_eq!((e.step, e.switch, e.block), (1, sw, 0));
    assert!(e.found.starts_with("ff02"), "{e}");
}

#[test]
fn a_broken_plan_is_refused() {
    let text = plan().to_json();
    let vf = |lid: &str| {
        text.replace(
            "{\"kind\":\"pkeys\"",
            &format!(
                "{{\"kind\":\"vport\",\"node\":\"0x30\",\"port\":1,\"vf\":0,\
                 \"guid\":\"0x31\",\"old_lid\":null,\"new_lid\":{lid},\"old_pkeys\":[],\
                 \"new_pkeys\":[]}},{{\"kind\":\"pkeys\""
            ),
        )
    };
    let member = |m: &str| {
        text.replace(
            "\"proof\"",
            &format!(
                "\"partitions\": [{{\"name\":\"a\",\"pkey\":1,\"members\":[{m}]}}],\n\"proof\""
            ),
        )
    };
    let cases = [
        text.replace("\"version\": 2", "\"version\": 1"),
        text.replace("\"version\": 2", "\"version\": 3"),
        text.replace("ff01", "ff0"),
        text.replace("ff01", "zz01"),
        text.replace("\"kind\":\"lft\"", "\"kind\":\"lft\",\"extra\":1"),
        text.replace("0xf452140300000100", "0x"),
        text.replace("[32767,32769]", &format!("{:?}", vec![1; 33])),
        vf("0"),
        vf("65535"),
        vf("49152"),
        member("\"0x30:1 full\",\"0x30:1 limited\""),
        member("\"0x30:1 both\""),
        member("\"vf 0x31\""),
        member("\"vf 0x30:1 0x31 full\""),
        text.replace(
            "\"proof\"",
            "\"partitions\": [{\"name\":\"a\",\"pkey\":32767,\"members\":[]}],\n\"proof\"",
        ),
        "{".to_owned(),
    ];
    let errors: Vec<String> = cases
        .iter()
        .map(|t| Plan::from_json(t).unwrap_err().to_string())
        .collect();
    insta::assert_snapshot!(errors.join("\n"));
}
