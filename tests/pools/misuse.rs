//! Broken contracts and failures: debug-build detection of double frees and foreign pointers, a
//! failing backing allocator, and moving pools to another thread.

use crate::common::Counting;
use crate::{Budget, layout, live_classes};
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec as AVec;
use arena_pool::{Pool, SizeClassPool};
use std::cell::Cell;

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "double free")]
fn pool_double_free_panics_in_debug() {
    let pool = Pool::for_type::<u64>();
    let l = Layout::new::<u64>();
    let a = pool.allocate(l).unwrap().cast::<u8>();
    let _b = Box::new_in(2u64, &pool);
    // SAFETY: `a` is live, from `pool`, with layout `l`.
    unsafe { pool.deallocate(a, l) };
    // SAFETY: deliberately breaks the contract (a second free): debug builds check the slot's
    // live bit in the pool's own bitmap before touching the slot, and panic.
    unsafe { pool.deallocate(a, l) };
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "not allocated by this pool")]
fn pool_foreign_pointer_panics_in_debug() {
    let other = Pool::for_type::<u64>();
    let pool = Pool::for_type::<u64>();
    let l = Layout::new::<u64>();
    let _mine = Box::new_in(1u64, &pool);
    let theirs = other.allocate(l).unwrap().cast::<u8>();
    // SAFETY: deliberately breaks the contract (a block of another pool, a real live block, so
    // reading it would not be UB by itself): debug builds look its address up in the pool's
    // address map, find no slab, and panic.
    unsafe { pool.deallocate(theirs, l) };
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "double free")]
fn size_class_double_free_panics_in_debug() {
    let pool = SizeClassPool::new();
    let l = layout(40, 8);
    let a = pool.allocate(l).unwrap().cast::<u8>();
    let _b = Box::new_in([0u8; 40], &pool); // keeps the page in its class
    // SAFETY: `a` is live, from `pool`, with layout `l`.
    unsafe { pool.deallocate(a, l) };
    // SAFETY: deliberately breaks the contract (a second free): debug builds check the block's
    // live bit in the page's bitmap before touching it, and panic.
    unsafe { pool.deallocate(a, l) };
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "not allocated by this pool")]
fn size_class_foreign_pointer_panics_in_debug() {
    let other = SizeClassPool::new();
    let pool = SizeClassPool::new();
    let l = layout(40, 8);
    let _mine = Box::new_in([0u8; 40], &pool);
    let theirs = other.allocate(l).unwrap().cast::<u8>();
    // SAFETY: deliberately breaks the contract (a live block of another pool): debug builds
    // find no page of this pool at its address, and panic.
    unsafe { pool.deallocate(theirs, l) };
}

// ----- a failing backing allocator -----

