//! Pools whose backing allocator unwinds from `deallocate` while they give memory back (`trim`,
//! drop): the block it was handed is not touched again, nothing the pool keeps points into it,
//! every statistic stays exact, and the pool serves, frees and trims as before. For `Pool`,
//! `TypedPool`, `SizeClassPool` and `SyncPool`.
//!
//! The backing allocator frees the block before it panics, so a pool that still points into it
//! hands out memory the backing allocator no longer holds (checked natively against its record
//! of the blocks it holds, and by Miri as a use after free).
//!
//! Also: a `SyncPool` whose backing allocator's `deallocate`, called with a shard's lock held,
//! uses the same pool on that thread (served, not a deadlock).
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{Pool, PoolStats, SizeClassOptions, SizeClassPool, SyncPool, TypedPool};
use common::{Tracked, all_bytes, expect_backing_panic};

/// Scales a count down under Miri.
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

/// A backing allocator held by value: forwards to a [`Tracked`] and counts its own drops.
struct Handle<'a>(&'a Tracked, &'a Cell<usize>);

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        self.1.set(self.1.get() + 1);
    }
}

// SAFETY: forwards every call to the `Tracked`.
unsafe impl Allocator for Handle<'_> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.0.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.deallocate(ptr, layout) }
    }
}

// ----- what every pool must still do -----

/// Allocates `count` blocks of each of `layouts` from `pool`: each must lie in memory `backing`
/// holds and be disjoint from the others; they are filled, read back and freed.
fn serve_and_free<P: Allocator>(pool: &P, backing: &Tracked, layouts: &[Layout], count: usize) {
    let mut blocks: std::vec::Vec<(NonNull<u8>, Layout, usize, u8)> = std::vec::Vec::new();
    for k in 0..count {
        for &layout in layouts {
            let block = pool.allocate(layout).expect("the pool serves again");
            let (p, len) = (block.cast::<u8>(), block.len());
            // Under Miri the write below is checked instead (an access to freed memory).
            assert!(
                cfg!(miri) || backing.holds(p, len),
                "block {p:p} ({len} bytes) is not in memory the backing allocator holds"
            );
            let fill = (k as u8).wrapping_mul(31).wrapping_add(blocks.len() as u8);
            // SAFETY: a fresh block of `len` bytes.
            unsafe { p.as_ptr().write_bytes(fill, len) };
            blocks.push((p, layout, len, fill));
        }
    }
    let mut ranges: std::vec::Vec<(usize, usize)> = blocks
        .iter()
        .map(|&(p, _, len, _)| (p.addr().get(), len))
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(
            pair[0].0 + pair[0].1 <= pair[1].0,
            "blocks overlap: {pair:?}"
        );
    }
    for &(p, layout, len, fill) in &blocks {
        // SAFETY: a live block of `len` bytes, filled above.
        let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr(), len) };
        assert!(all_bytes(bytes, fill), "a block was overwritten");
        // SAFETY: allocated above with `layout`, freed once.
        unsafe { pool.deallocate(p, layout) };
    }
}

/// Checks a `Pool`'s (or the one shard's of a `SyncPool`) statistics against what `backing`
/// holds: its slabs and its address map's table (taken with the first slab, kept until drop).
fn assert_pool_stats_exact(slabs: usize, bytes_held: usize, backing: &Tracked) {
    assert_eq!(
        backing.held_blocks(),
        slabs + 1,
        "blocks held for {slabs} slabs and a map table"
    );
    assert!(backing.held_bytes() > bytes_held);
}

// ----- Pool and TypedPool -----

type Item = [u64; 4];

/// Boxes filling `slabs` slabs of `pool`, the last one partly: the slab being carved still has
/// slots to carve.
fn fill_slabs<A: Allocator>(pool: &Pool<A>, slabs: usize) -> std::vec::Vec<Box<Item, &Pool<A>>> {
    let mut boxes = std::vec::Vec::new();
    while pool.stats().slabs < slabs {
        boxes.push(Box::new_in([boxes.len() as u64; 4], pool));
    }
    boxes.push(Box::new_in([0; 4], pool));
    assert!(pool.in_use() < pool.capacity());
    boxes
}

/// `Pool` and `SyncPool`, whose `trim` releases slabs one by one (a `SyncPool` shard is a `Pool`).
trait SlabPool: Allocator {
    fn stats(&self) -> PoolStats;
    fn trim(&mut self);
}

impl<A: Allocator> SlabPool for Pool<A> {
    fn stats(&self) -> PoolStats {
        Pool::stats(self)
    }

    fn trim(&mut self) {
        Pool::trim(self);
    }
}

