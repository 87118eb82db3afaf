//! Batho's engine.

pub mod build;
pub mod discover;
pub mod extract;
pub mod git;
pub mod query;
pub mod resolve;
pub mod source;
pub mod status;
