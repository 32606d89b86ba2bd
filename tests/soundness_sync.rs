//! Soundness of `SyncArena` and `LocalArena` at their two edges: large blocks placed, resized
//! and freed on the shared path by several threads at once (no header is read without the lock
//! while another thread relinks the list; Miri and ThreadSanitizer check the threads for data
//! races), and a backing allocator that unwinds in `deallocate` (during `reset`, `trim`, a
//! large block's free) or `allocate`: the arena stays consistent, no pointer into a block the
//! backing allocator took back stays reachable, the statistics match what the backing allocator
//! holds, and whatever the arena still holds goes back on drop. Under Miri the counts are scaled
//! down.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::ptr::NonNull;
use std::sync::{Arc, Weak};
use std::thread;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Layout};
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{LocalArena, SyncArena};
use common::{Tracked, all_bytes, expect_backing_panic, quiet};

/// Scales a count down under Miri, and to a tenth under ThreadSanitizer (`--cfg
/// arena_pool_tsan`: every memory access is checked there, about 10x slower).
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else if cfg!(arena_pool_tsan) {
        native / 10
    } else {
        native
    }
}

/// At least the large-block threshold (64 KiB): a block of its own on the shared path.
const LARGE: usize = 70_000;

/// Asserts that the arena's statistics count exactly what its backing allocator holds.
fn assert_counts_match<A: Allocator>(arena: &SyncArena<A>, backing: &Tracked) {
    let s = arena.stats();
    assert_eq!(
        (
            s.chunks + s.large_blocks + s.kept_large_blocks,
            s.allocated_bytes_including_metadata
        ),
        (backing.held_blocks(), backing.held_bytes()),
        "the arena counts other blocks than its backing allocator holds"
    );
}

/// A fresh block of `len` bytes from the shared path, which must lie in a block the backing
/// allocator holds, filled with `fill` and read back.
fn checked_block(arena: &SyncArena<&Tracked>, len: usize, fill: u8) -> NonNull<u8> {
    let p = arena
        .try_alloc_layout(Layout::from_size_align(len, 8).unwrap())
        .expect("the arena allocates");
    assert!(
        arena.allocator().holds(p, len),
        "a block in memory the backing allocator does not hold"
    );
    // SAFETY: a fresh block of `len` bytes.
    let s = unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), len) };
    s.fill(fill);
    assert!(all_bytes(s, fill));
    p
}

// ----- large blocks on the shared path, from several threads -----

