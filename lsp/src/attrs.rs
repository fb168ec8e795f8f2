//! The attributes each place of a `.weft` file accepts, with what they mean (from
//! `docs/language.md`), for hover and completion.

/// Where attributes are written: a section's keyword (`routing`), `node` for node
/// declarations, `model` for models, `link` for cables, `fabric` for the fabric's own.
pub(crate) const ATTRS: &[(&str, &[(&str, &str)])] = &[
    ("fabric", &[("guid_base", "the base of generated GUIDs")]),
    ("model", NODE),
    ("node", NODE),
    (
        "link",
        &[
            (
                "speed",
                "the cable's speed (`SDR DDR QDR FDR10 FDR EDR HDR NDR XDR`)",
            ),
            ("width", "the cable's width (`1x 2x 4x 8x 12x`)"),
        ],
    ),
    ("vls", &[("budget", "the data VLs the fabric may use")]),
    (
        "routing",
        &[
            (
                "engine",
                "the routing engine: `fat_tree`, `updn`, `minhop` or `layered`",
            ),
            (
                "switch_to_switch",
                "`sftree`: every switch pair connected (what `fat_tree` does)",
            ),
            ("lmc", "LID mask control, 0 to 7: 2^lmc LIDs per port"),
            ("roots", "explicit roots for `updn` (a list of switches)"),
            ("seed", "a seed for randomised engines (not built yet)"),
        ],
    ),
    (
        "class",
        &[
            ("sl", "the class's first SL (0 to 15)"),
            ("vl", "the class's first data VL (0 to 14)"),
            ("weight", "its share of the VL arbitration table (1 to 255)"),
            ("priority", "`high` or `low` VL arbitration"),
            (
                "lanes",
                "`single`, `vftree(maxvl: N)` or `dftree`: how traffic spreads over lanes",
            ),
        ],
    ),
    (
        "match",
        &[(
            "service_id",
            "the service IDs (a number or a range) this class is",
        )],
    ),
    (
        "tenant",
        &[
            ("pkey", "the partition's P_Key (0x0001..=0x7ffe)"),
            (
                "hosts",
                "the tenant's hosts (names, ranges or host lists), full members",
            ),
            ("class", "the QoS class the tenant's traffic uses"),
        ],
    ),
    (
        "shared",
        &[
            ("pkey", "the partition's P_Key (0x0001..=0x7ffe)"),
            ("hosts", "the shared hosts, full members"),
            (
                "members",
                "how every tenant's hosts join: `limited` or `full`",
            ),
        ],
    ),
    (
        "vms",
        &[
            ("vfs_per_host", "VFs per hypervisor"),
            (
                "lids",
                "`dynamic` (a VF's LID moves with its VM) or `prepopulated`",
            ),
        ],
    ),
    (
        "multicast",
        &[("ipoib", "build IPoIB's broadcast groups (`true`)")],
    ),
    (
        "group",
        &[
            ("mlid", "the group's MLID (0xC001..=0xFFFE)"),
            ("pkey", "the group's P_Key"),
            ("members", "its full members: `all` or a list of end nodes"),
            ("sl", "the group's SL (0 to 15)"),
            ("send_only", "end nodes that join send-only"),
        ],
    ),
];

const NODE: &[(&str, &str)] = &[
    ("ports", "the number of ports"),
    (
        "speed",
        "link speed (`SDR DDR QDR FDR10 FDR EDR HDR NDR XDR`)",
    ),
    ("width", "link width (`1x 2x 4x 8x 12x`)"),
    ("vlcap", "data VLs the ports support (1, 2, 4, 8 or 15)"),
    ("mtu", "the MTU in bytes (256 to 4096)"),
    ("linear_fdb_cap", "LFT entries a switch holds"),
    ("multicast_fdb_cap", "MFT entries a switch holds"),
    ("partition_cap", "P_Key table entries"),
    ("vendor", "the vendor ID"),
    ("device", "the device ID"),
    ("name", "how an array's nodes are named (`\"leaf{:02}\"`)"),
    ("guid", "the node GUID"),
    ("system_guid", "the system image GUID"),
    ("port_guids", "the ports' GUIDs, a list"),
    ("level", "the tree level (leaves = 1)"),
    ("lid", "a pinned LID"),
    ("host", "the machine an end node belongs to (`\"dgx001\"`)"),
    ("rail", "the rail an end node is on"),
    ("role", "`host`, `aggregation`, `storage` or `management`"),
];

/// Section keywords of a `fabric` block.
pub(crate) const SECTIONS: &[&str] = &[
    "topology",
    "faults",
    "vls",
    "routing",
    "qos",
    "tenant",
    "shared",
    "sm on",
    "multicast",
];

/// The attributes valid in `context` (a section keyword, `node`, `model`, …).
pub(crate) fn in_context(context: &str) -> &'static [(&'static str, &'static str)] {
    ATTRS
        .iter()
        .find(|(c, _)| *c == context)
        .map_or(&[], |(_, a)| a)
}

/// What attribute `name` means in `context`, or in any context when that one has no such.
pub(crate) fn meaning(context: &str, name: &str) -> Option<&'static str> {
    let find = |list: &'static [(&'static str, &'static str)]| {
        list.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    };
    find(in_context(context)).or_else(|| ATTRS.iter().find_map(|(_, l)| find(l)))
}
