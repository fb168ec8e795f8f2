//! The lines this bench reads from OpenSM's log, and its defaults.

use super::*;

/// The lines this bench reads from OpenSM 3.3.23's log, as it writes them.
#[test]
fn log_lines_are_read_as_opensm_writes_them() {
    let mut t = LogTail::new(Path::new("/nonexistent"));
    for l in [
        "Nov 27 03:10:49 726722 [C5C0B6C0] 0x08 -> set_lft_block: Writing FT block 3 to switch 0x2c90000010000",
        "Nov 27 03:10:49 726723 [C5C0B6C0] 0x08 -> set_lft_block: Writing FT block 0 to switch 0x2c90000000500",
        "Nov 27 03:10:49 726724 [C5C0B6C0] 0x01 -> fabric_validate_topology: ERR AB0D: Fabric topology hasn't been identified as FatTree",
        "Nov 27 03:10:49 726725 [C5C0B6C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches",
    ] {
        t.line(l);
    }
    assert_eq!((t.seen.ups, t.seen.after_up), (0, 4));
    t.line("Nov 27 03:10:50 000000 [C5C0B6C0] 0x02 -> SUBNET UP");
    let s = t.take();
    assert_eq!((s.ups, s.after_up), (1, 0));
    assert_eq!(
        s.writes,
        [(0x0002_c900_0001_0000, 3), (0x0002_c900_0000_0500, 0)]
    );
    assert_eq!(s.engine.as_deref(), Some("minhop"));
    assert_eq!(
        s.errors,
        ["fabric_validate_topology: ERR AB0D: Fabric topology hasn't been identified as FatTree"]
    );
    assert_eq!(t.take().ups, 0, "a new sweep starts empty");
}

#[test]
fn the_desired_programs_are_the_example_with_a_fault_or_updn() {
    let src = weft_bench::example("cluster-648.weft");
    let f = with_faults(&src, "        link leaf5.p[25] down\n");
    assert!(f.ends_with("    faults {\n        link leaf5.p[25] down\n    }\n}\n"));
    let u = with_updn(&src, "spine1");
    assert!(!u.contains("engine = fat_tree"));
    assert!(u.contains("routing {\n        engine = updn\n        roots = [spine1]\n    }"));
    assert_eq!(
        default_link(Path::new("examples/cluster-11664.weft")),
        Some("leaf3.p[20]")
    );
}
