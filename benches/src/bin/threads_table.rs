//! The threads suite's tables (`benches/benches/threads.rs`): for each scenario, one row per
//! thread count T and one column per crate, each cell the nanoseconds per operation (the time of
//! an iteration divided by the operations of all its threads) and the speed-up of the crate's
//! throughput over its own at the smallest T of the scenario (1, or 2 for the cross-thread
//! scenario); the fastest cell of a row in bold.
//!
//! ```text
//! threads_table --ops OPS TIMES
//! ```
//!
//! - `OPS`: the suite's case list, `BENCH_COUNT=list <threads bench binary>` (lines
//!   `<id>\t<operations per iteration>`);
//! - `TIMES`: cargo-criterion's JSON messages (`cargo criterion --message-format=json`), or the
//!   directory where `cargo bench` left criterion's results (`target/criterion`), whose
//!   `threads/**/new/` estimates are read (the slope where there is one, else the mean: what
//!   cargo-criterion calls typical).
//!
//! Ids are `threads/<crate>/<scenario>, T=<threads>`. The tables go to stdout, in Markdown,
//! after a line naming the machine (CPU model and available parallelism), as
//! `benches/report.sh` includes them in BENCHMARKS.md.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;

use arena_pool_benches::report_data::{parse_criterion_line, split_id};

/// One measured case: scenario, crate, threads, nanoseconds per operation.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    /// The case's place in the suite's list.
    order: usize,
    scenario: String,
    krate: String,
    threads: usize,
    ns_per_op: f64,
}

/// Splits a case name `<scenario>, T=<threads>`.
fn split_case(case: &str) -> Result<(&str, usize), String> {
    let (scenario, t) = case
        .rsplit_once(", T=")
        .ok_or_else(|| format!("case '{case}' does not end in ', T=<threads>'"))?;
    let t = t
        .parse()
        .map_err(|_| format!("case '{case}': '{t}' is not a thread count"))?;
    Ok((scenario, t))
}

/// The operations per iteration of each id, from the suite's list mode, in its order (the
/// suite's order of registration, which the tables follow).
fn parse_ops(text: &str) -> Result<Vec<(String, u64)>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (id, ops) = l
                .split_once('\t')
                .ok_or_else(|| format!("ops line '{l}' is not '<id>\\t<ops>'"))?;
            let ops: u64 = ops
                .trim()
                .parse()
                .map_err(|_| format!("ops line '{l}': not a count"))?;
            if ops == 0 {
                return Err(format!("ops line '{l}': zero operations"));
            }
            Ok((id.to_string(), ops))
        })
        .collect()
}

/// The threads suite's cells (from `times`: id, nanoseconds per iteration), in the order of
/// `ops`.
fn cells(times: &[(String, f64)], ops: &[(String, u64)]) -> Result<Vec<Cell>, String> {
    let index: HashMap<&str, (usize, u64)> = ops
        .iter()
        .enumerate()
        .map(|(i, (id, n))| (id.as_str(), (i, *n)))
        .collect();
    let mut out = Vec::new();
    for (id, ns) in times {
        let parts = split_id(id)?;
        if parts.suite != "threads" {
            continue;
        }
        let (scenario, threads) = split_case(parts.case)?;
        let &(order, n) = index
            .get(id.as_str())
            .ok_or_else(|| format!("no operation count for '{id}' in the ops list"))?;
        out.push(Cell {
            order,
            scenario: scenario.to_string(),
            krate: parts.krate.to_string(),
            threads,
            ns_per_op: ns / n as f64,
        });
    }
    out.sort_by_key(|c| c.order);
    Ok(out)
}

/// `items` without repeats, in the order of their first appearance.
fn first_seen<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for item in items {
        if !seen.contains(&item) {
            seen.push(item);
        }
    }
    seen
}

fn fmt_ns(ns: f64) -> String {
    if ns < 10.0 {
        format!("{ns:.2} ns")
    } else if ns < 1000.0 {
        format!("{ns:.1} ns")
    } else {
        format!("{ns:.0} ns")
    }
}

/// The tables: one per scenario, in order of first appearance; columns in that order too.
fn render(cells: &[Cell]) -> String {
    let mut out = String::new();
    for scenario in first_seen(cells.iter().map(|c| c.scenario.clone())) {
        let of: Vec<&Cell> = cells.iter().filter(|c| c.scenario == scenario).collect();
        let krates = first_seen(of.iter().map(|c| c.krate.clone()));
        let mut counts = first_seen(of.iter().map(|c| c.threads));
        counts.sort_unstable();
        let get = |k: &str, t: usize| {
            of.iter()
                .find(|c| c.krate == k && c.threads == t)
                .map(|c| c.ns_per_op)
        };
        out += &format!("#### {scenario}\n\n| T |");
        for k in &krates {
            out += &format!(" `{k}` |");
        }
        out += "\n|--:|";
        out += &"--:|".repeat(krates.len());
        out += "\n";
        for &t in &counts {
            let row: Vec<Option<f64>> = krates.iter().map(|k| get(k, t)).collect();
            let best = row.iter().flatten().copied().fold(f64::INFINITY, f64::min);
            out += &format!("| {t} |");
            for (k, v) in krates.iter().zip(&row) {
                let Some(v) = *v else {
                    out += " N/A |";
                    continue;
                };
                // The crate's own time at the smallest T it has in this scenario.
                let base = counts.iter().find_map(|&t0| get(k, t0)).unwrap_or(v);
                let ns = if v == best {
                    format!("**{}**", fmt_ns(v))
                } else {
                    fmt_ns(v)
                };
                out += &format!(" {ns} ({:.2}x) |", base / v);
            }
            out += "\n";
        }
        out += "\n";
    }
    out
}

