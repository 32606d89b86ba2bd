//! What `benches/report.sh`'s helper binaries (`charts`, `timings`) read: the ids of the suites'
//! cases, cargo-criterion's JSON messages and the suites' memory-mode lines.

use serde::Deserialize;

/// An id `<suite>/<crate>/<case>`, split on its first two `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id<'a> {
    /// The suite: the bench target's name.
    pub suite: &'a str,
    /// The crate measured (a column of the tables).
    pub krate: &'a str,
    /// The case (a row of the tables); it may hold `/`.
    pub case: &'a str,
}

/// Splits an id on its first two `/`; each of the three parts must be non-empty.
pub fn split_id(id: &str) -> Result<Id<'_>, String> {
    let mut parts = id.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(suite), Some(krate), Some(case))
            if !suite.is_empty() && !krate.is_empty() && !case.is_empty() =>
        {
            Ok(Id { suite, krate, case })
        }
        _ => Err(format!(
            "id '{id}' is not of the form <suite>/<crate>/<case>"
        )),
    }
}

/// A cargo-criterion message (the fields used here; the others are ignored).
#[derive(Deserialize)]
struct Message {
    reason: String,
    id: Option<String>,
    typical: Option<Estimate>,
}

/// One of cargo-criterion's estimates.
#[derive(Deserialize)]
struct Estimate {
    estimate: f64,
    unit: String,
}

/// Parses a line of cargo-criterion's JSON output (`--message-format=json`): the id and the
/// typical time in nanoseconds of a `benchmark-complete` message, `None` for any other message.
pub fn parse_criterion_line(line: &str) -> Result<Option<(String, f64)>, String> {
    let message: Message =
        serde_json::from_str(line).map_err(|e| format!("not a cargo-criterion message: {e}"))?;
    if message.reason != "benchmark-complete" {
        return Ok(None);
    }
    let id = message
        .id
        .ok_or("a benchmark-complete message without an \"id\"")?;
    let typical = message
        .typical
        .ok_or("a benchmark-complete message without a \"typical\" estimate")?;
    let scale = match typical.unit.as_str() {
        "ps" => 1e-3,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        unit => return Err(format!("unknown time unit '{unit}'")),
    };
    let value = non_negative(typical.estimate, "typical estimate")?;
    Ok(Some((id, value * scale)))
}

/// A line of the suites' memory mode (its fields are described in `benches/src/harness.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLine {
    /// The case's id.
    pub id: String,
    /// The peak bytes held during the case, above its start (before its allocator was built).
    pub peak: u64,
    /// The bytes requested during the case.
    pub requested: u64,
    /// The calls into the global allocator: `allocs + deallocs + reallocs`.
    pub calls: u64,
    /// The bytes held where the case marked them (`None`: not marked). It can be below the start:
    /// a thread row's last frees of the case before it may come after this case started.
    pub held_at_end: Option<i64>,
    /// The calls of the case's settled stretch (`None`: none).
    pub calls_after_settling: Option<u64>,
    /// The `alloc` and `alloc_zeroed` calls.
    pub allocs: u64,
    /// The `dealloc` calls.
    pub deallocs: u64,
    /// The `realloc` calls.
    pub reallocs: u64,
    /// The figures of a reuse loop (`None` for a case of one unit, and on a line of nine fields).
    pub cycles: Option<Cycles>,
}

/// The first-cycle and steady-state figures of a reuse loop's memory-mode line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cycles {
    /// The peak bytes held from the case's start to the end of its first cycle.
    pub first_peak: u64,
    /// The highest peak of its measured cycles, above the case's start.
    pub steady_peak: u64,
    /// The bytes requested per measured cycle.
    pub requested_per_cycle: u64,
}

