//! The ibnetdiscover topology format: what `ibnetdiscover` prints and `ibsim` loads.
//!
//! (Reader and writer land in the next commits.)