impl<A: Allocator> SlabPool for SyncPool<A> {
    fn stats(&self) -> PoolStats {
        SyncPool::stats(self)
    }

    fn trim(&mut self) {
        SyncPool::trim(self);
    }
}

/// `trim` of `pool` (one shard), whose one slot in use is `kept` (made by
/// `Box::into_raw_with_allocator`, holding `[0; 4]`), with the `n`th slab release unwinding: the
/// statistics stay exact, the pool serves and frees as before, the count of slots in use stays
/// 1, `slabs` slabs are left, and `kept` is intact. Then `kept` is freed and a second `trim`
/// gives every slab back, and nothing leaks.
///
/// # Safety
/// `kept` was made by `Box::into_raw_with_allocator` from a box of `pool`, and is not used again.
unsafe fn trim_that_unwinds_with_a_live_slot<P: SlabPool>(
    mut pool: P,
    backing: &Tracked,
    n: usize,
    kept: *mut Item,
    slabs: usize,
) {
    backing.panic_in_dealloc(n);
    expect_backing_panic(|| pool.trim());
    let s = pool.stats();
    assert_pool_stats_exact(s.slabs, s.bytes_held, backing);
    serve_and_free(&pool, backing, &[Layout::new::<Item>()], scaled(200, 70));
    assert_eq!(pool.stats().in_use, s.in_use);
    assert_eq!(
        s.in_use, 1,
        "panic at release {n}: the count of slots in use"
    );
    assert_eq!(s.slabs, slabs, "panic at release {n}");
    // SAFETY: made by `Box::into_raw_with_allocator` from a box of this pool (the caller's
    // contract), its slot still in use.
    let kept = unsafe { Box::from_raw_in(kept, &pool) };
    assert_eq!(*kept, [0; 4]);
    drop(kept);
    pool.trim();
    assert_eq!(pool.stats().slabs, 0);
    drop(pool);
    assert_eq!(
        backing.free_leftovers(),
        0,
        "panic at release {n}: a block leaked"
    );
}

/// `Pool::trim` with no slot in use, four slabs, and the `n`th slab's release unwinds: the
/// carve region, the list and the map must not keep the released slabs, and the slabs not
/// released yet stay with the pool, which serves from them and gives them back later.
#[test]
fn pool_trim_of_an_empty_pool_that_unwinds() {
    // The last release first: the slab being carved.
    for n in (0..4).rev() {
        let backing = Tracked::default();
        let mut pool = Pool::new_in(Layout::new::<Item>(), &backing);
        drop(fill_slabs(&pool, 4));
        assert_eq!(pool.stats().slabs, 4);
        backing.panic_in_dealloc(n);
        expect_backing_panic(|| pool.trim());
        let s = pool.stats();
        assert_pool_stats_exact(s.slabs, s.bytes_held, &backing);
        serve_and_free(&pool, &backing, &[Layout::new::<Item>()], scaled(200, 70));
        assert_eq!(pool.stats().in_use, s.in_use);
        assert_eq!(
            s.in_use, 0,
            "panic at release {n}: the count of slots in use"
        );
        assert_eq!(s.slabs, 3 - n, "panic at release {n}");
        pool.trim();
        assert_eq!(pool.stats().slabs, 0);
        drop(pool);
        assert_eq!(
            backing.free_leftovers(),
            0,
            "panic at release {n}: a block leaked"
        );
    }
}

/// `Pool::trim` with a slot in use in the first slab, so that three slabs (the one being carved
/// among them) go back, and the `n`th release unwinds: the live slot stays intact, the free
/// list keeps only the free slots of slabs still held, and the count of slots in use is exact.
#[test]
fn pool_trim_with_a_live_slot_that_unwinds() {
    // The last release first: the slab being carved.
    for n in (0..3).rev() {
        let backing = Tracked::default();
        let pool = Pool::new_in(Layout::new::<Item>(), &backing);
        let mut boxes = fill_slabs(&pool, 4);
        let keep = Box::into_raw_with_allocator(boxes.remove(0)).0;
        // The others freed odd ones first, so that the free list mixes the slabs.
        let (odd, even): (std::vec::Vec<_>, std::vec::Vec<_>) =
            boxes.into_iter().enumerate().partition(|(i, _)| i % 2 == 1);
        drop((odd, even));
        // SAFETY: made by `Box::into_raw_with_allocator` above, from a box of `pool`.
        unsafe { trim_that_unwinds_with_a_live_slot(pool, &backing, n, keep, 3 - n) };
    }
}

