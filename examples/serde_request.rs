//! JSON request bodies parsed straight into a per-request arena (feature `serde`).
//!
//! A worker keeps one `Arena` and, for every request, deserializes the body with serde_json into
//! a `Request` whose strings, lists and map all live in the arena (`DeserializeIn`), builds the
//! response in the arena too, then `reset`s the arena: no per-string heap allocation, and the
//! whole request's memory goes back at once. The arena's allocation limit is the per-request
//! memory cap: a body that needs more is an ordinary serde error (`413`), never a panic or an
//! abort, and so is a malformed body (`400`).
//!
//! Run with `cargo run --release --example serde_request --features serde`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::fmt;
use core::fmt::Write as _;

use arena_pool::Arena;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::serde::{DeserializeIn, DeserializeInSeed, FieldName};
use hashbrown::{DefaultHashBuilder, HashMap};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// What one request may take from the arena.
const LIMIT: usize = 64 * 1024;

/// A request body, every part of it in the arena `'a` borrows.
struct Request<'a> {
    user: &'a str,
    /// Per subject, the scores to average.
    scores: HashMap<&'a str, Vec<u32, &'a Arena>, DefaultHashBuilder, &'a Arena>,
    tags: &'a [&'a str],
    /// Not in the arena: a plain value.
    round: Option<u32>,
}

const FIELDS: &[&str] = &["user", "scores", "tags", "round"];

impl<'de, 'a> DeserializeIn<'de, &'a Arena> for Request<'a> {
    fn deserialize_in<D: Deserializer<'de>>(d: D, arena: &'a Arena) -> Result<Self, D::Error> {
        struct RequestVisitor<'a>(&'a Arena);

        impl<'de, 'a> Visitor<'de> for RequestVisitor<'a> {
            type Value = Request<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Request<'a>, M::Error> {
                let (mut user, mut scores, mut tags, mut round) = (None, None, None, None);
                while let Some(field) = map.next_key_seed(FieldName::new(FIELDS))? {
                    match field {
                        Some("user") => {
                            user = Some(map.next_value_seed(DeserializeInSeed::new(self.0))?)
                        }
                        Some("scores") => {
                            scores = Some(map.next_value_seed(DeserializeInSeed::new(self.0))?)
                        }
                        Some("tags") => {
                            tags = Some(map.next_value_seed(DeserializeInSeed::new(self.0))?)
                        }
                        Some("round") => round = map.next_value()?,
                        // Unknown fields are skipped without allocating.
                        _ => drop(map.next_value::<IgnoredAny>()?),
                    }
                }
                Ok(Request {
                    user: user.ok_or_else(|| de::Error::missing_field("user"))?,
                    scores: scores.ok_or_else(|| de::Error::missing_field("scores"))?,
                    tags: tags.unwrap_or(&[]),
                    round,
                })
            }
        }

        d.deserialize_struct("Request", FIELDS, RequestVisitor(arena))
    }
}

/// The response text for one body, built in the arena, or the error status and message.
fn handle<'a>(
    arena: &'a Arena,
    body: &[u8],
) -> Result<String<&'a Arena>, (u16, std::string::String)> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let request = Request::deserialize_in(&mut json, arena)
        .and_then(|request| json.end().map(|()| request))
        .map_err(|e| {
            let status = if e.to_string().contains("allocation limit") {
                413
            } else {
                400
            };
            (status, e.to_string())
        })?;

    let mut subjects: Vec<_, &Arena> = Vec::with_capacity_in(request.scores.len(), arena);
    subjects.extend(request.scores.iter());
    subjects.sort_unstable_by_key(|(name, _)| **name);
    let mut out = String::new_in(arena);
    write!(out, "{}", request.user).unwrap();
    if let Some(round) = request.round {
        write!(out, " (round {round})").unwrap();
    }
    for (name, scores) in subjects {
        let mean = scores.iter().map(|&s| u64::from(s)).sum::<u64>() / scores.len().max(1) as u64;
        write!(out, "; {name}: {mean}").unwrap();
    }
    for (i, tag) in request.tags.iter().enumerate() {
        out.push_str(if i == 0 { " [" } else { "," });
        out.push_str(tag);
    }
    if !request.tags.is_empty() {
        out.push(']');
    }
    // The response as JSON, written into the arena too (`Vec<u8, &Arena>` is `io::Write`):
    // `collections::String` implements `Serialize`.
    let mut response = Vec::new_in(arena);
    serde_json::to_writer(&mut response, &out).unwrap();
    Ok(String::from_utf8(response).expect("serde_json writes UTF-8"))
}

fn main() {
    let huge = format!(
        r#"{{"user": "mallory", "scores": {{"spam": [{}]}}}}"#,
        vec!["1"; 50_000].join(",")
    );
    let bodies: [&[u8]; 5] = [
        br#"{"user": "ada", "scores": {"math": [90, 85, 97], "logic": [88]}, "tags": ["new"]}"#,
        br#"{"user": "gr\u00e2ce", "round": 2, "scores": {"cobol": [100]}, "extra": {"x": [1, 2]}}"#,
        br#"{"user": "edsger", "scores": {"goto": ["harmful"]}}"#,
        br#"{"user": "barbara", "scores": {"#,
        huge.as_bytes(),
    ];

    let mut arena = Arena::new();
    arena.set_allocation_limit(Some(LIMIT));
    for round in 0..3 {
        for body in bodies {
            match handle(&arena, body) {
                Ok(response) if round == 0 => println!("200 {response}"),
                Ok(_) => {}
                Err((status, message)) if round == 0 => println!("{status} {message}"),
                Err(_) => {}
            }
            assert!(arena.used_bytes() <= LIMIT);
            arena.reset(); // the whole request, strings, lists, map and response, at once
        }
    }
    println!(
        "after {} requests: {} bytes held by the arena, {} in use",
        3 * bodies.len(),
        arena.allocated_bytes(),
        arena.used_bytes()
    );
}
