//! Running one shell command for `ctx_tree_monitor`: `sh -c COMMAND` in its own process
//! group, standard input closed, both output streams captured up to a cap (the last bytes
//! are kept, since the end of a command's output is where its verdict is), and a timeout
//! after which the whole group is sent `SIGTERM`, then `SIGKILL`.
//!
//! The group is always sent a final `SIGKILL` once the shell has exited, timeout or not:
//! a process the command left running in the background (`sleep 30 &`) still holds the
//! write ends of the pipes, and the readers would otherwise wait for it. A process that
//! left the group (`setsid`) escapes that kill, so the readers are also given a deadline;
//! past it the output read so far is returned and [`CommandOutcome::streams_left_open`]
//! says so.
//!
//! Nothing here redacts: the caller redacts [`CommandOutcome::stdout`] and
//! [`CommandOutcome::stderr`] before storing or returning them.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

/// How long the command may run when the caller names no timeout (the seed's 30 000 ms).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How many bytes of each stream are kept when the caller names no cap (1 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1 << 20;
/// How long the group has between `SIGTERM` and `SIGKILL` when the caller names no grace.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(500);

/// How long the readers may take to reach the end of both streams once the group has been
/// killed. Only a process that left the group can keep a pipe open that long; its output
/// is not waited for.
const OUTPUT_DRAIN_DEADLINE: Duration = Duration::from_secs(1);
/// Bytes asked of a pipe per read: the kernel's default pipe buffer is 64 KiB.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// How [`run_command`] runs a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorOptions {
    /// How long the command may run before its process group is terminated
    /// (default [`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// The working directory of the command (default: this process's current directory).
    pub cwd: PathBuf,
    /// Bytes kept per stream; past it the earliest bytes are dropped and counted in
    /// [`CommandOutcome::dropped_bytes`] (default [`DEFAULT_MAX_OUTPUT_BYTES`]).
    pub max_output_bytes: usize,
    /// Time between `SIGTERM` and `SIGKILL` after a timeout (default [`DEFAULT_KILL_GRACE`]).
    pub kill_grace: Duration,
}

impl Default for MonitorOptions {
    fn default() -> Self {
        // "." still means the current directory to the child if it cannot be named here
        // (it was deleted, say); spawning then reports the problem.
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self {
            timeout: DEFAULT_TIMEOUT,
            cwd,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            kill_grace: DEFAULT_KILL_GRACE,
        }
    }
}

/// What a command did: how it ended and what it printed (not yet redacted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The shell's exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// Whether the timeout ran out and the process group was terminated.
    pub timed_out: bool,
    /// Standard output, the last [`MonitorOptions::max_output_bytes`] bytes at most, with
    /// invalid UTF-8 replaced by U+FFFD.
    pub stdout: String,
    /// Standard error, kept like [`CommandOutcome::stdout`].
    pub stderr: String,
    /// Bytes dropped from the start of both streams together to keep within the cap.
    pub dropped_bytes: u64,
    /// Whether a stream was still open at the reading deadline, because a process outside
    /// the command's process group held it: what it wrote after that is missing.
    pub streams_left_open: bool,
    /// Time from starting the shell to having both streams read.
    pub duration: Duration,
}

/// Why [`run_command`] could not run a command.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The command is empty or only white space.
    #[error("the command is empty")]
    EmptyCommand,
    /// The command contains a NUL byte, which no program argument can hold.
    #[error("the command contains a NUL byte")]
    CommandContainsNul,
    /// The working directory does not exist.
    #[error("working directory {} does not exist", cwd.display())]
    CwdNotFound {
        /// The directory asked for.
        cwd: PathBuf,
    },
    /// The working directory exists but is not a directory.
    #[error("working directory {} is not a directory", cwd.display())]
    CwdNotDirectory {
        /// The path asked for.
        cwd: PathBuf,
    },
    /// The working directory could not be examined (no permission, say).
    #[error("cannot use working directory {}: {source}", cwd.display())]
    CwdUnreadable {
        /// The directory asked for.
        cwd: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// `sh` could not be started.
    #[error("cannot start sh: {source}")]
    Spawn {
        /// What the operating system said.
        source: io::Error,
    },
    /// A thread to read the command's output could not be started; the command was killed.
    #[error("cannot start a thread to read the command's {stream}: {source}")]
    OutputReader {
        /// `"stdout"` or `"stderr"`.
        stream: &'static str,
        /// What the operating system said.
        source: io::Error,
    },
    /// Waiting for the shell failed; the command was killed.
    #[error("cannot wait for the command: {source}")]
    Wait {
        /// What the operating system said.
        source: io::Error,
    },
}

