//! `set_panic_on_limit`: with it, the `Allocator` methods of `Arena`, its scopes, `SyncArena`
//! and `LocalArena` panic at the allocation limit instead of returning `Err`, so that a
//! collection's infallible call past the limit unwinds (and `catch_unwind` recovers) where it
//! would otherwise abort in `handle_alloc_error`.
//!
//! For each type, each collection (allocator-api2's `Vec` and `Box`, hashbrown's `HashMap`) is
//! filled one call at a time until the limit panics, and then:
//! - the panic names the limit, and the arena holds exactly what it held before the call (no
//!   chunk half taken, the limit's accounting unchanged);
//! - drop counters show that the value being inserted was dropped once and every element in the
//!   collection is alive, once: nothing leaked or double-dropped (Miri checks the memory too);
//! - the collection stays usable (read, remove, insert within its capacity, drop);
//! - after a reset (a scope's exit) the arena serves the same work again.
//!
//! Also: the default (no panic) returns `Err`; under the flag the collections' fallible calls
//! panic too while the arena's own `try_` methods still return `Err`; a backing allocator out of
//! memory stays `Err`; an arena backed by a panicking arena stays consistent.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::alloc::Allocator;
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, SyncArena};
use common::Counting;

/// The allocation limit of every arena here.
const LIMIT: usize = 4096;

/// A value that counts how many of its kind are alive: a leak leaves the count high, a double
/// drop makes it low.
struct Tracked<'c> {
    value: u64,
    live: &'c Cell<isize>,
}

impl<'c> Tracked<'c> {
    fn new(value: u64, live: &'c Cell<isize>) -> Tracked<'c> {
        live.set(live.get() + 1);
        Tracked { value, live }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        self.live.set(self.live.get() - 1);
    }
}

/// Checks that a caught panic is that of a limit of `limit` bytes.
fn assert_panic_of(payload: std::boxed::Box<dyn Any + Send>, limit: usize) {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("<not a string>");
    assert_eq!(
        message,
        format!("arena-pool: the arena's allocation limit of {limit} bytes is reached")
    );
}

/// Checks that a caught panic is that of the limit [`LIMIT`].
fn assert_limit_panic(payload: std::boxed::Box<dyn Any + Send>) {
    assert_panic_of(payload, LIMIT)
}

/// Runs `f`, which must panic at the limit, and checks that the arena holds (`held`) exactly
/// what it held before.
fn panics_at_limit<R>(held: &dyn Fn() -> usize, f: impl FnOnce() -> R) {
    let before = held();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("no panic at the limit"),
        Err(payload) => assert_limit_panic(payload),
    }
    assert_eq!(held(), before, "a refused request left something held");
    assert!(held() <= LIMIT);
}

/// One piece of work run on each arena type: fills a collection through `alloc` until the limit
/// panics, checks it, and returns how many elements it held then.
trait Phase {
    fn run<A: Allocator + Copy>(&self, alloc: A, held: &dyn Fn() -> usize) -> usize;
}

/// `Vec::push` one element at a time.
struct Pushes;

impl Phase for Pushes {
    fn run<A: Allocator + Copy>(&self, alloc: A, held: &dyn Fn() -> usize) -> usize {
        let live = Cell::new(0);
        let mut v: Vec<Tracked<'_>, A> = Vec::new_in(alloc);
        let limit_hit = loop {
            let before = held();
            let i = v.len() as u64;
            match catch_unwind(AssertUnwindSafe(|| v.push(Tracked::new(i, &live)))) {
                Ok(()) => assert!(v.len() < LIMIT, "the limit never panicked"),
                Err(payload) => {
                    assert_limit_panic(payload);
                    assert_eq!(held(), before, "a refused push left something held");
                    break v.len();
                }
            }
        };
        assert!(held() <= LIMIT);
        // The element being pushed was dropped, once; the others are all there.
        assert_eq!(live.get(), v.len() as isize);
        assert!(v.iter().enumerate().all(|(k, t)| t.value == k as u64));
        // The vector is usable: within its capacity, and shrinking.
        while v.len() < v.capacity() {
            v.push(Tracked::new(v.len() as u64, &live));
        }
        assert_eq!(v.pop().map(|t| t.value), Some(v.len() as u64));
        v.truncate(limit_hit / 2);
        v.push(Tracked::new(99, &live));
        v.shrink_to_fit();
        assert_eq!(live.get(), v.len() as isize);
        // A growth past the limit panics again, and loses nothing again.
        let n = v.len();
        panics_at_limit(held, || v.reserve(LIMIT));
        assert_eq!((v.len(), live.get()), (n, n as isize));
        drop(v);
        assert_eq!(live.get(), 0);
        limit_hit
    }
}

