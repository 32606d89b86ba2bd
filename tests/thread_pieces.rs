//! The shared path's per-thread pieces: each thread bumps a piece of its own, which is never used
//! after the arena is reset, scoped, checkpointed or dropped, and whose unused rest the
//! statistics do not count for the calling thread.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;

use arena_pool::SyncArena;
use arena_pool::allocator_api2::alloc::Allocator;
use arena_pool::allocator_api2::vec::Vec;

/// Whether `p` lies in one of the arena's chunks in use, as its chunk iteration yields them.
fn in_chunks(arena: &mut SyncArena, p: *const u8) -> bool {
    arena.iter_allocated_chunks().any(|bytes| {
        let range = bytes.as_ptr_range();
        range.start.cast::<u8>() <= p && p < range.end.cast::<u8>()
    })
}

#[test]
fn a_thread_sees_exact_statistics_of_its_own_blocks() {
    let arena = SyncArena::new();
    for i in 0..100u32 {
        arena.alloc(i);
    }
    // The thread's piece holds more than the 400 bytes, but only the blocks count.
    assert_eq!(arena.used_bytes(), 400);
    let s = arena.alloc_str("abc");
    assert_eq!(arena.used_bytes(), 403);
    assert_eq!(s, "abc");
}

#[test]
fn blocks_after_a_reset_or_a_new_arena_come_from_the_chunks_in_use() {
    // Arenas made one after another (often at the same address) and reset ones: a piece of an
    // earlier state is never bumped again.
    for round in 0..6u32 {
        let mut arena = SyncArena::new();
        for cycle in 0..3u32 {
            let v = arena.alloc(round * 10 + cycle);
            assert_eq!(*v, round * 10 + cycle);
            let p = core::ptr::from_ref(v).cast::<u8>();
            assert!(in_chunks(&mut arena, p));
            arena.reset();
        }
    }
}

#[test]
fn a_thread_keeps_a_piece_of_each_arena_it_uses_and_more_arenas_than_entries_work() {
    let arenas: std::vec::Vec<SyncArena> = (0..7).map(|_| SyncArena::new()).collect();
    let mut all: std::vec::Vec<std::vec::Vec<&u64>> = std::vec::Vec::new();
    all.resize_with(arenas.len(), std::vec::Vec::new);
    for i in 0..200u64 {
        for (k, arena) in arenas.iter().enumerate() {
            all[k].push(arena.alloc(i * 100 + k as u64));
        }
    }
    for (k, blocks) in all.iter().enumerate() {
        for (i, v) in blocks.iter().enumerate() {
            assert_eq!(**v, i as u64 * 100 + k as u64);
        }
    }
    // Each arena counts exactly its blocks for this thread, whatever the others did.
    for arena in &arenas[4..] {
        assert!(arena.used_bytes() >= 200 * 8);
    }
}

#[test]
fn the_last_block_grows_shrinks_and_goes_back_in_the_threads_piece() {
    let arena = SyncArena::new();
    arena.alloc(1u8);
    let used = arena.used_bytes();
    let a = &arena;
    let mut v: Vec<u32, _> = Vec::with_capacity_in(4, a);
    let p = v.as_ptr();
    v.extend(0..40u32); // grows in place: nothing follows it
    assert_eq!(v.as_ptr(), p);
    v.truncate(3);
    v.shrink_to_fit();
    assert_eq!(v.as_ptr(), p);
    // 3 bytes of padding after the `u8`, which stay when the block goes back.
    let used = used + 3;
    assert_eq!(arena.used_bytes(), used + 3 * 4);
    drop(v);
    assert_eq!(arena.used_bytes(), used);
    // A block the thread's piece does not hold goes back on the chunk as before.
    let layout = Layout::from_size_align(16 * 1024, 8).unwrap();
    let big = a.allocate(layout).unwrap().cast::<u8>();
    assert_eq!(arena.used_bytes(), used + 16 * 1024);
    // SAFETY: allocated above with `layout`, not used again.
    unsafe { a.deallocate(big, layout) };
    assert_eq!(arena.used_bytes(), used);
}

#[test]
fn a_scope_and_a_checkpoint_give_back_what_was_placed_in_pieces_after_them() {
    let mut arena = SyncArena::new();
    arena.alloc(7u64);
    let before = arena.used_bytes();
    arena.with_scope(|scope| {
        for i in 0..1000u64 {
            scope.alloc(i);
        }
        assert_eq!(scope.used_bytes(), before + 8000);
    });
    assert_eq!(arena.used_bytes(), before);
    let cp = arena.checkpoint();
    arena.alloc_slice_fill_copy(100, 1u32);
    // SAFETY: `cp` is this arena's, and the slice is not used again.
    unsafe { arena.reset_to(cp) };
    assert_eq!(arena.used_bytes(), before);
}

#[test]
fn threads_bump_pieces_of_their_own_and_no_block_overlaps_another() {
    let threads = if cfg!(miri) { 2 } else { 4 };
    let per_thread = if cfg!(miri) { 200 } else { 20_000 };
    let arena = SyncArena::new();
    let blocks: std::vec::Vec<std::vec::Vec<&[u64; 3]>> = std::thread::scope(|s| {
        let jobs: std::vec::Vec<_> = (0..threads as u64)
            .map(|t| {
                let arena = &arena;
                s.spawn(move || {
                    (0..per_thread as u64)
                        .map(|i| &*arena.alloc([t, i, t ^ i]))
                        .collect::<std::vec::Vec<_>>()
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let mut addrs = std::vec::Vec::new();
    for (t, mine) in blocks.iter().enumerate() {
        for (i, b) in mine.iter().enumerate() {
            assert_eq!(**b, [t as u64, i as u64, t as u64 ^ i as u64]);
            addrs.push(core::ptr::from_ref(*b).addr());
        }
    }
    addrs.sort_unstable();
    assert!(addrs.windows(2).all(|w| w[1] - w[0] >= 24));
    // The other threads' unused ends count as used: at most a piece each.
    let data = threads * per_thread * 24;
    assert!(arena.used_bytes() >= data);
    assert!(arena.used_bytes() <= data + threads * 8 * 1024);
}
