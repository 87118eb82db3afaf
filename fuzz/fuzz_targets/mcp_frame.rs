//! Arbitrary bytes as MCP frames (one per line): the guard in front of the protocol
//! library either passes a frame on or answers it with a JSON-RPC error that is itself
//! valid JSON; never a panic.
#![no_main]

use batho_mcp::frames::{Frame, reply_for};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&byte| byte == b'\n') {
        if let Some(reply) = reply_for(&Frame::Line(line.to_vec())) {
            let reply: serde_json::Value = serde_json::from_str(&reply).expect("a JSON reply");
            assert_eq!(reply["jsonrpc"], "2.0");
            let code = reply["error"]["code"].as_i64().expect("an error code");
            assert!(matches!(code, -32700 | -32600 | -32602), "{code}");
        }
    }
});
