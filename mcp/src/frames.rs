//! The guard in front of the MCP transport: every line read from stdin is checked before
//! rmcp sees it, so that a frame rmcp would drop without a word gets a JSON-RPC error and
//! the client never waits forever.
//!
//! rmcp answers a well-formed frame that is not a request (`[1, 2]`, `"x"`) with -32600,
//! but drops a line that is not JSON, not UTF-8 or nested past serde's depth limit, and
//! answers a `tools/call` without a tool name or with non-object arguments with -32601
//! (method not found). Here: such lines get -32700 (parse error), a line over
//! [`MAX_FRAME_BYTES`] -32600 (its bytes are skipped up to the next newline), and a bad
//! `tools/call` -32602 (invalid params) with its id. Everything else goes to rmcp
//! untouched. Replies and rmcp's own output go through one writer, a whole line at a time.

use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest frame accepted, in bytes (a tool's arguments are far smaller; a longer
/// line is refused without being held).
pub const MAX_FRAME_BYTES: usize = 8 << 20;

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// A line read from the client: whole, or too long (its bytes were skipped).
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// The line, without its newline.
    Line(Vec<u8>),
    /// A line of more than [`MAX_FRAME_BYTES`] bytes.
    TooLong,
}

/// Reads the next line of at most `limit` bytes; `None` at the end of the input.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Frame>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (line.is_empty() && !too_long, too_long) {
                (true, _) => None,
                (false, true) => Some(Frame::TooLong),
                (false, false) => Some(Frame::Line(line)),
            });
        }
        let (taken, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if !too_long && line.len() + taken <= limit {
            line.extend_from_slice(&available[..taken]);
        } else {
            too_long = true;
            line = Vec::new();
        }
        reader.consume(taken + usize::from(done));
        if done {
            return Ok(Some(if too_long {
                Frame::TooLong
            } else {
                Frame::Line(line)
            }));
        }
    }
}

/// The error reply a frame needs, or `None` when rmcp should have it. Blank lines are
/// passed on (rmcp skips them).
pub fn reply_for(frame: &Frame) -> Option<String> {
    let line = match frame {
        Frame::TooLong => {
            return Some(error(
                Json::Null,
                INVALID_REQUEST,
                &format!("request too large: a frame is at most {MAX_FRAME_BYTES} bytes"),
            ));
        }
        Frame::Line(line) => line,
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return Some(error(
            Json::Null,
            PARSE_ERROR,
            "parse error: the frame is not UTF-8",
        ));
    };
    if text.trim().is_empty() {
        return None;
    }
    let value: Json = match serde_json::from_str(text) {
        Ok(value) => value,
        // Line and column, and serde's category: never the frame's bytes.
        Err(e) => {
            let why = if e.to_string().contains("recursion limit") {
                "nested too deep"
            } else {
                "not JSON"
            };
            return Some(error(
                Json::Null,
                PARSE_ERROR,
                &format!(
                    "parse error: the frame is {why} (line {}, column {})",
                    e.line(),
                    e.column()
                ),
            ));
        }
    };
    invalid_tool_call(&value)
}

/// A `tools/call` request whose params name no tool or carry non-object arguments.
fn invalid_tool_call(value: &Json) -> Option<String> {
    if value.get("method").and_then(Json::as_str) != Some("tools/call") {
        return None;
    }
    // A notification gets no reply, whatever it holds.
    let id = value.get("id")?.clone();
    let params = value.get("params");
    let problem = match params {
        None => "tools/call needs params with the tool's name",
        Some(Json::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (Some(Json::String(_)), None | Some(Json::Object(_)) | Some(Json::Null)) => {
                return None;
            }
            (Some(Json::String(_)), Some(_)) => "tools/call arguments must be an object",
            _ => "tools/call params.name must be the tool's name (a string)",
        },
        Some(_) => "tools/call params must be an object",
    };
    Some(error(
        id,
        INVALID_PARAMS,
        &format!("invalid params: {problem}"),
    ))
}

