//! Tests of the thread-safe types: `SyncArena` (shared path and `LocalArena` handles) and
//! `SyncPool`, single-threaded rules first, then std-thread stress tests whose every block is
//! checked for its contents. Under Miri (which also checks the threads for data races) the
//! counts are scaled down.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::collections::HashSet;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{SyncArena, SyncPool};

/// Scales a count down under Miri, and to a tenth under ThreadSanitizer (`--cfg
/// arena_pool_tsan`, which `.ci/run` sets: every memory access is checked there, about 10x
/// slower).
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else if cfg!(arena_pool_tsan) {
        native / 10
    } else {
        native
    }
}

/// A thread-safe backing allocator that counts live bytes and can be told to fail.
#[derive(Default)]
struct Counting {
    live: AtomicUsize,
    calls: AtomicUsize,
    fail: AtomicBool,
}

impl Counting {
    /// For a `static`: the pool holding it may move to another thread.
    const fn new() -> Counting {
        Counting {
            live: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            fail: AtomicBool::new(false),
        }
    }
}

// SAFETY: blocks come from `Global` and go back to it with the same layout.
unsafe impl Allocator for Counting {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(AllocError);
        }
        let block = Global.allocate(layout)?;
        self.live.fetch_add(layout.size(), Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(block)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.live.fetch_sub(layout.size(), Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from the caller.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

// ----- SyncArena, one thread -----

#[test]
fn shared_path_bumps_rolls_back_and_grows_in_place() {
    let arena = SyncArena::with_capacity(4096);
    let a = arena.alloc(1u64);
    let used = arena.used_bytes();
    let p = arena.allocate(Layout::new::<[u8; 24]>()).unwrap();
    assert_eq!(arena.used_bytes(), used + 24);
    // SAFETY: `p` is the last block, allocated with this layout.
    unsafe { arena.deallocate(p.cast(), Layout::new::<[u8; 24]>()) };
    assert_eq!(arena.used_bytes(), used, "the last block rolls back");

    let mut v: Vec<u32, &SyncArena> = Vec::with_capacity_in(4, &arena);
    v.extend(0..4);
    let first = v.as_ptr();
    v.extend(4..800);
    assert_eq!(v.as_ptr(), first, "the last block grows in place");
    assert!(v.iter().copied().eq(0..800));
    v.truncate(10);
    v.shrink_to_fit();
    assert_eq!(v.as_ptr(), first);
    let used = arena.used_bytes();
    drop(v);
    assert_eq!(arena.used_bytes(), used - 40);
    assert_eq!(*a, 1);
}

#[test]
fn shared_path_typed_helpers_and_zero_sized() {
    let arena = SyncArena::new();
    assert_eq!(arena.alloc_str("héllo"), "héllo");
    assert_eq!(arena.alloc_slice_copy(&[1u16, 2, 3]), &[1, 2, 3]);
    assert_eq!(*arena.try_alloc(9u128).unwrap(), 9);
    let used = arena.used_bytes();
    let z = arena
        .allocate(Layout::from_size_align(0, 64).unwrap())
        .unwrap();
    assert_eq!(z.cast::<u8>().as_ptr() as usize % 64, 0);
    arena.alloc(());
    assert_eq!(arena.used_bytes(), used, "zero-sized blocks take no room");
    let big = arena.alloc_layout(Layout::from_size_align(100_000, 4096).unwrap());
    assert_eq!(big.as_ptr() as usize % 4096, 0);
}

#[test]
fn shared_path_gives_the_room_back_when_the_initialiser_panics() {
    let arena = SyncArena::new();
    arena.alloc(0u64);
    let used = arena.used_bytes();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.alloc_with(|| -> [u64; 4] { panic!("initialiser") })
    }));
    assert!(r.is_err());
    assert_eq!(arena.used_bytes(), used);
}

