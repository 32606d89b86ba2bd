//! loom models of the thread-safe types: every interleaving (up to loom's preemption bound) of
//! the shared bump and its refill, of `LocalArena` pieces and their give-back, and of `SyncPool`'s
//! cross-thread free. The crate's atomics and locks are loom's in this build (`src/sync/shim.rs`).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test --release --test loom --target-dir target/loom`
//! (`LOOM_MAX_PREEMPTIONS` sets the bound; `.ci/run` uses 3). Each model prints how many
//! interleavings it explored.
#![cfg(loom)]

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use arena_pool::allocator_api2::alloc::{Allocator, Global, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{SyncArena, SyncPool};
use loom::sync::Arc;
use loom::thread;

/// Runs `body` under loom's model checker and prints the number of executions it explored.
fn model(name: &str, body: impl Fn() + Sync + Send + 'static) {
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        body();
    });
    println!(
        "loom model {name}: {} interleavings explored (preemption bound {:?})",
        runs.load(Ordering::Relaxed),
        builder.preemption_bound
    );
}

/// A block as an address range, filled with a byte pattern.
struct Block {
    ptr: NonNull<u8>,
    len: usize,
    fill: u8,
}

// SAFETY: a block is owned by one thread at a time in these models (a plain address + pattern).
unsafe impl Send for Block {}

impl Block {
    fn new(ptr: NonNull<u8>, len: usize, fill: u8) -> Block {
        // SAFETY: `ptr` was just allocated for `len` bytes.
        unsafe { ptr.as_ptr().write_bytes(fill, len) };
        Block { ptr, len, fill }
    }

    fn check(&self) {
        // SAFETY: the block is live and was filled in `new`.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        assert!(bytes.iter().all(|&b| b == self.fill), "block overwritten");
    }

    fn range(&self) -> (usize, usize) {
        let start = self.ptr.as_ptr() as usize;
        (start, start + self.len)
    }
}

fn assert_disjoint(blocks: &[Block]) {
    let mut ranges: Vec<_> = blocks.iter().map(Block::range).collect();
    ranges.sort();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "blocks overlap: {pair:?}");
    }
    for b in blocks {
        b.check();
    }
}

/// Two threads bump the same arena; a block of 200 bytes fills the first chunk (208 bytes of
/// room), so the refill path (lock, re-check, new chunk, publish) races with the other thread's
/// bumps.
#[test]
fn shared_bump_and_refill() {
    model("shared_bump_and_refill", || {
        let arena = Arc::new(SyncArena::new());
        let layout = Layout::from_size_align(200, 8).unwrap();
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                (0..2)
                    .map(|_| Block::new(arena.allocate(layout).unwrap().cast(), 200, 0xA1))
                    .collect::<Vec<_>>()
            })
        };
        let mut blocks: Vec<_> = (0..2)
            .map(|_| Block::new(arena.allocate(layout).unwrap().cast(), 200, 0xB2))
            .collect();
        blocks.extend(other.join().unwrap());
        assert_disjoint(&blocks);
        assert!(arena.stats().chunks >= 2);
    });
}

/// One thread gives its last block back (the cursor moves down with Release) while the other
/// bumps (Acquire): the bytes may change hands, and their old contents must not race.
#[test]
fn give_back_races_with_bump() {
    model("give_back_races_with_bump", || {
        let arena = Arc::new(SyncArena::with_capacity(256));
        let layout = Layout::from_size_align(64, 8).unwrap();
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                let p = arena.allocate(layout).unwrap().cast::<u8>();
                Block::new(p, 64, 0xC3).check();
                // SAFETY: `p` was allocated with `layout` and is not used again.
                unsafe { arena.deallocate(p, layout) };
            })
        };
        let b = Block::new(arena.allocate(layout).unwrap().cast(), 64, 0xD4);
        other.join().unwrap();
        b.check();
    });
}