/// `TypedPool::trim` (the same slab release as `Pool`'s) with the release of the slab being
/// carved unwinding.
#[test]
fn typed_pool_trim_that_unwinds() {
    let backing = Tracked::default();
    let mut pool = TypedPool::<Item, _>::new_in(&backing);
    let mut boxes: std::vec::Vec<_> = (0..70u64).map(|i| pool.alloc([i; 4])).collect();
    let kept = Box::into_raw_with_allocator(boxes.remove(0)).0;
    drop(boxes);
    // Slabs of 16, 16, 16, 16 and 19 slots: the last four are released, the last of them is
    // the one being carved.
    assert_eq!(pool.stats().slabs, 5);
    backing.panic_in_dealloc(3);
    expect_backing_panic(|| pool.trim());
    let s = pool.stats();
    assert_pool_stats_exact(s.slabs, s.bytes_held, &backing);
    serve_and_free(&pool, &backing, &[Layout::new::<Item>()], scaled(200, 70));
    assert_eq!(pool.stats().in_use, s.in_use);
    assert_eq!(s.in_use, 1);
    // SAFETY: made by `Box::into_raw_with_allocator` above, its slot still in use.
    drop(unsafe { Box::from_raw_in(kept, &pool) });
    pool.trim();
    drop(pool);
    assert_eq!(backing.free_leftovers(), 0);
}

// ----- SizeClassPool -----

/// Asserts that a `SizeClassPool`'s page counts add up: the pages held are the classes' pages
/// and the cached empty ones, and the backing allocator holds them and the map's table.
fn assert_size_class_stats_exact<A: Allocator>(pool: &SizeClassPool<A>, backing: &Tracked) {
    let s = pool.stats();
    let (pages, bytes) = s
        .classes()
        .fold((0, 0), |(p, b), c| (p + c.pages, b + c.bytes));
    let counts = (s.pages, s.empty_pages, s.bytes_held, s.empty_bytes);
    assert_eq!(s.pages, pages + s.empty_pages, "pages held: {counts:?}");
    assert_eq!(
        s.bytes_held,
        bytes + s.empty_bytes,
        "bytes held: {counts:?}"
    );
    assert_eq!(backing.held_blocks(), s.pages + 1, "pages held: {counts:?}");
}

/// Several classes with several pages each, all freed (pages cached, classes' spares), then
/// `trim` with the `n`th page's release unwinding: the counts of cached pages stay exact, and
/// the pool serves, trims and frees as before.
#[test]
fn size_class_pool_trim_that_unwinds() {
    let options = SizeClassOptions {
        page_size: 4096,
        max_empty_pages: 16,
        ..SizeClassOptions::default()
    };
    let layouts = [
        Layout::from_size_align(48, 8).unwrap(),
        Layout::from_size_align(256, 16).unwrap(),
        Layout::from_size_align(500, 16).unwrap(),
    ];
    for n in 0..scaled(5, 3) {
        let backing = Tracked::default();
        let mut pool = SizeClassPool::with_options_in(options, &backing);
        let blocks: std::vec::Vec<_> = (0..24)
            .flat_map(|_| layouts.map(|l| (pool.allocate(l).unwrap().cast::<u8>(), l)))
            .collect();
        for &(p, l) in &blocks {
            // SAFETY: allocated above with `l`, freed once.
            unsafe { pool.deallocate(p, l) };
        }
        let before = pool.stats();
        assert!(before.pages >= 5 && before.empty_pages >= 3);
        backing.panic_in_dealloc(n);
        expect_backing_panic(|| pool.trim());
        let pages = pool.stats().pages;
        serve_and_free(&pool, &backing, &layouts, scaled(40, 12));
        assert_eq!(pages, before.pages - n - 1);
        assert_size_class_stats_exact(&pool, &backing);
        pool.trim();
        assert_eq!(pool.stats().pages, 0);
        assert_size_class_stats_exact(&pool, &backing);
        drop(pool);
        assert_eq!(
            backing.free_leftovers(),
            0,
            "panic at release {n}: a block leaked"
        );
    }
}

// ----- SyncPool -----

/// `SyncPool::trim`: each shard is a `Pool`, whose slab release unwinds as above.
#[test]
fn sync_pool_trim_that_unwinds() {
    // Every slab but the first is released; the slab being carved (the last) first.
    for n in [3, 1, 0] {
        let backing = Tracked::default();
        let pool = SyncPool::with_shards_in(Layout::new::<Item>(), 1, &backing);
        let mut boxes: std::vec::Vec<_> = (0..70u64).map(|i| pool.alloc([i; 4])).collect();
        let kept = Box::into_raw_with_allocator(boxes.remove(0)).0;
        drop(boxes);
        assert_eq!(pool.stats().slabs, 5);
        // SAFETY: made by `Box::into_raw_with_allocator` above, from a box of `pool`.
        unsafe { trim_that_unwinds_with_a_live_slot(pool, &backing, n, kept, 4 - n) };
    }
}

