//! The timings of the rows where arena-pool is not the fastest, taken three times:
//! `benches/report.sh`'s helper for the median of three runs.
//!
//! ```text
//! timings rows --prefix P FILE      the rows to run again: lines <suite>\t<case>
//! timings filters --prefix P FILE   the same rows as criterion filters: lines <suite>\t<regex>
//! timings median FIRST OTHER...     FIRST, each timing replaced by the median of the runs
//! ```
//!
//! FILE, FIRST and OTHER are cargo-criterion's `--message-format=json` output, ids
//! `<suite>/<crate>/<case>`.
//!
//! - `rows`: every row (a suite and a case) where no crate whose name starts with `P` has the
//!   lowest typical time, in order of first appearance. A row without such a crate is not listed.
//! - `filters`: one line per suite with such rows: a regular expression matching, in those rows,
//!   the ids of the crates that decide them and nothing else, for criterion's `FILTER` argument:
//!   every crate whose name starts with `P`, and every other crate faster than the fastest of
//!   those. A crate slower than all of them cannot turn the row, and keeps its one run.
//! - `median`: FIRST's lines in their order, each `benchmark-complete` message of an id that an
//!   OTHER file measured too replaced by the message, among those of all the files for that id,
//!   whose typical time is the median (the slower of the two middle ones for an even number);
//!   every other line as it is. On standard error: how many ids got a median, and of how many
//!   runs.

use std::collections::HashMap;
use std::fs;
use std::process::ExitCode;

use arena_pool_benches::report_data::{parse_criterion_line, split_id};

/// The usage text, printed for `--help` and after a usage error.
const USAGE: &str = "usage: timings rows --prefix P FILE
       timings filters --prefix P FILE
       timings median FIRST OTHER...";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(message)) => {
            eprintln!("timings: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Error(message)) => {
            eprintln!("timings: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Why a command failed: how it was called, or what it read.
#[derive(Debug)]
enum Failure {
    Usage(String),
    Error(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Error(message)
    }
}

/// Runs the command in `args`; its standard output.
fn run(args: &[String]) -> Result<String, Failure> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["--help" | "-h"] => Ok(format!("{USAGE}\n")),
        [command @ ("rows" | "filters"), "--prefix", prefix, file] => {
            let text = read(file)?;
            let timings = parse_timings(&text).map_err(|e| format!("{file}:{e}"))?;
            let rows = rows_to_rerun(&timings, prefix)?;
            Ok(if *command == "rows" {
                rows.iter()
                    .map(|row| format!("{}\t{}\n", row.suite, row.case))
                    .collect()
            } else {
                filters(&rows)
                    .iter()
                    .map(|(suite, filter)| format!("{suite}\t{filter}\n"))
                    .collect()
            })
        }
        ["median", first, others @ ..] if !others.is_empty() => {
            let first_text = read(first)?;
            let mut others_text = Vec::new();
            for other in others {
                others_text.push((*other, read(other)?));
            }
            let (merged, summary) = median(first, &first_text, &others_text)?;
            eprintln!("timings: {summary}");
            Ok(merged)
        }
        _ => Err(Failure::Usage(format!(
            "cannot read the arguments {args:?}"
        ))),
    }
}

/// The contents of `path`.
fn read(path: &str) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))
}

/// One `benchmark-complete` message: its line number (from 1), id and typical time in ns.
#[derive(Debug)]
struct Timing<'a> {
    line: usize,
    id: String,
    text: &'a str,
    nanoseconds: f64,
}

/// The `benchmark-complete` messages of a cargo-criterion output, in order.
fn parse_timings(text: &str) -> Result<Vec<Timing<'_>>, String> {
    let mut timings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = index + 1;
        if let Some((id, nanoseconds)) =
            parse_criterion_line(line).map_err(|e| format!("{number}: {e}"))?
        {
            split_id(&id).map_err(|e| format!("{number}: {e}"))?;
            timings.push(Timing {
                line: number,
                id,
                text: line,
                nanoseconds,
            });
        }
    }
    Ok(timings)
}

/// A row to time again: its suite and case, and the crates whose timings decide it.
#[derive(Debug, PartialEq)]
struct Rerun {
    suite: String,
    case: String,
    crates: Vec<String>,
}

