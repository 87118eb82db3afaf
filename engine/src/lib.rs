//! Batho's engine.
