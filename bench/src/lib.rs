//! Shared pieces of the benchmark binaries.

pub mod mcp_client;