/// The rows where no crate whose name starts with `prefix` is the fastest, in order of first
/// appearance (rows without such a crate are left out), each with the prefixed crates and the
/// crates faster than all of them, in order of appearance.
fn rows_to_rerun(timings: &[Timing<'_>], prefix: &str) -> Result<Vec<Rerun>, String> {
    // Per row, in order: each crate and its time.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut rows: HashMap<(String, String), Vec<(String, f64)>> = HashMap::new();
    for timing in timings {
        let id = split_id(&timing.id)?;
        let key = (id.suite.to_string(), id.case.to_string());
        rows.entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push((id.krate.to_string(), timing.nanoseconds));
    }
    let mut reruns = Vec::new();
    for key in order {
        let crates = &rows[&key];
        let ours = crates
            .iter()
            .filter(|(krate, _)| krate.starts_with(prefix))
            .map(|&(_, t)| t)
            .fold(f64::INFINITY, f64::min);
        let all = crates.iter().map(|&(_, t)| t).fold(f64::INFINITY, f64::min);
        // A row without a prefixed crate has `ours` infinite; a tie is not a loss.
        if ours.is_infinite() || ours <= all {
            continue;
        }
        let (suite, case) = key;
        reruns.push(Rerun {
            suite,
            case,
            crates: crates
                .iter()
                .filter(|(krate, t)| krate.starts_with(prefix) || *t < ours)
                .map(|(krate, _)| krate.clone())
                .collect(),
        });
    }
    Ok(reruns)
}

/// Per suite (in order of first appearance), a regular expression that matches the ids of the
/// crates listed in the suite's `rows` and no other id.
fn filters(rows: &[Rerun]) -> Vec<(String, String)> {
    let mut suites: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        let ids = row
            .crates
            .iter()
            .map(|krate| format!("{}/{}", regex_escape(krate), regex_escape(&row.case)));
        match suites.iter_mut().find(|(s, _)| *s == row.suite) {
            Some((_, alternatives)) => alternatives.extend(ids),
            None => suites.push((row.suite.clone(), ids.collect())),
        }
    }
    suites
        .into_iter()
        .map(|(suite, alternatives)| {
            let filter = format!("^{}/({})$", regex_escape(&suite), alternatives.join("|"));
            (suite, filter)
        })
        .collect()
}

