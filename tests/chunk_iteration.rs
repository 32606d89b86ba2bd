//! Chunk iteration (`iter_allocated_chunks` and its raw form): the bytes yielded are exactly the
//! bytes written, newest chunk first and in allocation order within a chunk, then the large
//! blocks; the chunk slices add up to `used_bytes`; spares are never yielded. Across several
//! chunks, resets, scopes (parked ones too), large blocks, a growing `Vec` and `SyncArena`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::mem::MaybeUninit;
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::vec::Vec as ArenaVec;
use arena_pool::{Arena, ArenaRef, ChunkIter, ChunkRawIter, SyncArena};

/// `len` bytes that differ from block to block. The byte at `j` repeats every 256 bytes, so
/// the first period is made a byte at a time and the rest copied from it in pieces (one step
/// each under Miri, where a byte at a time over a large block takes minutes).
fn pattern(i: usize, len: usize) -> Vec<u8> {
    let period: Vec<u8> = (0..len.min(256))
        .map(|j| (i * 31 + j * 7 + 1) as u8)
        .collect();
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() < len {
        let take = (len - bytes.len()).min(period.len());
        bytes.extend_from_slice(&period[..take]);
    }
    bytes
}

/// The bytes of `s`, every one of which the test wrote.
fn read(s: &[MaybeUninit<u8>]) -> Vec<u8> {
    // SAFETY: callers pass only bytes they wrote, so all of `s` is initialised, and
    // `MaybeUninit<u8>` has the layout of `u8`.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) }.to_vec()
}

/// Copies of what `iter_allocated_chunks` yields, in its order.
fn snapshot(arena: &mut Arena) -> Vec<Vec<MaybeUninit<u8>>> {
    arena.iter_allocated_chunks().map(<[_]>::to_vec).collect()
}

/// Copies of what `ArenaRef::iter_allocated_chunks_raw` yields, in its order.
fn snapshot_raw(arena: &ArenaRef<'_>) -> Vec<Vec<MaybeUninit<u8>>> {
    // SAFETY: nothing allocates while the iterator lives, and no `&mut` into the arena is used
    // again by the callers.
    let ranges: Vec<(*mut u8, usize)> = unsafe { arena.iter_allocated_chunks_raw() }.collect();
    ranges
        .into_iter()
        .map(|(p, len)| {
            // SAFETY: each range is the arena's memory, not written meanwhile (as above).
            unsafe { std::slice::from_raw_parts(p.cast::<MaybeUninit<u8>>(), len) }.to_vec()
        })
        .collect()
}

fn total(chunks: &[Vec<MaybeUninit<u8>>]) -> usize {
    chunks.iter().map(Vec::len).sum()
}

/// The chunk slices oldest first, concatenated: everything bumped, in allocation order.
fn oldest_first(chunks: &[Vec<MaybeUninit<u8>>]) -> Vec<MaybeUninit<u8>> {
    let mut bytes = Vec::with_capacity(total(chunks));
    for chunk in chunks.iter().rev() {
        bytes.extend_from_slice(chunk);
    }
    bytes
}

/// Places `n` byte slices of varied lengths (alignment 1: no padding) and returns what it wrote.
fn fill(arena: &ArenaRef<'_>, first: usize, n: usize) -> Vec<u8> {
    let mut written = Vec::new();
    for i in first..first + n {
        let p = pattern(i, 1 + i % 37);
        assert_eq!(arena.alloc_slice_copy(&p), &p[..]);
        written.extend_from_slice(&p);
    }
    written
}

#[test]
fn an_arena_without_blocks_yields_nothing() {
    let mut arena = Arena::new();
    assert_eq!(arena.iter_allocated_chunks().count(), 0);
    let mut reserved = Arena::with_capacity(1000);
    assert_eq!(reserved.stats().chunks, 1);
    assert_eq!(reserved.iter_allocated_chunks().count(), 0);
    // SAFETY: the arena does not change while the iterator lives.
    assert_eq!(unsafe { reserved.iter_allocated_chunks_raw() }.count(), 0);
    let mut shared = SyncArena::new();
    assert_eq!(shared.iter_allocated_chunks().count(), 0);
    let mut shared = SyncArena::with_capacity(1000);
    assert_eq!(shared.iter_allocated_chunks().count(), 0);
}

