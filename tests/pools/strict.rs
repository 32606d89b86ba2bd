//! `alloc` / `try_alloc` on the pools, and strict mode.

use crate::common::Counting;
use crate::layout;
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec as AVec;
use arena_pool::{Pool, TypedPool};
use std::cell::Cell;
use std::ptr::NonNull;

/// A value that counts how many of its kind are alive (a leak leaves the count high, a double
/// drop makes it low).
struct Live<'c>(u64, &'c Cell<isize>);

impl<'c> Live<'c> {
    fn new(v: u64, live: &'c Cell<isize>) -> Live<'c> {
        live.set(live.get() + 1);
        Live(v, live)
    }
}

impl Drop for Live<'_> {
    fn drop(&mut self) {
        self.1.set(self.1.get() - 1);
    }
}

/// The message of a caught panic.
fn panic_message(payload: std::boxed::Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "<not a string>".to_owned(), |s| (*s).to_owned()),
    }
}

#[test]
fn pool_alloc_places_values_in_slots_and_frees_them() {
    let live = Cell::new(0);
    let pool = Pool::for_type::<Live<'_>>();
    let a = pool.alloc(Live::new(1, &live));
    let a_addr = &*a as *const Live<'_> as usize;
    let b = pool.try_alloc(Live::new(2, &live)).unwrap();
    assert_eq!((a.0 + b.0, pool.in_use(), live.get()), (3, 2, 2));
    assert_eq!(pool.stats().fallback_blocks, 0);
    drop(a);
    assert_eq!((pool.in_use(), live.get()), (1, 1));
    // The freed slot is the next one handed out.
    let c = pool.alloc(Live::new(3, &live));
    assert_eq!(&*c as *const Live<'_> as usize, a_addr);
    drop((b, c));
    assert_eq!((pool.in_use(), live.get()), (0, 0));
    // Not strict: a value that does not fit goes to the backing allocator, and is counted.
    let big = pool.alloc([7u64; 16]);
    assert_eq!((big[15], pool.stats().fallback_blocks), (7, 1));
    drop(big);
    assert_eq!(pool.stats().fallback_blocks, 0);
    // Zero-sized values take no slot.
    let unit = pool.alloc(());
    assert_eq!(pool.in_use(), 0);
    drop(unit);

    let typed = TypedPool::<Live<'_>>::new();
    let x = typed.alloc(Live::new(4, &live));
    let y = typed.try_alloc(Live::new(5, &live)).unwrap();
    assert_eq!((x.0 + y.0, typed.in_use(), live.get()), (9, 2, 2));
    drop((x, y));
    assert_eq!((typed.in_use(), live.get()), (0, 0));
}

#[test]
fn pool_try_alloc_drops_the_value_when_the_backing_allocator_fails() {
    let live = Cell::new(0);
    let backing = Counting::default();
    let pool = Pool::new_in(Layout::new::<Live<'_>>(), &backing);
    backing.fail.set(true);
    assert!(pool.try_alloc(Live::new(1, &live)).is_err());
    assert_eq!(live.get(), 0, "the value was dropped, once");
    let typed = TypedPool::<Live<'_>, _>::new_in(&backing);
    assert!(typed.try_alloc(Live::new(2, &live)).is_err());
    assert_eq!(live.get(), 0);
    backing.fail.set(false);
    assert_eq!(pool.alloc(Live::new(3, &live)).0, 3);
    assert_eq!(live.get(), 0);
}

#[test]
fn strict_pool_refuses_layouts_that_do_not_fit_a_slot() {
    let pool = Pool::for_type::<u64>();
    assert!(!pool.is_strict());
    // Not strict yet: a layout larger than the slot goes quietly to the backing allocator.
    let quiet = Box::new_in([0u64; 8], &pool);
    assert_eq!(pool.stats().fallback_blocks, 1);
    pool.set_strict(true);
    assert!(pool.is_strict());
    // Larger, or more aligned, than the slot: refused, through every entry point.
    assert!(Box::try_new_in([0u64; 8], &pool).is_err());
    assert!(pool.try_alloc([0u64; 8]).is_err());
    assert!(pool.allocate(layout(9, 8)).is_err());
    assert!(pool.allocate_zeroed(layout(64, 1)).is_err());
    assert!(pool.allocate(layout(8, 16)).is_err());
    assert_eq!(pool.stats().fallback_blocks, 1);
    // What fits is served as before, zero-sized layouts too.
    let small = pool.alloc(5u32);
    let b = pool.alloc(6u64);
    assert_eq!(*small as u64 + *b, 11);
    assert!(pool.allocate(layout(0, 64)).is_ok());
    // The panicking convenience names the layout and the slot.
    let message = panic_message(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.alloc([1u8; 24])))
            .unwrap_err(),
    );
    assert_eq!(
        message,
        "arena-pool: a strict pool serves only blocks that fit its slots (8 bytes, aligned to \
         8): a block of 24 bytes aligned to 1 does not"
    );
    // A block taken before strict mode is still freed through the backing allocator.
    drop(quiet);
    assert_eq!(pool.stats().fallback_blocks, 0);
    drop((small, b));
    assert_eq!(pool.in_use(), 0);
    pool.set_strict(false);
    assert!(pool.try_alloc([0u64; 8]).is_ok());
}

