//! Machines and rails `weft import` finds in real dumps from their cabling: the NDR DGX dump
//! (rail-optimised, a crossed pair of rail cables, hosts without `HCA-5`, default-named
//! ConnectX-7s) and the director fabrics (not rail-optimised), held by snapshots.

#![expect(clippy::unwrap_used, reason = "test helpers fail by panicking")]

use weft_compiler::diagnostic::SourceId;
use weft_compiler::{import_ibnetdiscover_with, ImportOptions};

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/real")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// The import's machine warnings, its hosts comment, and each HCA's `host` and `rail` for
/// the hosts named (`name host rail` lines).
fn machines(dump: &str, hosts: &[&str]) -> String {
    let text = fixture(dump);
    let r = import_ibnetdiscover_with(
        &text,
        dump,
        SourceId(0),
        None,
        "t",
        ImportOptions::default(),
        &[],
    );
    let (program, warnings) = r.unwrap();
    let mut out = String::new();
    for d in &warnings {
        let code = d.code.as_str();
        if code.contains("rails") || code.contains("default_named") {
            out += &format!("{code}: {}\n", d.message);
        }
    }
    for line in program
        .lines()
        .filter(|l| l.contains("hosts of several HCAs"))
    {
        out += line;
        out.push('\n');
    }
    for line in program
        .lines()
        .filter(|l| l.trim_start().starts_with("hca "))
    {
        if hosts
            .iter()
            .any(|h| line.contains(&format!("host = \"{h}\"")))
        {
            let name = line.split('"').nth(1).unwrap_or("");
            let rail = line
                .split("rail = ")
                .nth(1)
                .and_then(|r| r.split(',').next())
                .unwrap_or("-");
            out += &format!("{name}: rail {rail}\n");
        }
    }
    out
}

#[test]
fn the_ndr_dgx_dump_has_rails_from_its_cabling() {
    // Two of the eleven hosts without `HCA-5` (its rail's leaf in their unit is missing), the
    // crossed machine, and a whole machine beside it.
    let got = machines(
        "topograph-ndr-dgx.ibnetdiscover",
        &[
            "a05-p1-dgx-01-c01",
            "a05-p1-dgx-01-c03",
            "b08-p1-dgx-08-c01",
            "b08-p1-dgx-08-c02",
        ],
    );
    insta::assert_snapshot!(got);
}

#[test]
fn the_eleven_hosts_without_hca_5_have_hca_6_on_its_leafs_rail() {
    let text = fixture("topograph-ndr-dgx.ibnetdiscover");
    let (program, _) = import_ibnetdiscover_with(
        &text,
        "d",
        SourceId(0),
        None,
        "t",
        ImportOptions::default(),
        &[],
    )
    .unwrap();
    // Hosts by their HCAs' devices.
    let mut devices: std::collections::BTreeMap<String, Vec<(String, String)>> = Default::default();
    for line in program
        .lines()
        .filter(|l| l.trim_start().starts_with("hca "))
    {
        let name = line.split('"').nth(1).unwrap();
        let Some(host) = line
            .split("host = \"")
            .nth(1)
            .and_then(|h| h.split('"').next())
        else {
            continue;
        };
        let rail = line
            .split("rail = ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        let dev = name.rsplit(' ').next().unwrap();
        devices
            .entry(host.to_owned())
            .or_default()
            .push((dev.to_owned(), rail.to_owned()));
    }
    let without_5: Vec<&Vec<(String, String)>> = devices
        .values()
        .filter(|v| v.iter().any(|(d, _)| d == "HCA-6") && !v.iter().any(|(d, _)| d == "HCA-5"))
        .collect();
    assert_eq!(without_5.len(), 11);
    for v in without_5 {
        let r6 = v.iter().find(|(d, _)| d == "HCA-6").unwrap();
        // Rail 3 counts from 0: the fourth rail, the `IBLEAF-04-…` leaves.
        assert_eq!(r6.1, "3", "{v:?}");
    }
}

#[test]
fn director_fabrics_are_not_rail_optimised() {
    // 278 of its 280 hosts have all eight HCAs on one top-of-rack switch.
    let got = machines("ufm-ndt-director-putty.ibnetdiscover", &[]);
    insta::assert_snapshot!(got);
}
