//! `weft plan` end to end on a small two-level tree: a link failure planned in every output
//! format (snapshots), the plan file written and read back with the fingerprint of the fabric
//! it applies to, a tenant change planned as P_Key writes only, and the refusals (no safe
//! order, another fabric) with exit 1.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use crate::support::weft;
use std::path::Path;
use weft_fabric::{Fingerprint, ValidState};
use weft_formats::plan::{Plan, SmpWrite};
use weft_formats::state_json::FromJson;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("plan-{name}"))
}

const TREE: &str = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n    sm on leaf1\n";

/// Writes `NAME.weft` (the tree with `extra` lines) in `dir`.
fn source(dir: &Path, name: &str, extra: &str) -> String {
    let p = dir.join(format!("{name}.weft"));
    std::fs::write(&p, format!("{TREE}{extra}}}\n")).unwrap();
    p.to_str().unwrap().to_owned()
}

/// `weft build` of `src` into `dir/NAME`; the state's path.
fn built(dir: &Path, name: &str, src: &str) -> String {
    let out = dir.join(name);
    let o = weft(&["build", src, "-o", out.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    out.join("state.json").to_str().unwrap().to_owned()
}

#[test]
fn link_failure_plan_in_every_format() {
    let dir = temp_dir("formats");
    let old = built(&dir, "old", &source(&dir, "old", ""));
    let new = source(&dir, "new", "    faults { link leaf3.p[6] down }\n");
    let plan_file = dir.join("plan.json");
    let pf = plan_file.to_str().unwrap();
    let mut shown = String::new();
    for format in ["human", "markdown", "json"] {
        let o = weft(&[
            "plan",
            "--from",
            &old,
            &new,
            "--format",
            format,
            "--max-listed",
            "5",
            "-o",
            pf,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "nothing on stderr");
        let d = dir.to_str().unwrap();
        shown += &format!("## {format}\n{}\n", text(&o.stdout).replace(d, "DIR"));
    }
    insta::assert_snapshot!("plan_link_failure", shown);
    // The plan file: read back, for the fabric as the fault left it, every LFT block whole.
    let plan = Plan::from_json(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    let desired = built(&dir, "desired", &new);
    let desired = ValidState::from_json(&std::fs::read_to_string(desired).unwrap()).unwrap();
    assert_eq!(
        plan.from,
        Fingerprint::of(&desired),
        "the fabric after the fault"
    );
    assert_eq!(plan.to, Fingerprint::of(&desired));
    assert_eq!(
        plan.smps(),
        3,
        "the lower bound: two blocks with dead entries and one detour"
    );
    assert!(plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .all(|w| matches!(w, SmpWrite::Lft { .. })));
    // The state it leads to, written and proven on its own.
    let end = dir.join("end.json");
    let o = weft(&[
        "plan",
        "--from",
        &old,
        &new,
        "-q",
        "--write-state",
        end.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let o = weft(&["verify", "--state", end.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // Written again: byte-identical.
    let again = dir.join("again.json");
    let o = weft(&[
        "plan",
        "--from",
        &old,
        &new,
        "-q",
        "-o",
        again.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        std::fs::read(&plan_file).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tenant_change_is_planned_as_pkey_writes() {
    let dir = temp_dir("tenants");
    let old = built(
        &dir,
        "old",
        &source(
            &dir,
            "old",
            "    tenant alice { pkey = 0x8001, hosts = cn001..=cn004 }\n",
        ),
    );
    let new = source(
        &dir,
        "new",
        "    tenant alice { pkey = 0x8001, hosts = cn001..=cn006 }\n",
    );
    let o = weft(&["plan", "--from", &old, &new]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    insta::assert_snapshot!("plan_tenant_change", text(&o.stdout));
    let o = weft(&["plan", "--from", &old, &new, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // cn005 and cn006 gain alice's key: one P_Key block each, no LFT write.
    assert_eq!(v["totals"]["smps"], 2, "{v}");
    assert_eq!(v["steps"][0]["pkey_blocks"], 2, "{v}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn refusals_say_why_with_exit_1() {
    let dir = temp_dir("refusals");
    let old = built(&dir, "old", &source(&dir, "old", ""));
    // leaf1 is sFtree's subtree root: its uplink down moves the root in the desired tables
    // (`--full`), and any mix of old and new switch-to-switch routes has a credit loop. The
    // minimal repair keeps the root and is planned.
    let root = source(&dir, "root", "    faults { link leaf1.p[5] down }\n");
    let o = weft(&["plan", "--from", &old, &root]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // The desired tables keep no route order: refused with `--zero-outage`, planned with the
    // switch-to-switch routes through break-before-make (the outage stated) otherwise, and
    // refused again below a bound on the outage.
    let zero = ["plan", "--from", &old, &root, "--full", "--zero-outage"];
    let o = weft(&zero);
    assert_eq!(o.status.code(), Some(1));
    let mut shown = text(&o.stdout);
    let o = weft(&[&zero[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "weft-plan", "{v}");
    assert_eq!(v["findings"][0]["code"], "weft::plan::no_safe_order", "{v}");
    assert_eq!(v["check"]["deadlock_free"]["result"], "violated", "{v}");
    let plan_file = dir.join("outage.json");
    let o = weft(&[
        "plan",
        "--from",
        &old,
        &root,
        "--full",
        "-o",
        plan_file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    let human = text(&o.stdout);
    assert!(human.contains("outage (break-before-make)"), "{human}");
    let o = weft(&["plan", "--from", &old, &root, "--full", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let outage = &v["totals"]["outage"];
    let routes = outage["routes"].as_u64().unwrap();
    assert!(routes > 0, "{v}");
    assert_eq!(outage["hosts"], 0, "{v}");
    assert!(
        v["steps"][0]["drops"].as_u64().unwrap() > 0,
        "the first step drops: {v}"
    );
    let read =
        weft_formats::plan::Plan::from_json(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    assert!(read.digest_matches());
    assert!(!read.steps[0].drops.is_empty());
    assert_eq!(
        read.steps.last().unwrap().restores.len() as u64,
        outage["destinations"].as_u64().unwrap()
    );
    let bound = (routes - 1).to_string();
    let o = weft(&[
        "plan",
        "--from",
        &old,
        &root,
        "--full",
        "--max-outage-pairs",
        &bound,
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["findings"][0]["code"], "weft::plan::outage", "{v}");
    insta::assert_snapshot!(
        "plan_break_before_make",
        human.replace(dir.to_str().unwrap(), "DIR")
    );
    // Another fabric altogether.
    let other = dir.join("other.weft");
    std::fs::write(
        &other,
        TREE.replace("radix: 8", "radix: 4")
            .replace("small", "other")
            + "}\n",
    )
    .unwrap();
    let o = weft(&["plan", "--from", &old, other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    shown += &text(&o.stdout);
    insta::assert_snapshot!("plan_refusals", shown);
    let _ = std::fs::remove_dir_all(dir);
}

/// A VM migration on Paper A's Fig. 2 fabric in every format: the VF step first, then the LFT
/// steps, each proven; the plan file holds the VF writes and reads back.
#[test]
fn vm_migration_plan_in_every_format() {
    let dir = temp_dir("migration");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/vswitch-fig2.weft");
    let src = std::fs::read_to_string(&example).unwrap();
    let old_src = dir.join("old.weft");
    std::fs::write(&old_src, &src).unwrap();
    let old = built(&dir, "old", old_src.to_str().unwrap());
    let new = dir.join("new.weft");
    std::fs::write(&new, src.replace("vm vm1 on vsw1", "vm vm1 on vsw4")).unwrap();
    let new = new.to_str().unwrap();
    let plan_file = dir.join("plan.json");
    let pf = plan_file.to_str().unwrap();
    let mut shown = String::new();
    for format in ["human", "markdown", "json"] {
        let o = weft(&["plan", "--from", &old, new, "--format", format, "-o", pf]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let d = dir.to_str().unwrap();
        shown += &format!("## {format}\n{}\n", text(&o.stdout).replace(d, "DIR"));
    }
    insta::assert_snapshot!("plan_vm_migration", shown);
    let plan = Plan::from_json(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    let vf = plan.steps[0]
        .writes
        .iter()
        .filter(|w| matches!(w, SmpWrite::Vport { .. }))
        .count();
    assert_eq!(vf, 2, "the VF left and the VF taken");
    assert_eq!(plan.smps(), plan.lft_smps() + 2 * vf);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A VF whose P_Key table differs from the desired state's, no VM moving: its table is written
/// in the two P_Key steps (keys taken away, then added), and the steps say so — not that LIDs
/// move with stopped VMs, which no step here does — each proven isolated in every mix.
#[test]
fn a_vf_table_change_is_said_to_be_p_keys_only() {
    let dir = temp_dir("vf-pkeys");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/vswitch-fig2.weft");
    let src = dir.join("fig2.weft");
    std::fs::copy(&example, &src).unwrap();
    let src = src.to_str().unwrap();
    let state = built(&dir, "old", src);
    // vm1's VF holds the full default key only (as the IBA default table would).
    let text_of = std::fs::read_to_string(&state).unwrap();
    let line = text_of
        .lines()
        .find(|l| l.contains("\"vm\":\"vm1\""))
        .unwrap()
        .to_owned();
    let edited: String = text_of
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"fingerprint\""))
        .map(|l| {
            if l == line {
                l.replace(
                    "\"pkeys\":[\"0x7fff\",\"0x8001\"]",
                    "\"pkeys\":[\"0xffff\"]",
                )
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(edited, text_of);
    let cur = dir.join("cur.json");
    std::fs::write(&cur, edited).unwrap();
    let o = weft(&["plan", "--from", cur.to_str().unwrap(), src]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let steps: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("step "))
        .collect();
    assert_eq!(steps.len(), 2, "{out}");
    for s in steps {
        assert!(
            s.contains("1 VF(s); P_Keys only, no route changes")
                && s.contains("isolated in every mix: proven")
                && !s.contains("LIDs move"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// QoS classes on the small tree, `storage`'s weight given.
fn qos_classes(weight: u32) -> String {
    format!(
        "    vls {{ budget = 4 }}\n    qos {{\n        class management {{ vl = 0, weight = 16, priority = high, match {{ service_id = 0x1000..0x1100 }} }}\n        class compute {{ weight = 192 }}\n        class storage {{ weight = {weight}, match {{ service_id = 0x2000..0x3000 }} }}\n    }}\n"
    )
}

/// A change of QoS weights is planned as VL arbitration writes alone (every route and VL the
/// same), each step keeping every scheduled VL scheduled in every mix; the plan file lands on
/// the sim, and the fabric then holds the desired arbitration. Other QoS changes stay refused,
/// saying what differs.
#[test]
fn a_qos_weight_change_is_planned_as_arbitration_writes() {
    let dir = temp_dir("qos-weights");
    let old = built(&dir, "old", &source(&dir, "old", &qos_classes(48)));
    let new_src = source(&dir, "new", &qos_classes(96));
    let new = built(&dir, "new", &new_src);
    let o = weft(&["plan", "--from", &old, &new]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    insta::assert_snapshot!("plan_qos_weights", text(&o.stdout));
    let o = weft(&["plan", "--from", &old, &new, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{v}");
    assert_eq!(steps[0]["lft_blocks"], 0, "{v}");
    assert_eq!(steps[0]["vlarb_blocks"], steps[0]["smps"], "{v}");
    assert_eq!(steps[0]["sl2vl_tables"], 0, "{v}");
    let plan_file = dir.join("plan.json");
    let pf = plan_file.to_str().unwrap();
    let o = weft(&["plan", "--from", &old, &new, "-o", pf, "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let plan = Plan::from_json(&std::fs::read_to_string(&plan_file).unwrap()).unwrap();
    assert!(plan
        .steps
        .iter()
        .flat_map(|s| &s.writes)
        .all(|w| matches!(w, SmpWrite::VlArb { .. })));
    // Applied on the sim loaded with the old state (proven again there), then audited.
    let lock = dir.to_str().unwrap();
    let o = weft(&["apply", pf, "--fabric", &old, "--lock-dir", lock]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).contains(&format!(
            "the fabric holds the new state: 1 steps landed, {} Set",
            plan.smps()
        )),
        "{}",
        text(&o.stdout)
    );
    // Ending a class's lane: SL→VL tables change too — refused, saying so.
    let fewer = source(
        &dir,
        "fewer",
        "    vls { budget = 4 }\n    qos {\n        class compute { weight = 192 }\n    }\n",
    );
    let o = weft(&["plan", "--from", &old, &fewer]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let said = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(
        said.contains(
            "path SLs differ between the two states; planning that is not built yet (only LFT, \
             MFT, P_Key and VL arbitration changes are planned"
        ),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