/// Runs `sh -c COMMAND` as described in the module documentation and returns how it
/// ended and what it printed. A command that fails, times out or is killed is still an
/// `Ok` outcome; errors are only for commands that could not be run or waited for.
///
/// # Errors
///
/// An empty command or one with a NUL byte, a working directory that is missing, not a
/// directory or not accessible, and failures to start `sh`, a reader thread, or to wait
/// for `sh` (the command is killed first in the last two cases).
pub fn run_command(
    command: &str,
    options: &MonitorOptions,
) -> Result<CommandOutcome, MonitorError> {
    validate_command(command)?;
    validate_working_directory(&options.cwd)?;
    let started = Instant::now();
    let mut child = spawn_shell(command, &options.cwd)?;
    // `process_group(0)` made the shell the leader of a new group whose id is its pid.
    let process_group = libc::pid_t::try_from(child.id()).unwrap_or(0);
    let readers = match start_output_readers(&mut child, options.max_output_bytes) {
        Ok(readers) => readers,
        Err(error) => {
            kill_and_reap(&mut child, process_group);
            return Err(error);
        }
    };
    let waited = wait_for_shell(&mut child, process_group, options);
    // Whatever happened, nothing of the command may outlive it: background processes
    // still in the group would keep the pipes, and so the readers, open.
    signal_process_group(process_group, libc::SIGKILL);
    let (status, timed_out) = match waited {
        Ok(ended) => ended,
        Err(error) => {
            kill_and_reap(&mut child, process_group);
            return Err(error);
        }
    };
    let captured = readers.collect(Instant::now() + OUTPUT_DRAIN_DEADLINE);
    Ok(CommandOutcome {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        stdout: captured.stdout,
        stderr: captured.stderr,
        dropped_bytes: captured.dropped_bytes,
        streams_left_open: captured.streams_left_open,
        duration: started.elapsed(),
    })
}

fn validate_command(command: &str) -> Result<(), MonitorError> {
    if command.trim().is_empty() {
        return Err(MonitorError::EmptyCommand);
    }
    if command.contains('\0') {
        return Err(MonitorError::CommandContainsNul);
    }
    Ok(())
}

/// Checked before spawning because a spawn error for a missing directory reads as if
/// `sh` itself were missing.
fn validate_working_directory(cwd: &Path) -> Result<(), MonitorError> {
    match std::fs::metadata(cwd) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(MonitorError::CwdNotDirectory {
            cwd: cwd.to_path_buf(),
        }),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Err(MonitorError::CwdNotFound {
            cwd: cwd.to_path_buf(),
        }),
        Err(source) => Err(MonitorError::CwdUnreadable {
            cwd: cwd.to_path_buf(),
            source,
        }),
    }
}

fn spawn_shell(command: &str, cwd: &Path) -> Result<Child, MonitorError> {
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A group of its own, so that one signal reaches the shell and everything it
        // started, and so that a terminal's Ctrl-C aimed at us does not reach it.
        .process_group(0)
        .spawn()
        .map_err(|source| MonitorError::Spawn { source })
}

