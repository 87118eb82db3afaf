//! BQL, Batho's Cypher-like query language: parser, AST, semantic checks and logical plans.
//!
//! This crate knows the graph schema (`batho-schema`) but never the store.
