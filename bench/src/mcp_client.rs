//! A minimal MCP client for benchmarks: the real `batho mcp` spoken to over stdio, timed
//! from the client side (what an agent waits for).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// A running `batho mcp` and its pipes.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl McpClient {
    /// Starts `batho mcp ARGS` with `BATHO_HOME=home` and initializes the session.
    pub fn start(batho: &Path, args: &[&str], home: &Path) -> McpClient {
        let mut child = Command::new(batho)
            .arg("mcp")
            .args(args)
            .env("BATHO_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start batho mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = McpClient {
            child,
            stdin,
            stdout,
            next: 1,
        };
        client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "batho-bench", "version": "0"}}),
        );
        writeln!(
            client.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .expect("write");
        client
    }

    /// One JSON-RPC request and its result.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{message}").expect("write to the server");
        self.stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            let read = self
                .stdout
                .read_line(&mut line)
                .expect("read from the server");
            assert!(read > 0, "the server closed its output");
            let value: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            if value["id"] == json!(id) {
                return value["result"].clone();
            }
        }
    }

    /// A tool call that must succeed.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let result = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert_ne!(result["isError"], json!(true), "{tool} failed: {result}");
        result
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Milliseconds.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The `p`th percentile of `times` (sorts them), in milliseconds.
pub fn percentile(times: &mut [Duration], p: usize) -> f64 {
    times.sort();
    ms(times[(times.len() * p / 100).min(times.len() - 1)])
}
