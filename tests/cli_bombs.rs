//! Resource bombs through `batho query`: each query that would take the process down (a
//! string or list doubling, a cartesian product collected, a sort of millions of rows, a
//! nested comprehension of ten billion steps) gets a clear error from one of the query's
//! bounds, quickly, and no run's peak memory reaches 1 GiB (issue 28, item 9 and the
//! hostile-input target). Peak memory is each child's `ru_maxrss`, read by `wait4`.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{arg, copy_repo, run_ok};

/// A query, and what its error must say (`None`: it must answer).
const BOMBS: [(&str, Option<&str>); 12] = [
    (
        "UNWIND range(1, 10000000) AS i RETURN collect(i)",
        Some("MiB of values"),
    ),
    (
        "UNWIND range(1, 4000) AS a UNWIND range(1, 4000) AS b RETURN collect([a, b])",
        Some("MiB of values"),
    ),
    (
        "UNWIND range(1, 100000) AS i WITH i, range(1, 200) AS l RETURN collect(l)",
        Some("MiB of values"),
    ),
    // 10 million integers in 100,000 lists: within the budget, so it answers (and the
    // answer printed as a table stays under the memory bound).
    (
        "UNWIND range(1, 100000) AS i WITH i, range(1, 100) AS l RETURN collect(l)",
        None,
    ),
    (
        "RETURN size([x IN range(1, 100000) | size([y IN range(1, 100000) | x])])",
        Some("work budget"),
    ),
    (
        "WITH 'xxxxxxxxxx' AS s RETURN size(replace(replace(replace(replace(replace(replace(replace(replace(replace(s, 'x', s), 'x', s), 'x', s), 'x', s), 'x', s), 'x', s), 'x', s), 'x', s), 'x', s))",
        Some("the limit is"),
    ),
    (
        "WITH range(1, 5000000) AS l RETURN size(l + l + l)",
        Some("the limit is"),
    ),
    ("RETURN size(range(1, 100000000))", Some("the limit is")),
    (
        "UNWIND range(1, 3000000) AS i RETURN i ORDER BY i DESC",
        Some("intermediate rows"),
    ),
    (
        "UNWIND range(1, 3000000) AS i RETURN DISTINCT toString(i) + ' padding padding padding'",
        None,
    ),
    (
        "MATCH (a), (b), (c), (d), (e) RETURN count(*)",
        Some("work budget"),
    ),
    (
        "UNWIND range(1, 500) AS i WITH collect(i) AS all UNWIND all AS x UNWIND all AS y RETURN x, y ORDER BY x DESC, y DESC LIMIT 3",
        None,
    ),
];

/// Runs `batho ARGS`: exit code, stderr, wall time and peak resident memory in bytes.
fn run_measured(args: &[&str]) -> (Option<i32>, String, Duration, u64) {
    let started = Instant::now();
    // Reaped by `wait4` below, which also reports the child's peak memory.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_batho"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start batho");
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not waited for yet; `status` and `usage` are valid for
    // writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let text = reader.join().expect("stderr reader");
    // Linux reports ru_maxrss in kilobytes.
    (code, text, started.elapsed(), usage.ru_maxrss as u64 * 1024)
}

#[test]
fn resource_bombs_stop_at_a_bound_with_a_clear_error() {
    let (_tmp, repo) = copy_repo("examples/demo");
    run_ok(&["build", arg(&repo)]);
    let mut peaks = Vec::new();
    for (query, expected) in BOMBS {
        // A fifth of the default work budget keeps the suite quick; the other bounds are
        // the defaults.
        let args = [
            "query",
            "--repo",
            arg(&repo),
            "--max-work",
            "10000000",
            query,
        ];
        let (code, stderr, took, peak) = run_measured(&args);
        match expected {
            Some(said) => {
                assert_eq!(code, Some(1), "{query}: a query error\n{stderr}");
                assert!(stderr.contains(said), "{query}: says {said:?}\n{stderr}");
            }
            None => assert_eq!(code, Some(0), "{query}: answers\n{stderr}"),
        }
        assert!(took < Duration::from_secs(30), "{query} took {took:?}");
        assert!(peak < 1 << 30, "{query} peaked at {} MiB", peak >> 20);
        eprintln!("{took:>10.2?} {:>5} MiB  {query}", peak >> 20);
        peaks.push((peak >> 20, query));
    }
    peaks.sort();
    eprintln!(
        "highest peak: {} MiB ({})",
        peaks[peaks.len() - 1].0,
        peaks[peaks.len() - 1].1
    );
}
