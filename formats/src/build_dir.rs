//! The names of the files in a `weft build` directory: one list that the writer
//! (`weft_driver::build_dir`, which also decides when each extra file is written), the OpenSM
//! hand-off (`weft_deploy::opensm`), `weft apply` and the benchmarks read by. Names only: this
//! crate writes no file.

/// The files every build writes, in order.
pub const FILES: [&str; 4] = [LFTS, GUID2LID, TOPOLOGY, STATE];

/// OpenSM's `file` engine input.
pub const LFTS: &str = "lfts.dump";
/// OpenSM's LID cache.
pub const GUID2LID: &str = "guid2lid";
/// The topology with LIDs, in ibnetdiscover's format (ibsim loads it too).
pub const TOPOLOGY: &str = "topology.net";
/// Everything, in weft's state format, with the routing's quality under `quality` and the
/// engine asked for and used under `routing`.
pub const STATE: &str = "state.json";
/// The proof (`weft verify --certificate` re-checks it).
pub const CERTIFICATE: &str = "certificate.json";
/// The marker of a build written with `--allow-unproven`.
pub const UNPROVEN: &str = "UNPROVEN";
/// OpenSM's partitions (`-P`), for a state with P_Key tables (tenants).
pub const PARTITIONS: &str = "partitions.conf";
/// OpenSM's SL→VL dump, for a state with layers.
pub const SL2VL: &str = "sl2vl.dump";
/// OpenSM's QoS settings (`-Q -F`): the SL→VL and VL arbitration tables of a state with them.
pub const OPENSM_CONF: &str = "opensm.conf";
/// OpenSM's QoS policy (`-Q -Y`): the SA answers PathRecords with weft's SLs.
pub const QOS_POLICY: &str = "qos-policy.conf";
/// ibdmchk's path SLs, for a state with layers.
pub const PATH_SL: &str = "path-sl.psl";

/// The files written besides [`FILES`], when they apply.
pub const EXTRAS: [&str; 7] = [
    CERTIFICATE,
    UNPROVEN,
    SL2VL,
    PATH_SL,
    OPENSM_CONF,
    QOS_POLICY,
    PARTITIONS,
];