/// `text` with every character that has a meaning in a regular expression escaped by `\`.
fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// `first_text` with each timing that `others` also measured replaced by the median of the
/// runs (see the module docs), and a summary of what was replaced.
fn median(
    first: &str,
    first_text: &str,
    others: &[(&str, String)],
) -> Result<(String, String), String> {
    let firsts = parse_timings(first_text).map_err(|e| format!("{first}:{e}"))?;
    let mut runs: HashMap<&str, Vec<&Timing<'_>>> = HashMap::new();
    let mut parsed_others = Vec::new();
    for (name, text) in others {
        parsed_others.push(parse_timings(text).map_err(|e| format!("{name}:{e}"))?);
    }
    for timing in parsed_others.iter().flatten() {
        runs.entry(timing.id.as_str()).or_default().push(timing);
    }
    let mut replaced: HashMap<usize, &str> = HashMap::new();
    let mut run_counts: HashMap<usize, usize> = HashMap::new();
    for timing in &firsts {
        let Some(more) = runs.get(timing.id.as_str()) else {
            continue;
        };
        let mut all: Vec<&Timing<'_>> = more.clone();
        all.push(timing);
        all.sort_by(|a, b| a.nanoseconds.total_cmp(&b.nanoseconds));
        replaced.insert(timing.line, all[all.len() / 2].text);
        *run_counts.entry(all.len()).or_default() += 1;
    }
    let mut merged = String::with_capacity(first_text.len());
    for (index, line) in first_text.lines().enumerate() {
        merged.push_str(replaced.get(&(index + 1)).copied().unwrap_or(line));
        merged.push('\n');
    }
    let mut counts: Vec<(usize, usize)> = run_counts.into_iter().collect();
    counts.sort_unstable();
    let summary = if counts.is_empty() {
        "no timing measured again".to_string()
    } else {
        let parts: Vec<String> = counts
            .iter()
            .map(|(runs, ids)| format!("{ids} ids the median of {runs} runs"))
            .collect();
        parts.join(", ")
    };
    Ok((merged, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, ns: f64) -> String {
        format!(
            r#"{{"reason":"benchmark-complete","id":"{id}","typical":{{"estimate":{ns},"unit":"ns"}}}}"#
        )
    }

    fn output(messages: &[(&str, f64)]) -> String {
        let mut text = String::from("{\"reason\":\"group-complete\"}\n");
        for (id, ns) in messages {
            text.push_str(&message(id, *ns));
            text.push('\n');
        }
        text
    }

    fn row(suite: &str, case: &str, crates: &[&str]) -> Rerun {
        Rerun {
            suite: suite.into(),
            case: case.into(),
            crates: crates.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn rows_where_no_prefixed_crate_is_fastest() {
        let text = output(&[
            ("s/arena-pool/a", 10.0),
            ("s/peer/a", 9.0),
            ("s/arena-pool/b", 5.0),
            ("s/peer/b", 6.0),
            ("s/arena-pool/c (x/y)", 7.0),
            ("s/arena-pool-Pool/c (x/y)", 7.5),
            ("s/peer/c (x/y)", 7.2),
            ("t/peer/d", 1.0),
            ("t/arena-pool-Sync/d", 3.0),
            ("t/peer/e", 1.0),
        ]);
        let timings = parse_timings(&text).unwrap();
        let rows = rows_to_rerun(&timings, "arena-pool").unwrap();
        // b and c have an arena-pool crate first; e has none at all.
        assert_eq!(
            rows,
            [
                row("s", "a", &["arena-pool", "peer"]),
                row("t", "d", &["peer", "arena-pool-Sync"])
            ]
        );
        // Only the crates that can decide the row: a peer slower than every arena-pool crate
        // keeps its one run.
        let text = output(&[
            ("s/slow/a", 20.0),
            ("s/arena-pool/a", 10.0),
            ("s/arena-pool-Sync/a", 12.0),
            ("s/fast/a", 9.0),
            ("s/between/a", 11.0),
        ]);
        let rows = rows_to_rerun(&parse_timings(&text).unwrap(), "arena-pool").unwrap();
        assert_eq!(
            rows,
            [row("s", "a", &["arena-pool", "arena-pool-Sync", "fast"])]
        );
        // A tie is not a loss.
        let tie = output(&[("s/arena-pool/a", 2.0), ("s/peer/a", 2.0)]);
        let tie = parse_timings(&tie).unwrap();
        assert!(rows_to_rerun(&tie, "arena-pool").unwrap().is_empty());
    }

    #[test]
    fn filters_match_their_rows_only() {
        let rows = [
            row("s", "Vec<u8> push (x 2.5)", &["arena-pool", "bump-scope"]),
            row("s", "a|b", &["arena-pool"]),
            row("t", "c", &["arena-pool-Pool", "slab"]),
        ];
        assert_eq!(
            filters(&rows),
            [
                (
                    "s".to_string(),
                    r"^s/(arena\-pool/Vec<u8> push \(x 2\.5\)|bump\-scope/Vec<u8> push \(x 2\.5\)|arena\-pool/a\|b)$"
                        .to_string()
                ),
                ("t".to_string(), r"^t/(arena\-pool\-Pool/c|slab/c)$".to_string()),
            ]
        );
        assert_eq!(
            regex_escape(r"a\b[c]{d}^$#&-~*?+"),
            r"a\\b\[c\]\{d\}\^\$\#\&\-\~\*\?\+"
        );
    }

    #[test]
    fn the_median_of_three_replaces_the_first_run() {
        let first = output(&[("s/a/x", 30.0), ("s/b/x", 10.0), ("s/a/y", 4.0)]);
        let second = output(&[("s/a/x", 20.0), ("s/b/x", 12.0)]);
        let third = output(&[("s/a/x", 25.0), ("s/b/x", 11.0)]);
        let (merged, summary) = median("1", &first, &[("2", second), ("3", third)]).unwrap();
        let expected = output(&[("s/a/x", 25.0), ("s/b/x", 11.0), ("s/a/y", 4.0)]);
        assert_eq!(merged, expected);
        assert_eq!(summary, "2 ids the median of 3 runs");
        // Two runs: the slower one.
        let (merged, summary) = median("1", &first, &[("2", output(&[("s/b/x", 14.0)]))]).unwrap();
        assert_eq!(
            merged,
            output(&[("s/a/x", 30.0), ("s/b/x", 14.0), ("s/a/y", 4.0)])
        );
        assert_eq!(summary, "1 ids the median of 2 runs");
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse_timings("not json\n").is_err());
        assert!(parse_timings(&message("no-slashes", 1.0)).is_err());
        assert!(matches!(
            run(&["median".into(), "x".into()]),
            Err(Failure::Usage(_))
        ));
        assert!(matches!(
            run(&[
                "rows".into(),
                "--prefix".into(),
                "p".into(),
                "/nonexistent".into()
            ]),
            Err(Failure::Error(_))
        ));
    }
}