/// Two threads place, resize and free large blocks on the shared path at once: each publishes
/// its block in the shared list under the lock while the other relinks that list, so nothing of
/// a linked block may be read without the lock. Every block keeps its contents.
#[test]
fn large_blocks_on_the_shared_path_from_two_threads() {
    let rounds = scaled(200, 8);
    let layout = Layout::from_size_align(LARGE, 8).unwrap();
    let arena = SyncArena::new();
    let kept: std::vec::Vec<(&[u8], u8)> = thread::scope(|s| {
        let jobs: std::vec::Vec<_> = (0..2u8)
            .map(|t| {
                let arena = &arena;
                s.spawn(move || {
                    let mut kept = std::vec::Vec::new();
                    for i in 0..rounds {
                        let fill = t * 100 + i as u8 % 100;
                        // The typed API: a block that stays.
                        let p = arena.alloc_layout(layout);
                        // The other thread's calls into the arena run now (a switch under Miri,
                        // whose scheduler seldom switches by itself at this point).
                        thread::yield_now();
                        // SAFETY: a fresh block of `LARGE` bytes, written before it is read,
                        // live until the arena is dropped.
                        let block = unsafe {
                            p.as_ptr().write_bytes(fill, LARGE);
                            core::slice::from_raw_parts(p.as_ptr(), LARGE)
                        };
                        kept.push((block, fill));
                        // The `Allocator` API: a block that goes back.
                        let q = arena.allocate(layout).unwrap().cast::<u8>();
                        // SAFETY: a fresh block of `LARGE` bytes, freed with its layout.
                        unsafe {
                            q.as_ptr().write(fill);
                            q.as_ptr().add(LARGE - 1).write(fill);
                            assert_eq!(*q.as_ptr().add(LARGE - 1), fill);
                            arena.deallocate(q, layout);
                        }
                        // A `Vec` grown past the threshold (moved into a large block), grown
                        // again (resized by the backing allocator), then shrunk back below it.
                        let mut v: Vec<u8, &SyncArena> = Vec::with_capacity_in(1000, arena);
                        v.extend_from_slice(&[fill; 64]);
                        v.reserve_exact(LARGE);
                        v.extend_from_slice(&[fill; 64]);
                        v.reserve_exact(2 * LARGE);
                        thread::yield_now();
                        v.extend_from_slice(&[fill; 64]);
                        assert!(v.capacity() >= 2 * LARGE);
                        v.truncate(100);
                        v.shrink_to_fit();
                        assert!(all_bytes(&v, fill));
                    }
                    kept
                })
            })
            .collect();
        jobs.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    assert_eq!(kept.len(), 2 * rounds);
    for (block, fill) in kept {
        // Compared in one piece (byte by byte, Miri is slow here).
        assert!(
            block == &vec![fill; LARGE][..],
            "a large block was overwritten"
        );
    }
    // Each kept block is a large block of its own: the chunks hold only small blocks, so none
    // has room for one.
    assert_eq!(arena.stats().large_blocks, 2 * rounds);
}

// ----- a backing allocator that unwinds in `deallocate` -----

/// An arena on `backing` holding `n` chunks, each filled with blocks, in its second cycle (a
/// fresh arena's first reset keeps its chunks for the next cycle): so that a reset renews them,
/// one chunk for the whole cycle, after every chunk went back.
fn arena_with_chunks(backing: &Tracked, n: usize) -> SyncArena<&Tracked> {
    let mut arena = SyncArena::new_in(backing);
    let mut fill = 1;
    loop {
        // Fill the current chunk (blocks of 8-byte multiples: no padding).
        let room = arena.stats().chunk_capacity & !7;
        if room != 0 {
            checked_block(&arena, room, fill);
            fill += 1;
        }
        if arena.stats().chunks == n {
            break;
        }
        // The next block takes a chunk.
        checked_block(&arena, 8, fill);
    }
    let held = backing.held_blocks();
    arena.reset();
    assert_eq!((backing.held_blocks(), arena.stats().chunks), (held, n));
    // The same cycle again, in the chunks kept: each 8-byte block moves to the next one.
    for k in 0..n {
        if k != 0 {
            checked_block(&arena, 8, fill);
        }
        let room = arena.stats().chunk_capacity & !7;
        checked_block(&arena, room, fill);
        fill += 1;
    }
    assert_eq!(
        (backing.held_blocks(), arena.stats().chunk_capacity),
        (held, 0)
    );
    arena
}

/// A reset whose backing allocator unwinds while it gives the chunks back, at each of its
/// calls in turn: the arena is left usable (its next block lies in memory the backing
/// allocator holds), its statistics count what the backing allocator holds, and dropping it
/// gives everything back.
#[test]
fn reset_that_unwinds_in_deallocate_leaves_nothing_dangling() {
    quiet();
    // Every chunk goes back (the reset renews them), in some order; each call unwinds once,
    // the last one first.
    for n in (0..3).rev() {
        let backing = Tracked::default();
        let mut arena = arena_with_chunks(&backing, 3);
        backing.panic_in_dealloc(n);
        expect_backing_panic(|| arena.reset());
        backing.disarm();
        assert_counts_match(&arena, &backing);
        // The shape of the reproducer: a slice right after the reset.
        let s = arena.alloc_slice_fill_copy(64, 0xABu8);
        assert!(backing.holds(NonNull::from(&mut *s).cast(), 64));
        assert!(all_bytes(s, 0xAB));
        let blocks: std::vec::Vec<_> = (0..3u8)
            .map(|k| (checked_block(&arena, 3000, k), k))
            .collect();
        for (p, k) in blocks {
            // SAFETY: a live block of 3000 bytes, filled with `k`.
            let s = unsafe { core::slice::from_raw_parts(p.as_ptr(), 3000) };
            assert!(all_bytes(s, k));
        }
        assert_counts_match(&arena, &backing);
        // Resets again as usual.
        arena.reset();
        checked_block(&arena, 100, 7);
        assert_counts_match(&arena, &backing);
        drop(arena);
        assert_eq!(
            backing.held_blocks(),
            0,
            "call {n}: a block was not given back"
        );
    }
}

/// A reset that unwinds while it frees the large blocks (the shared path's, and those a dropped
/// `LocalArena` handed over): the blocks freed so far are no longer counted, the others still
/// are and go back on drop.
#[test]
fn reset_that_unwinds_freeing_large_blocks() {
    quiet();
    let backing = Tracked::default();
    let mut arena = SyncArena::new_in(&backing);
    checked_block(&arena, LARGE, 1);
    {
        let local = arena.local();
        // Copied from a buffer: a fill writes a byte at a time under Miri.
        let s = local.alloc_slice_copy(&vec![2u8; LARGE]);
        assert!(backing.holds(NonNull::from(&mut *s).cast(), LARGE));
        local.alloc_slice_copy(&vec![3u8; LARGE]);
    }
    assert_eq!(arena.stats().large_blocks, 3);
    assert_counts_match(&arena, &backing);
    // The reset keeps them for the next cycle (they are what the cycle ended with) ...
    arena.reset();
    let s = arena.stats();
    assert_eq!((s.large_blocks, s.kept_large_blocks), (0, 3));
    assert_counts_match(&arena, &backing);
    // ... which takes none: the next reset gives them back, and the second free unwinds.
    backing.panic_in_dealloc(1);
    expect_backing_panic(|| arena.reset());
    backing.disarm();
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().kept_large_blocks, 1);
    checked_block(&arena, LARGE, 4);
    assert_counts_match(&arena, &backing);
    arena.reset();
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().large_blocks, 0);
    drop(arena);
    assert_eq!(backing.held_blocks(), 0);
}

