//! z3's word on a `layered` build's layer count: the fewest layers its routes fit in (every
//! smaller count proven impossible), or that z3 did not decide. When z3 places the routes in
//! fewer layers than weft's heuristic did, the build takes z3's placement (the verifier then
//! proves it like any other). Every command that builds a `.weft` file does this, so they
//! all prove the same state.

use crate::Phase;
use weft_compiler::build::Built;
use weft_compiler::code::Code;
use weft_compiler::routing::RouteNote;
use weft_compiler::Elaborated;
use weft_verifier::z3::{LayerBound, Z3};

/// The most switches a layered build has for z3 to look for fewer layers.
pub const Z3_LAYER_SWITCHES: usize = 64;

/// z3's time per layer count, in milliseconds.
const Z3_LAYER_TIMEOUT_MS: u32 = 20_000;

/// `b` with z3's word on its layer count as a note, on z3's placement when that uses fewer
/// layers. Builds without layers, with one, or with more than [`Z3_LAYER_SWITCHES`] switches
/// are returned as they are.
pub fn with_layer_bound(e: &Elaborated, mut b: Built, progress: &dyn Fn(Phase)) -> Built {
    let layers = b.lanes.layers;
    // One layer is the fewest there is.
    if layers < 2 || b.layers.is_none() || b.state.fabric.switch_count() > Z3_LAYER_SWITCHES {
        return b;
    }
    progress(Phase::FewestLayers);
    let z3 = Z3 {
        timeout_ms: Z3_LAYER_TIMEOUT_MS,
    };
    let message = match z3.place_layers(&b.state, layers) {
        (LayerBound::Minimum(k), _) if k == layers => format!(
            "z3: {k} layer(s) is the fewest these routes fit in (every smaller count is impossible)"
        ),
        (LayerBound::Minimum(k), Some(placement)) => {
            match weft_compiler::build::relayer(e, &b, &placement, k) {
                Ok(mut fewer) => {
                    fewer.notes.push(RouteNote {
                        code: Code::Layers,
                        message: format!(
                            "z3 placed these routes in {k} layer(s), the fewest they fit in (every smaller count is impossible); weft's heuristic used {layers}"
                        ),
                    });
                    return fewer;
                }
                Err(d) => format!(
                    "z3: these routes fit in {k} layer(s); weft used {layers} (z3's placement was not taken: {})",
                    d.first().map_or("", |d| d.message.as_str())
                ),
            }
        }
        (LayerBound::Minimum(k), None) => {
            format!("z3: these routes fit in {k} layer(s); weft used {layers} (z3 gave no placement)")
        }
        (LayerBound::MoreThan(k), _) => format!(
            "z3 found no placement of these routes in {k} layer(s) (a bug in weft's layering or in its check)"
        ),
        (LayerBound::Unknown { at, reason }, _) => {
            format!("z3 did not decide whether {at} layer(s) suffice ({reason})")
        }
    };
    b.notes.push(RouteNote {
        code: Code::Layers,
        message,
    });
    b
}