#[test]
fn reset_settles_in_one_chunk_and_drop_frees_it() {
    let counting = Counting::default();
    {
        let mut arena = SyncArena::new_in(&counting);
        let mut calls = std::vec::Vec::new();
        // Blocks of 4 bytes per cycle (fewer under Miri, where each compare-and-swap is slow).
        let n: u32 = if cfg!(miri) { 500 } else { 2000 };
        for cycle in 0..6 {
            for i in 0..n {
                arena.alloc(i);
            }
            assert_eq!(
                counting.live.load(Ordering::Relaxed),
                arena.stats().allocated_bytes_including_metadata
            );
            let chunks = arena.stats().chunks;
            arena.reset();
            assert_eq!(arena.used_bytes(), 0);
            // The first reset keeps every chunk for the next cycle; from then on reset keeps one
            // chunk and gives the others back.
            let kept = if cycle == 0 { chunks } else { 1 };
            assert_eq!(arena.stats().chunks, kept, "cycle {cycle}");
            assert_eq!(
                counting.live.load(Ordering::Relaxed),
                arena.stats().allocated_bytes_including_metadata
            );
            calls.push(counting.calls.load(Ordering::Relaxed));
        }
        // From the third cycle on the loop fits the chunk kept: no backing call.
        assert_eq!(
            calls[1], calls[5],
            "backing calls after each cycle: {calls:?}"
        );
        let held = arena.stats().allocated_bytes;
        let need = 4 * n as usize;
        assert!(
            (need..=need * 3 / 2).contains(&held),
            "{held} held for {need}"
        );
        arena.trim();
        assert_eq!(arena.stats().chunks, 1, "trim keeps the current chunk");
    }
    assert_eq!(
        counting.live.load(Ordering::Relaxed),
        0,
        "drop frees everything"
    );
}

#[test]
fn bad_input_and_limits_return_errors_and_lose_nothing() {
    let arena = SyncArena::new();
    let x = arena.alloc(5u32);
    let huge = Layout::from_size_align(isize::MAX as usize - 4095, 4096).unwrap();
    assert!(arena.allocate(huge).is_err());
    assert!(arena.try_alloc_layout(huge).is_err());
    arena.set_allocation_limit(Some(arena.stats().allocated_bytes_including_metadata));
    assert!(arena.try_alloc([0u8; 100_000]).is_err());
    assert!(arena.local().try_alloc([0u8; 100_000]).is_err());
    assert_eq!(*x, 5, "a refused allocation changes nothing");
    let message = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.alloc([0u8; 100_000]);
    }))
    .unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("limit"), "{message}");
    let message = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        arena.local().alloc([0u8; 100_000]);
    }))
    .unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("limit"), "{message}");

    let counting = Counting::default();
    let arena = SyncArena::new_in(&counting);
    counting.fail.store(true, Ordering::Relaxed);
    assert!(arena.try_alloc(1u8).is_err());
    assert!(arena.local().try_alloc(1u8).is_err());
    counting.fail.store(false, Ordering::Relaxed);
    assert_eq!(*arena.alloc(2u8), 2);
}

// ----- LocalArena -----

#[test]
fn local_blocks_outlive_the_handle_and_its_tail_goes_back() {
    let arena = SyncArena::new();
    let (s, v) = {
        let local = arena.local();
        let s = local.alloc_fmt(format_args!("{}-{}", 1, 2));
        let v = local.alloc_slice_fill_iter((0..50u64).map(|i| i * i));
        (s, v)
    };
    assert_eq!(s, "1-2");
    assert_eq!(v[7], 49);
    let used = arena.used_bytes();
    {
        let local = arena.local();
        local.alloc(1u8);
        assert!(arena.used_bytes() > used + 1, "the handle took a piece");
    }
    // What stays: the piece's alignment padding, its header and the block.
    assert!(
        arena.used_bytes() < used + 64,
        "the piece's unused end went back"
    );
}

#[test]
fn local_last_block_grows_shrinks_and_rolls_back_in_place() {
    let arena = SyncArena::new();
    let local = arena.local();
    local.alloc(0u64);
    // The rest of the piece, in `u64`s (the position is 8-aligned after the `u64`).
    let n = local.chunk_capacity() / 8;
    assert!(n >= 4, "a piece holds a few words");
    let mut v: Vec<u64, _> = Vec::with_capacity_in(2, &local);
    v.extend([1, 2]);
    let first = v.as_ptr();
    v.extend(3..=n as u64);
    assert_eq!(v.as_ptr(), first, "grew in place to the piece's end");
    let used = local.used_bytes();
    v.truncate(1);
    v.shrink_to_fit();
    assert_eq!(local.used_bytes(), used - (n - 1) * 8);
    drop(v);
    assert_eq!(local.used_bytes(), used - n * 8);
    // A block growing past its piece moves to a new piece, with its contents.
    let mut v: Vec<u64, _> = Vec::new_in(&local);
    v.extend(0..1000);
    assert!(v.iter().copied().eq(0..1000));
    let map: hashbrown::HashMap<u32, u32, _, _> = {
        let mut m =
            hashbrown::HashMap::with_hasher_in(hashbrown::DefaultHashBuilder::default(), &local);
        m.extend((0..500).map(|i| (i, i * 3)));
        m
    };
    assert_eq!(map[&499], 1497);
}

