//! A tour of `Arena`: standard collections on it, in-place growth, a reset loop, scopes and
//! the statistics; then the pools, `Pool` (one slot size, `Box` churn) and `SizeClassPool`
//! (mixed sizes, a `HashMap` of `Vec`s). Run with `cargo run --release --example tour`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use arena_pool::allocator_api2::{boxed::Box, vec::Vec};
use arena_pool::{Arena, Pool, SizeClassPool};

fn main() {
    let mut arena = Arena::new();

    // A Vec that grows at the end of the arena grows in place while its chunk has room; when it
    // outgrows the chunk it moves, below 64 KiB to a new chunk (with room to grow in place
    // again), past 64 KiB into a large block of its own, which then grows by the backing
    // allocator's realloc (in place or not, as that allocator decides). Count the moves.
    let mut v: Vec<u64, &Arena> = Vec::new_in(&arena);
    let (mut to_chunk, mut to_large, mut by_realloc) = (0, 0, 0);
    let mut last = v.as_ptr();
    for i in 0..100_000 {
        let (had_buffer, was_large) = (v.capacity() > 0, arena.stats().large_blocks > 0);
        v.push(i);
        if v.as_ptr() != last {
            last = v.as_ptr();
            if !had_buffer {
                continue; // its first allocation
            }
            match (was_large, arena.stats().large_blocks > 0) {
                (false, false) => to_chunk += 1,
                (false, true) => to_large += 1,
                (true, _) => by_realloc += 1,
            }
        }
    }
    println!(
        "Vec<u64>: 100000 pushes; its buffer moved {to_chunk} times to a new chunk, {to_large} \
         time into a large block, then {by_realloc} times by realloc; capacity {} bytes, arena \
         used {} bytes (bump blocks), large blocks {}",
        v.capacity() * 8,
        arena.used_bytes(),
        arena.stats().large_blocks
    );
    drop(v); // the large block goes back to the backing allocator at once

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

    // A reset loop: reset keeps one chunk, sized for the most any of the last four cycles
    // needed, so after its first cycle the loop takes nothing more from the backing allocator.
    // Here the cycle before the loop held the 1 MiB Vec: the chunk round 0 takes is sized for
    // that, and kept until the reset after round 3 forgets it; round 4 runs under a probe that
    // measures it, and the reset after it gives a chunk for the loop.
    for round in 0..6 {
        arena.reset();
        let before = arena.allocated_bytes_including_metadata();
        let words: Vec<&str, &Arena> = {
            let mut words = Vec::new_in(&arena);
            for i in 0..2_000 {
                words.push(&*arena.alloc_fmt(format_args!("word-{round}-{i}")));
            }
            words
        };
        let s = arena.stats();
        println!(
            "round {round}: {} strings, last {:?}, used {} bytes, {} more bytes taken, {} held \
             in {} chunk(s)",
            words.len(),
            words.last().copied().unwrap_or_default(),
            s.used_bytes,
            s.allocated_bytes_including_metadata - before,
            s.allocated_bytes_including_metadata,
            s.chunks
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

    // A `Pool` frees every block and hands it out again: churn of `Box<T, &Pool>` stays bounded.
    let pool = Pool::for_type::<[u64; 4]>();
    let mut boxes = std::vec::Vec::new();
    for i in 0..10_000u64 {
        boxes.push(Box::new_in([i; 4], &pool));
        if boxes.len() > 100 {
            boxes.swap_remove((i as usize * 7919) % boxes.len()); // freed: its slot comes back
        }
    }
    println!(
        "Pool: 10000 boxes created, {} alive: in_use {}, capacity {} slots of {} bytes, {:?}",
        boxes.len(),
        pool.in_use(),
        pool.capacity(),
        pool.slot_size(),
        pool.stats()
    );
    assert_eq!(pool.in_use(), boxes.len());
    assert!(pool.capacity() < 2 * boxes.len());
    drop(boxes);
    assert_eq!(pool.in_use(), 0);

    // A `SizeClassPool` serves mixed sizes (a HashMap's table, Vecs of any length) and gives
    // emptied pages back.
    let classes = SizeClassPool::new();
    let mut buffers = hashbrown::HashMap::new_in(&classes);
    for i in 0..5_000u64 {
        let mut buffer = Vec::with_capacity_in((i % 300) as usize + 1, &classes);
        buffer.extend((0..=i % 300).map(|b| b as u8));
        buffers.insert(i % 1_000, buffer); // replaces (and frees) an older buffer
    }
    let s = classes.stats();
    println!(
        "SizeClassPool: HashMap of {} Vec<u8>: {} blocks live, {} pages ({} bytes held), \
         {} fallback blocks",
        buffers.len(),
        s.live_blocks(),
        s.pages,
        s.bytes_held,
        s.fallback_blocks
    );
    // The buffers and the map's table (too large for a class: it comes from the global allocator).
    assert_eq!(s.live_blocks() + s.fallback_blocks, buffers.len() + 1);
    drop(buffers);
    let s = classes.stats();
    println!(
        "SizeClassPool after the map is dropped: {} blocks live, {} pages ({} cached empty, {} B \
         held), {} fallback blocks",
        s.live_blocks(),
        s.pages,
        s.empty_pages,
        s.bytes_held,
        s.fallback_blocks
    );
    assert_eq!((s.live_blocks(), s.fallback_blocks), (0, 0));
    // What is held: cached empty pages (at most `max_empty_pages` largest pages' worth) and the
    // one small page (at most 4 KiB) that a class may keep formatted for its next block.
    let o = classes.options();
    assert!(s.empty_bytes <= o.max_empty_pages * o.page_size);
    assert!(s.bytes_held - s.empty_bytes <= s.classes().filter(|c| c.pages > 0).count() * 4096);
}
