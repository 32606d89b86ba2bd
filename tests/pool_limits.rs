//! The allocation limit of every pool (`Pool`, `TypedPool`, `SizeClassPool`, `SyncPool`): it
//! caps the bytes held from the backing allocator (slabs or pages, the address map's table,
//! blocks of layouts the pool hands on), measured here by a counting backing allocator.
//!
//! For each type:
//! - **Exactly the limit**: a run without a limit records the bytes held (their peak) after each
//!   request; a run of the same requests with the limit set to one of those figures serves every
//!   request up to it, to the byte, and refuses the next one, with no call into the backing
//!   allocator and nothing held that was not before.
//! - **A free slot at the limit**: a freed slot (or block of a class) is handed out again at
//!   the limit, with no backing call.
//! - the panicking API panics naming the limit; with `set_panic_on_limit` the `Allocator`
//!   methods do, and the pool stays usable; the pools' own `try_alloc` still returns `Err`.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use core::alloc::Layout;
use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use arena_pool::allocator_api2::alloc::{AllocError, Allocator};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Pool, SizeClassPool, SyncPool, TypedPool};
use common::Counting;

/// Scales a count down under Miri.
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

/// Requests per run.
const STEPS: usize = scaled(3000, 200);

/// The message of a limit of `limit` bytes.
fn limit_message(limit: usize) -> String {
    format!("arena-pool: the pool's allocation limit of {limit} bytes is reached")
}