#[test]
fn local_last_block_grows_past_its_piece_in_place_while_nothing_follows_it() {
    let arena = SyncArena::with_capacity(1 << 20);
    let local = arena.local();
    let mut v: Vec<u64, _> = Vec::new_in(&local);
    v.push(0);
    let first = v.as_ptr();
    let piece = local.allocated_bytes();
    // Far past the first piece, and past the large-block threshold: the piece lengthens into
    // the shared chunk, as an arena's chunk holds its last block, and the vector never moves.
    let n = if cfg!(miri) { 9_000 } else { 20_000 };
    v.extend(1..n);
    assert_eq!(v.as_ptr(), first, "grew in place past the piece");
    assert!(v.iter().copied().eq(0..n));
    // One piece, lengthened to hold the vector: the handle's first, lent without a chunk
    // header.
    assert_eq!(local.stats().chunks, 0);
    assert!(local.allocated_bytes() >= v.capacity() * 8 && local.allocated_bytes() > piece);
    // The shared arena holds the vector and the piece's header, no abandoned copies.
    assert!(arena.used_bytes() <= v.capacity() * 8 + 256);
    // Another handle places a block after the piece: the next growth moves the vector.
    let other = arena.local();
    other.alloc(7u8);
    let cap = v.capacity() as u64;
    v.extend(n..=cap);
    assert_ne!(v.as_ptr(), first, "moved once something followed the piece");
    assert!(v.iter().copied().eq(0..=cap));
}

#[test]
fn a_scope_on_a_handle_keeps_the_room_its_piece_was_lengthened_by() {
    let arena = SyncArena::with_capacity(1 << 16);
    let mut local = arena.local();
    local.alloc(1u8);
    local.as_arena_ref_mut().with_scope(|scope| {
        // Pushed one by one, the vector grows past the piece, which lengthens.
        let mut v: Vec<u64, _> = Vec::new_in(&*scope);
        for i in 0..2000 {
            v.push(i);
        }
        assert!(v.iter().copied().eq(0..2000));
    });
    // The piece is still the lengthened one, and all of it past the byte is free again.
    assert_eq!(local.stats().chunks, 1);
    assert!(local.chunk_capacity() >= 2000 * 8);
    // Dropped, the handle gives all of that back to the shared chunk.
    drop(local);
    assert!(arena.used_bytes() < 256, "{}", arena.used_bytes());
}

// ----- SyncPool, one thread -----

#[test]
fn sync_pool_reuses_slots_and_routes_other_layouts_to_the_backing_allocator() {
    let counting = Counting::default();
    {
        let mut pool = SyncPool::new_in(Layout::new::<[u64; 3]>(), &counting);
        assert_eq!(pool.slot_size(), 24);
        let a = Box::new_in([1u64, 2, 3], &pool);
        let addr = &*a as *const _ as usize;
        drop(a);
        let b = Box::new_in([4u64, 5, 6], &pool);
        assert_eq!(&*b as *const _ as usize, addr, "the freed slot is reused");
        let big = Box::new_in([0u64; 64], &pool);
        assert_eq!(pool.stats().fallback_blocks, 1);
        drop(big);
        assert_eq!(pool.stats().fallback_blocks, 0);
        let mut v: Vec<u8, _> = Vec::with_capacity_in(8, &pool);
        v.extend(0..8);
        let p = v.as_ptr();
        v.extend(8..24);
        assert_eq!(v.as_ptr(), p, "grows in place within the slot");
        v.extend(24..100);
        assert!(
            v.iter().copied().eq(0..100),
            "moved across to the backing allocator"
        );
        drop((b, v));
        assert_eq!(pool.stats().in_use, 0);
        assert!(pool.stats().bytes_held > 0);
        pool.trim();
        assert_eq!(pool.stats().bytes_held, 0);
        let _again = Box::new_in([7u64; 3], &pool);
    }
    assert_eq!(counting.live.load(Ordering::Relaxed), 0);
}