/// A grow that does not fit moves the block to a new chunk and gives the old one back to the
/// chunk it left (its cursor moves down) while the other thread bumps, in that chunk or the new
/// one: the grown block keeps its contents, and no block overlaps another.
#[test]
fn a_moving_grow_gives_back_while_another_thread_bumps() {
    model(
        "a_moving_grow_gives_back_while_another_thread_bumps",
        || {
            let arena = Arc::new(SyncArena::new());
            let old = Layout::from_size_align(120, 8).unwrap();
            let new = Layout::from_size_align(400, 8).unwrap();
            let small = Layout::from_size_align(40, 8).unwrap();
            let p = Block::new(arena.allocate(old).unwrap().cast(), 120, 0x17).ptr;
            let other = {
                let arena = arena.clone();
                thread::spawn(move || {
                    (0..2)
                        .map(|_| Block::new(arena.allocate(small).unwrap().cast(), 40, 0x28))
                        .collect::<Vec<_>>()
                })
            };
            // SAFETY: `p` was allocated with `old`, and `new` is larger with the same alignment.
            let q = unsafe { arena.grow(p, old, new) }.unwrap().cast::<u8>();
            // SAFETY: the grown block holds the 120 bytes copied (or kept) from the old one.
            let kept = unsafe { std::slice::from_raw_parts(q.as_ptr(), 120) };
            assert!(
                kept.iter().all(|&b| b == 0x17),
                "the grown block lost its contents"
            );
            let mut blocks = vec![Block::new(q, 400, 0x39)];
            blocks.extend(other.join().unwrap());
            assert_disjoint(&blocks);
        },
    );
}

/// Two `LocalArena`s take pieces and bump inside them while the shared path bumps too; dropping
/// a handle gives its unused tail back.
#[test]
fn local_pieces_and_give_back() {
    model("local_pieces_and_give_back", || {
        let arena = Arc::new(SyncArena::new());
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                let local = arena.local();
                let a = local.alloc([0x11u8; 48]) as *mut [u8; 48];
                let b = local.alloc([0x22u8; 48]) as *mut [u8; 48];
                drop(local);
                // SAFETY: the blocks belong to the shared arena, alive until it is dropped.
                unsafe {
                    assert_eq!(*a, [0x11; 48]);
                    assert_eq!(*b, [0x22; 48]);
                }
                (a as usize, b as usize)
            })
        };
        let local = arena.local();
        let c = &*local.alloc([0x33u8; 48]);
        let d = &*arena.alloc([0x44u8; 48]);
        drop(local);
        let (a, b) = other.join().unwrap();
        assert_eq!(*c, [0x33; 48]);
        assert_eq!(*d, [0x44; 48]);
        let mut starts = [a, b, c.as_ptr() as usize, d.as_ptr() as usize];
        starts.sort();
        assert!(
            starts.windows(2).all(|w| w[0] + 48 <= w[1]),
            "pieces overlap"
        );
    });
}

/// A handle's last block grows past its piece while another thread places a block in the same
/// chunk: the piece lengthens in place only if nothing was placed after it (the cursor decides),
/// and otherwise the block moves; either way no two blocks overlap and the contents stay.
#[test]
fn a_piece_grows_in_place_while_another_thread_places() {
    model("a_piece_grows_in_place_while_another_thread_places", || {
        let arena = Arc::new(SyncArena::with_capacity(4096));
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                let d = arena.alloc([0x44u8; 48]) as *mut [u8; 48];
                d as usize
            })
        };
        let local = arena.local();
        let old = Layout::from_size_align(16, 8).unwrap();
        let p = local.allocate(old).unwrap().cast::<u8>();
        // SAFETY: `p` was just allocated for 16 bytes.
        unsafe { p.as_ptr().write_bytes(0x55, 16) };
        let new = Layout::from_size_align(local.chunk_capacity() + 64, 8).unwrap();
        // SAFETY: `p` is a live block of `old` from `local`, and `new` is larger.
        let q = unsafe { local.grow(p, old, new) }.unwrap().cast::<u8>();
        // SAFETY: `q` holds `new.size()` bytes, the first 16 of them kept from `p`.
        let kept = unsafe { std::slice::from_raw_parts(q.as_ptr(), 16) };
        assert!(kept.iter().all(|&b| b == 0x55), "contents lost");
        let grown = Block::new(q, new.size(), 0x66);
        let d = other.join().unwrap();
        let placed = Block {
            ptr: NonNull::new(d as *mut u8).unwrap(),
            len: 48,
            fill: 0x44,
        };
        assert_disjoint(&[grown, placed]);
        drop(local);
    });
}

