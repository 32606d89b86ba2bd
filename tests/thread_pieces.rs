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

#[test]
fn a_short_handles_piece_is_lent_from_the_threads_piece_and_its_rest_goes_back_there() {
    let arena = SyncArena::new();
    arena.alloc(0u64); // takes the first chunk; the next block cuts the thread's piece
    let mut end = core::ptr::from_ref(arena.alloc(1u64)).addr() + 8;
    for job in 0..5u32 {
        let (x, addr, chunks) = {
            let local = arena.local();
            let x = &*local.alloc(job);
            (x, core::ptr::from_ref(x).addr(), local.stats().chunks)
        };
        // The handle's piece is lent from the thread's piece, without a chunk header: its block
        // follows the thread's last block directly. (Not the first job's: the thread's first
        // piece has less left than a handle's piece takes, and the chunk has no room for the
        // next, so the first handle's piece is placed on the next chunk.)
        if job > 0 {
            assert_eq!(addr, end, "job {job}");
        }
        assert_eq!(chunks, 0, "job {job}");
        // The piece's unused end went back to the thread's piece: the next block follows the
        // handle's last one.
        let next = core::ptr::from_ref(arena.alloc(2u32)).addr();
        assert_eq!(next, addr + 4, "job {job}");
        end = next + 4;
        assert_eq!(*x, job);
        if job == 0 {
            // Another thread cuts its piece from the chunk after this thread's: the handles
            // still take theirs from this thread's piece.
            std::thread::scope(|s| s.spawn(|| *arena.alloc(7u64)).join().unwrap());
        }
    }
}

#[test]
fn a_handle_moved_to_another_thread_gives_back_nothing_it_does_not_own() {
    // A handle whose piece was cut from this thread's piece is dropped on another thread: its
    // rest may go back only where it is the end of what was handed out.
    let rounds = if cfg!(miri) { 4 } else { 64 };
    let owner = SyncArena::new();
    let arena = &owner;
    let mut kept: std::vec::Vec<(&u64, u64)> = std::vec::Vec::new();
    for round in 0..rounds as u64 {
        let local = arena.local();
        let a = local.alloc(round * 3);
        kept.push((a, round * 3));
        let (b, c) = std::thread::scope(|s| {
            s.spawn(move || {
                let b = local.alloc(round * 3 + 1);
                drop(local);
                // The other thread's own blocks, on the shared path and a new handle.
                let c = arena.alloc(round * 3 + 2);
                (b, c)
            })
            .join()
            .unwrap()
        });
        kept.push((b, round * 3 + 1));
        kept.push((c, round * 3 + 2));
        // This thread goes on where its piece was.
        let d = arena.alloc(u64::MAX - round);
        kept.push((d, u64::MAX - round));
    }
    let mut addrs: std::vec::Vec<usize> = kept
        .iter()
        .map(|(r, _)| core::ptr::from_ref(*r).addr())
        .collect();
    for (r, v) in &kept {
        assert_eq!(**r, *v);
    }
    addrs.sort_unstable();
    assert!(addrs.windows(2).all(|w| w[1] - w[0] >= 8), "blocks overlap");
}

/// The ranges a handle's chunk iteration yields, as byte vectors, newest first.
fn handle_ranges(local: &arena_pool::LocalArena<'_>) -> std::vec::Vec<std::vec::Vec<u8>> {
    // SAFETY: the handle does not change while the iterator is alive, and every byte read was
    // written by the block that holds it.
    unsafe { local.as_arena_ref().iter_allocated_chunks_raw() }
        .map(|(p, len)| unsafe { core::slice::from_raw_parts(p, len) }.to_vec())
        .collect()
}