/// `Box::new_in` of a value too large for the limit, among boxes that fit.
struct Boxes;

impl Phase for Boxes {
    fn run<A: Allocator + Copy>(&self, alloc: A, held: &dyn Fn() -> usize) -> usize {
        let live = Cell::new(0);
        let small = Box::new_in(Tracked::new(1, &live), alloc);
        // The case: an 8 KiB array in an arena limited to 4 KiB.
        panics_at_limit(held, || Box::new_in([0u8; 2 * LIMIT], alloc));
        panics_at_limit(held, || {
            Box::new_in((Tracked::new(2, &live), [0u8; 2 * LIMIT]), alloc)
        });
        assert_eq!(
            live.get(),
            1,
            "the value of the refused box was dropped, once"
        );
        let mut boxes = std::vec::Vec::new();
        let count = loop {
            let before = held();
            let v = boxes.len() as u64;
            match catch_unwind(AssertUnwindSafe(|| {
                boxes.push(Box::new_in(Tracked::new(v, &live), alloc))
            })) {
                Ok(()) => assert!(boxes.len() < LIMIT, "the limit never panicked"),
                Err(payload) => {
                    assert_limit_panic(payload);
                    assert_eq!(held(), before);
                    break boxes.len();
                }
            }
        };
        assert_eq!(live.get(), 1 + count as isize);
        assert!(boxes.iter().enumerate().all(|(k, b)| b.value == k as u64));
        assert_eq!(small.value, 1);
        // Freed boxes make room: the last one's bytes go back to the arena.
        let last = boxes.pop().unwrap();
        drop(last);
        boxes.push(Box::new_in(Tracked::new(7, &live), alloc));
        drop((small, boxes));
        assert_eq!(live.get(), 0);
        count
    }
}

/// `HashMap::insert` one entry at a time.
struct Inserts;

impl Phase for Inserts {
    fn run<A: Allocator + Copy>(&self, alloc: A, held: &dyn Fn() -> usize) -> usize {
        let live = Cell::new(0);
        let mut map = hashbrown::HashMap::new_in(alloc);
        let count = loop {
            let before = held();
            let k = map.len() as u64;
            match catch_unwind(AssertUnwindSafe(|| {
                map.insert(k, Tracked::new(k * 3, &live))
            })) {
                Ok(old) => {
                    assert!(old.is_none());
                    assert!(map.len() < LIMIT, "the limit never panicked");
                }
                Err(payload) => {
                    assert_limit_panic(payload);
                    assert_eq!(held(), before, "a refused insert left something held");
                    break map.len();
                }
            }
        };
        assert!(held() <= LIMIT);
        assert_eq!(live.get(), count as isize);
        // Every entry is intact and the map is usable: look-ups, replacing values, removals.
        // (Not `insert` of a key present: hashbrown reserves room before it looks, and the map
        // is full.)
        for k in 0..count as u64 {
            assert_eq!(map.get(&k).map(|t| t.value), Some(k * 3));
        }
        for k in 0..count as u64 / 2 {
            let old = std::mem::replace(map.get_mut(&k).unwrap(), Tracked::new(k, &live));
            assert_eq!(old.value, k * 3);
        }
        for k in (0..count as u64).step_by(3) {
            assert!(map.remove(&k).is_some());
        }
        assert_eq!(live.get(), map.len() as isize);
        let clone_panicked = catch_unwind(AssertUnwindSafe(|| {
            map.iter()
                .map(|(&k, t)| (k, t.value))
                .collect::<std::collections::HashMap<_, _>>()
        }));
        assert_eq!(clone_panicked.map(|m| m.len()).ok(), Some(map.len()));
        map.clear();
        assert_eq!(live.get(), 0);
        drop(map);
        count
    }
}

