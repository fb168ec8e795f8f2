//! The registry of diagnostic codes: every code the compiler reports, with what it means.
//!
//! A code is stable: tools match on it. `weft::ibnet::…` codes come from the ibnetdiscover
//! reader (an `import(…)`) and keep their own registry there; here they come wrapped
//! (`Code::Ibnet`). One [`Code`] variant per code, with its text, status and one-sentence
//! meaning ([`CODES`]). What the language accepts but weft does not build is a
//! `weft::not_built::…` code. Every code has a case in `tests/diagnostics.rs` whose snapshot
//! shows it (a test checks the registry against the snapshots; the two codes no program can
//! produce are listed there with the reason).

use weft_fabric::code::{CodeInfo, Status};
use weft_formats::ibnetdiscover::Code as IbnetCode;

macro_rules! codes {
    ($($variant:ident = $text:literal: $doc:literal,)*) => {
        /// A stable diagnostic code.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(#[doc = $doc] $variant,)*
            /// A diagnostic of the ibnetdiscover reader (`weft::ibnet::…`).
            Ibnet(IbnetCode),
        }

        impl Code {
            /// Every compiler code (the reader's are [`IbnetCode`]s), in code order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The registry entries of [`Code::ALL`], in the same order.
            pub const INFO: &'static [CodeInfo] = &[$(CodeInfo {
                code: $text,
                status: Code::$variant.status(),
                summary: $doc,
            },)*];

            /// The code as shown, e.g. `weft::port_wired_twice`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                    Code::Ibnet(c) => c.as_str(),
                }
            }

            /// What the code means, in one sentence (SARIF rule descriptions, `--explain`).
            pub fn summary(self) -> &'static str {
                match self {
                    $(Code::$variant => $doc,)*
                    Code::Ibnet(_) => "A problem in an imported ibnetdiscover file.",
                }
            }
        }
    };
}