/// Waits for the shell until the timeout, then terminates the group: `SIGTERM`, the grace
/// period, `SIGKILL`. Returns the shell's status and whether the timeout ran out.
fn wait_for_shell(
    child: &mut Child,
    process_group: libc::pid_t,
    options: &MonitorOptions,
) -> Result<(ExitStatus, bool), MonitorError> {
    let wait_error = |source| MonitorError::Wait { source };
    if let Some(status) = child.wait_timeout(options.timeout).map_err(wait_error)? {
        return Ok((status, false));
    }
    signal_process_group(process_group, libc::SIGTERM);
    if let Some(status) = child.wait_timeout(options.kill_grace).map_err(wait_error)? {
        return Ok((status, true));
    }
    signal_process_group(process_group, libc::SIGKILL);
    let status = child.wait().map_err(wait_error)?;
    Ok((status, true))
}

/// Sends `signal` to every process of the group. A group with no process left (`ESRCH`)
/// is the normal case after the shell and its children have exited, so errors are not
/// reported. The shell's pid stays reserved while any member of its group lives, so the
/// signal cannot reach an unrelated group of the same id while one of ours remains.
fn signal_process_group(process_group: libc::pid_t, signal: libc::c_int) {
    // Guards against signalling our own group (0) or every process we may signal (-1)
    // should the pid ever fail to convert.
    if process_group <= 1 {
        return;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe {
        libc::kill(-process_group, signal);
    }
}

/// Cleans up after a failure once the shell has been started, so that no error leaves a
/// running command or a zombie behind.
fn kill_and_reap(child: &mut Child, process_group: libc::pid_t) {
    signal_process_group(process_group, libc::SIGKILL);
    // The error being reported already explains the failure; a second one from reaping
    // adds nothing.
    let _ = child.wait();
}

/// The last bytes of a stream, up to a cap, and how many earlier bytes were dropped.
#[derive(Debug)]
struct TailBuffer {
    kept: VecDeque<u8>,
    limit: usize,
    dropped_bytes: u64,
}

impl TailBuffer {
    fn new(limit: usize) -> Self {
        Self {
            kept: VecDeque::new(),
            limit,
            dropped_bytes: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.limit {
            let skipped_in_chunk = chunk.len() - self.limit;
            self.dropped_bytes += (self.kept.len() + skipped_in_chunk) as u64;
            self.kept.clear();
            self.kept.extend(&chunk[skipped_in_chunk..]);
            return;
        }
        let overflow = (self.kept.len() + chunk.len()).saturating_sub(self.limit);
        self.kept.drain(..overflow);
        self.dropped_bytes += overflow as u64;
        self.kept.extend(chunk);
    }

    /// The kept bytes as text. When the start was cut, the cut may have split a UTF-8
    /// character; its remaining continuation bytes are dropped too (and counted) rather
    /// than shown as a replacement character.
    fn take_text(&mut self) -> (String, u64) {
        let bytes = self.kept.make_contiguous();
        let mut start = 0;
        if self.dropped_bytes > 0 {
            // A UTF-8 character has at most three continuation bytes.
            while start < bytes.len().min(3) && is_utf8_continuation_byte(bytes[start]) {
                start += 1;
            }
        }
        let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
        let dropped = self.dropped_bytes + start as u64;
        (text, dropped)
    }
}

fn is_utf8_continuation_byte(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// One stream's reader thread: the buffer it fills, shared so that what was read can be
/// taken even from a reader that never finishes, and the channel that closes when it ends.
struct StreamReader {
    buffer: Arc<Mutex<TailBuffer>>,
    finished: Receiver<()>,
    thread: JoinHandle<()>,
}

struct OutputReaders {
    stdout: StreamReader,
    stderr: StreamReader,
}

struct CapturedOutput {
    stdout: String,
    stderr: String,
    dropped_bytes: u64,
    streams_left_open: bool,
}

fn start_output_readers(
    child: &mut Child,
    max_output_bytes: usize,
) -> Result<OutputReaders, MonitorError> {
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // `spawn_shell` asked for both pipes, so both handles exist.
        let source = io::Error::other("the child's output pipes are missing");
        return Err(MonitorError::OutputReader {
            stream: "stdout",
            source,
        });
    };
    let stdout = start_stream_reader(stdout, "stdout", max_output_bytes)?;
    let stderr = start_stream_reader(stderr, "stderr", max_output_bytes)?;
    Ok(OutputReaders { stdout, stderr })
}

fn start_stream_reader<Stream: Read + Send + 'static>(
    stream: Stream,
    stream_name: &'static str,
    max_output_bytes: usize,
) -> Result<StreamReader, MonitorError> {
    let buffer = Arc::new(Mutex::new(TailBuffer::new(max_output_bytes)));
    let (finished_sender, finished) = mpsc::channel::<()>();
    let thread_buffer = Arc::clone(&buffer);
    let thread = thread::Builder::new()
        .name(format!("monitor-{stream_name}"))
        .spawn(move || {
            read_until_end(stream, &thread_buffer);
            // Dropping the sender is the signal; `collect` sees the channel disconnect.
            drop(finished_sender);
        })
        .map_err(|source| MonitorError::OutputReader {
            stream: stream_name,
            source,
        })?;
    Ok(StreamReader {
        buffer,
        finished,
        thread,
    })
}

fn read_until_end(mut stream: impl Read, buffer: &Mutex<TailBuffer>) {
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(count) => lock_buffer(buffer).push(&chunk[..count]),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            // A pipe read fails only if the pipe is broken; what was read is kept.
            Err(_) => return,
        }
    }
}