/// Parses a memory-mode line: twelve tab-separated fields, or the first nine alone (no
/// first-cycle and steady figures). `-` stands for a missing held at end, calls after settling,
/// or for all three reuse-loop figures at once; every other field is an unsigned integer (held at
/// end may be negative).
pub fn parse_memory_line(line: &str) -> Result<MemoryLine, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() != 9 && fields.len() != 12 {
        return Err(format!(
            "{} tab-separated fields, expected 9 or 12",
            fields.len()
        ));
    }
    let unsigned = |index: usize, name: &str| -> Result<u64, String> {
        fields[index]
            .parse()
            .map_err(|_| format!("{name} '{}' is not an unsigned integer", fields[index]))
    };
    let optional = |index: usize| fields[index] != "-";
    let held_at_end = if optional(4) {
        Some(
            fields[4]
                .parse::<i64>()
                .map_err(|_| format!("held at end '{}' is not an integer", fields[4]))?,
        )
    } else {
        None
    };
    let calls_after_settling = if optional(5) {
        Some(unsigned(5, "calls after settling")?)
    } else {
        None
    };
    let cycles = match fields.get(9..12) {
        None | Some(["-", "-", "-"]) => None,
        Some(_) => Some(Cycles {
            first_peak: unsigned(9, "first-cycle peak")?,
            steady_peak: unsigned(10, "steady peak")?,
            requested_per_cycle: unsigned(11, "bytes requested per steady cycle")?,
        }),
    };
    let line = MemoryLine {
        id: fields[0].to_string(),
        peak: unsigned(1, "peak bytes")?,
        requested: unsigned(2, "bytes requested")?,
        calls: unsigned(3, "calls")?,
        held_at_end,
        calls_after_settling,
        allocs: unsigned(6, "allocs")?,
        deallocs: unsigned(7, "deallocs")?,
        reallocs: unsigned(8, "reallocs")?,
        cycles,
    };
    if line.calls != line.allocs + line.deallocs + line.reallocs {
        return Err(format!(
            "calls {} are not allocs + deallocs + reallocs ({} + {} + {})",
            line.calls, line.allocs, line.deallocs, line.reallocs
        ));
    }
    Ok(line)
}

/// Checks that `value` (named `name`) is a finite number, not negative.
fn non_negative(value: f64, name: &str) -> Result<f64, String> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("{name} {value} is not a finite number >= 0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_on_the_first_two_slashes() {
        let id = split_id("pools/slab/fill 1000 x 32 B, free in a/b order").unwrap();
        assert_eq!(
            id,
            Id {
                suite: "pools",
                krate: "slab",
                case: "fill 1000 x 32 B, free in a/b order"
            }
        );
        assert!(split_id("pools/slab").is_err());
        assert!(split_id("pools//case").is_err());
    }

    #[test]
    fn memory_lines() {
        let old = parse_memory_line("s/k/Vec<u64> push\t100\t200\t3\t-\t-\t1\t1\t1").unwrap();
        assert_eq!(
            old,
            MemoryLine {
                id: "s/k/Vec<u64> push".to_string(),
                peak: 100,
                requested: 200,
                calls: 3,
                held_at_end: None,
                calls_after_settling: None,
                allocs: 1,
                deallocs: 1,
                reallocs: 1,
                cycles: None,
            }
        );
        let fresh = parse_memory_line("s/k/c\t100\t200\t3\t0\t-\t1\t1\t1\t-\t-\t-").unwrap();
        assert_eq!((fresh.held_at_end, fresh.cycles), (Some(0), None));
        let reuse = parse_memory_line("s/k/c\t300\t900\t6\t64\t0\t3\t3\t0\t300\t120\t150").unwrap();
        assert_eq!(reuse.calls_after_settling, Some(0));
        assert_eq!(
            reuse.cycles,
            Some(Cycles {
                first_peak: 300,
                steady_peak: 120,
                requested_per_cycle: 150
            })
        );
        // A thread row's held at end may be below its start; no other field may be negative.
        assert_eq!(
            parse_memory_line("s/k/c\t100\t200\t3\t-144\t-\t1\t1\t1")
                .unwrap()
                .held_at_end,
            Some(-144)
        );
        for bad in [
            "s/k/c\t100\t200\t3\t-144\t-1\t1\t1\t1",
            "s/k/c\t100\t200\t3\tx\t-\t1\t1\t1",
            "s/k/c\t100\t200\t3\t-\t-\t1\t1",
            "s/k/c\t100\t200\t3\t-\t-\t1\t1\t1\t5",
            "s/k/c\t100\t200\t3\t-\t-\t1\t1\t1\t5\t-\t-",
            "s/k/c\t100\t200\t3\t-\t-\t1\t1\t1\t5\t-1\t5",
            "s/k/c\t100\t200\t4\t-\t-\t1\t1\t1",
        ] {
            assert!(parse_memory_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn criterion_lines() {
        let line = r#"{"reason":"benchmark-complete","id":"a/b/c (1, 2)","typical":{"estimate":2.5,"lower_bound":2.0,"upper_bound":3.0,"unit":"us"}}"#;
        assert_eq!(
            parse_criterion_line(line).unwrap(),
            Some(("a/b/c (1, 2)".to_string(), 2500.0))
        );
        assert_eq!(
            parse_criterion_line(r#"{"reason":"group-complete"}"#).unwrap(),
            None
        );
        assert!(parse_criterion_line("{").is_err());
        assert!(parse_criterion_line(r#"{"reason":"benchmark-complete","id":"a/b/c"}"#).is_err());
        assert!(parse_criterion_line(
            r#"{"reason":"benchmark-complete","id":"a/b/c","typical":{"estimate":-1,"unit":"ns"}}"#
        )
        .is_err());
    }
}