#[test]
fn the_bytes_come_newest_chunk_first_in_allocation_order_within_each() {
    let n = if cfg!(miri) { 300 } else { 3000 };
    let mut arena = Arena::new();
    let written = fill(arena.as_arena_ref(), 0, n);
    let chunks = snapshot(&mut arena);
    assert!(chunks.len() >= 3, "{} chunks", chunks.len());
    assert_eq!(total(&chunks), arena.used_bytes());
    assert_eq!(read(&oldest_first(&chunks)), written);
    // The newest chunk comes first: it ends with the last slice written.
    let last = pattern(n - 1, 1 + (n - 1) % 37);
    assert!(read(&chunks[0]).ends_with(&last));
    // The first chunk yielded is the current one, and the oldest starts with the first slice.
    assert!(read(chunks.last().unwrap()).starts_with(&pattern(0, 1)));

    // The raw form yields the same ranges, in the same order.
    let raw = snapshot_raw(arena.as_arena_ref());
    assert_eq!(
        raw.iter().map(|c| read(c)).collect::<Vec<_>>(),
        chunks.iter().map(|c| read(c)).collect::<Vec<_>>()
    );
}

#[test]
fn padding_is_yielded_and_counted() {
    let mut arena = Arena::new();
    arena.alloc(0x11u8);
    arena.alloc(0x2222_2222u32);
    let chunks = snapshot(&mut arena);
    assert_eq!(chunks.len(), 1);
    // One byte, three of padding (uninitialised, not read), four bytes.
    assert_eq!(chunks[0].len(), 8);
    assert_eq!(read(&chunks[0][..1]), [0x11]);
    assert_eq!(read(&chunks[0][4..]), [0x22; 4]);
    assert_eq!(arena.used_bytes(), 8);
}

#[test]
fn after_a_reset_only_the_new_blocks_are_yielded() {
    let n = if cfg!(miri) { 300 } else { 3000 };
    let mut arena = Arena::new();
    fill(arena.as_arena_ref(), 0, n);
    arena.reset();
    assert_eq!(arena.iter_allocated_chunks().count(), 0);
    // The first reset of an arena that outgrew its chunks keeps them all: the next cycle runs
    // through them again, and the chunks it has not reached are spares, not yielded.
    let held = arena.stats().chunks;
    assert!(held >= 3);
    for cycle in 1..4 {
        let written = fill(arena.as_arena_ref(), cycle * n, n / (cycle + 1));
        let chunks = snapshot(&mut arena);
        assert!(chunks.len() <= arena.stats().chunks);
        assert_eq!(total(&chunks), arena.used_bytes());
        assert_eq!(read(&oldest_first(&chunks)), written, "cycle {cycle}");
        arena.reset();
        assert_eq!(arena.iter_allocated_chunks().count(), 0);
    }
}

#[test]
fn a_scope_is_yielded_while_it_lives_and_its_chunks_are_spares_after() {
    let n = if cfg!(miri) { 150 } else { 1500 };
    let mut arena = Arena::new();
    let parent = fill(arena.as_arena_ref(), 0, 5);
    arena.with_scope(|scope| {
        let child = fill(scope, 100, n);
        let chunks = snapshot_raw(scope);
        assert!(chunks.len() >= 2);
        assert_eq!(total(&chunks), scope.used_bytes());
        // The parent's blocks, the byte the scope stepped over (never written), the scope's.
        let all = oldest_first(&chunks);
        assert_eq!(read(&all[..parent.len()]), parent);
        assert_eq!(read(&all[parent.len() + 1..]), child);
    });
    assert!(arena.stats().chunks >= 2);
    let chunks = snapshot(&mut arena);
    assert_eq!(chunks.len(), 1);
    assert_eq!(read(&chunks[0]), parent);
    assert_eq!(total(&chunks), arena.used_bytes());

    // A scope guard, the same.
    {
        let mut guard = arena.scope_guard();
        let scope = guard.scope();
        let child = fill(scope, 7, 10);
        let all = oldest_first(&snapshot_raw(scope));
        assert_eq!(read(&all[parent.len() + 1..]), child);
    }
    assert_eq!(read(&oldest_first(&snapshot(&mut arena))), parent);
}

