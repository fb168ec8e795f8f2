//! QoS classes onto service levels and virtual lanes.
//!
//! Each class has lanes (one; `vftree(maxvl: N)`: N; `dftree`: a fast and a slow one) and the
//! routing has layers (1, or what the `layered` engine needed). A class takes `lanes × layers`
//! consecutive SLs, from its `sl = N` or after the previous class, and as many consecutive VLs
//! of the budget, from its `vl = N` or the lowest free ones. Lane `l`, layer `y` of a class is
//! its SL `first + l × layers + y`, which every port maps to VL `first VL + l × layers + y`: a
//! layer's routes never share a VL with another layer's, in any class or lane.
//!
//! - [`allocate`] (`allocate.rs`) places the classes on SLs and VLs: a [`LaneMap`];
//! - `lanes.rs` says which lane of a class each (source, destination) pair takes: vFtree's
//!   lane matrix over the leaves ([`vftree_matrix`]), dFtree's fast and slow lanes, on the
//!   routing's layer for the pair;
//! - [`apply`] (`apply.rs`) writes what this means into a state: the SL→VL table of every
//!   switch (one map for every input and output port pair) and every end port, a VL
//!   arbitration table on every cabled port that schedules every VL used (each class's VLs,
//!   or with no classes declared the routing layers' VLs at weight 1, and the multicast
//!   groups' VL of their own, [`LaneMap::multicast`]), the data VLs the SM
//!   operates ([`max_vls`]), and the path SLs of every (source, destination) pair — the set of
//!   the SLs each class uses for it, since a pair may carry every class's traffic;
//! - [`qos_policy`] (`policy.rs`) writes OpenSM's `qos-policy.conf`, the one OpenSM file that
//!   needs more than the state: the classes' match rules.
//!
//! OpenSM's `opensm.conf` QoS lines are written and read by [`weft_formats::opensm`]
//! (`conf.rs`), beside the hand-off's merger: [`opensm_conf`] gives it the lane map's tables
//! ([`qos_conf`], the same tables [`apply`] writes into the state) and the classes for its
//! comments ([`LaneMap::conf_classes`]).

mod allocate;
mod apply;
mod lanes;
mod policy;

pub use allocate::{allocate, overlapping_service_ids, total_lanes, ClassLanes, LaneMap, Spare};
pub use apply::{apply, dftree_lanes, max_vls, opensm_conf, qos_conf, tables, HIGH_LIMIT};
pub use lanes::{leaves, vftree_lane, vftree_matrix};
pub use policy::{
    lid_port_guid, qos_policy, with_slow_flows, PolicyError, SlowFlow, QOS_POLICY_BYTES,
};