/// A large block freed (and one moved below the threshold by a shrink) through a backing
/// allocator that unwinds: it is no longer counted, so the limit takes the same block again.
#[test]
fn large_block_free_that_unwinds_is_uncounted() {
    quiet();
    let backing = Tracked::default();
    let arena = SyncArena::new_in(&backing);
    let layout = Layout::from_size_align(LARGE, 8).unwrap();
    let p = arena.allocate(layout).unwrap().cast::<u8>();
    assert_eq!(arena.stats().large_blocks, 1);
    // Room for one large block beside what is held, no more.
    let held = arena.stats().allocated_bytes_including_metadata;
    arena.set_allocation_limit(Some(held + LARGE + 1024));
    backing.panic_in_dealloc(0);
    // SAFETY: `p` is a block of `layout` from this arena, not used again.
    expect_backing_panic(|| unsafe { arena.deallocate(p, layout) });
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().large_blocks, 0);
    let two = [
        checked_block(&arena, LARGE, 1),
        checked_block(&arena, LARGE, 2),
    ];
    assert_eq!(arena.stats().large_blocks, 2);
    arena.set_allocation_limit(None);

    // A shrink below the threshold moves the block into a chunk and frees the large one; the
    // shrink unwinds with that free.
    let mut v: Vec<u8, &SyncArena<&Tracked>> = Vec::with_capacity_in(LARGE, &arena);
    v.extend_from_slice(&[5; 100]);
    assert_eq!(arena.stats().large_blocks, 3);
    backing.panic_in_dealloc(0);
    expect_backing_panic(|| v.shrink_to_fit());
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().large_blocks, 2);
    // `v` still names the block the backing allocator took back: forgotten, not used.
    core::mem::forget(v);
    for (p, fill) in two.into_iter().zip(1..) {
        // SAFETY: live blocks of `LARGE` bytes.
        let s = unsafe { core::slice::from_raw_parts(p.as_ptr(), LARGE) };
        assert!(all_bytes(s, fill));
    }
    drop(arena);
    assert_eq!(backing.held_blocks(), 0);
}

/// A `LocalArena`'s large block freed through a backing allocator that unwinds: the shared
/// arena no longer counts it. Dropping the handle then calls no backing allocator (its pieces
/// and large blocks stay with the shared arena), and the shared arena gives everything back.
#[test]
fn local_large_block_free_that_unwinds_and_local_drop() {
    quiet();
    let backing = Tracked::default();
    let arena = SyncArena::new_in(&backing);
    let layout = Layout::from_size_align(LARGE, 8).unwrap();
    let local = arena.local();
    let kept = local.alloc_slice_copy(&vec![6u8; LARGE]);
    let p = local.allocate(layout).unwrap().cast::<u8>();
    assert_eq!(arena.stats().large_blocks, 2);
    backing.panic_in_dealloc(0);
    // SAFETY: `p` is a block of `layout` from this handle, not used again.
    expect_backing_panic(|| unsafe { local.deallocate(p, layout) });
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().large_blocks, 1);
    let small = local.alloc_slice_fill_copy(500, 7u8);
    // Every further `deallocate` unwinds: dropping the handle must not call it.
    backing.panic_in_dealloc(0);
    drop::<LocalArena<'_, &Tracked>>(local);
    backing.disarm();
    assert!(all_bytes(kept, 6) && all_bytes(small, 7));
    assert_counts_match(&arena, &backing);
    drop(arena);
    assert_eq!(backing.held_blocks(), 0);
}

