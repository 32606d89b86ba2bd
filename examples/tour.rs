//! A tour of `Arena`: standard collections on it, in-place growth, a reset loop, scopes and
//! the statistics. Run with `cargo run --release --example tour`.

use arena_pool::Arena;
use arena_pool::allocator_api2::{boxed::Box, vec::Vec};

fn main() {
    let mut arena = Arena::new();

    // A Vec that grows at the end of the arena grows in place: count how often its buffer moved.
    let mut v: Vec<u64, &Arena> = Vec::new_in(&arena);
    let mut moves = 0;
    let mut last = v.as_ptr();
    for i in 0..100_000 {
        v.push(i);
        if v.as_ptr() != last {
            moves += 1;
            last = v.as_ptr();
        }
    }
    println!(
        "Vec<u64>: 100000 pushes, buffer moved {moves} times, capacity {} bytes, arena used {} bytes",
        v.capacity() * 8,
        arena.used_bytes()
    );
    drop(v);

    // Box owns (and drops) its value; the arena only provides the memory.
    let greeting = Box::new_in(String::from("hello from a box in the arena"), &arena);
    println!("Box<String>: {greeting}");
    drop(greeting);

    // hashbrown's HashMap takes the arena as its allocator.
    let mut map = hashbrown::HashMap::new_in(&arena);
    for word in "the quick brown fox jumps over the lazy dog the end".split(' ') {
        *map.entry(word).or_insert(0u32) += 1;
    }
    println!("HashMap: \"the\" appears {} times", map["the"]);
    drop(map);
    println!("after the first round: {:?}", arena.stats());

    // A reset loop: the arena keeps its chunks, so after the first cycles nothing is allocated.
    for round in 0..5 {
        arena.reset();
        let before = arena.allocated_bytes();
        let words: Vec<&str, &Arena> = {
            let mut words = Vec::new_in(&arena);
            for i in 0..2_000 {
                words.push(&*arena.alloc_fmt(format_args!("word-{round}-{i}")));
            }
            words
        };
        println!(
            "round {round}: {} strings, last {:?}, used {} bytes, chunks grew by {} bytes",
            words.len(),
            words.last().copied().unwrap_or_default(),
            arena.used_bytes(),
            arena.allocated_bytes() - before
        );
    }

    // A scope gives temporary memory back on exit.
    arena.reset();
    let arena_ref = arena.as_arena_ref_mut();
    let kept = arena_ref.alloc_str("kept across the scope");
    let before = arena_ref.used_bytes();
    let sum = arena_ref.with_scope(|scope| {
        let scratch = scope.alloc_slice_fill_with(10_000, |i| i as u64);
        scratch.iter().sum::<u64>()
    });
    println!(
        "scope: sum {sum}, used before {before} / after {} bytes, {kept:?} intact",
        arena_ref.used_bytes()
    );
    println!("final: {:?}", arena.stats());
}