/// The text of a caught panic.
fn message(payload: std::boxed::Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Runs `steps` requests (each `step(i)`, `true` when served) on a pool over `c`, as made by
/// `run`, and returns the peak of the bytes held after each request served.
fn peaks(c: &Counting, steps: usize, mut step: impl FnMut(usize) -> bool) -> std::vec::Vec<usize> {
    (0..steps)
        .map_while(|i| step(i).then(|| c.peak.get()))
        .collect()
}

/// Checks the limit to the byte: for a few of the figures `free` (an unlimited run) went
/// through, `limited(limit)` runs the same requests under that limit and must serve exactly the
/// requests whose peak stayed within it, reaching the limit exactly, with the refused request
/// making no backing call. `limited` returns (requests served, peak, backing calls before and
/// after the refused request).
fn exactly_the_limit(free: &[usize], limited: impl Fn(usize) -> (usize, usize, usize, usize)) {
    assert_eq!(free.len(), STEPS, "the unlimited run serves every request");
    let mut figures: std::vec::Vec<usize> = free.to_vec();
    figures.dedup();
    assert!(
        figures.len() >= 3,
        "the run takes memory several times: {figures:?}"
    );
    // A few figures, spread over the run (every one natively).
    let every = scaled(1, (figures.len() / 3).max(1));
    for &limit in figures.iter().take(figures.len() - 1).step_by(every) {
        let (served, peak, calls_before, calls_after) = limited(limit);
        let expect = free.iter().take_while(|&&p| p <= limit).count();
        assert_eq!(served, expect, "requests served under a limit of {limit}");
        assert_eq!(
            peak, limit,
            "the pool reaches its limit of {limit} to the byte"
        );
        assert_eq!(
            calls_before, calls_after,
            "the refused request called the backing allocator"
        );
    }
}

// ----- Pool -----

#[test]
fn pool_holds_exactly_its_limit() {
    let layout = Layout::new::<[u64; 4]>();
    let run = |limit: Option<usize>| {
        let c = Counting::default();
        let pool = Pool::new_in(layout, &c);
        pool.set_allocation_limit(limit);
        let mut boxes = std::vec::Vec::new();
        let free = peaks(&c, STEPS, |i| match pool.try_alloc([i as u64; 4]) {
            Ok(b) => {
                boxes.push(b);
                true
            }
            Err(AllocError) => false,
        });
        let before = c.calls();
        let refused = pool.try_alloc([0u64; 4]).is_err();
        let after = c.calls();
        assert!(c.peak.get() <= limit.unwrap_or(usize::MAX));
        (free, c.peak.get(), before, after, refused)
    };
    let (free, ..) = run(None);
    exactly_the_limit(&free, |limit| {
        let (served, peak, before, after, refused) = run(Some(limit));
        assert!(refused);
        (served.len(), peak, before, after)
    });
}

#[test]
fn pool_hands_out_a_free_slot_at_the_limit() {
    let c = Counting::default();
    let pool = Pool::new_in(Layout::new::<u64>(), &c);
    pool.set_allocation_limit(Some(2048));
    let mut boxes = std::vec::Vec::new();
    while let Ok(b) = pool.try_alloc(1u64) {
        boxes.push(b);
    }
    let (held, calls) = (c.live.get(), c.calls());
    assert!(held <= 2048);
    let freed = boxes.swap_remove(boxes.len() / 2);
    let addr = &*freed as *const u64;
    drop(freed);
    let again = Box::new_in(2u64, &pool);
    assert_eq!(&*again as *const u64, addr);
    assert_eq!((c.live.get(), c.calls()), (held, calls));
    assert!(pool.try_alloc(3u64).is_err());
    // Lifting the limit serves the next request.
    pool.set_allocation_limit(None);
    assert!(pool.try_alloc(3u64).is_ok());
    assert!(c.live.get() > held);
}

#[test]
fn pool_counts_the_blocks_it_hands_to_the_backing_allocator() {
    let c = Counting::default();
    let pool = Pool::new_in(Layout::new::<u64>(), &c);
    pool.set_allocation_limit(Some(4096));
    let big = Layout::from_size_align(4096, 8).unwrap();
    let block = pool.allocate(big).unwrap(); // exactly the limit
    assert_eq!(c.live.get(), 4096);
    assert!(pool.try_alloc(1u64).is_err()); // a slab would pass it
    assert!(pool.allocate(Layout::new::<[u8; 9]>()).is_err());
    // Growing the block past the limit is refused, and the block stays.
    let bigger = Layout::from_size_align(8192, 8).unwrap();
    // SAFETY: `block` is live, from `pool` with `big`.
    assert!(unsafe { pool.grow(block.cast(), big, bigger) }.is_err());
    let small = Layout::from_size_align(1024, 8).unwrap();
    // SAFETY: as above.
    let block = unsafe { pool.shrink(block.cast(), big, small) }.unwrap();
    assert_eq!(c.live.get(), 1024);
    let b = pool.alloc(5u64); // a slab fits now
    // SAFETY: `block` is live, from `pool` with `small`.
    unsafe { pool.deallocate(block.cast(), small) };
    assert_eq!(*b, 5);
    assert!(c.live.get() <= 4096);
}

#[test]
fn pool_keeps_what_it_holds_under_a_lower_limit() {
    let c = Counting::default();
    let mut pool = Pool::new_in(Layout::new::<u64>(), &c);
    let boxes: std::vec::Vec<_> = (0..100).map(|i| pool.alloc(i as u64)).collect();
    let held = c.live.get();
    pool.set_allocation_limit(Some(0));
    assert_eq!(pool.allocation_limit(), Some(0));
    drop(boxes);
    assert_eq!(c.live.get(), held); // nothing given back by the limit
    // Every slot held is served, the free ones and those not carved yet.
    let again: std::vec::Vec<_> = (0..pool.capacity()).map(|i| pool.alloc(i as u64)).collect();
    assert_eq!(c.live.get(), held);
    assert!(pool.try_alloc(0u64).is_err());
    drop(again);
    pool.trim();
    assert_eq!(pool.stats().bytes_held, 0);
    drop(pool);
    assert_eq!(c.live.get(), 0);
}

#[test]
fn pool_panics_naming_its_limit() {
    let c = Counting::default();
    let pool = Pool::new_in(Layout::new::<u64>(), &c);
    pool.set_allocation_limit(Some(1000));
    let mut boxes = std::vec::Vec::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        loop {
            boxes.push(pool.alloc(1u64));
        }
    }));
    assert_eq!(message(r.unwrap_err()), limit_message(1000));
    // The `Allocator` methods return `Err` unless the pool panics on its limit.
    assert!(!pool.panics_on_limit());
    assert!(Box::try_new_in(1u64, &pool).is_err());
    pool.set_panic_on_limit(true);
    let mut v: Vec<u64, &Pool<&Counting>> = Vec::new_in(&pool);
    let r = catch_unwind(AssertUnwindSafe(|| v.extend(0..1000)));
    assert_eq!(message(r.unwrap_err()), limit_message(1000));
    assert!(c.peak.get() <= 1000);
    assert!(v.iter().copied().eq(0..v.len() as u64)); // the vector keeps what it had
    let r = catch_unwind(AssertUnwindSafe(|| Box::try_new_in(1u64, &pool)));
    assert_eq!(message(r.unwrap_err()), limit_message(1000));
    // The pool's own `try_alloc` still returns `Err`.
    assert!(pool.try_alloc(1u64).is_err());
    // Another refusal is not the limit's: a strict pool refuses a layout that fits no slot
    // with `Err`, even right after the limit refused a request.
    pool.set_strict(true);
    assert!(Box::try_new_in([0u64; 4], &pool).is_err());
    // The pool stays usable.
    boxes.pop();
    assert_eq!(*Box::new_in(7u64, &pool), 7);
    drop(boxes);
    drop(v);
    pool.set_panic_on_limit(false);
    assert!(!pool.panics_on_limit());
}