/// A backing allocator that the arena and the nested actions of its [`Tracked`] share.
#[derive(Clone)]
struct Shared(Arc<Tracked>);

// SAFETY: forwarded to the `Tracked` it points to.
unsafe impl Allocator for Shared {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.0.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.deallocate(ptr, layout) }
    }
}

/// A nested request of 16 bytes in `arena`, made from inside a backing call; with `more` left,
/// the request's own backing call makes the next one first.
fn nested_request(arena: Weak<SyncArena<Shared>>, more: usize) -> Box<dyn FnOnce() + Send> {
    Box::new(move || {
        let shared = arena.upgrade().expect("the arena is alive");
        if more > 0 {
            shared
                .allocator()
                .0
                .run_inside_next(nested_request(arena, more - 1));
        }
        shared.alloc_slice_fill_copy(16, 2u8);
    })
}

/// Makes two spare chunks: a request that needs a chunk, during whose backing call a nested
/// request needs one too, during whose backing call another nested request installs a chunk
/// with room for all three; the first two chunks then stay spares.
fn make_two_spares(arena: &Arc<SyncArena<Shared>>) {
    let chunks = arena.stats().chunks;
    // Fill the current chunk, so that each request needs a chunk.
    let room = arena.stats().chunk_capacity;
    if room != 0 {
        arena.alloc_slice_fill_copy(room, 1u8);
    }
    arena
        .allocator()
        .0
        .run_inside_next(nested_request(Arc::downgrade(arena), 1));
    arena.alloc_slice_fill_copy(16, 3u8);
    assert_eq!(arena.stats().chunks, chunks + 3);
}

/// `trim` whose backing allocator unwinds on the first spare: the spares not yet given back
/// stay the arena's (counted, and given back by the next `trim` or drop).
#[test]
fn trim_that_unwinds_keeps_the_other_spares() {
    quiet();
    let backing = Arc::new(Tracked::default());
    let arena = Arc::new(SyncArena::new_in(Shared(backing.clone())));
    let first = arena.alloc_slice_fill_copy(100, 9u8);
    let first = (NonNull::from(&mut *first).cast::<u8>(), first.len());
    make_two_spares(&arena);
    let mut arena = Arc::into_inner(arena).expect("no other owner");
    let chunks = arena.stats().chunks;
    backing.panic_in_dealloc(0);
    expect_backing_panic(|| arena.trim());
    backing.disarm();
    assert_counts_match(&arena, &backing);
    assert_eq!(arena.stats().chunks, chunks - 1);
    arena.trim();
    assert_counts_match(&arena, &backing);
    assert_eq!(
        arena.stats().chunks,
        chunks - 2,
        "the other spare goes back"
    );
    assert!(backing.holds(first.0, first.1));
    // SAFETY: the arena's first block, live until reset or drop.
    let first = unsafe { core::slice::from_raw_parts(first.0.as_ptr(), first.1) };
    assert!(all_bytes(first, 9));
    drop(arena);
    assert_eq!(backing.held_blocks(), 0);
}

// ----- a backing allocator that unwinds in `allocate` -----

/// A reset that plans a chunk for the next cycle, whose taking unwinds: the plan stays, and the
/// next request that needs a chunk takes the planned one.
#[test]
fn refill_that_unwinds_keeps_the_planned_chunk() {
    quiet();
    let backing = Tracked::default();
    let mut arena = SyncArena::new_in(&backing);
    // More than three times the largest chunk an arena grows to (16 MiB), in blocks of the
    // chunks (below the large-block threshold), untouched.
    let (count, size) = (900, 60_000);
    let fill = |arena: &SyncArena<&Tracked>| {
        checked_block(arena, 1000, 1);
        for _ in 0..count {
            arena.alloc_layout(Layout::from_size_align(size, 8).unwrap());
        }
    };
    fill(&arena);
    arena.reset();
    // The cycle needed far more than the chunk kept: the next chunk is planned for it.
    let kept = arena.stats().chunk_capacity;
    assert!(kept < count * size / 3, "{kept}");
    arena.alloc_layout(Layout::array::<u8>(kept).unwrap());
    backing.panic_in_next_alloc();
    expect_backing_panic(|| {
        arena.alloc_slice_fill_copy(64, 3u8);
    });
    assert_counts_match(&arena, &backing);
    checked_block(&arena, 64, 3);
    assert!(
        arena.stats().chunk_capacity >= count * size,
        "the planned chunk was not taken: {}",
        arena.stats().chunk_capacity
    );
    drop(arena);
    assert_eq!(backing.held_blocks(), 0);
}