/// A reader that panicked mid-push leaves a consistent buffer (push never leaves it
/// half-updated in a way that matters), so a poisoned lock is used as is.
fn lock_buffer(buffer: &Mutex<TailBuffer>) -> std::sync::MutexGuard<'_, TailBuffer> {
    buffer.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OutputReaders {
    /// Waits for both readers until `deadline`, then takes what they read.
    fn collect(self, deadline: Instant) -> CapturedOutput {
        let stdout_finished = self.stdout.wait_until(deadline);
        let stderr_finished = self.stderr.wait_until(deadline);
        let (stdout, stdout_dropped) = lock_buffer(&self.stdout.buffer).take_text();
        let (stderr, stderr_dropped) = lock_buffer(&self.stderr.buffer).take_text();
        self.stdout.release(stdout_finished);
        self.stderr.release(stderr_finished);
        CapturedOutput {
            stdout,
            stderr,
            dropped_bytes: stdout_dropped + stderr_dropped,
            streams_left_open: !(stdout_finished && stderr_finished),
        }
    }
}

impl StreamReader {
    /// Whether the reader reached the end of its stream by `deadline`.
    fn wait_until(&self, deadline: Instant) -> bool {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match self.finished.recv_timeout(remaining) {
            // Nothing is ever sent: the channel disconnecting is the reader ending.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => false,
        }
    }

