//! Regression tests for what the fuzz targets (fuzz/) found: one plain test per root
//! cause, replaying the shortest sequence that shows it.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::ptr::NonNull;

use arena_pool::Pool;
use arena_pool::allocator_api2::alloc::{Allocator, Layout};

fn take(pool: &Pool, layout: Layout, n: usize) -> Vec<NonNull<u8>> {
    (0..n)
        .map(|_| pool.allocate(layout).expect("a slot").cast())
        .collect()
}

fn give_back(pool: &Pool, layout: Layout, blocks: Vec<NonNull<u8>>) {
    for p in blocks {
        // SAFETY: every block came from `pool` with `layout` and is not used again.
        unsafe { pool.deallocate(p, layout) };
    }
}

/// Found by `pool_ops`: a `trim` that released the slab being carved moved carving back to the
/// last slab it kept but left the carve position dangling, outside that slab. The next `trim`
/// computed the slab's carved-slot count from that position: a subtraction overflow, which
/// panicked in debug builds, and in release builds wrapped to a huge count that kept the slab
/// even with none of its slots in use.
#[test]
fn pool_trim_after_releasing_the_carving_slab() {
    let layout = Layout::from_size_align(1024, 1024).unwrap();
    let mut pool = Pool::new(layout);
    // Three slabs, the first two full; the third is being carved, with one slot used.
    let mut first = take(&pool, layout, 1);
    first.extend(take(&pool, layout, pool.capacity() - 1));
    let mut second = take(&pool, layout, 1);
    second.extend(take(&pool, layout, pool.capacity() - first.len() - 1));
    let third = take(&pool, layout, 1);
    assert_eq!(pool.stats().slabs, 3);
    assert!(pool.capacity() > first.len() + second.len() + 1);

    // The third slab has no slot in use: released, carving moves back to the second.
    give_back(&pool, layout, third);
    pool.trim();
    assert_eq!(pool.stats().slabs, 2);

    // Now the second has none in use either (the first still has all of its slots in use).
    give_back(&pool, layout, second);
    pool.trim();
    assert_eq!(pool.stats().slabs, 1, "a slab with no slot in use was kept");
    assert_eq!(pool.in_use(), first.len());

    // The pool still hands out and takes back slots, and gives everything back at the end.
    let more = take(&pool, layout, 40);
    assert_eq!(pool.in_use(), first.len() + 40);
    give_back(&pool, layout, more);
    give_back(&pool, layout, first);
    pool.trim();
    assert_eq!(pool.stats().bytes_held, 0);
}