#[test]
fn sync_pool_zero_sized_and_failing_backing() {
    let counting = Counting::default();
    let pool = SyncPool::new_in(Layout::new::<u32>(), &counting);
    let z = pool
        .allocate(Layout::from_size_align(0, 16).unwrap())
        .unwrap();
    assert_eq!(z.cast::<u8>().as_ptr() as usize % 16, 0);
    counting.fail.store(true, Ordering::Relaxed);
    assert!(pool.allocate(Layout::new::<u32>()).is_err());
    assert!(pool.allocate(Layout::new::<[u8; 64]>()).is_err());
    assert_eq!(pool.stats().in_use, 0);
    counting.fail.store(false, Ordering::Relaxed);
    assert!(pool.allocate(Layout::new::<u32>()).is_ok());
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "not allocated by this pool")]
fn sync_pool_detects_foreign_pointers_in_debug_builds() {
    let pool = SyncPool::for_type::<u64>();
    let other = SyncPool::for_type::<u64>();
    let p = other.allocate(Layout::new::<u64>()).unwrap();
    // SAFETY: deliberately broken contract (a pointer of another pool); the debug check must
    // catch it before anything is touched.
    unsafe { pool.deallocate(p.cast(), Layout::new::<u64>()) };
}

// ----- threads -----

