//! Constructors that allocate: each has a `try_` form that returns `Err` for a capacity that
//! cannot be had (its size overflows, or the backing allocator refuses it) where the plain form
//! panics or aborts, and a capacity of 0 takes nothing.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::alloc::{GlobalAlloc, System};
use std::cell::Cell;

use arena_pool::allocator_api2::alloc::{Global, Layout};
use arena_pool::{Arena, Pool, SyncArena, SyncPool, TypedPool};
use common::Counting;

/// The system allocator, refusing on this thread any request above the cap a test sets: the
/// state a constructor takes from the global allocator (a `SyncPool`'s shards) can then fail.
struct Capped;

thread_local! {
    static CAP: Cell<usize> = const { Cell::new(usize::MAX) };
}

// SAFETY: every request is forwarded to `System` unchanged, or refused with a null pointer.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > CAP.with(Cell::get) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded from the caller.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: forwarded from the caller (the block came from `System`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Capped = Capped;

/// More than any machine has, yet a valid layout for most of these (the backing allocator, not
/// the size arithmetic, refuses it).
const HUGE: usize = 1 << 46;

#[test]
fn try_constructors_refuse_what_cannot_be_had() {
    // The global allocator refuses the block (Miri stops at such a request instead of failing
    // it, so it is asked natively only).
    if !cfg!(miri) {
        assert!(Arena::try_with_capacity(HUGE).is_err());
        assert!(SyncArena::try_with_capacity(HUGE).is_err());
        assert!(Pool::try_with_capacity(Layout::new::<u64>(), HUGE).is_err());
        assert!(TypedPool::<u64>::try_with_capacity(HUGE).is_err());
    }
    // The size overflows.
    assert!(Arena::try_with_capacity(usize::MAX).is_err());
    assert!(SyncArena::try_with_capacity(usize::MAX).is_err());
    assert!(Pool::try_with_capacity(Layout::new::<u64>(), usize::MAX).is_err());
    assert!(TypedPool::<[u8; 64]>::try_with_capacity(usize::MAX / 2).is_err());
    // A backing allocator that fails: nothing is left held.
    let backing = Counting::default();
    backing.fail.set(true);
    assert!(Arena::try_with_capacity_in(100, &backing).is_err());
    assert!(SyncArena::try_with_capacity_in(100, &backing).is_err());
    assert!(Pool::try_with_capacity_in(Layout::new::<u64>(), 100, &backing).is_err());
    assert!(TypedPool::<u64, _>::try_with_capacity_in(100, &backing).is_err());
    assert_eq!(backing.live.get(), 0);
    // And a capacity that can be had is there.
    backing.fail.set(false);
    let pool = TypedPool::<u64, _>::try_with_capacity_in(100, &backing).unwrap();
    assert!(pool.as_pool().capacity() >= 100);
    let arena = SyncArena::try_with_capacity(4096).unwrap();
    assert!(arena.chunk_capacity() >= 4096);
}

#[test]
fn a_sync_pool_that_cannot_have_its_shards_says_so() {
    // 65 536 shards of 128 bytes: 8 MiB of shards, above the cap; the backing allocator is
    // dropped, nothing is held.
    let backing = Counting::default();
    CAP.with(|c| c.set(1 << 20));
    let refused = SyncPool::try_with_shards_in(Layout::new::<u64>(), 1 << 16, &backing);
    let small = SyncPool::try_with_shards_in(Layout::new::<u64>(), 4, &backing);
    CAP.with(|c| c.set(usize::MAX));
    assert!(refused.is_err());
    let small = small.unwrap();
    assert_eq!(small.shard_count(), 4);
    assert_eq!(backing.allocs.get(), 0);
    // The plain forms and the default shard count work as before.
    let pool = SyncPool::try_new(Layout::new::<[u8; 24]>()).unwrap();
    assert_eq!(pool.slot_size(), 24);
    let b = pool.alloc([1u8; 24]);
    assert_eq!(b[23], 1);
    drop(b);
    assert!(SyncPool::try_new_in(Layout::new::<u32>(), Global).is_ok());
}

#[test]
fn a_capacity_of_zero_takes_nothing() {
    let backing = Counting::default();
    let arena = Arena::with_capacity_in(0, &backing);
    let shared = SyncArena::with_capacity_in(0, &backing);
    let pool = Pool::with_capacity_in(Layout::new::<u64>(), 0, &backing);
    assert_eq!(backing.allocs.get(), 0);
    assert_eq!(arena.stats().chunks, 0);
    assert_eq!(shared.stats().chunks, 0);
    assert_eq!(pool.capacity(), 0);
    // So a limit of 0 set afterwards admits nothing.
    arena.set_allocation_limit(Some(0));
    shared.set_allocation_limit(Some(0));
    assert!(arena.try_alloc(1u8).is_err());
    assert!(shared.try_alloc(1u8).is_err());
    assert_eq!(backing.allocs.get(), 0);
}