#[test]
fn a_backing_allocator_out_of_memory_is_not_the_limit() {
    let c = Counting::default();
    let pool = Pool::new_in(Layout::new::<u64>(), &c);
    pool.set_allocation_limit(Some(1 << 20));
    pool.set_panic_on_limit(true);
    c.fail.set(true);
    assert!(Box::try_new_in(1u64, &pool).is_err()); // `Err`, no panic
    let sc = SizeClassPool::new_in(&c);
    sc.set_allocation_limit(Some(1 << 20));
    sc.set_panic_on_limit(true);
    assert!(Box::try_new_in(1u64, &sc).is_err());
}

// ----- TypedPool -----

#[test]
fn typed_pool_holds_exactly_its_limit() {
    let run = |limit: Option<usize>| {
        let c = Counting::default();
        let pool: TypedPool<[u32; 5], &Counting> = TypedPool::new_in(&c);
        pool.set_allocation_limit(limit);
        let mut boxes = std::vec::Vec::new();
        let served = peaks(&c, STEPS, |i| match Box::try_new_in([i as u32; 5], &pool) {
            Ok(b) => {
                boxes.push(b);
                true
            }
            Err(AllocError) => false,
        });
        let before = c.calls();
        let refused = pool.try_alloc([0; 5]).is_err();
        let after = c.calls();
        // At the limit, a freed slot is served again with no backing call.
        if refused {
            drop(boxes.pop());
            assert!(pool.try_alloc([1; 5]).is_ok());
            assert_eq!(c.calls(), after);
        }
        (served, c.peak.get(), before, after, refused)
    };
    let (free, ..) = run(None);
    exactly_the_limit(&free, |limit| {
        let (served, peak, before, after, refused) = run(Some(limit));
        assert!(refused);
        (served.len(), peak, before, after)
    });
}

#[test]
fn typed_pool_panics_naming_its_limit() {
    let pool = TypedPool::<u64>::new();
    pool.set_allocation_limit(Some(0));
    assert_eq!(pool.allocation_limit(), Some(0));
    let r = catch_unwind(AssertUnwindSafe(|| pool.alloc(1)));
    assert_eq!(message(r.unwrap_err()), limit_message(0));
    assert!(Box::try_new_in(1u64, &pool).is_err());
    pool.set_panic_on_limit(true);
    assert!(pool.panics_on_limit());
    let r = catch_unwind(AssertUnwindSafe(|| Box::new_in(1u64, &pool)));
    assert_eq!(message(r.unwrap_err()), limit_message(0));
    assert!(pool.try_alloc(1).is_err());
    pool.set_allocation_limit(None);
    assert_eq!(*pool.alloc(3), 3);
}

// ----- SizeClassPool -----

/// The size of request `i` of the mixed runs: 8 to 2 KiB, and a large block now and then.
fn mixed_size(i: usize) -> usize {
    if i % 97 == 96 {
        9000 + i
    } else {
        8 + (i * 37) % 2040
    }
}