/// Two threads pass a reset's probe (see `retention` in the crate): the chunk a reset kept is
/// held below its end, and each request that meets the hold raises it under the lock while the
/// other thread bumps. Set up as the crate's unit test `probed_arena` checks that a probe is set:
/// two cycles of a spike in blocks of 32 KiB, then four resets with nothing in use.
#[test]
fn a_probe_passed_by_two_threads() {
    model("a_probe_passed_by_two_threads", || {
        let mut arena = SyncArena::new();
        for _ in 0..2 {
            for _ in 0..8 {
                arena.alloc_slice_fill_copy(32 * 1024, 1u8);
            }
            arena.reset();
        }
        for _ in 0..4 {
            arena.reset();
        }
        let arena = Arc::new(arena);
        let layout = Layout::from_size_align(3000, 8).unwrap();
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                (0..2)
                    .map(|_| Block::new(arena.allocate(layout).unwrap().cast(), 3000, 0xE5))
                    .collect::<Vec<_>>()
            })
        };
        let mut blocks: Vec<_> = (0..2)
            .map(|_| Block::new(arena.allocate(layout).unwrap().cast(), 3000, 0xF6))
            .collect();
        blocks.extend(other.join().unwrap());
        assert_disjoint(&blocks);
        // The chunk the reset kept holds them all.
        assert_eq!(arena.stats().chunks, 1);
    });
}

/// Two threads find the chunk a reset kept full at once, when that reset planned the next chunk
/// for a spike (a large block of 100 000 bytes; the chunk kept is the 256-byte first one). The
/// planned chunk is for one of them: the other takes a regular chunk, or uses the planned one
/// if it is installed first, but never a second planned chunk.
#[test]
fn two_threads_take_a_planned_chunk_once() {
    model("two_threads_take_a_planned_chunk_once", || {
        let mut arena = SyncArena::new();
        arena.alloc(1u8);
        arena.alloc_slice_fill_copy(100_000, 1u8);
        arena.reset();
        let arena = Arc::new(arena);
        let layout = Layout::from_size_align(3000, 8).unwrap();
        let other = {
            let arena = arena.clone();
            thread::spawn(move || Block::new(arena.allocate(layout).unwrap().cast(), 3000, 0x17))
        };
        let mine = Block::new(arena.allocate(layout).unwrap().cast(), 3000, 0x28);
        let blocks = [mine, other.join().unwrap()];
        assert_disjoint(&blocks);
        // One planned chunk (about 104 KiB), the kept one, and at most a regular chunk.
        let held = arena.stats().allocated_bytes_including_metadata;
        assert!(
            held < 150_000,
            "{held} bytes held: the planned chunk was taken twice"
        );
    });
}

/// A block allocated on one thread is freed on another (into its owner's shard) while the owner
/// allocates: the slot is reused by exactly one owner, and the counts stay exact. With two shards
/// the threads use different ones (a remote free); with one, they contend for the same lock.
#[test]
fn pool_cross_thread_free() {
    for shards in [2, 1] {
        model(
            &format!("pool_cross_thread_free, {shards} shard(s)"),
            move || cross_thread_free(shards),
        );
    }
}

fn cross_thread_free(shards: usize) {
    let pool = Arc::new(SyncPool::with_shards_in(
        Layout::new::<u64>(),
        shards,
        Global,
    ));
    let first = Box::new_in(1u64, &*pool);
    let raw = Box::into_raw(first) as usize;
    let other = {
        let pool = pool.clone();
        thread::spawn(move || {
            // SAFETY: the box was allocated from `pool` on the other thread and is only
            // freed here.
            let b = unsafe { Box::from_raw_in(raw as *mut u64, &*pool) };
            assert_eq!(*b, 1);
            drop(b);
            let mine = Box::new_in(2u64, &*pool);
            assert_eq!(*mine, 2);
            Box::into_raw(mine) as usize
        })
    };
    let second = Box::new_in(3u64, &*pool);
    let theirs = other.join().unwrap();
    assert_ne!(
        theirs, &*second as *const u64 as usize,
        "a slot with two owners"
    );
    // SAFETY: as above.
    let theirs = unsafe { Box::from_raw_in(theirs as *mut u64, &*pool) };
    assert_eq!((*theirs, *second), (2, 3));
    drop((theirs, second));
    assert_eq!(pool.stats().in_use, 0);
}

/// Two threads free blocks of a third into the same shard while that thread allocates from it.
#[test]
fn pool_concurrent_remote_frees() {
    model("pool_concurrent_remote_frees", || {
        let pool = Arc::new(SyncPool::with_shards_in(Layout::new::<u32>(), 1, Global));
        let blocks: Vec<usize> = (0..2u32)
            .map(|i| Box::into_raw(Box::new_in(i, &*pool)) as usize)
            .collect();
        let handles: Vec<_> = blocks
            .into_iter()
            .enumerate()
            .map(|(i, raw)| {
                let pool = pool.clone();
                thread::spawn(move || {
                    // SAFETY: each box is freed once, on this thread.
                    let b = unsafe { Box::from_raw_in(raw as *mut u32, &*pool) };
                    assert_eq!(*b, i as u32);
                })
            })
            .collect();
        let mine = Box::new_in(7u32, &*pool);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*mine, 7);
        drop(mine);
        assert_eq!(pool.stats().in_use, 0);
    });
}