#[test]
fn pool_survives_a_failing_backing_allocator() {
    let counting = Counting::default();
    let l = Layout::new::<[u64; 8]>();
    let pool = Pool::new_in(l, &counting);
    // A Vec in one slot (the slot holds 64 bytes), then boxes in every other slot.
    let mut v: AVec<u8, _> = AVec::new_in(&pool);
    v.extend(0..60u8);
    assert!(v.capacity() <= 64);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 0));
    let mut want: Vec<u64> = Vec::new();
    let mut boxes = Vec::new();
    while pool.in_use() < pool.capacity() {
        want.push(boxes.len() as u64);
        boxes.push(Box::new_in([boxes.len() as u64; 8], &pool));
    }
    let before = (pool.stats(), counting.live.get());
    counting.fail.set(true);
    // Every slot is taken: a slot needs a new slab, which fails; so does the fallback.
    assert!(pool.allocate(l).is_err());
    assert!(pool.allocate_zeroed(l).is_err());
    assert!(pool.allocate(layout(1000, 8)).is_err());
    assert!(Box::try_new_in([1u64; 8], &pool).is_err());
    // Growing the Vec out of its slot fails and leaves it intact.
    assert!(v.try_reserve(1000).is_err());
    assert!(v.iter().copied().eq(0..60));
    // Zero-sized layouts need no memory.
    assert!(pool.allocate(layout(0, 8)).is_ok());
    assert_eq!((pool.stats(), counting.live.get()), before);
    // A freed slot is still handed out while the backing allocator fails.
    let freed = boxes.pop().unwrap();
    let at = (&*freed as *const [u64; 8]).addr();
    drop(freed);
    let b = Box::new_in([42u64; 8], &pool);
    assert_eq!((&*b as *const [u64; 8]).addr(), at);
    boxes.push(b);
    *want.last_mut().unwrap() = 42;
    // The pool works again once the allocator does; earlier blocks are intact.
    counting.fail.set(false);
    for i in 0..before.0.capacity as u64 {
        want.push(1000 + i);
        boxes.push(Box::new_in([1000 + i; 8], &pool));
    }
    assert!(pool.capacity() > before.0.capacity);
    for (b, &w) in boxes.iter().zip(&want) {
        assert_eq!(**b, [w; 8]);
    }
    v.reserve(1000);
    assert_eq!(pool.stats().fallback_blocks, 1);
    assert!(v.iter().copied().eq(0..60));
    drop((boxes, v));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn size_class_survives_a_failing_backing_allocator() {
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let boxes: Vec<_> = (0..10u64).map(|i| Box::new_in([i; 8], &pool)).collect(); // class 64
    let before = (pool.stats(), counting.live.get());
    counting.fail.set(true);
    // Class 64 has room in its page: served. Class 128 needs a page: fails. So does the fallback.
    let ok = Box::new_in([99u64; 8], &pool);
    assert!(pool.allocate(layout(128, 8)).is_err());
    assert!(pool.allocate_zeroed(layout(128, 8)).is_err());
    assert!(pool.allocate(layout(100_000, 8)).is_err());
    assert!(pool.allocate(layout(64, 64)).is_err());
    assert!(pool.allocate(layout(0, 64)).is_ok());
    // A move to another class fails and leaves the block where it was.
    let p = pool.allocate(layout(64, 8)).unwrap().cast::<u8>();
    // SAFETY: 64 fresh bytes.
    unsafe { p.write_bytes(0x11, 64) };
    // SAFETY: `p` is live with layout (64, 8); the new layout is larger.
    assert!(unsafe { pool.grow(p, layout(64, 8), layout(200, 8)) }.is_err());
    // SAFETY: `p` is still live and its 64 bytes were written above.
    assert_eq!(unsafe { p.cast::<[u8; 64]>().read() }, [0x11; 64]);
    // SAFETY: `p` is live with layout (64, 8).
    unsafe { pool.deallocate(p, layout(64, 8)) };
    assert_eq!(live_classes(&pool), [(64, 11)]);
    assert_eq!(
        (pool.stats().pages, counting.live.get()),
        (before.0.pages, before.1)
    );
    counting.fail.set(false);
    let b = Box::new_in([7u8; 128], &pool);
    assert_eq!(live_classes(&pool), [(64, 11), (128, 1)]);
    for (i, x) in boxes.iter().enumerate() {
        assert_eq!(**x, [i as u64; 8]);
    }
    assert_eq!((*ok, *b), ([99; 8], [7; 128]));
    drop((boxes, ok, b));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// The address map's table is granted but the slab / page is not (the table is taken first, so
/// that a granted slab can always be registered): the allocation fails, only the table stays
/// (pool metadata, freed with the pool), and the pool works once memory is available.
#[test]
fn pools_survive_a_failure_after_the_map_table_is_granted() {
    /// 4 entries of a key and a pointer: the smallest address-map table.
    const TABLE: usize = 4 * 2 * size_of::<usize>();
    let counting = Counting::default();
    let budget = Budget {
        inner: &counting,
        budget: Cell::new(1),
    };
    let pool = Pool::new_in(Layout::new::<u64>(), &budget);
    assert!(pool.allocate(Layout::new::<u64>()).is_err());
    let s = pool.stats();
    assert_eq!((s.slabs, s.capacity, s.bytes_held, s.in_use), (0, 0, 0, 0));
    assert_eq!((counting.allocs.get(), counting.live.get()), (1, TABLE));
    budget.budget.set(usize::MAX);
    let b = Box::new_in(7u64, &pool);
    assert_eq!((*b, pool.in_use(), pool.stats().slabs), (7, 1, 1));
    // The table taken before was enough: one more call, for the slab.
    assert_eq!(counting.allocs.get(), 2);
    drop(b);
    drop(pool);
    assert_eq!(counting.live.get(), 0);

    budget.budget.set(1);
    let pool = SizeClassPool::new_in(&budget);
    assert!(pool.allocate(layout(24, 8)).is_err());
    let s = pool.stats();
    assert_eq!((s.pages, s.bytes_held, s.live_blocks()), (0, 0, 0));
    assert_eq!(counting.live.get(), TABLE);
    budget.budget.set(usize::MAX);
    let b = Box::new_in([5u8; 24], &pool);
    assert_eq!(
        (*b, pool.stats().pages, pool.stats().live_blocks()),
        ([5; 24], 1, 1)
    );
    drop(b);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- Send -----

fn assert_send<T: Send>() {}

#[test]
fn pools_are_send() {
    assert_send::<Pool>();
    assert_send::<SizeClassPool>();
    assert_send::<Pool<Counting>>();
    assert_send::<SizeClassPool<Counting>>();
    // And moving them to another thread with their slabs / pages works.
    let pool = Pool::for_type::<u64>();
    let scp = SizeClassPool::new();
    drop(Box::new_in(1u64, &pool));
    drop(Box::new_in([1u8; 100], &scp));
    let (held, pages) = (pool.stats().bytes_held, scp.stats().pages);
    let out = std::thread::spawn(move || {
        let a = Box::new_in(5u64, &pool);
        let b = Box::new_in([6u8; 100], &scp);
        (
            *a + u64::from(b[99]),
            pool.stats().bytes_held,
            scp.stats().pages,
        )
    })
    .join()
    .unwrap();
    assert_eq!(out, (11, held, pages));
}