#[test]
fn size_class_pool_holds_exactly_its_limit() {
    let run = |limit: Option<usize>| {
        let c = Counting::default();
        let pool = SizeClassPool::new_in(&c);
        pool.set_allocation_limit(limit);
        let mut vecs: std::vec::Vec<Vec<u8, &SizeClassPool<&Counting>>> = std::vec::Vec::new();
        let served = peaks(&c, STEPS, |i| {
            // Grow an earlier vector now and then (a block that moves between classes, or
            // grows with the backing allocator), or free one, or make a new one.
            match i % 5 {
                3 if !vecs.is_empty() => {
                    let k = (i * 7) % vecs.len();
                    let add = mixed_size(i);
                    vecs[k].try_reserve(add).is_ok()
                }
                4 if !vecs.is_empty() => {
                    let k = (i * 11) % vecs.len();
                    vecs.swap_remove(k);
                    true
                }
                _ => {
                    let mut v = Vec::new_in(&pool);
                    let ok = v.try_reserve_exact(mixed_size(i)).is_ok();
                    vecs.push(v);
                    ok
                }
            }
        });
        let before = c.calls();
        let refused = Vec::<u8, _>::new_in(&pool)
            .try_reserve_exact(20_000)
            .is_err();
        let after = c.calls();
        (served, c.peak.get(), before, after, refused)
    };
    let (free, ..) = run(None);
    exactly_the_limit(&free, |limit| {
        let (served, peak, before, after, _) = run(Some(limit));
        (served.len(), peak, before, after)
    });
}

#[test]
fn size_class_pool_hands_out_a_free_block_at_the_limit() {
    let c = Counting::default();
    let pool = SizeClassPool::new_in(&c);
    pool.set_allocation_limit(Some(32 * 1024));
    let mut boxes = std::vec::Vec::new();
    while let Ok(b) = Box::try_new_in([7u8; 200], &pool) {
        boxes.push(b);
    }
    let (held, calls) = (c.live.get(), c.calls());
    assert!(held <= 32 * 1024 && c.peak.get() <= 32 * 1024);
    // A block of the full class, freed, is served again.
    let freed = boxes.swap_remove(3);
    let addr = &*freed as *const [u8; 200];
    drop(freed);
    let again = Box::new_in([1u8; 200], &pool);
    assert_eq!(&*again as *const [u8; 200], addr);
    assert_eq!((c.live.get(), c.calls()), (held, calls));
    // A large block goes to the backing allocator and counts too.
    pool.set_allocation_limit(Some(held + 10_000));
    let large = Layout::from_size_align(10_000, 8).unwrap();
    let block = pool.allocate(large).unwrap();
    assert_eq!(c.live.get(), held + 10_000);
    assert!(
        pool.allocate(Layout::from_size_align(10_000, 8).unwrap())
            .is_err()
    );
    // SAFETY: `block` is live, from `pool` with `large`.
    unsafe { pool.deallocate(block.cast(), large) };
    assert_eq!(c.live.get(), held);
}

#[test]
fn size_class_pool_panics_on_its_limit_when_asked() {
    let c = Counting::default();
    let pool = SizeClassPool::new_in(&c);
    pool.set_allocation_limit(Some(20_000));
    pool.set_panic_on_limit(true);
    assert!(pool.panics_on_limit());
    let mut map = hashbrown::HashMap::new_in(&pool);
    let r = catch_unwind(AssertUnwindSafe(|| {
        for i in 0..100_000u64 {
            map.insert(i, i);
        }
    }));
    assert_eq!(message(r.unwrap_err()), limit_message(20_000));
    assert!(c.peak.get() <= 20_000);
    // The map keeps what it had, and stays usable.
    let n = map.len() as u64;
    assert!(n > 100);
    assert!((0..n).all(|i| map.get(&i) == Some(&i)));
    assert_eq!(map.remove(&0), Some(0));
    drop(map);
    pool.set_panic_on_limit(false);
    let mut v: Vec<u64, _> = Vec::new_in(&pool);
    assert!(v.try_reserve(100_000).is_err());
}

// ----- SyncPool -----

#[test]
fn sync_pool_holds_exactly_its_limit() {
    let layout = Layout::new::<[u64; 3]>();
    let run = |limit: Option<usize>| {
        let c = Counting::default();
        let pool = SyncPool::with_shards_in(layout, 1, &c);
        pool.set_allocation_limit(limit);
        let mut boxes = std::vec::Vec::new();
        let served = peaks(&c, STEPS, |i| match pool.try_alloc([i as u64; 3]) {
            Ok(b) => {
                boxes.push(b);
                true
            }
            Err(AllocError) => false,
        });
        let before = c.calls();
        let refused = Box::try_new_in([0u64; 3], &pool).is_err();
        let after = c.calls();
        if refused {
            // At the limit, a freed slot is served again with no backing call.
            drop(boxes.pop());
            assert!(Box::try_new_in([1u64; 3], &pool).is_ok());
            assert_eq!(c.calls(), after);
        }
        (served, c.peak.get(), before, after, refused)
    };
    let (free, ..) = run(None);
    exactly_the_limit(&free, |limit| {
        let (served, peak, before, after, refused) = run(Some(limit));
        assert!(refused);
        (served.len(), peak, before, after)
    });
}

