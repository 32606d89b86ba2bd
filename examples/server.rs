//! A request loop with one arena per worker, reset after every request: the shape of a server
//! that uses the arena as per-request scratch memory and its allocation limit as a per-request
//! memory cap.
//!
//! Each request (generated text: a request line, header lines, a body of `name,amount` records)
//! is parsed into a `HashMap` of headers and a `Vec` of records, both in the arena; a scope does
//! the temporary work (sorting the amounts for a median), and the response is built with
//! `format_in!` and `write!` into an arena `String`. The arena's limit (256 KiB) caps what one
//! request may take, and `set_panic_on_limit(true)` turns hitting it inside a collection into a
//! panic that `catch_unwind` turns into a `413` response, where allocator-api2's collections
//! would otherwise abort the process (`handle_alloc_error`). After every request, `reset` gives
//! the arena back its chunks: the memory held is printed every 2 000 requests and stays flat.
//!
//! Run with `cargo run --release --example server`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};

use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::{Arena, ArenaRef, format_in};

const REQUESTS: u64 = 10_000;
/// What one request may take from the arena.
const LIMIT: usize = 256 * 1024;
/// Every this many requests, one is far too large (about 1 MB of records).
const HUGE_EVERY: u64 = 997;

/// A deterministic generator of request texts.
struct Requests(u64);

impl Requests {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The text of request `i`: most carry a few dozen records, every `HUGE_EVERY`th 40 000.
    fn text(&mut self, i: u64, out: &mut std::string::String) {
        out.clear();
        let records = if i % HUGE_EVERY == HUGE_EVERY - 1 {
            40_000
        } else {
            8 + self.next_u64() % 64
        };
        let user = self.next_u64() % 1000;
        let _ = write!(
            out,
            "POST /accounts/{user}/entries HTTP/1.1\r\nHost: example.test\r\n\
             Content-Type: text/csv\r\nX-Request-Id: {i}\r\n\r\n"
        );
        for r in 0..records {
            let amount = self.next_u64() % 10_000;
            let _ = writeln!(out, "item-{r},{amount}");
        }
    }
}

/// One parsed record; `name` borrows the request text.
struct Record<'t> {
    name: &'t str,
    amount: u64,
}

/// Handles one request, allocating everything in `arena`; returns the response text.
fn handle<'a>(arena: &'a mut ArenaRef<'a>, text: &str) -> String<&'a ArenaRef<'a>> {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .expect("a blank line ends the headers");
    let mut lines = head.split("\r\n");
    let request_line = lines.next().expect("a request line");

    // The temporary work happens in a scope: its blocks are gone when it returns, and only the
    // numbers it computes come out.
    let (count, total, median) = arena.with_scope(|scope| {
        let mut amounts: Vec<u64, _> = Vec::new_in(&*scope);
        for line in body.lines() {
            let (_, amount) = line.split_once(',').expect("name,amount");
            amounts.push(amount.parse::<u64>().expect("a number"));
        }
        amounts.sort_unstable();
        let total: u64 = amounts.iter().sum();
        (amounts.len(), total, amounts[amounts.len() / 2])
    });

    let arena: &'a ArenaRef<'a> = arena;
    let mut headers = hashbrown::HashMap::new_in(arena);
    for line in lines {
        let (name, value) = line.split_once(": ").expect("a header line");
        headers.insert(name, value);
    }
    let mut records: Vec<Record<'_>, _> = Vec::with_capacity_in(count, arena);
    for line in body.lines() {
        let (name, amount) = line.split_once(',').expect("name,amount");
        records.push(Record {
            name,
            amount: amount.parse().expect("a number"),
        });
    }
    let largest = records
        .iter()
        .max_by_key(|r| r.amount)
        .expect("at least one record");

    let id = format_in!(arena, "req-{}", headers["X-Request-Id"]);
    let mut response = String::with_capacity_in(256, arena);
    write!(
        response,
        "HTTP/1.1 200 OK\r\nX-Request-Id: {id}\r\n\r\n{request_line}: {count} records, \
         total {total}, median {median}, largest {} ({})",
        largest.name, largest.amount
    )
    .expect("a String grows or panics");
    response
}

fn main() {
    // The limit's panics are expected here: say so once, then keep the log quiet. Any other
    // panic is reported as usual.
    let default_hook = panic::take_hook();
    let reported = std::sync::atomic::AtomicBool::new(false);
    panic::set_hook(Box::new(move |info| {
        let message = info.payload().downcast_ref::<std::string::String>();
        match message {
            Some(m) if m.contains("allocation limit") => {
                if !reported.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    println!("(expected, answered with 413) a request panicked: {m}");
                }
            }
            _ => default_hook(info),
        }
    }));

    let mut arena = Arena::new();
    arena.set_allocation_limit(Some(LIMIT));
    arena.set_panic_on_limit(true);

    let mut requests = Requests(0x9e37_79b9_7f4a_7c15);
    let mut text = std::string::String::new();
    let (mut ok, mut too_large, mut response_bytes) = (0u64, 0u64, 0usize);
    let mut held_most = 0;
    for i in 0..REQUESTS {
        requests.text(i, &mut text);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            let response = handle(arena.as_arena_ref_mut(), &text);
            assert!(response.starts_with("HTTP/1.1 200 OK"));
            assert!(response.contains(&format!("req-{i}")));
            response.len()
        }));
        match outcome {
            Ok(len) => {
                ok += 1;
                response_bytes += len;
            }
            Err(_) => too_large += 1, // answered with 413: the arena is consistent, and reset
        }
        held_most = held_most.max(arena.allocated_bytes_including_metadata());
        arena.reset();
        if (i + 1) % 2_000 == 0 {
            println!(
                "{:>6} requests: {ok} answered, {too_large} too large (413); the arena holds \
                 {} bytes in {} chunk(s) between requests",
                i + 1,
                arena.allocated_bytes_including_metadata(),
                arena.stats().chunks
            );
        }
    }
    println!(
        "{ok} responses ({response_bytes} bytes of text), {too_large} requests over the \
         {LIMIT}-byte limit; the most the arena held during a request: {held_most} bytes"
    );

    // Every request over the limit was the huge kind, every other one was answered.
    assert_eq!(too_large, REQUESTS / HUGE_EVERY);
    assert_eq!(ok + too_large, REQUESTS);
    // Between requests the arena keeps one chunk, and it never held more than the limit.
    assert_eq!(arena.stats().chunks, 1);
    assert!(held_most <= LIMIT, "{held_most}");
}