/// Runs `phase` twice on an `Arena` with the limit and the flag, with a reset in between: the
/// second round, on the arena reset, must do the same work.
fn on_arena(phase: &impl Phase) {
    let mut arena = Arena::new();
    arena.set_allocation_limit(Some(LIMIT));
    arena.set_panic_on_limit(true);
    assert!(arena.panics_on_limit());
    let first = phase.run(&arena, &|| arena.allocated_bytes_including_metadata());
    assert!(first > 0);
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
    let second = phase.run(&arena, &|| arena.allocated_bytes_including_metadata());
    assert!(
        second * 2 >= first,
        "after the reset: {second} against {first}"
    );
}

/// The same in a scope: the scope follows its arena's flag and limit, and its exit frees what
/// the phase left.
fn in_scope(phase: &impl Phase) {
    let mut arena = Arena::new();
    arena.alloc_str("before the scope");
    arena.set_allocation_limit(Some(LIMIT));
    arena.set_panic_on_limit(true);
    let before = arena.used_bytes();
    let first = arena.with_scope(|scope| {
        assert!(scope.panics_on_limit());
        assert_eq!(scope.allocation_limit(), Some(LIMIT));
        phase.run(&*scope, &|| scope.allocated_bytes_including_metadata())
    });
    assert!(first > 0);
    assert_eq!(arena.used_bytes(), before);
    let second = arena
        .with_scope(|scope| phase.run(&*scope, &|| scope.allocated_bytes_including_metadata()));
    assert!(
        second * 2 >= first,
        "after the scope: {second} against {first}"
    );
}

/// The same on a `SyncArena`'s shared path, with a reset in between.
fn on_sync_arena(phase: &impl Phase) {
    let mut arena = SyncArena::new();
    arena.set_allocation_limit(Some(LIMIT));
    arena.set_panic_on_limit(true);
    assert!(arena.panics_on_limit());
    let first = phase.run(&arena, &|| arena.stats().allocated_bytes_including_metadata);
    assert!(first > 0);
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
    let second = phase.run(&arena, &|| arena.stats().allocated_bytes_including_metadata);
    assert!(
        second * 2 >= first,
        "after the reset: {second} against {first}"
    );
}

/// The same through a `LocalArena` handle, which follows its `SyncArena`'s flag and limit (the
/// limit counts the shared arena's bytes).
fn on_local_arena(phase: &impl Phase) {
    let mut arena = SyncArena::new();
    arena.set_allocation_limit(Some(LIMIT));
    arena.set_panic_on_limit(true);
    let first = {
        let local = arena.local();
        assert!(local.panics_on_limit());
        assert_eq!(local.allocation_limit(), Some(LIMIT));
        phase.run(&local, &|| arena.stats().allocated_bytes_including_metadata)
    };
    assert!(first > 0);
    arena.reset();
    let local = arena.local();
    let second = phase.run(&local, &|| arena.stats().allocated_bytes_including_metadata);
    assert!(
        second * 2 >= first,
        "after the reset: {second} against {first}"
    );
}

#[test]
fn arena_vec_box_map() {
    on_arena(&Pushes);
    on_arena(&Boxes);
    on_arena(&Inserts);
}

#[test]
fn scope_vec_box_map() {
    in_scope(&Pushes);
    in_scope(&Boxes);
    in_scope(&Inserts);
}

#[test]
fn sync_arena_vec_box_map() {
    on_sync_arena(&Pushes);
    on_sync_arena(&Boxes);
    on_sync_arena(&Inserts);
}

#[test]
fn local_arena_vec_box_map() {
    on_local_arena(&Pushes);
    on_local_arena(&Boxes);
    on_local_arena(&Inserts);
}

