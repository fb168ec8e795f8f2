//! The registry of stable finding codes: what a code is, its status and its meaning.
//!
//! Each crate that reports findings lists its own codes in a `CODES` table (this crate's
//! is [`CODES`]: the ibnetdiscover reader, the state and plan file readers, OpenSM's dumps).
//! The CLI puts the tables together (`weft --explain CODE`, the SARIF rules), and a test
//! checks that every code written in the sources is in exactly one table and that
//! `docs/codes.md` has a section for each, at [`CodeInfo::anchor`].

/// How far tools may rely on a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The code and its meaning do not change: tools may match on it.
    Stable,
    /// Input weft accepts in its syntax but refuses because the feature is not built yet.
    NotBuilt,
    /// An inconsistency inside weft (a bug); never expected.
    Internal,
}

impl Status {
    /// The status as written in docs and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Stable => "stable",
            Status::NotBuilt => "not built",
            Status::Internal => "internal",
        }
    }
}

/// One registered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct CodeInfo {
    /// The code as shown, e.g. `weft::ibnet::port_wired_twice`.
    pub code: &'static str,
    /// How far tools may rely on it.
    pub status: Status,
    /// What it means, in one sentence (SARIF rule descriptions, `--explain`).
    pub summary: &'static str,
}

impl CodeInfo {
    /// A stable code.
    pub const fn stable(code: &'static str, summary: &'static str) -> CodeInfo {
        CodeInfo {
            code,
            status: Status::Stable,
            summary,
        }
    }

    /// The anchor of its section in `docs/codes.md`: the code with `::` and `_` as `-`
    /// (`weft::ibnet::bad_lid` → `weft-ibnet-bad-lid`), as Markdown renderers make heading ids.
    pub fn anchor(&self) -> String {
        self.code.replace("::", "-").replace('_', "-")
    }
}

