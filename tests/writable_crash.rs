//! SIGKILL `batho-ql` at random moments while it writes to a writable graph: single
//! statements, transactions and checkpoints. After each kill the graph must open (a torn
//! log tail is cut and reported), hold every statement whose result was printed, and hold
//! no statement in part: each one creates a pair of nodes joined by a relationship, all
//! three or none. `BATHO_CRASH_KILLS` sets the number of kills (default 40).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use batho_engine::query::{Value, WritableDatabase};
use common::Rng;

fn pair(seq: u64) -> String {
    format!(
        "CREATE (:Ev {{seq: {seq}, text: 'event {seq}'}})-[:PAIR {{seq: {seq}}}]->(:Ev2 {{seq: {seq}}})"
    )
}

/// The script fed to `batho-ql`: statements from `first` on, each acknowledged by a printed
/// `ack,<seq>` line once committed; every few a transaction of several, acknowledged after
/// its COMMIT, and now and then a checkpoint. Returns the script and every seq it writes.
fn script(first: u64, rng: &mut Rng) -> (String, Vec<u64>) {
    let mut text = String::from(":format csv\n");
    let mut seqs = Vec::new();
    let mut seq = first;
    for step in 0..400 {
        match rng.next() % 10 {
            0 => {
                let size = 2 + rng.next() % 5;
                let batch: Vec<u64> = (seq..seq + size).collect();
                text.push_str("BEGIN;\n");
                for s in &batch {
                    text.push_str(&format!("{};\n", pair(*s)));
                }
                text.push_str("COMMIT;\n");
                let list: Vec<String> = batch.iter().map(u64::to_string).collect();
                text.push_str(&format!(
                    "UNWIND [{}] AS s RETURN 'ack' AS a, s;\n",
                    list.join(", ")
                ));
                seqs.extend(&batch);
                seq += size;
            }
            1 if step % 7 == 0 => text.push_str(":checkpoint\n"),
            _ => {
                text.push_str(&format!(
                    "{} WITH 1 AS one RETURN 'ack' AS a, {seq} AS s;\n",
                    pair(seq)
                ));
                seqs.push(seq);
                seq += 1;
            }
        }
    }
    (text, seqs)
}

/// Runs `batho-ql PATH` on `input` and kills it after `delay`; the acknowledged seqs.
fn run_and_kill(graph: &Path, input: String, delay: Duration) -> BTreeSet<u64> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_batho-ql"))
        .arg(graph)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start batho-ql");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.trim().strip_prefix("ack,").and_then(|s| s.parse().ok()))
            .collect::<BTreeSet<u64>>()
    });
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
    reader.join().unwrap()
}

fn ints(db: &mut WritableDatabase, query: &str) -> Vec<u64> {
    db.execute(query, &BTreeMap::new())
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .rows
        .iter()
        .map(|r| match r[0] {
            Value::Int(i) => i as u64,
            ref other => panic!("{query}: not an integer: {other:?}"),
        })
        .collect()
}

#[test]
fn killed_writers_lose_no_acknowledged_statement_and_leave_no_half_one() {
    let kills: u32 = std::env::var("BATHO_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let tmp = tempfile::tempdir().unwrap();
    let graph = tmp.path().join("graph");
    drop(WritableDatabase::create(&graph).unwrap());
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut sent: BTreeSet<u64> = BTreeSet::new();
    let mut acknowledged: BTreeSet<u64> = BTreeSet::new();
    let (mut torn_tails, mut next, mut in_graph) = (0, 0, 0);
    for kill in 0..kills {
        let (input, seqs) = script(next, &mut rng);
        next = seqs.last().map_or(next, |s| s + 1);
        sent.extend(&seqs);
        let delay = Duration::from_micros(2_000 + rng.next() % 60_000);
        acknowledged.extend(run_and_kill(&graph, input, delay));

        let mut db = WritableDatabase::open(&graph).unwrap_or_else(|e| {
            panic!("kill {kill} after {delay:?}: the graph does not open: {e}")
        });
        torn_tails += u32::from(db.open_report().torn_tail.is_some());
        let pairs: BTreeSet<u64> = ints(
            &mut db,
            "MATCH (a:Ev)-[r:PAIR]->(b:Ev2) WHERE a.seq = r.seq AND r.seq = b.seq RETURN a.seq",
        )
        .into_iter()
        .collect();
        let firsts = ints(&mut db, "MATCH (a:Ev) RETURN count(a)")[0];
        let seconds = ints(&mut db, "MATCH (b:Ev2) RETURN count(b)")[0];
        assert_eq!(
            (firsts, seconds),
            (pairs.len() as u64, pairs.len() as u64),
            "kill {kill} after {delay:?}: a statement is in the graph in part"
        );
        let lost: Vec<_> = acknowledged.difference(&pairs).collect();
        assert!(
            lost.is_empty(),
            "kill {kill} after {delay:?}: acknowledged but lost: {lost:?}"
        );
        assert!(
            pairs.is_subset(&sent),
            "kill {kill}: the graph holds statements never sent"
        );
        in_graph = pairs.len();
    }
    eprintln!(
        "{kills} kills: {} statements acknowledged, {in_graph} in the graph, {} sent, \
         {torn_tails} torn log tails cut",
        acknowledged.len(),
        sent.len()
    );
}