/// Grows a large block (past the 64 KiB threshold, grown through the backing allocator's
/// `grow`) past a limit of `limit` bytes: the limit is checked before the call, and the panic
/// leaves the block where it was, with its bytes.
fn grow_large_past_limit<A: Allocator + Copy>(
    alloc: A,
    held: &dyn Fn() -> usize,
    big: usize,
    limit: usize,
) {
    let mut v: Vec<u8, A> = Vec::with_capacity_in(big, alloc);
    // Filled in one piece: `resize` (and allocator-api2's `extend_from_slice`) write a byte at a
    // time, which Miri interprets one by one.
    // SAFETY: `with_capacity_in(big)` made room for `big` bytes, all written before `set_len`.
    unsafe {
        v.as_mut_ptr().write_bytes(7, big);
        v.set_len(big);
    }
    let before = held();
    let payload = catch_unwind(AssertUnwindSafe(|| v.reserve_exact(big))).unwrap_err();
    assert_panic_of(payload, limit);
    assert_eq!(held(), before);
    assert_eq!((v.len(), v[big - 1]), (big, 7));
    v.truncate(10);
    v.shrink_to_fit(); // the block leaves the large block for the chunks
    v.reserve(100);
    assert_eq!(v[9], 7);
}

#[test]
fn large_blocks_panic_and_stay() {
    let big = if cfg!(miri) { 80 * 1024 } else { 256 * 1024 };
    let limit = big * 3 / 2;
    let arena = Arena::new();
    arena.set_allocation_limit(Some(limit));
    arena.set_panic_on_limit(true);
    grow_large_past_limit(
        &arena,
        &|| arena.allocated_bytes_including_metadata(),
        big,
        limit,
    );
    assert_eq!(arena.stats().large_blocks, 0);

    let shared = SyncArena::new();
    shared.set_allocation_limit(Some(limit));
    shared.set_panic_on_limit(true);
    let held = || shared.stats().allocated_bytes_including_metadata;
    grow_large_past_limit(&shared, &held, big, limit);
    let local = shared.local();
    grow_large_past_limit(&local, &held, big, limit);
}

/// Without the flag (the default) the limit is an `Err` for the collections' fallible calls; with
/// it they panic too (the documented trade-off), while the arenas' own `try_` methods keep
/// returning `Err`.
#[test]
fn fallible_calls_err_by_default_and_panic_under_the_flag() {
    let arena = Arena::new();
    arena.set_allocation_limit(Some(LIMIT));
    assert!(!arena.panics_on_limit());
    let held = || arena.allocated_bytes_including_metadata();
    let mut v: Vec<u64, &Arena> = Vec::new_in(&arena);
    assert!(v.try_reserve(LIMIT).is_err());
    assert!(Box::try_new_in([0u8; 2 * LIMIT], &arena).is_err());
    let mut map: hashbrown::HashMap<u64, u64, _, &Arena> = hashbrown::HashMap::new_in(&arena);
    assert!(map.try_reserve(LIMIT).is_err());

    arena.set_panic_on_limit(true);
    panics_at_limit(&held, || v.try_reserve(LIMIT));
    panics_at_limit(&held, || Box::try_new_in([0u8; 2 * LIMIT], &arena));
    panics_at_limit(&held, || map.try_reserve(LIMIT));
    assert!(arena.try_alloc([0u8; 2 * LIMIT]).is_err());
    assert!(arena.try_alloc_slice_fill_copy(LIMIT, 0u8).is_err());
    // The arena seen as an `ArenaRef` (what scopes are) follows it.
    let r = arena.as_arena_ref();
    assert!(r.panics_on_limit());
    let mut bytes: Vec<u8, _> = Vec::new_in(r);
    panics_at_limit(&held, || bytes.reserve(2 * LIMIT));
    drop(bytes);

    arena.set_panic_on_limit(false);
    assert!(v.try_reserve(LIMIT).is_err());
    assert!(v.try_reserve(10).is_ok());

    let shared = SyncArena::new();
    shared.set_allocation_limit(Some(LIMIT));
    let mut w: Vec<u64, &SyncArena> = Vec::new_in(&shared);
    assert!(w.try_reserve(LIMIT).is_err());
    shared.set_panic_on_limit(true);
    let held = || shared.stats().allocated_bytes_including_metadata;
    panics_at_limit(&held, || w.try_reserve(LIMIT));
    assert!(shared.try_alloc([0u8; 2 * LIMIT]).is_err());
    let local = shared.local();
    assert!(local.try_alloc([0u8; 2 * LIMIT]).is_err());
    let mut x: Vec<u64, _> = Vec::new_in(&local);
    panics_at_limit(&held, || x.try_reserve(LIMIT));
    drop(x);
    drop(local);
    shared.set_panic_on_limit(false);
    assert!(!shared.local().panics_on_limit());
    assert!(w.try_reserve(LIMIT).is_err());
}

