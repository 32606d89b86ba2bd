//! Constructors that allocate: each has a `try_` form that returns `Err` for a capacity that
//! cannot be had (its size overflows, or the backing allocator refuses it) where the plain form
//! panics or aborts, and a capacity of 0 takes nothing.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::{Arena, Pool, SyncArena, TypedPool};
use common::Counting;

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