codes! {
    Assertion = "weft::assertion": "An `assert` whose condition is false.",
    BadArguments = "weft::bad_arguments": "A built-in function called with arguments it cannot use.",
    BadFormat = "weft::bad_format": "A `format` string that does not parse or does not match its arguments.",
    BadHostList = "weft::bad_host_list": "A host list (`cn[001-128,200]`) with a range that runs backwards or a number too long to count.",
    BadLink = "weft::bad_link": "A link the fabric model refuses (an end that is no port of a node).",
    BadMtu = "weft::bad_mtu": "An MTU that is not 256, 512, 1024, 2048 or 4096.",
    BadNode = "weft::bad_node": "A node the fabric model refuses (a GUID of 0, a wrapped GUID range, a bad port count).",
    BadNodeRange = "weft::bad_node_range": "A node range (`a..b`) whose ends are not nodes of one array, in order.",
    BadSpeed = "weft::bad_speed": "A link speed weft does not know.",
    BadTopology = "weft::bad_topology": "A `topology =` value that is not a template call or `import(…)`.",
    BadVlcap = "weft::bad_vlcap": "A `vlcap` that is not 1, 2, 4, 8 or 15.",
    BadWidth = "weft::bad_width": "A link width weft does not know.",
    CrossedRails = "weft::crossed_rails": "Warning on import: a host whose HCAs are cabled to other rails' leaves than its peers' (a swapped pair of rail cables).",
    DefaultNamedHcas = "weft::default_named_hcas": "Warning on import: HCAs with the adapter's default NodeDescription and no shared system image GUID, each counted as a machine of its own (one machine per system image GUID).",
    DivisionByZero = "weft::division_by_zero": "A division or remainder by zero.",
    DuplicateArgument = "weft::duplicate_argument": "A template argument given twice.",
    DuplicateFabric = "weft::duplicate_fabric": "A second `fabric` item in one program.",
    DuplicateGuid = "weft::duplicate_guid": "Two nodes or ports with the same GUID.",
    DuplicateItem = "weft::duplicate_item": "Two items (models, templates, `let`s) of one name in a module.",
    DuplicateName = "weft::duplicate_name": "Two nodes with the same name.",
    DuplicateTopology = "weft::duplicate_topology": "A second topology in one fabric.",
    EmptyGroup = "weft::empty_group": "A multicast group whose `members` list is empty: it has no port to join and gets no tree.",
    EmptyRange = "weft::empty_range": "A node array declared over an empty range.",
    EngineRefused = "weft::engine_refused": "A routing engine that refuses this fabric (it is not of the shape the engine routes).",
    EvaluationLimit = "weft::evaluation_limit": "A program that ran past its evaluation budget (statements, iterations, values built and walked).",
    ExclusiveNodeRange = "weft::exclusive_node_range": "A name range `a..b` of nodes, which leaves `b` out (`..` excludes its end); `a..=b` or `a[x-y]` include it.",
    ExpectedPort = "weft::expected_port": "A node where a port (`node.p[n]`) is required.",
    FabricSplit = "weft::fabric_split": "Cabling in more than one piece.",
    FatTreeUpdn = "weft::fat_tree_updn": "Note: fat_tree found no deadlock-free fat-tree routing for a degraded tree and wrote Up*/Down* tables from one top switch.",
    FaultKindMismatch = "weft::fault_kind_mismatch": "A fault statement of the wrong kind for its target (`link … down` on a node).",
    FaultOnUnwiredPort = "weft::fault_on_unwired_port": "A `link … down` on a port without a cable.",
    FaultWrongLink = "weft::fault_wrong_link": "A `link a <-> b down` whose two ends are not cabled to each other.",
    GuidOnArray = "weft::guid_on_array": "A fixed GUID on a node array (every element would share it).",
    HostRail = "weft::host_rail": "End nodes grouped into hosts that do not hold together: two HCAs of one host on one rail, or a host named like a node that is not its only HCA.",
    ImportFailed = "weft::import_failed": "An imported ibnetdiscover file with errors (each reported under its own code).",
    ImportUnreadable = "weft::import_unreadable": "An imported file that cannot be read (missing, not a regular file, too large).",
    IndexOutOfRange = "weft::index_out_of_range": "An index outside its array, list or port range.",
    Internal = "weft::internal": "An internal inconsistency (a bug in weft); never expected.",
    Layers = "weft::layers": "Note: how many layers (SL i on VL i) the layered engine routes on.",
    LayersExceeded = "weft::layers_exceeded": "A layered routing needing more layers than the VL budget.",
    LftCapacityExceeded = "weft::lft_capacity_exceeded": "More LIDs than a switch's LinearFDBCap holds.",
    LidBudgetExceeded = "weft::lid_budget_exceeded": "More LIDs (with LMC) than the unicast range has.",
    LidPinConflict = "weft::lid_pin_conflict": "Two ports pinned to overlapping LIDs.",
    LidPinUnaligned = "weft::lid_pin_unaligned": "A pinned LID not aligned to the port's `2^lmc` block.",
    LidPinUnused = "weft::lid_pin_unused": "A `lid` pin on a node that gets no LID there.",
    Loopback = "weft::loopback": "Warning: a loopback cable, from a port to another port of the same node (a test plug or a cabling mistake).",
    MftCapacityExceeded = "weft::mft_capacity_exceeded": "A multicast group whose MLID is beyond the MulticastFDBCap of a switch its tree passes.",
    MisplacedImport = "weft::misplaced_import": "An `import(…)` outside `topology =`.",
    MisplacedStatement = "weft::misplaced_statement": "A statement where it has no meaning (a fault outside `faults`, a node inside it).",
    MissingArgument = "weft::missing_argument": "A template called without a required argument.",
    MissingAttribute = "weft::missing_attribute": "A section without a setting it needs (a tenant's `pkey`).",
    ModelKindMismatch = "weft::model_kind_mismatch": "A node declared with a model of another kind (an hca with a switch model).",
    ModelWithoutPorts = "weft::model_without_ports": "A model without a port count.",
    Multicast = "weft::multicast": "Note: the multicast groups built (the implicit IPoIB broadcast groups and the declared ones), with their MLIDs, P_Keys, SLs, members and tree roots.",
    MulticastLoop = "weft::multicast_loop": "A multicast group no tree can reach without closing a credit loop with the unicast routes on its VL, and no spare VL to take alone (the loop and the VL budget needed are named).",
    MulticastPkey = "weft::multicast_pkey": "A multicast group whose P_Key no partition declares.",
    MulticastSl = "weft::multicast_sl": "A multicast group on an SL that no QoS class or routing layer maps to a VL (its packets would be dropped).",
    NameOnSingleNode = "weft::name_on_single_node": "A `name` format on a single node, which its declaration already names (`name` names an array's nodes).",
    NamedArgument = "weft::named_argument": "A named argument to a built-in function that takes none.",
    NoEffect = "weft::no_effect": "A routing setting that does nothing with the engine chosen (`roots` without `engine = updn`, `switch_to_switch` without `engine = fat_tree`).",
    NoFabric = "weft::no_fabric": "A program without a `fabric` item.",
    NoTopology = "weft::no_topology": "A fabric without a topology.",
    NodeWithoutModel = "weft::node_without_model": "A node declared without a model.",
    NotATemplate = "weft::not_a_template": "A call statement of something that is not a template.",
    NotBuiltPkeyMatch = "weft::not_built::pkey_match": "Not built yet: a QoS class matched by P_Key (`match { pkey = … }`); classes match by `service_id`, and a tenant's `class` carries its partition's traffic.",
    NotBuiltSeed = "weft::not_built::seed": "Not built yet: `routing { seed = … }`; no engine in this version makes a random choice.",
    NotBuiltSwitchToSwitchNone = "weft::not_built::switch_to_switch_none": "Not built yet: `switch_to_switch = none`; every engine routes the paths between switches.",
    NotBuiltTenantClassLanes = "weft::not_built::tenant_class_lanes": "Not built yet: a tenant's class of several SLs (several lanes, or routes on several layers); a tenant's class on one lane and one layer is built.",
    NotBuiltVmClass = "weft::not_built::vm_class": "Not built yet: a class for a tenant with VMs.",
    NotBuiltVmLmc = "weft::not_built::vm_lmc": "Not built yet: VMs on a fabric with `lmc` above 0 (a VF owns one LID).",
    NotCallable = "weft::not_callable": "A call of a name that is no function or template.",
    OutOfRange = "weft::out_of_range": "A number outside the range its attribute allows.",
    Overflow = "weft::overflow": "Integer arithmetic that overflows.",
    OverlappingServiceIds = "weft::overlapping_service_ids": "Two QoS classes that match one service ID (OpenSM gives it to the first, so the other silently loses that traffic).",
    Partitions = "weft::partitions": "Note: the partitions tenants and shared sections made, and their P_Keys.",
    PortOutOfRange = "weft::port_out_of_range": "A port number the node does not have.",
    PortWiredTwice = "weft::port_wired_twice": "One port cabled twice.",
    QosLanes = "weft::qos_lanes": "Note: the SLs and VLs each QoS class was given.",
    RecursiveTemplate = "weft::recursive_template": "A template that calls itself.",
    RoleFile = "weft::role_file": "A line of a roles file (`weft import --roles`, `--io-guids`) that is not a GUID and a role.",
    RoleGuid = "weft::role_guid": "A role given on import for a GUID that names no end node of the dump, or a node given two roles.",
    SelfLink = "weft::self_link": "A port cabled to itself.",
    SftreeAcyclic = "weft::sftree_acyclic": "Note: no sFtree subtree root fits a degraded tree; missing entries were chosen so that no credit loop forms.",
    SftreeEntries = "weft::sftree_entries": "Note: switch-to-switch entries completed through the sFtree subtree.",
    SftreeRelayed = "weft::sftree_relayed": "Note: LFT entries relayed through the nearest switch that reaches a destination the sFtree root cannot.",
    SftreeRoot = "weft::sftree_root": "Note: the root switch sFtree routes switch-to-switch traffic through.",
    SftreeSetAside = "weft::sftree_set_aside": "Note: LFT entries of the switches set aside (outside a fat-tree's levels), routed through the switch each hangs off: reached as that switch is, reaching everything through it.",
    Syntax = "weft::syntax": "Text that does not parse.",
    NumberTooLarge = "weft::syntax::number_too_large": "A number literal too large for 64 bits.",
    UnclosedBrace = "weft::syntax::unclosed_brace": "A `{` without its `}`.",
    UnterminatedString = "weft::syntax::unterminated_string": "A string without its closing quote.",
    TemplateAsValue = "weft::template_as_value": "A template used as a value.",
    TooDeep = "weft::too_deep": "Nesting (parentheses, blocks, template calls) deeper than weft allows.",
    TooManyArguments = "weft::too_many_arguments": "More positional arguments than the template takes.",
    TooManyNodes = "weft::too_many_nodes": "More nodes than one fabric may declare.",
    TypeMismatch = "weft::type_mismatch": "A value of the wrong type.",
    UnconnectedNode = "weft::unconnected_node": "A node without any cable.",
    UnknownArgument = "weft::unknown_argument": "A named argument the template does not take.",
    UnknownAttribute = "weft::unknown_attribute": "An attribute weft does not know where it is written.",
    UnknownField = "weft::unknown_field": "A field (`.x`) a value does not have.",
    UnknownModule = "weft::unknown_module": "A `use` of a module that does not exist.",
    UnknownName = "weft::unknown_name": "A name that is not defined.",
    UnknownNode = "weft::unknown_node": "A node name that is not declared.",
    UnknownSection = "weft::unknown_section": "A section of the fabric weft does not know.",
    UnknownType = "weft::unknown_type": "A type name (of a template parameter) weft does not know.",
    UnknownWord = "weft::unknown_word": "A word (an engine, a setting) that is not one of those allowed.",
    Unroutable = "weft::unroutable": "Routing that cannot reach every destination or would close a credit loop.",
    UnwritableName = "weft::unwritable_name": "A node name the output formats cannot carry.",
    UselessCall = "weft::useless_call": "A call statement whose result is thrown away.",
    ValueTooLarge = "weft::value_too_large": "A string or list larger than a program may build.",
    VlBudgetExceeded = "weft::vl_budget_exceeded": "A VL budget above what a port's VLCap allows, or QoS classes whose SLs and VLs do not fit.",
}

impl Code {
    /// How far tools may rely on the code.
    pub const fn status(self) -> Status {
        match self {
            Code::Internal => Status::Internal,
            Code::NotBuiltPkeyMatch
            | Code::NotBuiltSeed
            | Code::NotBuiltSwitchToSwitchNone
            | Code::NotBuiltTenantClassLanes
            | Code::NotBuiltVmClass
            | Code::NotBuiltVmLmc => Status::NotBuilt,
            _ => Status::Stable,
        }
    }
}

/// The codes the compiler reports (the ibnetdiscover reader's are `weft_fabric`'s).
pub const CODES: &[CodeInfo] = Code::INFO;

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Debug output shows the code as written (`weft::port_wired_twice`).
impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_sorted_and_documented() {
        let texts: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        let mut sorted = texts.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(texts, sorted, "codes unique and in code order");
        for c in Code::ALL {
            assert!(c.as_str().starts_with("weft::"), "{c}");
            assert!(!c.as_str().starts_with("weft::ibnet::"), "{c}");
            assert!(c.summary().ends_with('.'), "{c}: {}", c.summary());
        }
    }
}