/// Only the limit panics: a backing allocator out of memory is still `Err`, flag or not.
#[test]
fn out_of_memory_stays_an_error() {
    let backing = Counting::default();
    let arena = Arena::new_in(&backing);
    arena.set_allocation_limit(Some(1 << 20));
    arena.set_panic_on_limit(true);
    backing.fail.set(true);
    let mut v: Vec<u64, _> = Vec::new_in(&arena);
    assert!(v.try_reserve(1000).is_err());
    assert!(Box::try_new_in(5u64, &arena).is_err());
    backing.fail.set(false);
    v.push(1);

    let shared = SyncArena::new_in(&backing);
    shared.set_allocation_limit(Some(1 << 20));
    shared.set_panic_on_limit(true);
    backing.fail.set(true);
    let mut w: Vec<u64, _> = Vec::new_in(&shared);
    assert!(w.try_reserve(1000).is_err());
    let local = shared.local();
    let mut x: Vec<u64, _> = Vec::new_in(&local);
    assert!(x.try_reserve(1000).is_err());
    backing.fail.set(false);
    w.push(1);
    x.push(2);
    assert_eq!((w[0], x[0]), (1, 2));
}

/// An arena backed by a limited arena that panics: the inner limit's panic comes out of the
/// outer arena's backing call, which the outer arena survives (as it survives any backing
/// allocator that panics), so a limit shared by several arenas is a cap for them all.
#[test]
fn a_panicking_backing_arena_leaves_the_outer_one_consistent() {
    let inner = Arena::new();
    inner.set_allocation_limit(Some(LIMIT));
    inner.set_panic_on_limit(true);
    let mut outer = Arena::new_in(&inner);
    let held = || inner.allocated_bytes_including_metadata();
    for _ in 0..2 {
        let live = Cell::new(0);
        let mut v: Vec<Tracked<'_>, &Arena<&Arena>> = Vec::new_in(&outer);
        let stats = loop {
            let stats = outer.stats();
            let i = v.len() as u64;
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| v.push(Tracked::new(i, &live))))
            {
                assert_limit_panic(payload);
                break stats;
            }
            assert!(v.len() < LIMIT);
        };
        assert_eq!(outer.stats(), stats, "the outer arena changed");
        assert!(held() <= LIMIT);
        assert_eq!(live.get(), v.len() as isize);
        assert!(v.iter().enumerate().all(|(k, t)| t.value == k as u64));
        drop(v);
        assert_eq!(live.get(), 0);
        outer.reset();
    }
}

/// A request on its own thread: the panic is that thread's, and the other threads' handles go
/// on.
#[test]
fn threads_catch_their_own_limit() {
    let arena = SyncArena::new();
    arena.set_allocation_limit(Some(16 * LIMIT));
    arena.set_panic_on_limit(true);
    std::thread::scope(|s| {
        let small = s.spawn(|| {
            let local = arena.local();
            let mut v = Vec::new_in(&local);
            v.extend(0..100u32);
            v.iter().sum::<u32>()
        });
        let large = s.spawn(|| {
            let local = arena.local();
            catch_unwind(AssertUnwindSafe(|| {
                let mut v = Vec::new_in(&local);
                v.extend(0..100 * LIMIT as u32);
            }))
            .map_err(|payload| assert_panic_of(payload, 16 * LIMIT))
            .expect_err("no panic at the limit");
            *local.alloc(5u8)
        });
        assert_eq!(small.join().unwrap(), 4950);
        assert_eq!(large.join().unwrap(), 5);
    });
    assert!(arena.stats().allocated_bytes_including_metadata <= 16 * LIMIT);
}
