//! Standard output for both binaries, where a closed pipe is a normal way for the reader
//! to stop (`batho runs | head -1`), not a failure.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe returns `BrokenPipe`, on which
//! `println!` panics (exit 101). Every line the binaries print goes through
//! [`ClosedPipeExits`] instead: a closed standard output ends the process quietly with
//! exit code 0, as the reader asked for no more; any other write error ends it with 1 and
//! one line on stderr.

use std::io::{self, Write};

/// Ends the process after a failed write to standard output (see the module comment).
pub(crate) fn exit_after_write_error(error: &io::Error) -> ! {
    if error.kind() != io::ErrorKind::BrokenPipe {
        let _ = writeln!(
            io::stderr(),
            "error: cannot write to standard output: {error}"
        );
        std::process::exit(1);
    }
    std::process::exit(0)
}

/// A writer over standard output that never returns a write error: it exits instead.
pub(crate) struct ClosedPipeExits(pub io::Stdout);

impl ClosedPipeExits {
    pub(crate) fn new() -> Self {
        ClosedPipeExits(io::stdout())
    }
}

impl Write for ClosedPipeExits {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .write(buf)
            .or_else(|error| exit_after_write_error(&error))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0
            .flush()
            .or_else(|error| exit_after_write_error(&error))
    }
}

/// `print!` that exits quietly on a closed standard output instead of panicking.
// batho-ql includes this file too and prints only whole lines.
#[allow(unused_macros)]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!($crate::stdout::ClosedPipeExits::new(), $($arg)*);
    }};
}

/// `println!` that exits quietly on a closed standard output instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::stdout::ClosedPipeExits::new(), $($arg)*);
    }};
}
