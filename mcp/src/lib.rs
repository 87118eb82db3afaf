//! The Batho MCP server: every tool compiles to a BQL query run by the engine.