    /// Joins a finished reader; leaves an unfinished one to end on its own when the
    /// process holding its pipe does, since there is no way to interrupt a blocking read.
    fn release(self, finished: bool) {
        if finished {
            // The thread has returned already, so this does not block; a panic in it
            // lost nothing the buffer does not already hold.
            let _ = self.thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options_with_timeout(timeout: Duration) -> MonitorOptions {
        MonitorOptions {
            timeout,
            ..MonitorOptions::default()
        }
    }

    fn run(command: &str) -> CommandOutcome {
        match run_command(command, &MonitorOptions::default()) {
            Ok(outcome) => outcome,
            Err(error) => panic!("`{command}` did not run: {error}"),
        }
    }

    #[test]
    fn reports_exit_code_and_stdout() {
        let outcome = run("echo hello; exit 3");
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(outcome.signal, None);
        assert!(!outcome.timed_out);
        assert_eq!(outcome.stdout, "hello\n");
        assert_eq!(outcome.stderr, "");
        assert_eq!(outcome.dropped_bytes, 0);
        assert!(!outcome.streams_left_open);
    }

    #[test]
    fn captures_stderr_separately() {
        let outcome = run("echo out; echo err >&2");
        assert_eq!(outcome.exit_code, Some(0));
        assert_eq!(outcome.stdout, "out\n");
        assert_eq!(outcome.stderr, "err\n");
    }

    #[test]
    fn standard_input_is_empty() {
        let outcome = run("cat; echo done");
        assert_eq!(outcome.stdout, "done\n");
    }

    #[test]
    fn timeout_terminates_the_command() {
        let options = MonitorOptions {
            timeout: Duration::from_millis(300),
            kill_grace: Duration::from_millis(200),
            ..MonitorOptions::default()
        };
        let outcome = run_command("sleep 30", &options).expect("sh runs");
        assert!(outcome.timed_out);
        // dash execs the last command, so sleep itself dies of SIGTERM; a shell that
        // forks instead exits with 128 + 15.
        assert!(
            outcome.signal == Some(libc::SIGTERM) || outcome.exit_code == Some(143),
            "{outcome:?}"
        );
        assert!(
            outcome.duration < Duration::from_secs(5),
            "{:?}",
            outcome.duration
        );
    }

    #[test]
    fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
        let options = MonitorOptions {
            timeout: Duration::from_millis(300),
            kill_grace: Duration::from_millis(200),
            ..MonitorOptions::default()
        };
        // The ignored disposition is inherited by sleep across exec.
        let outcome = run_command("trap '' TERM; sleep 30", &options).expect("sh runs");
        assert!(outcome.timed_out);
        assert_eq!(outcome.signal, Some(libc::SIGKILL), "{outcome:?}");
        assert_eq!(outcome.exit_code, None);
        // Timeout plus grace is 500 ms; the waits round to whole milliseconds.
        assert!(
            outcome.duration >= Duration::from_millis(450),
            "{:?}",
            outcome.duration
        );
        assert!(
            outcome.duration < Duration::from_secs(5),
            "{:?}",
            outcome.duration
        );
    }

    #[test]
    fn output_written_before_a_timeout_is_kept() {
        let outcome = run_command(
            "echo before; sleep 30",
            &options_with_timeout(Duration::from_millis(300)),
        )
        .expect("sh runs");
        assert!(outcome.timed_out);
        assert_eq!(outcome.stdout, "before\n");
    }

    #[test]
    fn background_grandchild_holding_stdout_does_not_hang() {
        let outcome = run("sleep 30 & echo started");
        assert_eq!(outcome.exit_code, Some(0));
        assert!(!outcome.timed_out);
        assert_eq!(outcome.stdout, "started\n");
        assert!(!outcome.streams_left_open);
        assert!(
            outcome.duration < Duration::from_secs(5),
            "{:?}",
            outcome.duration
        );
    }

    #[test]
    fn process_outside_the_group_holding_stdout_does_not_hang() {
        // setsid moves the sleep out of the command's group, so the final group kill
        // misses it; the drain deadline must end the wait. The sleep is short so that no
        // stray process outlives the test run for long, and the shell pauses so that
        // setsid has left the group before the shell exits and the group is killed.
        let outcome = run("setsid sleep 4 & sleep 0.3; echo started");
        assert_eq!(outcome.exit_code, Some(0));
        assert_eq!(outcome.stdout, "started\n");
        assert!(outcome.streams_left_open);
        assert!(
            outcome.duration < Duration::from_secs(3),
            "{:?}",
            outcome.duration
        );
    }

    #[test]
    fn output_over_the_cap_keeps_the_tail_and_counts_the_rest() {
        let options = MonitorOptions {
            max_output_bytes: 1000,
            ..MonitorOptions::default()
        };
        // 5000 numbered lines of 10 bytes each: 50 000 bytes, of which 1000 are kept.
        let outcome = run_command("seq -f 'line%05g' 1 5000", &options).expect("sh runs");
        assert_eq!(outcome.stdout.len(), 1000);
        assert!(
            outcome.stdout.ends_with("line05000\n"),
            "{}",
            outcome.stdout
        );
        assert!(
            outcome.stdout.starts_with("line04901\n"),
            "{}",
            outcome.stdout
        );
        assert_eq!(outcome.dropped_bytes, 49_000);
    }

    #[test]
    fn cap_counts_dropped_bytes_of_both_streams() {
        let options = MonitorOptions {
            max_output_bytes: 4,
            ..MonitorOptions::default()
        };
        let outcome = run_command("printf 123456; printf abcdefgh >&2", &options).expect("sh runs");
        assert_eq!(outcome.stdout, "3456");
        assert_eq!(outcome.stderr, "efgh");
        assert_eq!(outcome.dropped_bytes, 2 + 4);
    }

    #[test]
    fn cap_does_not_start_the_tail_inside_a_character() {
        let options = MonitorOptions {
            max_output_bytes: 5,
            ..MonitorOptions::default()
        };
        // "é" is two bytes; the cut falls between them and the orphan byte goes too.
        let outcome = run_command("printf 'aé1234'", &options).expect("sh runs");
        assert_eq!(outcome.stdout, "1234");
        assert_eq!(outcome.dropped_bytes, 3);
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let options = MonitorOptions {
            max_output_bytes: 0,
            ..MonitorOptions::default()
        };
        let outcome = run_command("printf abc", &options).expect("sh runs");
        assert_eq!(outcome.stdout, "");
        assert_eq!(outcome.dropped_bytes, 3);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let outcome = run(r"printf 'ok\377\376end'");
        assert_eq!(outcome.stdout, "ok\u{FFFD}\u{FFFD}end");
    }

    #[test]
    fn working_directory_is_honoured() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let options = MonitorOptions {
            cwd: directory.path().to_path_buf(),
            ..MonitorOptions::default()
        };
        let outcome = run_command("pwd -P", &options).expect("sh runs");
        let expected = directory.path().canonicalize().expect("canonical path");
        assert_eq!(outcome.stdout.trim_end(), expected.to_string_lossy());
    }

