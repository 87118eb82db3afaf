//! Batho's on-disk graph store.
pub mod input;
