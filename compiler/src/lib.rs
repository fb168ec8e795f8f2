//! The weft language and compiler.