fn error(id: Json, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// Reads frames from `input` until it ends: those rmcp should have go to `to_server`, the
/// others' replies to `replies`. Dropping `to_server` at the end tells rmcp the input
/// ended.
pub(crate) async fn guard_input<R, W>(
    input: R,
    mut to_server: W,
    replies: mpsc::UnboundedSender<String>,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    while let Some(frame) = read_frame(&mut reader, MAX_FRAME_BYTES).await? {
        match (reply_for(&frame), frame) {
            (Some(reply), _) => {
                let _ = replies.send(reply);
            }
            (None, Frame::Line(mut line)) => {
                line.push(b'\n');
                to_server.write_all(&line).await?;
                to_server.flush().await?;
            }
            (None, Frame::TooLong) => {}
        }
    }
    to_server.shutdown().await
}

/// Writes rmcp's lines (from `from_server`) and the guard's `replies` to `output`, each a
/// whole line, until both end.
pub(crate) async fn merge_output<R, W>(
    from_server: R,
    mut replies: mpsc::UnboundedReceiver<String>,
    mut output: W,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(from_server);
    let (mut server_open, mut replies_open) = (true, true);
    while server_open || replies_open {
        let mut line = Vec::new();
        tokio::select! {
            read = lines.read_until(b'\n', &mut line), if server_open => {
                if read? == 0 {
                    server_open = false;
                    continue;
                }
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                output.write_all(&line).await?;
            }
            reply = replies.recv(), if replies_open => match reply {
                Some(reply) => {
                    output.write_all(reply.as_bytes()).await?;
                    output.write_all(b"\n").await?;
                }
                None => replies_open = false,
            },
        }
        output.flush().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &[u8]) -> Option<Json> {
        reply_for(&Frame::Line(line.to_vec())).map(|r| serde_json::from_str(&r).expect("JSON"))
    }

    #[test]
    fn broken_frames_get_json_rpc_errors_without_their_bytes() {
        let not_json = reply(b"this is SECRET text").expect("a reply");
        assert_eq!(not_json["error"]["code"], PARSE_ERROR);
        assert_eq!(not_json["id"], Json::Null);
        assert!(!not_json.to_string().contains("SECRET"));
        assert_eq!(
            reply(b"{\"a\": \xff}").expect("reply")["error"]["code"],
            PARSE_ERROR
        );
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let deep = reply(deep.as_bytes()).expect("reply");
        assert!(
            deep["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nested too deep")
        );
        let long = reply_for(&Frame::TooLong).expect("reply");
        assert!(long.contains("-32600") && long.contains("too large"));
        // Well-formed frames are rmcp's, bad tool calls get -32602 with their id.
        assert_eq!(
            reply(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"),
            None
        );
        assert_eq!(reply(b"[1, 2]"), None);
        assert_eq!(reply(b"   "), None);
        let ok =
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}";
        assert_eq!(reply(ok), None);
        for bad in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":5}",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":5}}",
        ] {
            let answer = reply(bad).expect("reply");
            assert_eq!(answer["error"]["code"], INVALID_PARAMS, "{answer}");
            assert_eq!(answer["id"], 3);
        }
        // A notification gets no reply.
        assert_eq!(
            reply(b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"}"),
            None
        );
    }

    #[tokio::test]
    async fn frames_are_read_whole_and_long_ones_skipped() {
        let input = b"short\nxxxxxxxxxxxxxxxx\nnext\nlast".to_vec();
        let mut reader = BufReader::with_capacity(4, &input[..]);
        let mut frames = Vec::new();
        while let Some(frame) = read_frame(&mut reader, 8).await.expect("read") {
            frames.push(frame);
        }
        assert_eq!(
            frames,
            vec![
                Frame::Line(b"short".to_vec()),
                Frame::TooLong,
                Frame::Line(b"next".to_vec()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }
}
