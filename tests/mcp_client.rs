//! A minimal MCP client for the integration tests: the real `batho mcp` binary spoken to
//! over stdio with newline-delimited JSON-RPC. Shared by `mcp_tools.rs` and `mcp_trust.rs`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::common;

/// A running `batho mcp` and its pipes.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    pub fn start(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Client {
        let mut cmd = common::batho();
        cmd.arg("mcp").args(args).env("BATHO_HOME", home);
        cmd.env_remove("BATHO_MCP_TOOLS_DISABLED")
            .env_remove("BATHO_MCP_TOOLS_ENABLED")
            .env_remove("BATHO_MCP_TOOLSETS");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start batho mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut c = Client {
            child,
            stdin,
            stdout,
            next: 1,
        };
        let init = c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        assert_eq!(init["protocolVersion"], "2025-06-18");
        assert!(
            init["instructions"]
                .as_str()
                .unwrap()
                .contains("trace_path")
        );
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        c
    }

    /// The server's peak resident memory so far, in KiB (`VmHWM` of `/proc/PID/status`).
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the server's /proc status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status")
    }

    /// Writes `bytes` and a newline as one frame, whatever they hold.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line the server writes, as JSON.
    pub fn next_message(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        serde_json::from_str(&line).unwrap()
    }

    pub fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                if let Some(r) = v.get("result") {
                    return r.clone();
                }
                return v;
            }
        }
    }

    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// A successful call: `(markdown, structuredContent)`.
    pub fn ok(&mut self, tool: &str, args: Value) -> (String, Value) {
        let r = self.call(tool, args.clone());
        assert_ne!(r["isError"], json!(true), "{tool}({args}) failed: {r}");
        (
            r["content"][0]["text"].as_str().unwrap().to_string(),
            r["structuredContent"].clone(),
        )
    }

    /// A failed call: `(text, structuredContent)`.
    pub fn err(&mut self, tool: &str, args: Value) -> (String, Value) {
        let r = self.call(tool, args.clone());
        assert_eq!(r["isError"], json!(true), "{tool}({args}) should fail: {r}");
        let sc = r["structuredContent"].clone();
        assert_eq!(sc["error"], json!(true));
        assert!(sc["error_type"].is_string() && sc["message"].is_string());
        let text = r["content"][0]["text"].as_str().unwrap().to_string();
        assert!(text.starts_with("Error: "), "{text}");
        (text, sc)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A built copy of examples/demo, a BATHO_HOME, and a client with it registered as "demo".
pub fn demo() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
    Client,
) {
    let (tmp, repo) = common::copy_repo("examples/demo");
    common::run_ok(&["build", repo.to_str().unwrap()]);
    let home = tempfile::tempdir().unwrap();
    let mut c = Client::start(home.path(), &[], &[]);
    c.ok(
        "add_repo",
        json!({"name": "demo", "path": repo.to_str().unwrap()}),
    );
    (tmp, home, repo, c)
}
