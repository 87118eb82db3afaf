//! A statement of thousands of clauses nests thousands of operators; running it must not
//! overflow the stack of a thread with the 2 MiB Rust gives spawned threads (it aborted
//! the process at about 600 CREATE clauses before operators grew their stack).

use std::collections::BTreeMap;

use batho_engine::query::{Value, WritableDatabase};

fn on_a_small_stack(work: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(work)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn two_thousand_create_clauses_and_a_thousand_withs_run_on_a_two_mebibyte_stack() {
    on_a_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut db = WritableDatabase::create(dir.path()).unwrap();
        let creates: Vec<String> = (0..2000)
            .map(|i| format!("CREATE (n{i}:N {{i: {i}}})"))
            .collect();
        let result = db.execute(&creates.join(" "), &BTreeMap::new()).unwrap();
        assert_eq!(result.updates.nodes_created, 2000);
        let withs: String = (0..1000).map(|i| format!(" WITH x + {i} AS x")).collect();
        let text = format!("UNWIND [0] AS x{withs} RETURN x");
        let result = db.execute(&text, &BTreeMap::new()).unwrap();
        assert_eq!(result.rows, vec![vec![Value::Int(499_500)]]);
    });
}