/// The codes this crate reports.
pub const CODES: &[CodeInfo] = &[
    CodeInfo::stable("weft::cabling::csv", "A cabling spreadsheet the CSV reader cannot read: a row of another length than its header, bytes that are not UTF-8."),
    CodeInfo::stable("weft::cabling::csv_column", "A cabling spreadsheet whose header lacks StartDevice, StartPort, EndDevice or EndPort, or names a column weft reads twice."),
    CodeInfo::stable("weft::cabling::csv_cell", "A cabling spreadsheet cell that is empty where a device or port is needed, or is not a port number (1–255), a speed or a width."),
    CodeInfo::stable("weft::cabling::csv_self_link", "A cabling spreadsheet row whose cable joins a device to itself."),
    CodeInfo::stable("weft::cabling::csv_duplicate", "A cabling spreadsheet listing the same cable twice."),
    CodeInfo::stable("weft::cabling::csv_port_twice", "A cabling spreadsheet cabling one port twice."),
    CodeInfo::stable("weft::cabling::csv_empty", "A cabling spreadsheet with no cable under its header."),
    CodeInfo::stable("weft::cabling::ambiguous_name", "A design node whose name two found nodes match equally well (whole, or by first word): matching by name would have to guess."),
    CodeInfo::stable("weft::cabling::ambiguous_position", "A node at the place of two nodes on the other side (reached through different cables): matching by position would have to guess."),
    CodeInfo::stable("weft::cabling::no_guids", "`--match guids` with a cabling spreadsheet as the design, which has no GUIDs."),
    CodeInfo::stable("weft::cabling::no_position", "Matching by position only, and no node's place in the design is the place of exactly one found node."),
    CodeInfo::stable("weft::ibnet::alias_unsupported", "An ibsim port alias (`@`) in an ibnetdiscover file; weft does not read aliases."),
    CodeInfo::stable("weft::ibnet::ambiguous_peer", "An `iblinkinfo` port whose peer cannot be told apart: its LID is 0 and several nodes have its name."),
    CodeInfo::stable("weft::ibnet::ambiguous_remote_port", "A port line whose remote port is separated from the remote node id by a space."),
    CodeInfo::stable("weft::ibnet::bad_guid", "A node or port GUID of 0 (reserved), or an end node's port GUIDs counted past 0xffffffffffffffff."),
    CodeInfo::stable("weft::ibnet::bad_lid", "A LID outside the unicast range."),
    CodeInfo::stable("weft::ibnet::bad_lmc", "An LMC above 7."),
    CodeInfo::stable("weft::ibnet::bad_number", "A number or GUID that does not parse or is out of range."),
    CodeInfo::stable("weft::ibnet::duplicate_guid", "Two nodes with the same node GUID."),
    CodeInfo::stable("weft::ibnet::duplicate_lid", "Two ports given the same LID, or overlapping LID ranges under the LMC; `weft check` would refuse the imported program."),
    CodeInfo::stable("weft::ibnet::duplicate_name", "Warning: a node name that had to be made unique."),
    CodeInfo::stable("weft::ibnet::duplicate_name_map_entry", "A GUID listed twice in a node name map."),
    CodeInfo::stable("weft::ibnet::duplicate_node_id", "Two headers declare the same node id."),
    CodeInfo::stable("weft::ibnet::duplicate_port_guid", "Two ports carry one port GUID."),
    CodeInfo::stable("weft::ibnet::duplicate_port_line", "Warning: the same port line twice."),
    CodeInfo::stable("weft::ibnet::foreign_format", "A file in a known format that is no topology (an LFT dump, a guid2lid, an ibdm topology file, a node list, JSON, …), refused by name with what to give instead."),
    CodeInfo::stable("weft::ibnet::grouped_header", "Warning: a chassis header of grouped output (`ibnetdiscover -g`: `Non-Chassis Nodes`, `Chassis 3 (guid 0x…)`, `Hostname: …`), skipped."),
    CodeInfo::stable("weft::ibnet::ignored_directive", "Warning: a directive weft ignores (`do`, `pdebug`, `module`, `width`, `speed`, `extspeed`)."),
    CodeInfo::stable("weft::ibnet::include_unsupported", "An `include` line; weft reads one file."),
    CodeInfo::stable("weft::ibnet::indented_line", "Warning: a line indented with whitespace, which ibsim ignores."),
    CodeInfo {
        code: "weft::ibnet::internal",
        status: Status::Internal,
        summary: "An internal inconsistency of the ibnetdiscover reader (a bug in weft).",
    },
    CodeInfo::stable("weft::ibnet::invalid", "An ibnetdiscover file with errors (each reported under its own code)."),
    CodeInfo::stable("weft::ibnet::link_ends_disagree", "The two ends of a link name different peers."),
    CodeInfo::stable("weft::ibnet::lmc_mismatch", "Warning: end-node ports with different LMCs."),
    CodeInfo::stable("weft::ibnet::loopback", "Warning: a loopback cable, from a port to another port of the same node."),
    CodeInfo::stable("weft::ibnet::malformed_assignment", "A `key=value` line (`vendid=`, `switchguid=`, …) that does not parse."),
    CodeInfo::stable("weft::ibnet::malformed_header", "A node header line (`Switch 36 \"S-…\"`) that does not parse."),
    CodeInfo::stable("weft::ibnet::malformed_name_map", "A line of a node name map that does not parse."),
    CodeInfo::stable("weft::ibnet::malformed_port", "A port line (`[1] \"S-…\"[2]`) that does not parse."),
    CodeInfo::stable("weft::ibnet::malformed_report_line", "A line of an `ibnetdiscover -p` or `iblinkinfo` report, or of a `subnet.lst`, that does not parse."),
    CodeInfo::stable("weft::ibnet::missing_blank_line", "Warning: a record not followed by a blank line, so ibsim would skip the next line."),
    CodeInfo::stable("weft::ibnet::missing_whitespace", "Warning: a file whose lines lack the whitespace between fields (`Switch41 \"S-…\"# \"…\"`, tabs dropped by a terminal); read as if it were there, once per file."),
    CodeInfo::stable("weft::ibnet::no_nodes", "A dump that describes no node: empty, blank, or only comments and noise such as the messages of a discovery that failed; an error in every format and mode."),
    CodeInfo::stable("weft::ibnet::node_guid_guessed", "Warning: a report without the node GUIDs of end nodes (`ibnetdiscover -p`, `iblinkinfo`); each is taken as a port GUID minus its port number."),
    CodeInfo::stable("weft::ibnet::node_without_ports", "A node without ports, which ibsim refuses (writing a topology)."),
    CodeInfo::stable("weft::ibnet::one_sided_link", "Warning: a link listed by one end only."),
    CodeInfo::stable("weft::ibnet::peer_only_node", "Warning: nodes of an `ibnetdiscover -p` report seen only as peers on other nodes' lines (an excerpt); made up from those lines, once per file."),
    CodeInfo::stable("weft::ibnet::port_count_guessed", "Warning: a report without port counts (`ibnetdiscover -p`, `iblinkinfo`); each node gets the highest port number seen."),
    CodeInfo::stable("weft::ibnet::port_guid_mismatch", "Two sightings of one port disagree on its port GUID."),
    CodeInfo::stable("weft::ibnet::port_out_of_range", "A port number that the node does not have."),
    CodeInfo::stable("weft::ibnet::port_outside_node", "A port line that belongs to no node record."),
    CodeInfo::stable("weft::ibnet::port_wired_twice", "One port wired to two different peers."),
    CodeInfo::stable("weft::ibnet::rate_mismatch", "Warning: the two ends of a link report different widths or speeds; the link takes the narrower width and the slower speed."),
    CodeInfo::stable("weft::ibnet::self_link", "A port wired to itself."),
    CodeInfo::stable("weft::ibnet::shell_prompt", "Warning: a shell prompt line (`root@host:~# ibnetdiscover`), skipped."),
    CodeInfo::stable("weft::ibnet::terminal_log", "Warning: a terminal-log header (PuTTY's `=~=~=~… PuTTY log …`, `script`'s `Script started on …`), skipped."),
    CodeInfo::stable("weft::ibnet::tool_stderr", "Warning: a message of libibmad, libibumad, libibnetdisc or an InfiniBand tool captured from standard error (`ibwarn: …`, `src/query_smp.c:195; …`), skipped."),
    CodeInfo::stable("weft::ibnet::unassigned_lid", "Warning: ports at `lid 0` or `lid 65535` (not yet assigned by an SM) while others have LIDs; they are imported without one."),
    CodeInfo::stable("weft::ibnet::unknown_line", "A line that is no header, port, assignment, comment or known directive."),
    CodeInfo::stable("weft::ibnet::unknown_node", "A port line naming a node no record describes (discovery cut short); with `--partial` a warning, and the link is dropped."),
    CodeInfo::stable("weft::ibnet::unknown_rate", "Warning: a link rate (`4xEDR`) weft does not know."),
    CodeInfo::stable("weft::ibnet::unwritable_name", "A node name that ibsim or ibnetdiscover would not reproduce (writing a topology)."),
    CodeInfo::stable("weft::opensm", "A line of an OpenSM or ibdiagnet file (LFTs, SL→VL, path SLs, guid2lid) that weft cannot read, or that contradicts the topology."),
    CodeInfo::stable("weft::plan_file::outage", "A plan step dropping or restoring destinations out of turn (break-before-make)."),
    CodeInfo::stable("weft::plan_file::parse", "A file that is not a weft plan."),
    CodeInfo::stable("weft::plan_file::partition", "A plan's declared partition that names ports or VFs it cannot have."),
    CodeInfo::stable("weft::plan_file::stale", "A plan whose old LFT block is not what the fabric holds: the plan was made for another state."),
    CodeInfo::stable("weft::plan_file::version", "A plan of another format or version (plan it again with this weft)."),
    CodeInfo::stable("weft::plan_file::vf_lid", "A plan step giving a VF a LID outside the unicast range."),
    CodeInfo::stable("weft::plan_file::write", "A plan step that is not a whole block (64 LFT entries, at most 32 P_Keys)."),
    CodeInfo::stable("weft::state::dftree_lanes", "A dFtree lane pair that is not valid (one SL twice, an SL above 15, pairs out of order or repeated)."),
    CodeInfo::stable("weft::state::fabric", "A state whose fabric is not valid (a node, port or link the model refuses)."),
    CodeInfo::stable("weft::state::lft_size", "A switch's LFT longer than its LinearFDBCap."),
    CodeInfo::stable("weft::state::lid_alignment", "A base LID that is not a multiple of 2^LMC."),
    CodeInfo::stable("weft::state::lid_clash", "One LID owned by two ports."),
    CodeInfo::stable("weft::state::lid_missing", "A live port that needs a LID and has none."),
    CodeInfo::stable("weft::state::lid_port", "A LID on a port that cannot own one (a switch's external port)."),
    CodeInfo::stable("weft::state::lid_range", "A port's LIDs past the last unicast LID 0xbfff."),
    CodeInfo::stable("weft::state::lid_zero", "A port with LID 0, which is reserved."),
    CodeInfo::stable("weft::state::lmc", "An LMC outside 0..=7."),
    CodeInfo::stable("weft::state::lmc_mismatch", "LIDs assigned with another LMC than the fabric's."),
    CodeInfo::stable("weft::state::max_vls", "A `max_vls` outside 1..=15 data VLs."),
    CodeInfo::stable("weft::state::mcast_group", "A multicast group that is not valid (an MLID declared twice, a P_Key without a partition number, a member that is not an end port or a switch's port 0)."),
    CodeInfo::stable("weft::state::mft", "A multicast forwarding table that is not valid (on a node that is not a switch, a port the switch does not have, an MLID past its MulticastFDBCap)."),
    CodeInfo::stable("weft::state::not_a_switch", "Switch tables (LFT, SL→VL) on a node that is not a switch."),
    CodeInfo::stable("weft::state::partition", "A declared partition that is not valid (a bad key, an unknown member)."),
    CodeInfo::stable("weft::state::path_sl", "Path SLs that name unknown sources or LIDs, or SLs above 15."),
    CodeInfo::stable("weft::state::port_table", "A port's P_Key or VL arbitration table that is not valid."),
    CodeInfo::stable("weft::state::sl2vl", "A switch's SL→VL table that is not valid (a wrong size, a VL above 15)."),
    CodeInfo::stable("weft::state::sm", "An SM port that is not a live port of the fabric."),
    CodeInfo::stable("weft::state::unknown_guid", "A table naming a GUID no node has."),
    CodeInfo::stable("weft::state::unknown_node", "A table naming a node id the fabric does not have."),
    CodeInfo::stable("weft::state::fingerprint", "A state file whose recorded fingerprint does not match its content: it was changed after it was written."),
    CodeInfo::stable("weft::state::json", "A state file that is not valid JSON or not of the state's shape."),
    CodeInfo::stable("weft::state::version", "A state file of another format or version."),
];