#[test]
fn a_handles_headless_piece_is_counted_iterated_and_left_when_something_follows_it() {
    let arena = SyncArena::new();
    arena.alloc(0u8); // takes the first chunk and the thread's piece
    let local = arena.local();
    local.alloc_slice_copy(b"head");
    assert_eq!(local.stats().chunks, 0);
    assert_eq!(local.used_bytes(), 4);
    assert!(local.allocated_bytes() >= 4);
    assert_eq!(handle_ranges(&local), [b"head".to_vec()]);
    // Another handle takes its piece after this one's: this one's piece cannot lengthen, and a
    // request it has no room for moves the handle on to a chunk of its own.
    let other = arena.local();
    other.alloc(1u8);
    let big = local.alloc_slice_fill_copy(2000, 7u8);
    assert!(big.iter().all(|&b| b == 7));
    assert_eq!(local.stats().chunks, 1);
    assert_eq!(local.used_bytes(), 2004);
    // The chunk first (newest), then the headless piece's bytes.
    assert_eq!(handle_ranges(&local), [vec![7u8; 2000], b"head".to_vec()]);
}

#[test]
fn a_vector_leaving_a_handles_headless_piece_is_counted_once() {
    let arena = SyncArena::new();
    arena.alloc(0u8);
    let local = arena.local();
    let mut v: Vec<u64, _> = Vec::with_capacity_in(4, &local);
    v.extend(0..4);
    let other = arena.local();
    other.alloc(1u8);
    // The piece cannot lengthen past the other handle's: the vector moves to a chunk, and its
    // old buffer, the piece's last block, no longer counts.
    v.extend(4..100);
    assert!(v.iter().copied().eq(0..100));
    assert_eq!(local.stats().chunks, 1);
    assert_eq!(local.used_bytes(), v.capacity() * 8);
    drop(v);
    assert_eq!(local.used_bytes(), 0);
    assert!(handle_ranges(&local).is_empty());
}

#[test]
fn a_scope_on_a_handle_leaves_its_headless_piece_and_restores_exactly() {
    let arena = SyncArena::new();
    arena.alloc(0u8);
    let mut local = arena.local();
    let a = local.alloc(11u64);
    let used = local.used_bytes();
    let inner = local.as_arena_ref_mut().with_scope(|s| {
        let b = s.alloc(22u64);
        s.alloc_slice_fill_copy(3000, 1u8);
        *b + s.used_bytes() as u64
    });
    assert!(inner > 22 + 3000);
    assert_eq!(local.used_bytes(), used);
    assert_eq!(*a, 11);
    assert_eq!(handle_ranges(&local), [11u64.to_ne_bytes().to_vec()]);
    // A checkpoint taken before any piece: restoring it frees what the headless piece held.
    let mut fresh = arena.local();
    let cp = fresh.as_arena_ref().checkpoint();
    fresh.alloc_slice_copy(b"scratch");
    assert_eq!(fresh.used_bytes(), 7);
    // SAFETY: nothing allocated after the checkpoint is used again.
    unsafe { fresh.as_arena_ref_mut().reset_to(cp) };
    assert_eq!(fresh.used_bytes(), 0);
    assert!(handle_ranges(&fresh).is_empty());
    fresh.alloc_slice_copy(b"again");
    assert_eq!(handle_ranges(&fresh), [b"again".to_vec()]);
}

#[test]
fn a_handles_vector_grows_in_place_in_a_probed_cycle() {
    // Each cycle's vector is dropped before the reset, so the shared reset sees nothing in use:
    // once the first cycles' needs have aged out, the kept chunk looks oversized and the next
    // cycle runs under a probe that measures it. The handle's vector lengthens its piece past
    // the probe, as the shared path's last block does: after the first cycle it never moves.
    // (Capacity only, doubled with `reserve_exact`: the moves are in the growth.)
    let mut shared = SyncArena::new();
    for cycle in 0..8 {
        let moves = {
            let local = shared.local();
            let mut v: Vec<usize, _> = Vec::new_in(&local);
            v.push(cycle);
            let mut at = v.as_ptr();
            let mut moves = 0;
            while v.capacity() < 16 * 1024 {
                v.reserve_exact(2 * v.capacity() - v.len());
                moves += usize::from(v.as_ptr() != at);
                at = v.as_ptr();
            }
            assert_eq!(v[0], cycle);
            moves
        };
        // (The first cycle moves it from its first chunk into the bigger ones it takes.)
        if cycle >= 1 {
            assert_eq!(moves, 0, "the vector moved in cycle {cycle}");
        }
        shared.reset();
    }
}