#[test]
fn alignment_is_kept_on_both_paths() {
    model("alignment_is_kept_on_both_paths", || {
        let arena = Arc::new(SyncArena::new());
        let other = {
            let arena = arena.clone();
            thread::spawn(move || {
                let p = arena
                    .allocate(Layout::from_size_align(3, 1).unwrap())
                    .unwrap();
                p.cast::<u8>().as_ptr() as usize
            })
        };
        let q = arena
            .allocate(Layout::from_size_align(16, 16).unwrap())
            .unwrap();
        assert_eq!(q.cast::<u8>().as_ptr() as usize % 16, 0);
        let _ = other.join().unwrap();
    });
}

/// The per-thread caches (4 slots each in this build, moved 2 at a time): a thread frees more
/// blocks of another than its cache holds, so that it gives the oldest back to their shard,
/// while the owner allocates, so that it refills from its shard. No slot has two owners, and the
/// counts are exact once the threads are joined.
#[test]
fn pool_cache_flush_races_with_refill() {
    model("pool_cache_flush_races_with_refill", || {
        let pool = Arc::new(SyncPool::with_shards_in(Layout::new::<u64>(), 2, Global));
        let raws: Vec<usize> = (0..5u64)
            .map(|i| Box::into_raw(Box::new_in(i, &*pool)) as usize)
            .collect();
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                for (i, raw) in raws.into_iter().enumerate() {
                    // SAFETY: allocated from `pool` on the main thread, freed once, here.
                    let b = unsafe { Box::from_raw_in(raw as *mut u64, &*pool) };
                    assert_eq!(*b, i as u64);
                }
            })
        };
        let mine: Vec<_> = (0..3u64).map(|i| Box::new_in(10 + i, &*pool)).collect();
        other.join().unwrap();
        let mut seen: Vec<usize> = mine.iter().map(|b| &**b as *const u64 as usize).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 3, "a slot with two owners");
        assert!(mine.iter().map(|b| **b).eq([10, 11, 12]));
        assert_eq!(pool.stats().in_use, 3);
        drop(mine);
        assert_eq!(pool.stats().in_use, 0);
    });
}

/// A thread exits with slots in its cache: they go to the pool (the cache an orphan), counted
/// as free, and the next refill on another thread takes them.
#[test]
fn pool_thread_exit_hands_its_cache_to_the_pool() {
    model("pool_thread_exit_hands_its_cache_to_the_pool", || {
        let pool = Arc::new(SyncPool::with_shards_in(Layout::new::<u64>(), 1, Global));
        let kept = Box::into_raw(Box::new_in(7u64, &*pool)) as usize;
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                let b = Box::new_in(1u64, &*pool);
                assert_eq!(*b, 1);
                // SAFETY: allocated on the main thread, freed once, here (into this cache).
                drop(unsafe { Box::from_raw_in(kept as *mut u64, &*pool) });
            })
        };
        let mine = Box::new_in(2u64, &*pool);
        other.join().unwrap();
        assert_eq!(pool.stats().in_use, 1);
        let more: Vec<_> = (0..4u64).map(|i| Box::new_in(i, &*pool)).collect();
        assert_eq!(pool.stats().in_use, 5);
        assert_eq!((*mine, *more[3]), (2, 3));
        drop((mine, more));
        assert_eq!(pool.stats().in_use, 0);
    });
}

/// The pool is dropped (its last reference, on either thread) while a thread that used it
/// exits: the exiting thread's cache is given to the live pool or freed with the dead one, never
/// both, and never used after the pool is gone.
#[test]
fn pool_dropped_while_a_thread_exits() {
    model("pool_dropped_while_a_thread_exits", || {
        let pool = Arc::new(SyncPool::with_shards_in(Layout::new::<u64>(), 1, Global));
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                drop(Box::new_in(1u64, &*pool));
                drop(pool);
            })
        };
        drop(Box::new_in(2u64, &*pool));
        drop(pool);
        other.join().unwrap();
    });
}
