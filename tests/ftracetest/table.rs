//! `ftracetest-table RESULTS BASELINE`: prints ftracetest's per-test table,
//! this kernel (RESULTS, the output of `scripts/ftracetest.sh run`) against
//! Linux (BASELINE), as Markdown; exit status 0 when issue 9's target is
//! met, 1 when not, 2 on bad input. `scripts/ftracetest.sh table` runs it.

#[path = "compare.rs"]
mod compare;

use std::process::ExitCode;

fn read(path: &str) -> Result<Vec<compare::Entry>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    compare::parse(&text).map_err(|e| format!("{path}: {e}"))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [results, baseline] = args.as_slice() else {
        eprintln!("usage: ftracetest-table RESULTS BASELINE");
        return ExitCode::from(2);
    };
    let (ours, linux) = match (read(results), read(baseline)) {
        (Ok(o), Ok(l)) => (o, l),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("ftracetest-table: {e}");
            return ExitCode::from(2);
        }
    };
    let rows = compare::compare(&linux, &ours);
    print!("{}", compare::render(&rows));
    if compare::target_met(&rows) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