#[test]
fn a_scope_parked_on_a_full_chunk_counts_that_chunk_once() {
    let mut arena = Arena::new();
    let mut parent = pattern(1, 10);
    arena.alloc_slice_copy(&parent);
    // Fill the chunk to its end: a scope entered now parks at the chunk's start.
    let room = arena.chunk_capacity();
    parent.extend(pattern(2, room));
    arena.alloc_slice_copy(&parent[10..]);
    assert_eq!(arena.chunk_capacity(), 0);
    arena.with_scope(|scope| {
        // A scope nested in the parked one, before it allocates: it parks again and restores
        // the parked position on exit.
        scope.with_scope(|inner| {
            let p = pattern(3, 40);
            inner.alloc_slice_copy(&p);
            let chunks = snapshot_raw(inner);
            assert_eq!(total(&chunks), inner.used_bytes());
            assert_eq!(read(&chunks[0]), p);
            assert_eq!(read(&chunks[1]), parent);
        });
        let chunks = snapshot_raw(scope);
        assert_eq!(chunks.len(), 1);
        assert_eq!(read(&chunks[0]), parent);
        assert_eq!(total(&chunks), scope.used_bytes());
        let p = pattern(4, 20);
        scope.alloc_slice_copy(&p);
        let chunks = snapshot_raw(scope);
        assert_eq!(chunks.len(), 2);
        assert_eq!(total(&chunks), scope.used_bytes());
        assert_eq!(read(&chunks[0]), p);
        assert_eq!(read(&chunks[1]), parent);
    });
    let chunks = snapshot(&mut arena);
    assert_eq!(chunks.len(), 1);
    assert_eq!(read(&chunks[0]), parent);
    // The full chunk is left again, as the arena moves on: its fill is recorded once.
    let p = pattern(5, 30);
    arena.alloc_slice_copy(&p);
    let chunks = snapshot(&mut arena);
    assert_eq!(total(&chunks), arena.used_bytes());
    assert_eq!(read(&chunks[0]), p);
    assert_eq!(read(&chunks[1]), parent);
}

#[test]
fn a_checkpoint_restores_what_the_chunks_yield() {
    let mut arena = Arena::new();
    let before = fill(arena.as_arena_ref(), 0, 20);
    let cp = arena.checkpoint();
    fill(
        arena.as_arena_ref(),
        20,
        if cfg!(miri) { 200 } else { 2000 },
    );
    // SAFETY: nothing allocated after the checkpoint is used again.
    unsafe { arena.reset_to(cp) };
    let chunks = snapshot(&mut arena);
    assert_eq!(total(&chunks), arena.used_bytes());
    assert_eq!(read(&oldest_first(&chunks)), before);
    // Moving on through the spares again records each chunk's new fill.
    let after = fill(
        arena.as_arena_ref(),
        5000,
        if cfg!(miri) { 100 } else { 1000 },
    );
    let chunks = snapshot(&mut arena);
    assert_eq!(total(&chunks), arena.used_bytes());
    assert_eq!(read(&oldest_first(&chunks)), [before, after].concat());
}

#[test]
fn a_vec_that_grows_out_of_its_chunks_leaves_their_counts_exact() {
    let mut arena = Arena::new();
    let head = pattern(9, 100);
    arena.alloc_slice_copy(&head);
    let n = if cfg!(miri) { 3000 } else { 30_000 };
    let mut v = ArenaVec::new_in(&arena);
    for i in 0..n {
        v.push(i as u8);
    }
    // The buffer moved as the last block of each chunk it outgrew: those chunks no longer
    // count it. Forget the vector (its bytes stay the arena's) to iterate.
    let (at, len) = (v.as_ptr() as usize, v.len());
    std::mem::forget(v);
    let chunks = snapshot(&mut arena);
    assert_eq!(total(&chunks), arena.used_bytes());
    assert!(arena.stats().chunks >= 3);
    assert_eq!(arena.stats().large_blocks, 0);
    assert_eq!(read(&chunks.last().unwrap()[..100]), head);
    // The vector is the newest chunk's last block.
    let newest = &chunks[0];
    let start = arena
        .iter_allocated_chunks()
        .next()
        .map(|s| s.as_ptr() as usize)
        .unwrap();
    let off = at - start;
    let want: Vec<u8> = (0..n).map(|i| i as u8).collect();
    assert_eq!(read(&newest[off..off + len]), want);
}