/// A `SyncPool` dropped while a slab's release unwinds: the pool's shared state (holding the
/// backing allocator) is still freed, and the backing allocator dropped.
#[test]
fn sync_pool_drop_that_unwinds() {
    let backing = Tracked::default();
    let handles_dropped = Cell::new(0);
    let pool =
        SyncPool::with_shards_in(Layout::new::<Item>(), 2, Handle(&backing, &handles_dropped));
    drop(
        (0..70u64)
            .map(|i| pool.alloc([i; 4]))
            .collect::<std::vec::Vec<_>>(),
    );
    assert_eq!(pool.stats().slabs, 5);
    backing.panic_in_dealloc(1);
    expect_backing_panic(|| drop(pool));
    assert_eq!(
        handles_dropped.get(),
        1,
        "the backing allocator was not dropped"
    );
    // The three slabs after the one that unwound, and the shard's map table, are left.
    assert_eq!(backing.free_leftovers(), 4);
}

/// `Pool` and `SizeClassPool` dropped while a release unwinds: the blocks not given back are
/// left to the backing allocator, none is given back twice or touched after.
#[test]
fn pool_and_size_class_pool_drop_that_unwinds() {
    let backing = Tracked::default();
    let pool = Pool::new_in(Layout::new::<Item>(), &backing);
    drop(fill_slabs(&pool, 3));
    backing.panic_in_dealloc(1);
    expect_backing_panic(|| drop(pool));
    // The third slab and the map's table are left.
    assert_eq!(backing.free_leftovers(), 2);

    let pool = SizeClassPool::with_options_in(
        SizeClassOptions {
            page_size: 4096,
            ..SizeClassOptions::default()
        },
        &backing,
    );
    let layout = Layout::from_size_align(256, 16).unwrap();
    let blocks: std::vec::Vec<_> = (0..40).map(|_| pool.allocate(layout).unwrap()).collect();
    for p in blocks {
        // SAFETY: allocated above with `layout`, freed once.
        unsafe { pool.deallocate(p.cast(), layout) };
    }
    let pages = pool.stats().pages;
    assert!(pages >= 2);
    backing.panic_in_dealloc(0);
    expect_backing_panic(|| drop(pool));
    // The other pages and the map's table are left.
    assert_eq!(backing.free_leftovers(), pages);
}

/// A backing allocator whose `deallocate` uses the `SyncPool` it backs, through a pointer to it.
#[derive(Default)]
struct Reentering {
    /// The pool (a `SyncPool<&Reentering>`), while the nested use is on.
    pool: Cell<Option<NonNull<()>>>,
    /// Nested uses made.
    nested: Cell<usize>,
}

// SAFETY: every block comes from `Global` and goes back to it unchanged; the nested use only
// reads the pool's statistics.
unsafe impl Allocator for Reentering {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        Global.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if let Some(pool) = self.pool.get() {
            // SAFETY: set to the live pool below, and cleared before it is trimmed or dropped.
            let pool = unsafe { pool.cast::<SyncPool<&Reentering>>().as_ref() };
            let _ = pool.in_use();
            self.nested.set(self.nested.get() + 1);
        }
        // SAFETY: the block came from `Global` with `layout`.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A `SyncPool` shard replaces its address map's table (taking its third slab) with its lock
/// held, and gives the old table back: a backing allocator whose `deallocate` uses the same
/// `SyncPool` on that thread meanwhile is served, not blocked on the shard's lock.
#[test]
fn sync_pool_backing_deallocate_may_use_the_pool() {
    fn run() -> usize {
        let backing = Reentering::default();
        let pool = SyncPool::with_shards_in(Layout::new::<u64>(), 1, &backing);
        backing.pool.set(Some(NonNull::from(&pool).cast()));
        let boxes: std::vec::Vec<_> = (0..300u64).map(|i| pool.alloc(i)).collect();
        backing.pool.set(None);
        assert!(boxes.iter().enumerate().all(|(i, b)| **b == i as u64));
        drop(boxes);
        backing.nested.get()
    }
    // Miri reports a deadlock itself; natively the run is given a minute.
    let nested = if cfg!(miri) {
        run()
    } else {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(run()));
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .expect("deadlock: the shard's lock was taken again by its holder")
    };
    assert!(nested > 0, "the address map's table was never replaced");
}
