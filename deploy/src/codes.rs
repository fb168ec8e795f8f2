//! The codes deploy's errors report (`weft::deploy::…`): each error type's `code()` names one
//! of these, and the CLI shows it with the error as a finding (`weft apply`, `weft audit`).
//!
//! An error that wraps another (an apply's discovery, an SMP of a proof) reports the wrapped
//! error's code; its message keeps the context.

use weft_fabric::code::{CodeInfo as C, Status};

/// The codes deploy reports, in code order.
pub const CODES: &[C] = &[
    C::stable("weft::deploy::crashed", "The writer crashed mid-apply (an injected fault): the journal is left for `weft apply --recover`."),
    C::stable("weft::deploy::discover_node_type", "A node answered discovery with a node type weft does not know."),
    C::stable("weft::deploy::discover_too_deep", "A node 63 hops from the SM: directed routes cannot go deeper."),
    C::stable("weft::deploy::discover_too_many", "More nodes answered discovery than a subnet has unicast LIDs: the fabric's answers cannot be trusted."),
    C::stable("weft::deploy::edited", "With `--no-reprove`, a plan whose digest does not match its content (edited or damaged after `weft plan` wrote it); nothing was written."),
    C::stable("weft::deploy::fabric_invalid", "What the fabric runs (the tables read off it) is not a valid state of its fabric; nothing was written."),
    C::stable("weft::deploy::fabric_model", "What the fabric reported cannot be a fabric weft models (a GUID twice, a port out of range)."),
    C::stable("weft::deploy::fault_syntax", "An injected fault (`--inject`) that is not KIND@N with a kind weft knows."),
    C::stable("weft::deploy::file_bad_name", "A name that is not one entry of a directory."),
    C::stable("weft::deploy::file_foreign", "A file or directory owned by another user, who could plant names in it."),
    C::stable("weft::deploy::file_io", "A system call on a file or directory failed (create, write, rename, sync)."),
    C::stable("weft::deploy::file_locked", "A lock file another process holds."),
    C::stable("weft::deploy::file_loop", "A chain of symbolic links that does not end."),
    C::stable("weft::deploy::file_not_directory", "A path that must be a directory and is not."),
    C::stable("weft::deploy::file_not_regular", "A path that must be a regular file and is not."),
    C::stable("weft::deploy::file_symlink", "A symbolic link where weft follows none (another user could have planted it)."),
    C::stable("weft::deploy::file_writable", "A directory writable by group or others, who could plant names in it."),
    C::stable("weft::deploy::invalid_plan", "A plan that cannot be written as it stands (a block written twice in one step, or not from what the step before it writes); nothing was written."),
    C::stable("weft::deploy::journal_in_use", "Another weft apply or recovery on this host uses the journal; nothing was written."),
    C::stable("weft::deploy::journal_io", "A journal that cannot be created, written or read."),
    C::stable("weft::deploy::journal_parse", "A journal file that is not a weft journal, or is damaged."),
    C::stable("weft::deploy::journal_partial", "Recovery forward refused: the journal holds only the parts of a large plan journaled before the apply stopped; it can be rolled back, not forward. Nothing was written."),
    C::stable("weft::deploy::journal_unfinished", "A journal recording an apply that did not end: recover it first (`weft apply --recover`)."),
    C::stable("weft::deploy::lock_io", "The lock file of an SM port or a journal cannot be created or taken."),
    C::stable("weft::deploy::locked", "Another weft apply holds the lock of the SM port; nothing was written."),
    C::stable("weft::deploy::mad_ca_name", "A CA name (`--ca`) that holds a NUL byte."),
    C::stable("weft::deploy::mad_load", "libibmad cannot be loaded (install the package the message names)."),
    C::stable("weft::deploy::mad_no_mkey", "An M_Key was given, but the libibmad installed cannot send one."),
    C::stable("weft::deploy::mad_open", "The SMI of the local CA port cannot be opened through libibmad (no such CA or port, or no permission)."),
    C::stable("weft::deploy::mad_symbol", "The libibmad installed lacks a function weft calls (too old)."),
    C::stable("weft::deploy::moved", "A block that does not hold the plan's old value: the fabric moved on since the plan was made; nothing was written."),
    C::stable("weft::deploy::no_plan", "No plan from what the fabric runs to the desired state (the message says the planner's reason)."),
    C::stable("weft::deploy::no_run_dir", "No directory for lock files: not root and XDG_RUNTIME_DIR is not set (give `--lock-dir` or set WEFT_RUN_DIR)."),
    C::stable("weft::deploy::no_wire", "A plan that records no wire view of its fabric (made by an older weft): plan again."),
    C {
        code: "weft::deploy::not_built",
        status: Status::NotBuilt,
        summary: "Not built yet: addressing a VF through vendor vPort attributes (a vSwitch shown as a switch with one adapter per VF is built).",
    },
    C {
        code: "weft::deploy::not_built_qos",
        status: Status::NotBuilt,
        summary: "Not built yet: planning a build directory's SL→VL and VL arbitration tables from what the fabric runs, and handing a plan's SL→VL and VL arbitration writes to OpenSM (a plan file's are written with `--target sim|mad`; hand a state with QoS classes to OpenSM).",
    },
    C::stable("weft::deploy::not_journaled", "Recovery refused: the fabric holds no state the journal's plan passes through; nothing was written."),
    C::stable("weft::deploy::opensm_io", "One of OpenSM's files cannot be read or written."),
    C::stable("weft::deploy::opensm_not_file_engine", "The running OpenSM does not route with the file engine (`routing_engine file`, `lfts_file`), so it cannot take weft's LFTs."),
    C::stable("weft::deploy::opensm_signal", "OpenSM could not be sent SIGHUP to read weft's files."),
    C::stable("weft::deploy::opensm_unset", "The state needs a file (partitions, QoS policy) that OpenSM's configuration does not name."),
    C::stable("weft::deploy::partitions", "A plan's declared partitions name ports the fabric does not have; nothing was written."),
    C::stable("weft::deploy::pma_no_lid", "A live port whose node has no LID: the subnet is not configured, so its PMA cannot be reached."),
    C::stable("weft::deploy::pma_status", "A node's Performance Management Agent refused a counter Get (MAD status named)."),
    C::stable("weft::deploy::pma_timeout", "A node's Performance Management Agent did not answer a counter Get after every try."),
    C::stable("weft::deploy::pma_transport", "A counter Get could not be sent or received (the device, libibmad)."),
    C::stable("weft::deploy::sim_sm_port", "The SM's port in a simulated fabric is not an end port on a live link."),
    C::stable("weft::deploy::sm_port_syntax", "An SM port (`--sm`) that is not written NODE/PORT."),
    C::stable("weft::deploy::sm_port_unknown_node", "An SM port (`--sm`) naming a node the fabric does not have."),
    C::stable("weft::deploy::smp_no_route", "An SMP's directed route leads nowhere (a port without a link, or on past a node that is not a switch)."),
    C::stable("weft::deploy::smp_status", "A node answered an SMP with a non-zero MAD status: it refused the Get or Set."),
    C::stable("weft::deploy::smp_timeout", "An SMP got no response within the timeout, after every try."),
    C::stable("weft::deploy::transport", "The SMP transport failed: the device or libibmad, or an answer that is not what was sent or written."),
    C::stable("weft::deploy::unaddressable", "A node, port or VF of the plan that is not on the fabric or cannot be addressed; nothing was written."),
    C::stable("weft::deploy::unsafe_step", "A plan step that is not safe on the fabric as it runs (proven again on the tables read off it); nothing was written."),
    C::stable("weft::deploy::vf_ambiguous", "A VF whose port GUID is held by several ports of the fabric."),
    C::stable("weft::deploy::vf_not_found", "A VF whose port GUID no node of the fabric holds, on a transport that does not address VFs through their hypervisor's port."),
    C::stable("weft::deploy::vf_not_shown", "A VF that no adapter behind its hypervisor's vSwitch holds (it did not answer discovery, or the vSwitch does not show it)."),
    C::stable("weft::deploy::vf_other_host", "A VF whose port GUID is held by a VF adapter behind another hypervisor port's vSwitch."),
    C::stable("weft::deploy::vf_physical", "A VF whose port GUID is a physical port's, not a VF adapter's behind its hypervisor's vSwitch."),
    C::stable("weft::deploy::vf_unreachable", "A VF whose node has no directed route from the SM."),
    C::stable("weft::deploy::watch_extra", "`weft watch --state`: the fabric has nodes or cables the desired state does not; no repair is planned (a repair keeps to the desired state's fabric)."),
    C::stable("weft::deploy::watch_state", "`weft watch --state`: the states a repair is planned between are not valid (the fabric's LIDs or tables against the desired state's fabric)."),
    C::stable("weft::deploy::wrong_fabric", "The fabric is not the one the plan or state was made for (a link, node or LID differs); nothing was written."),
];

#[cfg(test)]
mod tests {
    use super::CODES;

    /// How a code opens in the sources: a string literal of `weft::deploy::…` (spelt in pieces
    /// here, so that the CLI's scan of written codes does not take it for one).
    const OPEN: &str = concat!('"', "weft", "::deploy::");

    /// Every code literal of `weft::deploy::…` in this crate's sources (outside this file).
    fn written() -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("codes.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for (at, _) in text.match_indices(OPEN) {
                        let code: String = text[at + 1..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                            .collect();
                        out.insert(code);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_code_is_reported_and_every_reported_code_registered() {
        let registered: std::collections::BTreeSet<String> =
            CODES.iter().map(|c| c.code.to_owned()).collect();
        assert_eq!(registered.len(), CODES.len(), "a code is registered twice");
        assert_eq!(written(), registered);
        let mut sorted = CODES.to_vec();
        sorted.sort_by_key(|c| c.code);
        assert_eq!(sorted, CODES, "CODES is kept in code order");
    }
}