#[test]
fn large_blocks_come_after_the_chunks_newest_first() {
    let mut arena = Arena::new();
    let a = pattern(6, 50);
    arena.alloc_slice_copy(&a);
    // Two large blocks through the `Allocator` methods (sizes that need no rounding), and a
    // typed slice too large for the chunk.
    let mut large = Vec::new();
    for (i, size) in [(7, 64 * 1024), (8, 80 * 1024)] {
        let p: NonNull<u8> = arena
            .allocate(Layout::from_size_align(size, 8).unwrap())
            .unwrap()
            .cast();
        let bytes = pattern(i, size);
        // SAFETY: a fresh block of `size` bytes.
        unsafe { p.as_ptr().copy_from_nonoverlapping(bytes.as_ptr(), size) };
        large.push(bytes);
    }
    let typed = pattern(10, 70_000);
    arena.alloc_slice_copy(&typed);
    large.push(typed);
    let b = pattern(11, 60);
    arena.alloc_slice_copy(&b);
    assert_eq!(arena.stats().large_blocks, 3);

    let chunks = snapshot(&mut arena);
    assert_eq!(chunks.len(), 4);
    assert_eq!(read(&chunks[0]), [a.clone(), b].concat());
    // Newest first, each exactly its data (a multiple of 16 bytes: no rounding).
    assert_eq!(read(&chunks[1]), large[2]);
    assert_eq!(read(&chunks[2]), large[1]);
    assert_eq!(read(&chunks[3]), large[0]);
    let large_total: usize = large.iter().map(Vec::len).sum();
    assert_eq!(total(&chunks), arena.used_bytes() + large_total);

    // A reset keeps the large blocks for reuse: not in use, not yielded.
    arena.reset();
    assert!(arena.stats().kept_large_blocks > 0);
    assert_eq!(arena.iter_allocated_chunks().count(), 0);
    // A request takes a kept block: its room (at least the request) is yielded.
    let again = pattern(12, 64 * 1024);
    arena.alloc_slice_copy(&again);
    let chunks = snapshot(&mut arena);
    assert_eq!(chunks.len(), 1);
    assert!(chunks[0].len() >= again.len());
    assert_eq!(read(&chunks[0][..again.len()]), again);
}

#[test]
fn a_sync_arena_yields_its_chunks_and_large_blocks() {
    let per_thread = if cfg!(miri) { 20 } else { 400 };
    let mut arena = SyncArena::new();
    let first = pattern(20, 40);
    arena.alloc_slice_copy(&first);
    std::thread::scope(|s| {
        for t in 0..2 {
            let arena = &arena;
            s.spawn(move || {
                let local = arena.local();
                for i in 0..per_thread {
                    local.alloc_slice_copy(&pattern(t * 1000 + i, 1 + i % 50));
                }
                // A large block of a handle goes to the arena when the handle is dropped.
                local.alloc_slice_copy(&pattern(30 + t, 70_000));
            });
        }
    });
    let p: NonNull<u8> = arena
        .allocate(Layout::from_size_align(96 * 1024, 16).unwrap())
        .unwrap()
        .cast();
    let last = pattern(40, 96 * 1024);
    // SAFETY: a fresh block of that size.
    unsafe {
        p.as_ptr()
            .copy_from_nonoverlapping(last.as_ptr(), last.len())
    };

    let stats = arena.stats();
    assert_eq!(stats.large_blocks, 3);
    let chunks: Vec<Vec<MaybeUninit<u8>>> =
        arena.iter_allocated_chunks().map(<[_]>::to_vec).collect();
    let in_chunks = chunks.len() - 3;
    assert_eq!(total(&chunks[..in_chunks]), arena.used_bytes());
    assert_eq!(total(&chunks), arena.used_bytes() + 70_000 * 2 + last.len());
    // The oldest chunk starts with the first block of the shared path; the newest large block
    // comes right after the chunks.
    assert_eq!(read(&chunks[in_chunks - 1][..first.len()]), first);
    assert_eq!(read(&chunks[in_chunks]), last);
    let handles: Vec<Vec<u8>> = chunks[in_chunks + 1..].iter().map(|c| read(c)).collect();
    assert!(handles.contains(&pattern(30, 70_000)) && handles.contains(&pattern(31, 70_000)));

    arena.reset();
    assert_eq!(arena.iter_allocated_chunks().count(), 0);
}

#[test]
fn a_local_arena_view_yields_the_handles_memory() {
    let shared = SyncArena::new();
    let local = shared.local();
    let p = pattern(50, 100);
    local.alloc_slice_copy(&p);
    let chunks = snapshot_raw(local.as_arena_ref());
    assert_eq!(chunks.len(), 1);
    assert_eq!(read(&chunks[0]), p);
    assert_eq!(total(&chunks), local.used_bytes());
}

#[test]
fn the_iterators_are_fused_and_debug() {
    let mut arena = Arena::new();
    arena.alloc(1u64);
    let mut it: ChunkIter<'_> = arena.iter_allocated_chunks();
    assert!(format!("{it:?}").starts_with("ChunkIter"));
    assert_eq!(it.next().map(<[_]>::len), Some(8));
    assert!(it.next().is_none() && it.next().is_none());
    // SAFETY: the arena does not change while the iterator lives.
    let mut raw: ChunkRawIter<'_> = unsafe { arena.iter_allocated_chunks_raw() };
    assert!(format!("{raw:?}").starts_with("ChunkRawIter"));
    assert_eq!(raw.next().map(|r| r.1), Some(8));
    assert!(raw.next().is_none() && raw.next().is_none());
}
