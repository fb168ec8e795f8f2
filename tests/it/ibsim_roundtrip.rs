//! ibsim interop: a fabric written by weft, loaded by ibsim and discovered by the real
//! `ibnetdiscover` reads back to the same fabric.

use std::path::Path;
use std::time::Duration;
use weft_fabric::{FabricBuilder, Guid, NodeKind, NodeSpec, PortRef};
use weft_formats::ibnetdiscover::{self, ParseOptions};
use weft_tests::ibsim::{self, Ibsim, IbsimError, Limits};
use weft_tests::{assert_isomorphic, fat_tree_648, isomorphism_differences};

#[test]
fn fat_tree_648_through_ibsim_and_ibnetdiscover() {
    let Some(tools) = ibsim::require(
        "fat_tree_648_through_ibsim_and_ibnetdiscover",
        &["ibnetdiscover"],
    ) else {
        return;
    };
    let fabric = fat_tree_648().unwrap();
    assert_eq!(fabric.nodes().len(), 18 + 36 + 648);
    let net = ibnetdiscover::write(&fabric, None).unwrap();
    let pid = {
        let sim = Ibsim::start(&tools, &net, Some(Limits::for_fabric(&fabric)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            sim.warnings().is_empty(),
            "ibsim warned about the net file weft wrote:\n{}",
            sim.warnings().join("\n")
        );
        let out = sim
            .run_retrying(
                "ibnetdiscover",
                &[],
                Duration::from_secs(120),
                Duration::from_secs(300),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let opts = ParseOptions {
            fabric_name: "discovered".to_owned(),
            source_name: "ibnetdiscover output".to_owned(),
            ..ParseOptions::default()
        };
        let discovered = ibnetdiscover::parse(&out.stdout, &opts)
            .unwrap_or_else(|e| panic!("{e}: {:#?}", e.diagnostics()));
        assert!(discovered.warnings.is_empty(), "{:#?}", discovered.warnings);
        assert_isomorphic(&fabric, &discovered.fabric);
        sim.pid()
    };
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "ibsim (pid {pid}) still runs after the test"
    );
}

#[test]
fn a_net_file_ibsim_refuses_is_reported_not_waited_for() {
    let Some(tools) = ibsim::require("a_net_file_ibsim_refuses_is_reported_not_waited_for", &[])
    else {
        return;
    };
    // A link listed by one end only: our reader accepts it, ibsim aborts.
    let err = Ibsim::start(
        &tools,
        "Switch\t8 \"S1\"\n[1]\t\"H1\"[1]\n\nCa\t1 \"H1\"\n",
        None,
    )
    .expect_err("ibsim must refuse a one-sided link");
    match err {
        IbsimError::Exited { log, .. } => assert!(log.contains("not connected"), "{log}"),
        other => panic!("expected ibsim to exit, got: {other}"),
    }
}

#[test]
fn isomorphism_differences_name_what_differs() {
    let build = |rename: bool, extra_link: bool| {
        let mut b = FabricBuilder::new(if rename { "b" } else { "a" });
        let s = b
            .add_node(NodeSpec::new("sw", NodeKind::Switch, Guid(0x10), 8))
            .unwrap();
        let h = b
            .add_node(NodeSpec::new(
                if rename { "host" } else { "cn001" },
                NodeKind::Hca,
                Guid(0x20),
                2,
            ))
            .unwrap();
        b.add_link(PortRef::new(s, 1), PortRef::new(h, 1)).unwrap();
        if extra_link {
            b.add_link(PortRef::new(h, 2), PortRef::new(s, 2)).unwrap();
        }
        b.finish()
    };
    let (a, b) = (build(false, true), build(true, false));
    assert!(isomorphism_differences(&a, &a).is_empty());
    assert_eq!(
        isomorphism_differences(&a, &b),
        vec![
            "node 0x0000000000000020: named `cn001` in `a`, `host` in `b`".to_owned(),
            "link `sw` (0x0000000000000010) port 2 <-> `cn001` (0x0000000000000020) port 2 only \
             in `a`"
                .to_owned(),
        ]
    );
    let panic = std::panic::catch_unwind(|| assert_isomorphic(&a, &b)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with(
            "fabrics `a` (2 nodes, 2 links) and `b` (2 nodes, 1 links) differ in 2 ways:"
        ),
        "{msg}"
    );
}

#[test]
fn a_missing_tool_skips_locally_and_fails_in_ci() {
    let missing = ["weft-no-such-tool"];
    let found = ibsim::Tools::find(&missing).map(|_| ()).unwrap_err();
    assert!(found.contains(&"weft-no-such-tool".to_owned()), "{found:?}");
    let outcome = std::panic::catch_unwind(|| ibsim::require("probe", &missing));
    if std::env::var_os("CI").is_some() {
        assert!(outcome.is_err(), "in CI a missing tool must fail the test");
    } else {
        assert!(
            matches!(outcome, Ok(None)),
            "outside CI a missing tool skips the test"
        );
    }
}

/// ibsim's console through [`Ibsim::console`]: `Unlink` takes a cable down (the far switch and
/// its host vanish from `ibnetdiscover`), `ReLink` brings it back, a bad node id is ibsim's
/// `#` complaint; a simulator started without a console refuses.
#[test]
fn the_console_takes_a_cable_down_and_up() {
    let Some(tools) = ibsim::require("the_console_takes_a_cable_down_and_up", &["ibnetdiscover"])
    else {
        return;
    };
    let net = "Switch\t8 \"S1\"\n[1]\t\"S2\"[1]\n[2]\t\"H1\"[1]\n\n\
               Switch\t8 \"S2\"\n[1]\t\"S1\"[1]\n[2]\t\"H2\"[1]\n\n\
               Ca\t1 \"H1\"\n[1]\t\"S1\"[2]\n\nCa\t1 \"H2\"\n[1]\t\"S2\"[2]\n";
    let sim = Ibsim::start_with_console(&tools, net, None).unwrap_or_else(|e| panic!("{e}"));
    let nodes = |sim: &Ibsim| {
        let out = sim
            .run_retrying(
                "ibnetdiscover",
                &[],
                Duration::from_secs(30),
                Duration::from_secs(90),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        out.stdout
            .lines()
            .filter(|l| l.starts_with("Switch") || l.starts_with("Ca"))
            .count()
    };
    assert_eq!(nodes(&sim), 4);
    let said = sim.console("Unlink \"S1\"[1]").unwrap();
    assert!(!said.contains('#'), "{said}");
    assert_eq!(nodes(&sim), 2, "S2 and H2 are cut off");
    let said = sim.console("ReLink \"S1\"[1]").unwrap();
    assert!(!said.contains('#'), "{said}");
    assert_eq!(nodes(&sim), 4);
    assert!(sim
        .console("Unlink \"S9\"[1]")
        .unwrap()
        .contains("not found"));
    let quiet = Ibsim::start(&tools, net, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(quiet.console("Unlink \"S1\"[1]").is_err());
}