#[test]
fn four_threads_build_vectors_and_boxes_in_one_sync_arena() {
    let rounds = scaled(2000, 20);
    let arena = SyncArena::new();
    let barrier = Barrier::new(4);
    let results: std::vec::Vec<(std::vec::Vec<&[u64]>, std::vec::Vec<&u64>)> = thread::scope(|s| {
        let handles: std::vec::Vec<_> = (0..4u64)
            .map(|t| {
                let (arena, barrier) = (&arena, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let local = arena.local();
                    let mut slices = std::vec::Vec::new();
                    let mut singles = std::vec::Vec::new();
                    for i in 0..rounds as u64 {
                        // The shared path (a Vec growing there) and the local handle, interleaved.
                        let mut v: Vec<u64, &SyncArena> = Vec::new_in(arena);
                        v.extend((0..i % 17).map(|k| t << 32 | i << 8 | k));
                        let b = Box::new_in(t << 32 | i, arena);
                        assert_eq!(*b, t << 32 | i);
                        slices.push(&*local.alloc_slice_copy(&v));
                        singles.push(&*arena.alloc(t << 32 | i));
                        drop((v, b));
                    }
                    (slices, singles)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut seen = HashSet::new();
    for (t, (slices, singles)) in results.iter().enumerate() {
        let t = t as u64;
        for (i, (slice, single)) in slices.iter().zip(singles).enumerate() {
            let i = i as u64;
            assert!(
                slice
                    .iter()
                    .copied()
                    .eq((0..i % 17).map(|k| t << 32 | i << 8 | k))
            );
            assert_eq!(**single, t << 32 | i);
            assert!(
                seen.insert(*single as *const u64),
                "a block handed out twice"
            );
        }
    }
}

#[test]
fn producer_consumer_frees_sync_pool_boxes_across_threads() {
    let blocks = scaled(200_000, 120);
    let pool = SyncPool::for_type::<[u64; 2]>();
    let (tx, rx) = mpsc::sync_channel::<Box<[u64; 2], &SyncPool>>(1024);
    thread::scope(|s| {
        for producer in 0..2u64 {
            let (tx, pool) = (tx.clone(), &pool);
            s.spawn(move || {
                for i in 0..(blocks / 2) as u64 {
                    let v = producer << 40 | i;
                    tx.send(Box::new_in([v, !v], pool)).unwrap();
                }
            });
        }
        drop(tx);
        s.spawn(|| {
            let mut count = 0;
            let mut kept = std::vec::Vec::new();
            for b in rx {
                assert_eq!(b[1], !b[0], "contents intact");
                count += 1;
                // Keep a few alive for a while, so frees interleave with allocations.
                kept.push(b);
                if kept.len() > 64 {
                    kept.drain(..32);
                }
                // And allocate on this thread too, from its own shard.
                let mine = Box::new_in([count, !count], &pool);
                assert_eq!(mine[1], !mine[0]);
            }
            assert_eq!(count, blocks as u64);
        });
    });
    let stats = pool.stats();
    assert_eq!(stats.in_use, 0, "every block came back to its shard");
    assert!(stats.capacity >= 64);
}

#[test]
fn sync_pool_under_contention_never_hands_a_slot_to_two_owners() {
    let rounds = scaled(20_000, 100);
    let pool = SyncPool::with_shards_in(Layout::new::<[usize; 2]>(), 2, Global);
    thread::scope(|s| {
        for t in 0..4usize {
            let pool = &pool;
            s.spawn(move || {
                let mut live = std::vec::Vec::new();
                for i in 0..rounds {
                    live.push(Box::new_in([t, i], pool));
                    if i % 3 == 2 {
                        // Free in a scrambled order.
                        let b = live.swap_remove(i % live.len());
                        assert_eq!(b[0], t, "a slot was handed to two owners");
                    }
                }
                for b in &live {
                    assert_eq!(b[0], t);
                }
            });
        }
    });
    assert_eq!(pool.stats().in_use, 0);
}

#[test]
fn hashbrown_maps_on_sync_pool_move_between_threads() {
    let pool = SyncPool::for_type::<u64>();
    let arena = SyncArena::new();
    let n = scaled(5000, 50) as u32;
    let (m1, m2) = thread::scope(|s| {
        let a = s.spawn(|| {
            let mut m =
                hashbrown::HashMap::with_hasher_in(hashbrown::DefaultHashBuilder::default(), &pool);
            m.extend((0..n).map(|i| (i, i + 1)));
            m
        });
        let b = s.spawn(|| {
            let mut m = hashbrown::HashMap::with_hasher_in(
                hashbrown::DefaultHashBuilder::default(),
                &arena,
            );
            m.extend((0..n).map(|i| (i, i + 2)));
            m
        });
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(m1[&(n - 1)], n);
    assert_eq!(m2[&(n - 1)], n + 1);
    thread::scope(|s| {
        s.spawn(move || drop(m1));
    });
    drop(m2);
}

/// The statistics accessors every arena kind has, on a `SyncArena`: each agrees with `stats()`,
/// and `clear` is `reset`.
#[test]
fn sync_arena_statistics_accessors_and_clear() {
    let mut arena = SyncArena::new();
    arena.alloc_slice_fill_copy(1000, 1u8);
    let s = arena.stats();
    assert_eq!(arena.used_bytes(), s.used_bytes);
    assert_eq!(arena.allocated_bytes(), s.allocated_bytes);
    assert_eq!(
        arena.allocated_bytes_including_metadata(),
        s.allocated_bytes_including_metadata
    );
    assert_eq!(arena.chunk_capacity(), s.chunk_capacity);
    assert!(s.allocated_bytes >= s.used_bytes + s.chunk_capacity);
    arena.clear();
    assert_eq!(arena.used_bytes(), 0);
    assert_eq!(arena.stats().chunks, 1);
}

// ----- SyncPool's per-thread caches -----

/// A thread that exits with slots in its cache hands them to the pool: they count as free at
/// once, and the next thread reuses them instead of taking more slabs.
#[test]
fn sync_pool_thread_exit_hands_its_cache_back() {
    const N: u64 = 40;
    fn work(pool: &SyncPool) {
        let boxes: std::vec::Vec<_> = (0..N).map(|i| Box::new_in([i, !i], pool)).collect();
        assert!(boxes.iter().zip(0..N).all(|(b, i)| b[0] == i && b[1] == !i));
    }
    let pool = Arc::new(SyncPool::with_shards_in(
        Layout::new::<[u64; 2]>(),
        1,
        Global,
    ));
    // A plain thread: its `join` waits for its thread-locals' destructors too.
    let run = |pool: &Arc<SyncPool>| {
        let pool = Arc::clone(pool);
        thread::spawn(move || work(&pool)).join().unwrap();
    };
    run(&pool);
    assert_eq!(pool.stats().in_use, 0);
    let capacity = pool.capacity();
    for _ in 0..3 {
        run(&pool);
        assert_eq!(pool.stats().in_use, 0);
    }
    assert_eq!(pool.capacity(), capacity, "cached slots were not reused");
}

/// `trim` takes back the slots of every thread's cache, of threads that exited and of one that
/// lives on: no slab is kept.
#[test]
fn sync_pool_trim_takes_back_every_cache() {
    static COUNTING: Counting = Counting::new();
    let counting = &COUNTING;
    let mut pool = Arc::new(SyncPool::with_shards_in(Layout::new::<u64>(), 2, counting));
    let exited: std::vec::Vec<_> = (0..3u64)
        .map(|t| {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let boxes: std::vec::Vec<_> = (0..scaled(300, 50) as u64)
                    .map(|i| Box::new_in(t << 32 | i, &*pool))
                    .collect();
                assert!(
                    boxes
                        .iter()
                        .enumerate()
                        .all(|(i, b)| **b == t << 32 | i as u64)
                );
            })
        })
        .collect();
    for t in exited {
        t.join().unwrap();
    }
    // One more, alive (its cache holding slots) while the pool is trimmed.
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let living = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || {
            drop(
                (0..20u64)
                    .map(|i| Box::new_in(i, &*pool))
                    .collect::<std::vec::Vec<_>>(),
            );
            drop(pool);
            done_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        })
    };
    done_rx.recv().unwrap();
    let pool_mut = Arc::get_mut(&mut pool).expect("the only reference");
    assert_eq!(pool_mut.stats().in_use, 0);
    pool_mut.trim();
    let s = pool_mut.stats();
    assert_eq!((s.in_use, s.bytes_held, s.slabs), (0, 0, 0));
    go_tx.send(()).unwrap();
    living.join().unwrap();
    // The pool serves again, from this thread's (emptied) cache and new slabs.
    let b = Box::new_in(5u64, &*pool);
    assert_eq!(*b, 5);
    drop(b);
    drop(pool);
    assert_eq!(counting.live.load(Ordering::Relaxed), 0);
}

/// A pool dropped while a thread that cached its slots lives on: the thread's cache is emptied
/// by the drop and freed by the thread later; the thread goes on with other pools.
#[test]
fn sync_pool_dropped_while_a_thread_keeps_its_cache() {
    static COUNTING: Counting = Counting::new();
    let counting = &COUNTING;
    let pool = Arc::new(SyncPool::new_in(Layout::new::<u64>(), counting));
    let (to_main, from_worker) = mpsc::channel::<()>();
    let (to_worker, from_main) = mpsc::channel::<()>();
    let worker = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || {
            drop(
                (0..10u64)
                    .map(|i| Box::new_in(i, &*pool))
                    .collect::<std::vec::Vec<_>>(),
            );
            drop(pool);
            to_main.send(()).unwrap();
            // The pool is dropped meanwhile; this thread's cache of it is dead.
            from_main.recv().unwrap();
            for _ in 0..3 {
                let other = SyncPool::for_type::<u64>();
                let b = Box::new_in(9u64, &other);
                assert_eq!(*b, 9);
                drop(b);
                assert_eq!(other.stats().in_use, 0);
            }
        })
    };
    from_worker.recv().unwrap();
    drop(pool);
    assert_eq!(counting.live.load(Ordering::Relaxed), 0);
    to_worker.send(()).unwrap();
    worker.join().unwrap();
}

/// Producers allocate, consumers free in batches of 64 (into their caches, given back to the
/// producers' shards in batches): every block comes back, and the counts are exact.
#[test]
fn sync_pool_batches_freed_by_other_threads() {
    let batches = scaled(200, 2);
    let pool = SyncPool::for_type::<[u64; 8]>();
    thread::scope(|s| {
        for p in 0..2u64 {
            let (tx, rx) = mpsc::sync_channel::<std::vec::Vec<Box<[u64; 8], &SyncPool>>>(4);
            let pool = &pool;
            s.spawn(move || {
                for b in 0..batches as u64 {
                    let batch = (0..64u64).map(|i| Box::new_in([p << 40 | b << 8 | i; 8], pool));
                    tx.send(batch.collect()).unwrap();
                }
            });
            s.spawn(move || {
                for (b, batch) in rx.iter().enumerate() {
                    for (i, x) in batch.into_iter().enumerate() {
                        assert_eq!(*x, [p << 40 | (b as u64) << 8 | i as u64; 8]);
                    }
                }
            });
        }
    });
    assert_eq!(pool.stats().in_use, 0);
}

/// One thread using several pools in turn: each pool's slots stay in its own cache.
#[test]
fn sync_pool_caches_of_several_pools_on_one_thread() {
    let pools: std::vec::Vec<SyncPool> = (0..3).map(|_| SyncPool::for_type::<u64>()).collect();
    let mut boxes = std::vec::Vec::new();
    for i in 0..scaled(300, 60) as u64 {
        let pool = &pools[i as usize % 3];
        boxes.push(Box::new_in(i, pool));
        if i % 4 == 3 {
            let b = boxes.swap_remove(i as usize % boxes.len());
            drop(b);
        }
    }
    let live: usize = pools.iter().map(SyncPool::in_use).sum();
    assert_eq!(live, boxes.len());
    for (i, b) in boxes.iter().enumerate() {
        assert!(
            pools.iter().any(|p| core::ptr::eq(*Box::allocator(b), p)),
            "{i}"
        );
    }
    drop(boxes);
    assert!(pools.iter().all(|p| p.in_use() == 0));
}