/// The id and typical time (ns) of every benchmark criterion stored under `dir/threads`.
fn read_criterion_dir(dir: &Path) -> Result<Vec<(String, f64)>, String> {
    fn walk(dir: &Path, found: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n == "new") {
                    found.push(path);
                } else {
                    walk(&path, found)?;
                }
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    let root = dir.join("threads");
    walk(&root, &mut found).map_err(|e| format!("{}: {e}", root.display()))?;
    found.sort();
    let read = |p: &Path| -> Result<serde_json::Value, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let mut out = Vec::new();
    for new in found {
        let bench = read(&new.join("benchmark.json"))?;
        let estimates = read(&new.join("estimates.json"))?;
        let id = bench["full_id"]
            .as_str()
            .ok_or_else(|| format!("{}: no full_id", new.display()))?;
        let typical = estimates["slope"]["point_estimate"]
            .as_f64()
            .or_else(|| estimates["mean"]["point_estimate"].as_f64())
            .ok_or_else(|| format!("{}: no estimate", new.display()))?;
        out.push((id.to_string(), typical));
    }
    Ok(out)
}

/// The machine: CPU model (Linux's /proc/cpuinfo) and the available parallelism.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {n} threads available (`std::thread::available_parallelism`)")
}

fn run(args: &[String]) -> Result<String, String> {
    let usage =
        "usage: threads_table --ops OPS TIMES (cargo-criterion JSON or a criterion directory)";
    let [flag, ops, times] = args else {
        return Err(usage.to_string());
    };
    if flag != "--ops" {
        return Err(usage.to_string());
    }
    let ops = parse_ops(&std::fs::read_to_string(ops).map_err(|e| format!("{ops}: {e}"))?)?;
    let times_path = Path::new(times);
    let times = if times_path.is_dir() {
        read_criterion_dir(times_path)?
    } else {
        let text = std::fs::read_to_string(times_path).map_err(|e| format!("{times}: {e}"))?;
        let mut v = Vec::new();
        for line in text.lines().filter(|l| l.starts_with('{')) {
            if let Some(t) = parse_criterion_line(line)? {
                v.push(t);
            }
        }
        v
    };
    let cells = cells(&times, &ops)?;
    if cells.is_empty() {
        return Err("no threads benchmark in the timings".to_string());
    }
    Ok(format!("Machine: {}.\n\n{}", machine(), render(&cells)))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("threads_table: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_split_at_the_thread_count() {
        assert_eq!(
            split_case("A: bump, reset, T=16"),
            Ok(("A: bump, reset", 16))
        );
        assert!(split_case("A: bump").is_err());
        assert!(split_case("A: bump, T=x").is_err());
    }

    #[test]
    fn cells_per_operation_and_speed_ups() {
        let ops = parse_ops(
            "threads/x/S, T=1\t100\nthreads/x/S, T=2\t200\nthreads/y/S, T=1\t100\n\
             threads/y/S, T=2\t200\n",
        )
        .unwrap();
        let times = [
            ("threads/x/S, T=2".to_string(), 400.0),
            ("threads/y/S, T=1".to_string(), 200.0),
            ("threads/x/S, T=1".to_string(), 400.0),
            ("threads/y/S, T=2".to_string(), 1600.0),
            ("pools/x/other".to_string(), 1.0),
        ];
        let cells = cells(&times, &ops).unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].ns_per_op, 4.0);
        let table = render(&cells);
        let expected = "#### S\n\n| T | `x` | `y` |\n|--:|--:|--:|\n\
                        | 1 | 4.00 ns (1.00x) | **2.00 ns** (1.00x) |\n\
                        | 2 | **2.00 ns** (2.00x) | 8.00 ns (0.25x) |\n\n";
        assert_eq!(table, expected);
    }

    #[test]
    fn a_missing_count_is_an_error() {
        let ops = parse_ops("threads/x/S, T=1\t100\n").unwrap();
        let times = [("threads/x/S, T=2".to_string(), 1.0)];
        assert!(cells(&times, &ops).is_err());
        assert!(parse_ops("threads/x/S, T=1\t0\n").is_err());
    }
}
