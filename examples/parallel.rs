//! Threads building one result in a `SyncArena`, and objects crossing threads in a `SyncPool`.
//!
//! 1. A program of 200 000 lines is parsed by every core at once: each thread parses its share
//!    into the shared arena through its own `LocalArena` handle, and the statements of all
//!    threads form one program that outlives the threads. The same parse on one thread with an
//!    `Arena` is timed beside it.
//! 2. Producers send `Box<Message, &SyncPool>` through a channel; the consumer drops them, each
//!    block going back to the shard it came from.
//!
//! Run: `cargo run --release --example parallel`
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::sync::mpsc;
use std::thread;
use std::time::Instant;

use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{Arena, SyncArena, SyncPool};

/// One parsed statement: `let <name> = <operands joined by operators>`.
#[derive(Debug)]
struct Stmt<'a> {
    name: &'a str,
    operands: &'a [&'a str],
}

/// Parses `lines` with `alloc_str` / `alloc_slice_fill_iter` / `alloc` of any arena-like handle.
macro_rules! parse_lines {
    ($arena:expr, $lines:expr) => {{
        let arena = $arena;
        $lines
            .iter()
            .map(|line| {
                let mut words = line.split(' ');
                let _let = words.next();
                let name = arena.alloc_str(words.next().unwrap_or(""));
                let _eq = words.next();
                let operands =
                    arena.alloc_slice_fill_iter(words.step_by(2).map(|w| &*arena.alloc_str(w)));
                &*arena.alloc(Stmt { name, operands })
            })
            .collect::<Vec<&Stmt>>()
    }};
}

fn main() {
    let lines: Vec<String> = (0..200_000u32)
        .map(|i| format!("let x{i} = x{} + {} * x{}", i / 2, i % 97, i / 3))
        .collect();
    let threads = thread::available_parallelism().map_or(2, |n| n.get());

    // ----- one result from every thread -----
    let arena = SyncArena::new();
    let started = Instant::now();
    let program: Vec<&Stmt> = thread::scope(|s| {
        let jobs: Vec<_> = lines
            .chunks(lines.len().div_ceil(threads))
            .map(|part| {
                let arena = &arena;
                s.spawn(move || parse_lines!(arena.local(), part))
            })
            .collect();
        jobs.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    let parallel = started.elapsed();
    assert_eq!(program.len(), lines.len());
    assert_eq!(program[123_456].name, "x123456");
    assert_eq!(program[123_456].operands, ["x61728", "72", "x41152"]);
    let stats = arena.stats();
    println!(
        "SyncArena, {threads} threads: {} statements in {parallel:.2?}; {} chunks, {:.1} MiB used of {:.1} MiB",
        program.len(),
        stats.chunks,
        stats.used_bytes as f64 / (1 << 20) as f64,
        stats.allocated_bytes as f64 / (1 << 20) as f64,
    );

    let single = Arena::new();
    let started = Instant::now();
    let program_1: Vec<&Stmt> = parse_lines!(&single, lines);
    let one = started.elapsed();
    assert_eq!(program_1[123_456].operands, program[123_456].operands);
    println!(
        "Arena, 1 thread: {} statements in {one:.2?}; {} chunks, {:.1} MiB used of {:.1} MiB",
        program_1.len(),
        single.stats().chunks,
        single.used_bytes() as f64 / (1 << 20) as f64,
        single.allocated_bytes() as f64 / (1 << 20) as f64,
    );

    // ----- objects crossing threads -----
    struct Message {
        id: u64,
        payload: [u64; 7],
    }
    let pool = &SyncPool::for_type::<Message>();
    let (tx, rx) = mpsc::sync_channel::<Box<Message, &SyncPool>>(256);
    let started = Instant::now();
    let received = thread::scope(|s| {
        for producer in 0..2u64 {
            let tx = tx.clone();
            s.spawn(move || {
                for i in 0..50_000u64 {
                    let id = producer << 32 | i;
                    tx.send(Box::new_in(
                        Message {
                            id,
                            payload: [id; 7],
                        },
                        pool,
                    ))
                    .unwrap();
                }
            });
        }
        drop(tx);
        s.spawn(move || {
            rx.into_iter()
                .inspect(|m| assert_eq!(m.payload[6], m.id))
                .count()
        })
        .join()
        .unwrap()
    });
    let stats = pool.stats();
    assert_eq!((received, stats.in_use), (100_000, 0));
    println!(
        "SyncPool, 2 producers and 1 consumer: {received} boxes in {:.2?}; {} shards, {} slots held ({} KiB) at the end, none in use",
        started.elapsed(),
        pool.shard_count(),
        stats.capacity,
        stats.bytes_held / 1024,
    );
}
