//! A tiny HTTP/1.1 server on 127.0.0.1 for the fetch tests: it answers each connection
//! with a canned reply chosen by request path, then closes it. Tests never touch any other
//! address.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

/// One canned HTTP response.
#[derive(Debug, Clone, Default)]
pub(super) struct CannedReply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    /// Pause before the status line is sent (a server slow to answer).
    pub(super) delay_before_head: Duration,
    /// Pause between each byte of the body (a server slow to send).
    pub(super) delay_per_body_byte: Duration,
}

impl CannedReply {
    /// A 200 response with the given content type and body.
    pub(super) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        CannedReply {
            status: 200,
            headers: vec![("Content-Type".to_string(), content_type.to_string())],
            body: body.into(),
            ..CannedReply::default()
        }
    }

    /// A redirect with the given status and `Location`.
    pub(super) fn redirect(status: u16, location: &str) -> Self {
        CannedReply {
            status,
            headers: vec![("Location".to_string(), location.to_string())],
            ..CannedReply::default()
        }
    }

    /// A bare status with an empty body.
    pub(super) fn status_only(status: u16) -> Self {
        CannedReply {
            status,
            ..CannedReply::default()
        }
    }
}

type Router = dyn Fn(&str, SocketAddr) -> CannedReply + Send + Sync;

/// A running test server; dropping it stops the accept loop.
pub(super) struct TestServer {
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
}

impl TestServer {
    /// Starts a server on 127.0.0.1 whose replies come from `router(path, own_address)`.
    pub(super) fn start(
        router: impl Fn(&str, SocketAddr) -> CannedReply + Send + Sync + 'static,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback test port");
        Self::serve(listener, router)
    }

    /// Starts a server on the IPv6 loopback `[::1]`, or `None` where IPv6 is unavailable.
    pub(super) fn start_on_ipv6_loopback(
        router: impl Fn(&str, SocketAddr) -> CannedReply + Send + Sync + 'static,
    ) -> Option<TestServer> {
        let listener = TcpListener::bind("[::1]:0").ok()?;
        Some(Self::serve(listener, router))
    }

    fn serve(
        listener: TcpListener,
        router: impl Fn(&str, SocketAddr) -> CannedReply + Send + Sync + 'static,
    ) -> TestServer {
        let address = listener.local_addr().expect("read the test port");
        let stopping = Arc::new(AtomicBool::new(false));
        let router: Arc<Router> = Arc::new(router);
        let stopping_flag = Arc::clone(&stopping);
        thread::spawn(move || {
            for connection in listener.incoming() {
                if stopping_flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = connection else { continue };
                let router = Arc::clone(&router);
                // One thread per connection, so a slow reply does not hold up other tests' hops.
                thread::spawn(move || serve_connection(stream, &*router, address));
            }
        });
        TestServer { address, stopping }
    }

    /// `http://127.0.0.1:PORT{path}` (`http://[::1]:PORT{path}` on IPv6).
    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// The server's port.
    pub(super) fn port(&self) -> u16 {
        self.address.port()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the loop sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

fn serve_connection(stream: TcpStream, router: &Router, own_address: SocketAddr) {
    let Some(path) = read_request_path(&stream) else {
        return;
    };
    let reply = router(&path, own_address);
    // Write errors only mean the client gave up (timeouts, body caps): nothing to do.
    let _ = write_reply(stream, &reply);
}

/// Reads the request head and returns the path of its request line.
fn read_request_path(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut header_line = String::new();
    while reader.read_line(&mut header_line).ok()? > 0 {
        if header_line == "\r\n" || header_line == "\n" {
            break;
        }
        header_line.clear();
    }
    request_line.split_whitespace().nth(1).map(str::to_string)
}

fn write_reply(mut stream: TcpStream, reply: &CannedReply) -> std::io::Result<()> {
    thread::sleep(reply.delay_before_head);
    let mut head = format!("HTTP/1.1 {} Canned\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(head.as_bytes())?;
    if reply.delay_per_body_byte.is_zero() {
        stream.write_all(&reply.body)?;
    } else {
        for byte in &reply.body {
            thread::sleep(reply.delay_per_body_byte);
            stream.write_all(&[*byte])?;
        }
    }
    stream.flush()
}