#[test]
fn strict_pool_refuses_to_grow_past_a_slot_and_keeps_the_block() {
    let pool = Pool::new(layout(32, 8));
    pool.set_strict(true);
    let mut v: AVec<u64, &Pool> = AVec::new_in(&pool);
    v.extend([1, 2, 3, 4]); // 32 bytes: one slot
    assert!(v.try_reserve(1).is_err());
    assert_eq!(v, [1, 2, 3, 4]);
    assert_eq!(pool.in_use(), 1);
    v.truncate(1);
    v.shrink_to_fit(); // within the slot
    assert_eq!(v, [1]);
    drop(v);
    // A block from the backing allocator (before strict) may move back into a slot, not grow
    // or shrink within the backing allocator.
    pool.set_strict(false);
    let mut w: AVec<u64, &Pool> = AVec::with_capacity_in(16, &pool);
    w.extend(0..10);
    assert_eq!(pool.stats().fallback_blocks, 1);
    pool.set_strict(true);
    assert!(w.try_reserve(100).is_err());
    let p = NonNull::new(w.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `w`'s block was allocated by `pool` with this layout (16 `u64`s); 96 bytes is
    // smaller, and the refused shrink leaves the block as it was.
    assert!(unsafe { pool.shrink(p, layout(128, 8), layout(96, 8)) }.is_err());
    assert_eq!(w.iter().sum::<u64>(), 45);
    w.truncate(4);
    w.shrink_to_fit(); // 32 bytes: into a slot
    assert_eq!((pool.stats().fallback_blocks, pool.in_use()), (0, 1));
    assert_eq!(w, [0, 1, 2, 3]);
}

#[test]
fn strict_typed_pool_and_sync_pool() {
    let typed = TypedPool::<[u32; 2]>::new();
    typed.set_strict(true);
    assert!(typed.is_strict() && typed.as_pool().is_strict());
    assert_eq!(*typed.alloc([1, 2]), [1, 2]);
    // (A `Vec` starts with room for 4 such elements, more than a slot: reserve one.)
    let mut v: AVec<[u32; 2], _> = AVec::with_capacity_in(1, &typed);
    v.push([3, 4]);
    assert!(v.try_reserve(1).is_err());
    assert_eq!(typed.stats().fallback_blocks, 0);

    let pool = arena_pool::SyncPool::for_type::<u64>();
    let quiet = Box::new_in([0u64; 4], &pool);
    pool.set_strict(true);
    assert!(pool.is_strict());
    assert!(Box::try_new_in([0u64; 4], &pool).is_err());
    assert!(pool.try_alloc([0u64; 4]).is_err());
    let mut w: AVec<u64, _> = AVec::with_capacity_in(1, &pool);
    w.push(1);
    assert!(w.try_reserve(1).is_err());
    let message = panic_message(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.alloc(0u128))).unwrap_err(),
    );
    assert!(
        message.contains("(8 bytes, aligned to 8): a block of 16 bytes aligned to"),
        "{message}"
    );
    drop(quiet);
    assert_eq!(pool.stats().fallback_blocks, 0);
    // Boxes made on one thread, freed on another.
    let boxes: std::vec::Vec<_> = std::thread::scope(|s| {
        s.spawn(|| (0..10u64).map(|i| pool.alloc(i)).collect())
            .join()
            .unwrap()
    });
    assert_eq!(boxes.iter().map(|b| **b).sum::<u64>(), 45);
    assert_eq!(pool.in_use(), 11); // and `w`'s slot
    drop(boxes);
    drop(w);
    assert_eq!(pool.in_use(), 0);
}