#[test]
fn sync_pool_counts_blocks_that_do_not_fit_and_panics_naming_its_limit() {
    let c = Counting::default();
    let pool = SyncPool::with_shards_in(Layout::new::<u64>(), 2, &c);
    pool.set_allocation_limit(Some(3000));
    assert_eq!(pool.allocation_limit(), Some(3000));
    let big = Layout::from_size_align(3000, 8).unwrap();
    let block = pool.allocate(big).unwrap();
    assert_eq!(c.live.get(), 3000);
    assert!(pool.allocate(big).is_err());
    assert!(pool.try_alloc(1u64).is_err()); // a slab would pass the limit
    let r = catch_unwind(AssertUnwindSafe(|| pool.alloc(1u64)));
    assert_eq!(message(r.unwrap_err()), limit_message(3000));
    pool.set_panic_on_limit(true);
    assert!(pool.panics_on_limit());
    let bigger = Layout::from_size_align(4000, 8).unwrap();
    // SAFETY: `block` is live, from `pool` with `big`.
    let r = catch_unwind(AssertUnwindSafe(|| unsafe {
        pool.grow(block.cast(), big, bigger)
    }));
    assert_eq!(message(r.unwrap_err()), limit_message(3000));
    let r = catch_unwind(AssertUnwindSafe(|| Box::new_in(1u64, &pool)));
    assert_eq!(message(r.unwrap_err()), limit_message(3000));
    assert!(pool.try_alloc(1u64).is_err());
    assert_eq!(c.live.get(), 3000);
    let small = Layout::from_size_align(1000, 8).unwrap();
    // SAFETY: `block` is live (the grow failed), from `pool` with `big`.
    let block = unsafe { pool.shrink(block.cast(), big, small) }.unwrap();
    assert_eq!(c.live.get(), 1000);
    let b = Box::new_in(9u64, &pool); // a slab fits now
    assert_eq!(*b, 9);
    drop(b);
    // SAFETY: `block` is live, from `pool` with `small`.
    unsafe { pool.deallocate(block.cast(), small) };
    drop(pool);
    assert_eq!(c.live.get(), 0);
}

#[cfg(not(miri))]
#[test]
fn sync_pool_threads_never_pass_the_limit_together() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A thread-safe counting allocator: the bytes held and their peak.
    #[derive(Default)]
    struct Peak {
        live: AtomicUsize,
        peak: AtomicUsize,
    }
    // SAFETY: forwards to `Global`; the counters do not affect the memory.
    unsafe impl Allocator for Peak {
        fn allocate(&self, layout: Layout) -> Result<core::ptr::NonNull<[u8]>, AllocError> {
            let b = arena_pool::allocator_api2::alloc::Global.allocate(layout)?;
            let now = self.live.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            self.peak.fetch_max(now, Ordering::SeqCst);
            Ok(b)
        }
        unsafe fn deallocate(&self, ptr: core::ptr::NonNull<u8>, layout: Layout) {
            self.live.fetch_sub(layout.size(), Ordering::SeqCst);
            // SAFETY: forwarded from the caller.
            unsafe { arena_pool::allocator_api2::alloc::Global.deallocate(ptr, layout) }
        }
    }
    const LIMIT: usize = 64 * 1024;
    let backing = Peak::default();
    let pool = SyncPool::with_shards_in(Layout::new::<[u64; 4]>(), 4, &backing);
    pool.set_allocation_limit(Some(LIMIT));
    std::thread::scope(|s| {
        for t in 0..4 {
            let pool = &pool;
            s.spawn(move || {
                let mut boxes = std::vec::Vec::new();
                for i in 0..5000 {
                    if let Ok(b) = pool.try_alloc([i as u64; 4]) {
                        boxes.push(b);
                    }
                    if i % 3 == t % 3 {
                        let layout = Layout::from_size_align(100 + i % 900, 8).unwrap();
                        if let Ok(block) = pool.allocate(layout) {
                            // SAFETY: live, from `pool` with `layout`.
                            unsafe { pool.deallocate(block.cast(), layout) };
                        }
                    }
                }
            });
        }
    });
    assert!(backing.peak.load(Ordering::SeqCst) <= LIMIT);
}
