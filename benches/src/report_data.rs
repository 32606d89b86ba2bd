//! What `benches/report.sh`'s helper binaries (`charts`, `timings`) read: the ids of the suites'
//! cases and cargo-criterion's JSON messages.

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
