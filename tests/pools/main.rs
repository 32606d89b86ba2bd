//! Integration tests of the pools, `Pool`, `TypedPool` and `SizeClassPool`, through allocator-api2's
//! `Allocator` trait and the collections built on it (docs/DESIGN.md §5); one module a topic:
//!
//! - `model_ops`: `pool_model` / `typed_pool_model` / `size_class_model`, proptest op sequences
//!   (allocate, allocate_zeroed, deallocate with any size of the fit range, grow, grow_zeroed,
//!   shrink, free-then-allocate), over sizes 0..600 and alignments 1..=64, checked after every op
//!   against a model of the live blocks: alignment, reported length, no overlap, contents, the
//!   pools' live counters, and that a freed pooled block is the next one handed out for its
//!   slot / class. Remaining blocks are freed in a generated order (oldest first, newest first,
//!   or random). Case counts: 256 cases per property natively (sequences of up to 150 ops); 8
//!   cases under Miri (sequences of up to 30 ops). No regressions file
//!   (`failure_persistence: None`).
//! - `through_collections`: `Box` churn, `Vec` crossing the slot / classes / fallback,
//!   over-aligned and zero-sized layouts, a `Pool` on an `Arena`, `hashbrown` maps rebuilt 40
//!   times.
//! - `memory_back`: `SizeClassPool` empty-page cache and `trim`, `Pool::trim` with live slots,
//!   `Pool::reset`, slots freed and grown through narrowed pointers.
//! - `misuse`: debug-build detection of double frees and foreign pointers; a failing backing
//!   allocator (for the slab / page and for the address map's table); `Send`.
//! - `overheads` (printed with `--nocapture`): `Pool` metadata per slab and per slot,
//!   `SizeClassPool` blocks per page and waste per class.
//! - `strict`: `alloc` / `try_alloc` and strict mode.
#![cfg_attr(feature = "nightly", feature(allocator_api))]
#[path = "../common/mod.rs"]
mod common;

mod memory_back;
mod misuse;
mod model_ops;
mod overheads;
mod strict;
mod through_collections;

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use arena_pool::{SizeClassPool, SizeClassStats};
use common::Counting;

// ----- helpers -----

fn addr(p: NonNull<u8>) -> usize {
    p.addr().get()
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).unwrap()
}

/// The class size a pooled request of `size` bytes gets, computed independently of the crate
/// from the documented table: 16-byte steps up to 128, then four classes per power of two.
fn class_size(size: usize) -> usize {
    assert!(size > 0);
    if size <= 128 {
        size.next_multiple_of(16)
    } else {
        // The largest power of two below `size`: the class step is a quarter of it.
        let low = 1usize << (usize::BITS - 1 - (size - 1).leading_zeros());
        size.next_multiple_of(low / 4)
    }
}

/// A `Pool` slot for `layout` (docs/DESIGN.md §5): the size rounded up to the alignment and to at
/// least a pointer, aligned to at least a pointer.
fn expected_slot(layout: Layout) -> (usize, usize) {
    let align = layout.align().max(size_of::<usize>());
    (
        layout
            .size()
            .max(size_of::<usize>())
            .next_multiple_of(align),
        align,
    )
}

/// A small deterministic generator (for drop orders and shuffles).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

/// Drops the values in an order picked by `order`: forward, reverse, evens then odds, shuffled.
fn drop_in_order<T>(values: Vec<T>, order: u64) {
    let mut slots: Vec<Option<T>> = values.into_iter().map(Some).collect();
    let mut idx: Vec<usize> = (0..slots.len()).collect();
    match order % 4 {
        0 => {}
        1 => idx.reverse(),
        2 => idx.sort_by_key(|&i| (i % 2, i)),
        _ => Lcg(order).shuffle(&mut idx),
    }
    for i in idx {
        drop(slots[i].take().unwrap());
    }
}

/// A backing allocator over `Counting` that grants only `budget` more allocations, then fails:
/// it reaches the failure paths after the slab / page allocation succeeded (the address map's
/// table is the next allocation).
struct Budget<'a> {
    inner: &'a Counting,
    budget: Cell<usize>,
}

// SAFETY: forwards to `Counting`, which upholds the contract; refusing an allocation is allowed.
unsafe impl Allocator for Budget<'_> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if self.budget.get() == 0 {
            return Err(AllocError);
        }
        self.budget.set(self.budget.get() - 1);
        self.inner.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller; every block came from `self.inner`.
        unsafe { self.inner.deallocate(ptr, layout) }
    }
}

/// A backing allocator that keeps freed blocks until it is dropped, zeroed: a pool that reads a
/// block after giving it back sees zeros (natively and under Miri) instead of whatever the
/// system allocator left there.
#[derive(Default)]
struct Quarantine {
    allocs: Cell<usize>,
    freed: RefCell<Vec<(NonNull<u8>, Layout)>>,
}

// SAFETY: blocks come from `Global` and are only returned to it when the allocator is dropped;
// a block given back is never handed out again.
unsafe impl Allocator for Quarantine {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let block = Global.allocate(layout)?;
        self.allocs.set(self.allocs.get() + 1);
        Ok(block)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller gives the block up; it is `layout.size()` bytes long and ours.
        unsafe { ptr.write_bytes(0, layout.size()) };
        self.freed.borrow_mut().push((ptr, layout));
    }
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        for (ptr, layout) in self.freed.get_mut().drain(..) {
            // SAFETY: the block came from `Global` with `layout` and was given back to us.
            unsafe { Global.deallocate(ptr, layout) };
        }
    }
}

/// Pages that classes with no block in use keep formatted in place (their one page, when it is
/// small): at most one per class.
fn kept_in_place(s: &SizeClassStats) -> usize {
    s.classes()
        .filter(|c| c.live == 0)
        .map(|c| {
            assert!(c.pages <= 1, "{c:?}");
            c.pages
        })
        .sum()
}

/// The most bytes of empty pages a `SizeClassPool` keeps.
fn empty_cache<A: Allocator>(pool: &SizeClassPool<A>) -> usize {
    let o = pool.options();
    o.max_empty_pages * o.page_size
}

/// (class size, live) of every class with a live block.
fn live_classes<A: Allocator>(pool: &SizeClassPool<A>) -> Vec<(usize, usize)> {
    pool.stats()
        .classes()
        .filter(|c| c.live > 0)
        .map(|c| (c.block_size, c.live))
        .collect()
}