    #[test]
    fn missing_working_directory_is_an_error() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let missing = directory.path().join("missing");
        let options = MonitorOptions {
            cwd: missing.clone(),
            ..MonitorOptions::default()
        };
        match run_command("true", &options) {
            Err(MonitorError::CwdNotFound { cwd }) => assert_eq!(cwd, missing),
            other => panic!("expected CwdNotFound, got {other:?}"),
        }
    }

    #[test]
    fn file_as_working_directory_is_an_error() {
        let file = tempfile::NamedTempFile::new().expect("temporary file");
        let options = MonitorOptions {
            cwd: file.path().to_path_buf(),
            ..MonitorOptions::default()
        };
        assert!(matches!(
            run_command("true", &options),
            Err(MonitorError::CwdNotDirectory { .. })
        ));
    }

    #[test]
    fn empty_and_nul_commands_are_errors() {
        let options = MonitorOptions::default();
        assert!(matches!(
            run_command("", &options),
            Err(MonitorError::EmptyCommand)
        ));
        assert!(matches!(
            run_command(" \n\t", &options),
            Err(MonitorError::EmptyCommand)
        ));
        assert!(matches!(
            run_command("echo a\0b", &options),
            Err(MonitorError::CommandContainsNul)
        ));
    }

    #[test]
    fn death_by_signal_is_reported_as_a_signal() {
        let outcome = run("echo dying; kill -9 $$");
        assert_eq!(outcome.exit_code, None);
        assert_eq!(outcome.signal, Some(libc::SIGKILL));
        assert!(!outcome.timed_out);
        assert_eq!(outcome.stdout, "dying\n");
    }

    #[test]
    fn tail_buffer_keeps_the_last_bytes_across_pushes() {
        let mut buffer = TailBuffer::new(5);
        buffer.push(b"abc");
        buffer.push(b"defg");
        buffer.push(b"h");
        let (text, dropped) = buffer.take_text();
        assert_eq!(text, "defgh");
        assert_eq!(dropped, 3);
    }

    #[test]
    fn tail_buffer_chunk_larger_than_the_cap() {
        let mut buffer = TailBuffer::new(3);
        buffer.push(b"ab");
        buffer.push(b"cdefgh");
        let (text, dropped) = buffer.take_text();
        assert_eq!(text, "fgh");
        assert_eq!(dropped, 5);
    }
}
