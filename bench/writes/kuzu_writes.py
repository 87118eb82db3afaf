"""The write workloads of `write_bench` on Kùzu 0.11.3, for the same-run comparison of
`bench/writes/run.sh`. Usage: `kuzu_writes.py WORKLOAD DIR [COUNT]`; prints the same
`key=value` lines as `write_bench` (per-statement latencies include Python's call cost,
which is part of using Kùzu from Python)."""
import sys
import time

import kuzu

STATEMENT = "MATCH (h:Hub) CREATE (n:Item {id: $id, name: $name, score: $score})-[:BELONGS]->(h)"
BULK = "UNWIND $rows AS r CREATE (:Node {id: r.id, name: r.name, score: r.score})"
BULK_EDGES = ("UNWIND $rows AS r MATCH (a:Node {id: r.a}), (b:Node {id: r.b}) "
              "CREATE (a)-[:E]->(b)")
BULK_BATCH = 10_000


def connect(path):
    db = kuzu.Database(path)
    return db, kuzu.Connection(db)


def with_hub(path):
    db, conn = connect(path)
    conn.execute("CREATE NODE TABLE Hub(id INT64, PRIMARY KEY (id))")
    conn.execute("CREATE NODE TABLE Item(id INT64, name STRING, score DOUBLE, PRIMARY KEY (id))")
    conn.execute("CREATE REL TABLE BELONGS(FROM Item TO Hub)")
    conn.execute("CREATE (:Hub {id: 0})")
    return db, conn


def params(i):
    return {"id": i, "name": f"item {i}", "score": i * 0.5}


def percentile(sorted_times, share):
    return sorted_times[min(int(len(sorted_times) * share), len(sorted_times) - 1)] * 1e6


def counts(conn, labels):
    nodes = sum(conn.execute(f"MATCH (n:{l}) RETURN count(n)").get_next()[0] for l in labels)
    rels = conn.execute("MATCH ()-[r]->() RETURN count(r)").get_next()[0]
    print(f"nodes={nodes} relationships={rels}")


def single(path, count):
    db, conn = with_hub(path)
    times = []
    for i in range(count):
        p = params(i)
        start = time.perf_counter()
        conn.execute(STATEMENT, p)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"p50_us={percentile(times, 0.5):.1f} p90_us={percentile(times, 0.9):.1f} "
          f"p99_us={percentile(times, 0.99):.1f}")
    counts(conn, ["Hub", "Item"])


def transaction(path, count):
    db, conn = with_hub(path)
    ps = [params(i) for i in range(count)]
    start = time.perf_counter()
    conn.execute("BEGIN TRANSACTION")
    for p in ps:
        conn.execute(STATEMENT, p)
    conn.execute("COMMIT")
    print(f"total_ms={(time.perf_counter() - start) * 1e3:.1f}")
    counts(conn, ["Hub", "Item"])


def bulk(path, count):
    db, conn = connect(path)
    conn.execute("CREATE NODE TABLE Node(id INT64, name STRING, score DOUBLE, PRIMARY KEY (id))")
    conn.execute("CREATE REL TABLE E(FROM Node TO Node)")
    # Only the statements are timed: each batch's rows are built before its clock starts
    # (write_bench does the same).
    load = 0.0
    for first in range(0, count, BULK_BATCH):
        rows = [{"id": i, "name": f"node {i}", "score": float(i)}
                for i in range(first, min(first + BULK_BATCH, count))]
        start = time.perf_counter()
        conn.execute(BULK, {"rows": rows})
        load += time.perf_counter() - start
    # The node load's time is printed first: on this machine Kùzu's buffer pool can fill
    # during the relationship load (see bench/README.md), and the load still compares.
    print(f"load_s={load:.2f}", end=" ", flush=True)
    edges = 0.0
    try:
        for first in range(0, 2 * count, BULK_BATCH):
            rows = [{"a": i // 2, "b": (i * 7919 + 13) % count}
                    for i in range(first, min(first + BULK_BATCH, 2 * count))]
            start = time.perf_counter()
            conn.execute(BULK_EDGES, {"rows": rows})
            edges += time.perf_counter() - start
    except RuntimeError as error:
        edges += time.perf_counter() - start
        print(f"edges_failed_after_s={edges:.2f} error={str(error)[:80]!r}")
        return
    start = time.perf_counter()
    conn.execute("CHECKPOINT")
    checkpoint = time.perf_counter() - start
    del conn
    del db
    start = time.perf_counter()
    db, conn = connect(path)
    reopen = time.perf_counter() - start
    start = time.perf_counter()
    total = conn.execute("MATCH (n:Node) RETURN sum(n.score) AS total").get_next()[0]
    read_ms = (time.perf_counter() - start) * 1e3
    print(f"edges_s={edges:.2f} checkpoint_s={checkpoint:.2f} reopen_s={reopen:.2f} "
          f"read_ms={read_ms:.1f} sum={total}")
    counts(conn, ["Node"])


def main():
    workload, path = sys.argv[1], sys.argv[2]
    default = {"single": 10_000, "transaction": 10_000, "bulk": 1_000_000}[workload]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else default
    {"single": single, "transaction": transaction, "bulk": bulk}[workload](path, count)


if __name__ == "__main__":
    main()
