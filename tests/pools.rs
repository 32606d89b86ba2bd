//! Integration tests of the pools, `Pool`, `TypedPool` and `SizeClassPool`, through allocator-api2's
//! `Allocator` trait and the collections built on it (docs/DESIGN.md §5).
//!
//! - `pool_model` / `typed_pool_model` / `size_class_model`: proptest op sequences (allocate, allocate_zeroed,
//!   deallocate with any size of the fit range, grow, grow_zeroed, shrink, free-then-allocate),
//!   over sizes 0..600 and alignments 1..=64, checked after every op against a model of the live
//!   blocks: alignment, reported length, no overlap, contents, the pools' live counters, and that
//!   a freed pooled block is the next one handed out for its slot / class. Remaining blocks are
//!   freed in a generated order (oldest first, newest first, or random).
//!   Case counts: 256 cases per property natively (sequences of up to 150 ops); 8 cases under
//!   Miri (sequences of up to 30 ops). No regressions file (`failure_persistence: None`).
//! - Collections: `Box` churn, `Vec` crossing the slot / classes / fallback, `hashbrown` maps
//!   rebuilt 40 times, a `Pool` on an `Arena`.
//! - Memory back: `SizeClassPool` empty-page cache and `trim`, `Pool::trim` with live slots,
//!   `Pool::reset`.
//! - Failure: a failing backing allocator (for the slab / page and for the address map's table).
//! - Debug-build detection of double frees and foreign pointers; `Send`.
//! - Measured overheads (printed with `--nocapture`): `Pool` metadata per slab and per slot,
//!   `SizeClassPool` blocks per page and waste per class.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

mod common;

use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec as AVec;
use arena_pool::{Arena, Pool, SizeClassOptions, SizeClassPool, SizeClassStats, TypedPool};
use common::Counting;
use proptest::prelude::*;

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

// ----- the model -----

/// A live block of the model, with the bytes written to it.
struct Block {
    ptr: NonNull<u8>,
    /// Requested size (the lower end of the fit range).
    size: usize,
    align: usize,
    /// Reported length (the upper end of the fit range).
    len: usize,
    /// `Some(slot or class size)` for a pooled block.
    key: Option<usize>,
    seed: u8,
    data: Vec<u8>,
}

impl Block {
    /// A size of the fit range `[size, len]`, picked by `slack`.
    fn fit_size(&self, slack: usize) -> usize {
        self.size + slack % (self.len - self.size + 1)
    }

    fn bytes(&self, n: usize) -> &[u8] {
        assert!(n <= self.len);
        if n == 0 {
            return &[];
        }
        // SAFETY: the block is live and at least `n` bytes long; the bytes read were written
        // by the test (or zeroed by the pool), and nothing writes them while the slice lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), n) }
    }

    /// Writes the block's pattern into bytes `data.len()..to` and records it.
    fn fill_to(&mut self, to: usize) {
        let from = self.data.len();
        assert!(to <= self.len && to <= MAX_BLOCK);
        // Byte `i` of the block is `PATTERN[offset + i]`, the offset picked by the block's seed.
        let offset = usize::from(self.seed) * 61 % 1024;
        let new = &PATTERN[offset + from..offset + to];
        // SAFETY: bytes `from..to` lie in the live block (`to <= len`); `new` is a static table.
        unsafe {
            std::ptr::copy_nonoverlapping(new.as_ptr(), self.ptr.as_ptr().add(from), new.len())
        };
        self.data.extend_from_slice(new);
    }

    /// Whether bytes `from..to` are all zero.
    fn zero(&self, from: usize, to: usize) -> bool {
        self.bytes(to)[from..] == ZEROS[..to - from]
    }
}

/// Largest block of the model: sizes stay below 600, fit sizes below the largest slot / class
/// reached from there (640).
const MAX_BLOCK: usize = 1024;

/// The bytes written to blocks (a table, so that Miri copies and compares them in one step).
static PATTERN: [u8; 2048] = {
    let mut t = [0u8; 2048];
    let mut i = 0;
    while i < t.len() {
        t[i] = ((i * 7) as u8) ^ ((i >> 8) as u8) ^ 0x5a;
        i += 1;
    }
    t
};

static ZEROS: [u8; MAX_BLOCK] = [0; MAX_BLOCK];

/// What the model needs to know about a pool (answers computed by the test from the
/// documented rules, not taken from the crate).
trait Subject: Allocator {
    /// `Some(slot or class size)` when `layout` is served from the pool.
    fn route(&self, layout: Layout) -> Option<usize>;
    /// A layout that the pool serves from a slot / class, picked by `size` and `align_pow`.
    fn fitting(&self, size: usize, align_pow: u32) -> Layout;
    /// Pages formatted for the class (0 for `Pool`, which never gives a slab up on a free).
    fn class_pages(&self, key: usize) -> usize;
    /// Checks the pool's counters against the model.
    fn check_counts(&self, blocks: &[Block]);
    /// Whether the block freed last is always the next one handed out (`Pool`: one free list).
    /// Otherwise (`SizeClassPool`, which keeps allocating from its current page) the rule is
    /// that a class never takes a new page while a block freed into it is still free.
    fn strict_lifo(&self) -> bool;
}

impl Subject for Pool<&Counting> {
    fn route(&self, l: Layout) -> Option<usize> {
        let s = self.stats();
        (l.size() != 0 && l.size() <= s.slot_size && l.align() <= s.slot_align)
            .then_some(s.slot_size)
    }

    fn fitting(&self, size: usize, align_pow: u32) -> Layout {
        let s = self.stats();
        layout(1 + size % s.slot_size, (1 << align_pow).min(s.slot_align))
    }

    fn class_pages(&self, _: usize) -> usize {
        0
    }

    fn strict_lifo(&self) -> bool {
        true
    }

    fn check_counts(&self, blocks: &[Block]) {
        let pooled = blocks.iter().filter(|b| b.key.is_some()).count();
        let fallback = blocks
            .iter()
            .filter(|b| b.key.is_none() && b.size != 0)
            .count();
        let s = self.stats();
        assert_eq!(self.in_use(), pooled, "in_use");
        assert_eq!(s.in_use, pooled, "stats().in_use");
        assert_eq!(s.fallback_blocks, fallback, "stats().fallback_blocks");
        assert_eq!(s.capacity, self.capacity());
        assert!(s.capacity >= pooled);
        assert!(s.bytes_held >= s.capacity * s.slot_size);
    }
}

/// A `TypedPool` follows a `Pool`'s rules: the same answers, from its pool.
impl<T> Subject for TypedPool<T, &Counting> {
    fn route(&self, l: Layout) -> Option<usize> {
        self.as_pool().route(l)
    }

    fn fitting(&self, size: usize, align_pow: u32) -> Layout {
        self.as_pool().fitting(size, align_pow)
    }

    fn class_pages(&self, _: usize) -> usize {
        0
    }

    fn strict_lifo(&self) -> bool {
        true
    }

    fn check_counts(&self, blocks: &[Block]) {
        self.as_pool().check_counts(blocks);
        assert_eq!(self.in_use(), self.as_pool().in_use());
        assert_eq!(self.capacity(), self.as_pool().capacity());
    }
}

impl Subject for SizeClassPool<&Counting> {
    fn strict_lifo(&self) -> bool {
        false
    }

    fn route(&self, l: Layout) -> Option<usize> {
        (l.size() != 0 && l.size() <= self.options().largest_pooled && l.align() <= 16)
            .then(|| class_size(l.size()))
    }

    fn fitting(&self, size: usize, align_pow: u32) -> Layout {
        let top = self.options().largest_pooled.min(599);
        layout(1 + size % top, (1 << align_pow).min(16))
    }

    fn class_pages(&self, key: usize) -> usize {
        self.stats()
            .classes()
            .find(|c| c.block_size == key)
            .map_or(0, |c| c.pages)
    }

    fn check_counts(&self, blocks: &[Block]) {
        let s = self.stats();
        let o = self.options();
        let pooled = blocks.iter().filter(|b| b.key.is_some()).count();
        let fallback = blocks
            .iter()
            .filter(|b| b.key.is_none() && b.size != 0)
            .count();
        assert_eq!(s.live_blocks(), pooled, "stats().live_blocks()");
        assert_eq!(s.fallback_blocks, fallback, "stats().fallback_blocks");
        let mut per_class = std::collections::BTreeMap::new();
        for b in blocks {
            if let Some(k) = b.key {
                *per_class.entry(k).or_insert(0) += 1;
            }
        }
        let (mut class_pages, mut class_bytes) = (0, 0);
        for c in s.classes() {
            let live = per_class.get(&c.block_size).copied().unwrap_or(0);
            assert_eq!(c.live, live, "live blocks of class {}", c.block_size);
            assert!(c.live <= c.pages * (o.page_size / c.block_size));
            assert!(
                (c.pages * c.block_size..=c.pages * o.page_size).contains(&c.bytes),
                "class {}: {} pages of {} B",
                c.block_size,
                c.pages,
                c.bytes
            );
            class_pages += c.pages;
            class_bytes += c.bytes;
        }
        assert!(
            blocks
                .iter()
                .all(|b| b.key.is_none_or(|k| k <= o.largest_pooled)),
            "a block is in a class above largest_pooled"
        );
        assert_eq!(s.pages, class_pages + s.empty_pages, "pages");
        assert_eq!(s.bytes_held, class_bytes + s.empty_bytes, "bytes held");
        assert!(s.empty_bytes <= o.max_empty_pages * o.page_size);
        assert!(s.empty_bytes >= s.empty_pages * 16);
    }
}

/// Alignment, length, contents and no overlap of every live block, and the pool's counters.
fn check_all<P: Subject>(pool: &P, blocks: &[Block], step: Step<'_>) {
    for b in blocks {
        assert_eq!(addr(b.ptr) % b.align, 0, "{step}: misaligned block");
        assert!(b.len >= b.size, "{step}: reported length below the request");
        assert_eq!(b.data.len(), b.size);
        assert!(b.bytes(b.size) == &b.data[..], "{step}: contents changed");
    }
    let mut spans: Vec<(usize, usize)> = blocks
        .iter()
        .filter(|b| b.size != 0)
        .map(|b| (addr(b.ptr), addr(b.ptr) + b.size))
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "{step}: live blocks overlap: {w:x?}");
    }
    pool.check_counts(blocks);
}

/// Where the model is, for failure messages (formatted only when one is printed).
#[derive(Clone, Copy)]
struct Step<'a>(usize, Option<&'a Op>);

impl std::fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(op) => write!(f, "op {} {op:?}", self.0),
            None => f.write_str("final frees"),
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// `count` allocations of one layout.
    Alloc {
        fit: bool,
        size: usize,
        align_pow: u32,
        zeroed: bool,
        count: usize,
    },
    Dealloc {
        pick: usize,
        slack: usize,
    },
    Grow {
        pick: usize,
        size: usize,
        align_pow: Option<u32>,
        zeroed: bool,
        slack: usize,
    },
    Shrink {
        pick: usize,
        size: usize,
        align_pow: Option<u32>,
        slack: usize,
    },
    /// Deallocate a block, then allocate its layout again.
    Recycle {
        pick: usize,
        slack: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let align = proptest::option::weighted(0.3, 0..=6u32);
    prop_oneof![
        5 => (
            prop::bool::weighted(0.7),
            0..600usize,
            0..=6u32,
            any::<bool>(),
            prop_oneof![4 => Just(1usize), 1 => 2..MAX_COUNT],
        )
            .prop_map(|(fit, size, align_pow, zeroed, count)| Op::Alloc {
                fit,
                size,
                align_pow,
                zeroed,
                count,
            }),
        3 => (any::<usize>(), any::<usize>())
            .prop_map(|(pick, slack)| Op::Dealloc { pick, slack }),
        2 => (any::<usize>(), 0..600usize, align.clone(), any::<bool>(), any::<usize>()).prop_map(
            |(pick, size, align_pow, zeroed, slack)| Op::Grow { pick, size, align_pow, zeroed, slack }
        ),
        2 => (any::<usize>(), 0..600usize, align, any::<usize>()).prop_map(
            |(pick, size, align_pow, slack)| Op::Shrink { pick, size, align_pow, slack }
        ),
        1 => (any::<usize>(), any::<usize>())
            .prop_map(|(pick, slack)| Op::Recycle { pick, slack }),
    ]
}

/// Longest op sequence of the model tests.
const MAX_OPS: usize = if cfg!(miri) { 30 } else { 150 };

/// Most blocks one `Alloc` op makes (one past).
const MAX_COUNT: usize = if cfg!(miri) { 6 } else { 12 };

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..MAX_OPS)
}

/// Runs the ops on `pool`, checking after each, then frees what is left in the `drop_order`.
fn run_model<P: Subject>(pool: &P, ops: &[Op], drop_order: u64) {
    let mut blocks: Vec<Block> = Vec::new();
    let mut seed = 0u8;
    // After a pooled block is freed (and its page stays with its class): the address the next
    // allocation of that slot / class must return.
    let mut reuse: Option<(usize, usize)> = None;

    // Blocks freed into a class whose page stayed with it, not handed out again yet.
    let mut pending: Vec<(usize, usize)> = Vec::new();

    let allocate = |l: Layout,
                    zeroed: bool,
                    seed: &mut u8,
                    reuse: Option<(usize, usize)>,
                    pending: &mut Vec<(usize, usize)>| {
        let pages_before = pool.route(l).map(|k| pool.class_pages(k));
        let r = if zeroed {
            pool.allocate_zeroed(l)
        } else {
            pool.allocate(l)
        };
        let r = r.unwrap_or_else(|_| panic!("allocate({l:?}) failed"));
        *seed = seed.wrapping_add(37);
        let key = pool.route(l);
        let mut b = Block {
            ptr: r.cast(),
            size: l.size(),
            align: l.align(),
            len: r.len(),
            key,
            seed: *seed,
            data: Vec::new(),
        };
        assert!(b.len >= b.size, "allocate({l:?}) reported {} bytes", b.len);
        if let Some(k) = key {
            assert_eq!(b.len, k, "a pooled block reports its slot / class size");
        }
        if let Some((k, a)) = reuse {
            if key == Some(k) && pool.strict_lifo() {
                assert_eq!(
                    addr(b.ptr),
                    a,
                    "the freed block of {k} bytes was not handed out again for {l:?}"
                );
            }
        }
        if let Some(k) = key {
            let a = addr(b.ptr);
            pending.retain(|&(kk, aa)| (kk, aa) != (k, a));
            if Some(pool.class_pages(k)) > pages_before {
                assert!(
                    pending.iter().all(|&(kk, _)| kk != k),
                    "class {k} took a new page while blocks freed into it were still free: {pending:?}"
                );
            }
        }
        if zeroed {
            assert!(b.zero(0, b.len), "allocate_zeroed");
        }
        b.fill_to(b.size);
        b
    };

    // Frees `blocks[i]` with a size of its fit range; returns the reuse expectation.
    let free =
        |blocks: &mut Vec<Block>, i: usize, slack: usize, pending: &mut Vec<(usize, usize)>| {
            let b = blocks.remove(i);
            let pages = b.key.map(|k| pool.class_pages(k));
            // SAFETY: `b` is live, from this pool, and the size is in its fit range.
            unsafe { pool.deallocate(b.ptr, layout(b.fit_size(slack), b.align)) };
            match b.key {
                // A page that empties leaves its class (to the empty-page cache or the backing
                // allocator), so its blocks are no longer the class's to hand out.
                Some(k) if Some(pool.class_pages(k)) == pages => {
                    pending.push((k, addr(b.ptr)));
                    Some((k, addr(b.ptr)))
                }
                Some(k) => {
                    // Which page left is not known here: forget the class's pending blocks.
                    pending.retain(|&(kk, _)| kk != k);
                    None
                }
                None => None,
            }
        };

    for (n, op) in ops.iter().enumerate() {
        let step = Step(n, Some(op));
        let expect = reuse.take();
        match *op {
            Op::Alloc {
                fit,
                size,
                align_pow,
                zeroed,
                count,
            } => {
                let l = if fit {
                    pool.fitting(size, align_pow)
                } else {
                    layout(size, 1 << align_pow)
                };
                // The reuse expectation is for the first allocation only.
                let b = allocate(l, zeroed, &mut seed, expect, &mut pending);
                blocks.push(b);
                for _ in 1..count {
                    let b = allocate(l, zeroed, &mut seed, None, &mut pending);
                    blocks.push(b);
                }
            }
            Op::Dealloc { pick, slack } => {
                if !blocks.is_empty() {
                    let i = pick % blocks.len();
                    reuse = free(&mut blocks, i, slack, &mut pending);
                }
            }
            Op::Recycle { pick, slack } => {
                if !blocks.is_empty() {
                    let i = pick % blocks.len();
                    let l = layout(blocks[i].size, blocks[i].align);
                    let expect = free(&mut blocks, i, slack, &mut pending);
                    check_all(pool, &blocks, step);
                    let b = allocate(l, false, &mut seed, expect, &mut pending);
                    blocks.push(b);
                }
            }
            Op::Grow {
                pick,
                size,
                align_pow,
                zeroed,
                slack,
            } => {
                if blocks.is_empty() {
                    continue;
                }
                // A move frees and allocates inside the pool: pending blocks may change pages.
                pending.clear();
                let i = pick % blocks.len();
                let b = &mut blocks[i];
                let old = layout(b.fit_size(slack), b.align);
                let new = layout(size.max(old.size()), align_pow.map_or(b.align, |p| 1 << p));
                // SAFETY: `b` is live, `old` fits it, and `new` is at least as large.
                let r = unsafe {
                    if zeroed {
                        pool.grow_zeroed(b.ptr, old, new)
                    } else {
                        pool.grow(b.ptr, old, new)
                    }
                };
                let r = r.unwrap_or_else(|_| panic!("{step}: grow failed"));
                let old_len = b.len;
                (b.ptr, b.len, b.size, b.align, b.key) =
                    (r.cast(), r.len(), new.size(), new.align(), pool.route(new));
                assert!(b.len >= b.size, "{step}: reported length");
                if let Some(k) = b.key {
                    assert_eq!(b.len, k, "{step}: a pooled block reports its slot / class");
                }
                let kept = b.data.len();
                assert!(b.bytes(kept) == &b.data[..], "{step}: grow lost contents");
                if zeroed && b.len > old_len {
                    // The contract: bytes from the old block's length to the new one's are zero.
                    assert!(
                        b.zero(old_len, b.len),
                        "{step}: grow_zeroed left non-zero bytes"
                    );
                }
                b.fill_to(b.size);
            }
            Op::Shrink {
                pick,
                size,
                align_pow,
                slack,
            } => {
                if blocks.is_empty() {
                    continue;
                }
                pending.clear();
                let i = pick % blocks.len();
                let b = &mut blocks[i];
                let old = layout(b.fit_size(slack), b.align);
                let new = layout(size.min(old.size()), align_pow.map_or(b.align, |p| 1 << p));
                // SAFETY: `b` is live, `old` fits it, and `new` is no larger.
                let r = unsafe { pool.shrink(b.ptr, old, new) };
                let r = r.unwrap_or_else(|_| panic!("{step}: shrink failed"));
                (b.ptr, b.len, b.size, b.align, b.key) =
                    (r.cast(), r.len(), new.size(), new.align(), pool.route(new));
                assert!(b.len >= b.size, "{step}: reported length");
                if let Some(k) = b.key {
                    assert_eq!(b.len, k, "{step}: a pooled block reports its slot / class");
                }
                b.data.truncate(b.size);
                let kept = b.data.len();
                assert!(b.bytes(kept) == &b.data[..], "{step}: shrink lost contents");
                b.fill_to(b.size);
            }
        }
        check_all(pool, &blocks, step);
    }

    // Free the rest in the generated order: oldest first, newest first, or random.
    let mut rng = Lcg(drop_order);
    while !blocks.is_empty() {
        let i = match drop_order % 3 {
            0 => 0,
            1 => blocks.len() - 1,
            _ => (rng.next() as usize) % blocks.len(),
        };
        let slack = rng.next() as usize;
        free(&mut blocks, i, slack, &mut pending);
        check_all(pool, &blocks, Step(usize::MAX, None));
    }
}

/// 256 cases natively, 8 under Miri. Under Miri proptest must not touch the file system, its
/// default ChaCha generator costs seconds per case (XorShift: a fraction), and shrinking a
/// failure is capped to keep the run short.
fn config() -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 256 },
        max_shrink_iters: if cfg!(miri) { 16 } else { 4096 },
        rng_algorithm: if cfg!(miri) {
            proptest::test_runner::RngAlgorithm::XorShift
        } else {
            default.rng_algorithm
        },
        failure_persistence: None,
        ..default
    }
}

fn size_class_options() -> impl Strategy<Value = SizeClassOptions> {
    (
        prop_oneof![Just(64usize), Just(256), Just(512), Just(8192)],
        prop_oneof![Just(4096usize), Just(65536)],
        0..3usize,
    )
        .prop_map(
            |(largest_pooled, page_size, max_empty_pages)| SizeClassOptions {
                largest_pooled,
                page_size,
                max_empty_pages,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn pool_model(
        size in 0..600usize,
        align_pow in 0..=6u32,
        ops in ops(),
        drop_order in any::<u64>(),
    ) {
        let counting = Counting::default();
        let slot = layout(size, 1 << align_pow);
        let mut pool = Pool::new_in(slot, &counting);
        let (slot_size, slot_align) = expected_slot(slot);
        prop_assert_eq!(pool.slot_layout(), slot);
        prop_assert_eq!(pool.slot_size(), slot_size);
        prop_assert_eq!(pool.stats().slot_align, slot_align);
        run_model(&pool, &ops, drop_order);
        // Everything freed: no slot in use, and `trim` gives every slab back.
        prop_assert_eq!(pool.in_use(), 0);
        pool.trim();
        prop_assert_eq!((pool.capacity(), pool.stats().slabs, pool.stats().bytes_held), (0, 0, 0));
        drop(pool);
        prop_assert_eq!(counting.live.get(), 0, "the pool leaked backing memory");
    }

    #[test]
    fn typed_pool_model(which in 0..6usize, ops in ops(), drop_order in any::<u64>()) {
        /// Runs the model on a `TypedPool<T>` and checks its slot against a `Pool`'s for `T`.
        fn run<T>(ops: &[Op], drop_order: u64) {
            let counting = Counting::default();
            let mut pool = TypedPool::<T, _>::new_in(&counting);
            let (slot_size, slot_align) = expected_slot(Layout::new::<T>());
            assert_eq!(pool.as_pool().slot_layout(), Layout::new::<T>());
            assert_eq!((pool.stats().slot_size, pool.stats().slot_align), (slot_size, slot_align));
            run_model(&pool, ops, drop_order);
            assert_eq!(pool.in_use(), 0);
            pool.trim();
            assert_eq!((pool.capacity(), pool.stats().bytes_held), (0, 0));
            drop(pool);
            assert_eq!(counting.live.get(), 0, "the pool leaked backing memory");
        }
        #[repr(align(64))]
        struct Aligned64(#[allow(dead_code)] [u8; 80]);
        match which {
            0 => run::<()>(&ops, drop_order),
            1 => run::<u8>(&ops, drop_order),
            2 => run::<u64>(&ops, drop_order),
            3 => run::<[u8; 24]>(&ops, drop_order),
            4 => run::<[u64; 13]>(&ops, drop_order),
            _ => run::<Aligned64>(&ops, drop_order),
        }
    }

    #[test]
    fn size_class_model(
        options in size_class_options(),
        ops in ops(),
        drop_order in any::<u64>(),
    ) {
        let counting = Counting::default();
        let mut pool = SizeClassPool::with_options_in(options, &counting);
        run_model(&pool, &ops, drop_order);
        // Everything freed: only cached empty pages are left, and `trim` returns them.
        let s = pool.stats();
        prop_assert_eq!(s.live_blocks(), 0);
        prop_assert_eq!(s.pages, s.empty_pages + kept_in_place(&s));
        prop_assert!(s.empty_bytes <= empty_cache(&pool));
        pool.trim();
        prop_assert_eq!((pool.stats().pages, pool.stats().bytes_held), (0, 0));
        drop(pool);
        prop_assert_eq!(counting.live.get(), 0, "the pool leaked backing memory");
    }
}

/// The SizeClassPool half of the reuse rule, pinned down without proptest: blocks freed into a
/// class on several pages are all handed out again before the class takes another page.
#[test]
fn size_class_reuses_freed_blocks_before_taking_a_page() {
    let pool = SizeClassPool::with_options(SizeClassOptions {
        largest_pooled: 512,
        page_size: 4096,
        max_empty_pages: 1,
    });
    let l = layout(512, 16);
    let pages = |pool: &SizeClassPool| {
        pool.stats()
            .classes()
            .find(|c| c.block_size == 512)
            .unwrap()
            .pages
    };
    // Fill the class's pages (its first page holds two blocks, the later ones seven) until it
    // has three, full.
    let mut blocks: Vec<NonNull<u8>> = Vec::new();
    while pages(&pool) < 3 {
        blocks.push(pool.allocate(l).unwrap().cast());
    }
    while pool
        .stats()
        .classes()
        .find(|c| c.block_size == 512)
        .unwrap()
        .live
        < 2 + 7 + 7
    {
        blocks.push(pool.allocate(l).unwrap().cast());
    }
    assert_eq!(pages(&pool), 3);
    // One block from each page, none of them emptied.
    let freed = [blocks[0], blocks[2 + 3], blocks[2 + 7 + 5]];
    // SAFETY: each block is live and freed once, with its layout.
    unsafe {
        for b in freed {
            pool.deallocate(b, l);
        }
    }
    let again: Vec<NonNull<u8>> = (0..3).map(|_| pool.allocate(l).unwrap().cast()).collect();
    let pages_after = pages(&pool);
    // Free everything before asserting, so that a failure leaves nothing behind.
    // SAFETY: every block still live is freed once, with its layout.
    unsafe {
        for &b in &again {
            pool.deallocate(b, l);
        }
        for &b in &blocks {
            if !freed.contains(&b) {
                pool.deallocate(b, l);
            }
        }
    }
    assert_eq!(
        pages_after, 3,
        "no page was taken while freed blocks were free"
    );
    let mut got: Vec<usize> = again.iter().map(|p| addr(*p)).collect();
    let mut want: Vec<usize> = freed.iter().map(|p| addr(*p)).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want, "the three freed blocks were handed out again");
}

// ----- Box churn -----

/// `rounds` rounds of `n` boxes made by `make` (checked by `check`); after the first round the
/// backing allocator is asked for nothing and its live bytes never exceed the first round's peak.
fn box_churn<T>(
    counting: &Counting,
    rounds: u64,
    n: u64,
    make: impl Fn(u64, u64) -> T,
    check: impl Fn(&T, u64, u64),
) {
    let mut peak = 0;
    let mut allocs = 0;
    for round in 0..rounds {
        let mut boxes = Vec::with_capacity(n as usize);
        for i in 0..n {
            boxes.push(make(round, i));
            if round > 0 {
                assert!(
                    counting.live.get() <= peak,
                    "round {round}: backing live bytes {} above the first round's {peak}",
                    counting.live.get()
                );
                assert_eq!(
                    counting.allocs.get(),
                    allocs,
                    "round {round}: new backing allocation"
                );
            }
        }
        if round == 0 {
            peak = counting.live.get();
            allocs = counting.allocs.get();
            assert!(peak > 0);
        }
        for (i, b) in boxes.iter().enumerate() {
            check(b, round, i as u64);
        }
        drop_in_order(boxes, round);
    }
    assert_eq!(counting.allocs.get(), allocs);
}

/// `box_churn` of `[u64; 3]` boxes on a pool that serves them from slots (`Pool` or
/// `TypedPool`), whose `stats` are read by `stats`; everything is freed at the end.
fn slot_box_churn<P>(counting: &Counting, pool: &P, stats: impl Fn(&P) -> arena_pool::PoolStats)
where
    for<'p> &'p P: Allocator,
{
    let (rounds, n) = if cfg!(miri) { (10, 50) } else { (200, 1000) };
    box_churn(
        counting,
        rounds,
        n,
        |r, i| Box::new_in([r, i, r ^ i], pool),
        |b, r, i| assert_eq!(**b, [r, i, r ^ i]),
    );
    let s = stats(pool);
    assert_eq!(s.in_use, 0);
    assert!(s.capacity >= n as usize);
    assert_eq!(s.fallback_blocks, 0);
}

#[test]
fn pool_box_churn_is_steady_after_the_first_round() {
    let counting = Counting::default();
    let pool = Pool::new_in(Layout::new::<[u64; 3]>(), &counting);
    slot_box_churn(&counting, &pool, Pool::stats);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn typed_pool_box_churn_is_steady_after_the_first_round() {
    let counting = Counting::default();
    let pool = TypedPool::<[u64; 3], _>::new_in(&counting);
    slot_box_churn(&counting, &pool, TypedPool::stats);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// Memory of a `Pool` (the backing allocator's live bytes, exact): one live object holds one
/// small slab; a live set of `n` objects, replaced one at a time, holds at most 1.3x its slots
/// plus one first slab and a header per slab (the rule on `Pool`); the address map's table (an
/// entry of 16 bytes per 4 KiB granule of a slab, at most a quarter full after it grows, and the
/// old table held while the new one fills) adds at most a thirty-second of that and 128 bytes
/// per slab.
#[test]
fn pool_memory_follows_the_live_set() {
    let counts: &[usize] = if cfg!(miri) {
        &[1, 5, 60]
    } else {
        &[1, 5, 60, 1000, 10_007]
    };
    for size in [8, 32, 64, 256, 1024] {
        for &n in counts {
            let counting = Counting::default();
            let l = layout(size, 8);
            let pool = Pool::new_in(l, &counting);
            let mut live: Vec<NonNull<u8>> =
                (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect();
            let mut rng = Lcg(n as u64 + 1);
            for _ in 0..2 * n {
                let i = rng.next() as usize % n;
                // SAFETY: a live block of `pool`, freed once with its layout.
                unsafe { pool.deallocate(live[i], l) };
                live[i] = pool.allocate(l).unwrap().cast();
            }
            let s = pool.stats();
            let first_slab = (512 / size).max(4) * size;
            let rule = (13 * n * size).div_ceil(10) + first_slab + s.slabs * (64 + 8);
            assert!(
                s.bytes_held <= rule,
                "{size} B x {n}: slabs hold {} B, the rule allows {rule} ({s:?})",
                s.bytes_held
            );
            let map = s.bytes_held / 32 + 128 * s.slabs;
            assert!(
                counting.peak.get() <= s.bytes_held + map,
                "{size} B x {n}: {} B at the peak for {} B of slabs",
                counting.peak.get(),
                s.bytes_held
            );
            if n == 1 && size == 32 {
                assert!(
                    counting.peak.get() <= 1024,
                    "one object: {} B",
                    counting.peak.get()
                );
            }
            for p in live {
                // SAFETY: as above.
                unsafe { pool.deallocate(p, l) };
            }
        }
    }
}

/// A list whose nodes point to each other through the pool they live in; a `Vec` of the type,
/// which fits a slot while it holds one value and moves to the backing allocator after; a
/// capacity, `reset` and `Debug`.
#[test]
fn typed_pool_serves_recursive_types_and_other_layouts() {
    struct Node<'p> {
        value: u64,
        next: Option<Box<Node<'p>, &'p TypedPool<Node<'p>, &'p Counting>>>,
    }
    let counting = Counting::default();
    let mut pool = TypedPool::<Node<'_>, _>::with_capacity_in(100, &counting);
    assert!(pool.capacity() >= 100);
    let held = counting.live.get();
    let n = if cfg!(miri) { 20 } else { 100 };
    {
        let mut head = None;
        for value in 0..n {
            head = Some(Box::new_in(Node { value, next: head }, &pool));
        }
        assert_eq!(pool.in_use(), n as usize);
        assert_eq!(counting.live.get(), held, "the first slab holds the list");
        let mut sum = 0;
        let mut node = head.as_deref();
        while let Some(x) = node {
            sum += x.value;
            node = x.next.as_deref();
        }
        assert_eq!(sum, n * (n - 1) / 2);
        // Unlink the list node by node (a recursive drop would be deep).
        while let Some(mut x) = head {
            head = x.next.take();
        }
    }
    assert_eq!(pool.in_use(), 0);

    let mut v: AVec<u64, _> = AVec::with_capacity_in(1, &pool);
    v.push(7);
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (1, 0),
        "one u64 fits the slot"
    );
    v.extend(0..40);
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (0, 1),
        "moved to the backing"
    );
    assert_eq!(v[0], 7);
    assert_eq!(v.iter().skip(1).sum::<u64>(), (0..40).sum::<u64>());
    v.truncate(1);
    v.shrink_to_fit();
    assert_eq!(
        (pool.in_use(), pool.stats().fallback_blocks),
        (1, 0),
        "back in a slot"
    );
    assert_eq!(v[0], 7);
    drop(v);

    let b = Box::new_in(
        Node {
            value: 1,
            next: None,
        },
        &pool,
    );
    drop(b);
    pool.reset();
    assert_eq!(pool.in_use(), 0);
    let debug = format!("{pool:?}");
    assert!(
        debug.starts_with("TypedPool") && debug.contains("Node"),
        "{debug}"
    );
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// Boxes of two classes (32 and 320 bytes) in one `Vec`.
enum Mixed<A: Allocator> {
    Small(Box<[u64; 3], A>),
    Large(Box<[u64; 40], A>),
}

#[test]
fn size_class_box_churn_is_steady_after_the_first_round() {
    let (rounds, n) = if cfg!(miri) { (10, 50) } else { (200, 1000) };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    box_churn(
        &counting,
        rounds,
        n,
        |r, i| {
            if i % 3 == 0 {
                Mixed::Large(Box::new_in([r ^ i; 40], &pool))
            } else {
                Mixed::Small(Box::new_in([r, i, r ^ i], &pool))
            }
        },
        |b, r, i| match b {
            Mixed::Large(b) => assert_eq!(**b, [r ^ i; 40]),
            Mixed::Small(b) => assert_eq!(**b, [r, i, r ^ i]),
        },
    );
    // All freed: only cached empty pages are left, and the small pages kept in place.
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 0);
    assert_eq!(s.pages, s.empty_pages + kept_in_place(&s));
    assert!(s.empty_bytes <= empty_cache(&pool));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- Vec through the slot / classes / fallback -----

#[test]
fn pool_vec_leaves_the_slot_and_comes_back() {
    let counting = Counting::default();
    let pool = Pool::new_in(layout(64, 8), &counting);
    let byte = |i: usize| (i as u8) ^ 0x5a;
    let mut v: AVec<u8, _> = AVec::new_in(&pool);
    let mut slot: Option<*const u8> = None;
    let (mut cap, mut left) = (0, false);
    for i in 0..300 {
        v.push(byte(i));
        if v.capacity() != cap {
            cap = v.capacity();
            if cap <= 64 {
                // In the slot: grown in place.
                assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 0));
                assert_eq!(*slot.get_or_insert(v.as_ptr()), v.as_ptr(), "cap {cap}");
            } else {
                assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 1));
                left = true;
            }
        }
    }
    assert!(left, "the Vec never left the slot");
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Back below the slot size: the Vec moves into a slot, the one it left (LIFO).
    v.truncate(40);
    v.shrink_to_fit();
    assert_eq!(v.capacity(), 40);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (1, 0));
    assert_eq!(Some(v.as_ptr()), slot);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // And out again.
    v.extend((40..500).map(byte));
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 1));
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    drop(v);
    assert_eq!((pool.in_use(), pool.stats().fallback_blocks), (0, 0));
    drop(pool);
    assert_eq!(counting.live.get(), 0);
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

#[test]
fn size_class_vec_crosses_classes_and_the_fallback() {
    let counting = Counting::default();
    let options = SizeClassOptions {
        largest_pooled: 1024,
        ..SizeClassOptions::default()
    };
    let pool = SizeClassPool::with_options_in(options, &counting);
    assert_eq!(pool.options().largest_pooled, 1024);
    let byte = |i: usize| (i as u8).wrapping_mul(13) ^ 0xa5;
    let mut v: AVec<u8, _> = AVec::new_in(&pool);
    let mut last: Option<(usize, *const u8)> = None;
    let (mut cap, mut classes, mut in_place, mut fallback) = (0, Vec::new(), 0, false);
    for i in 0..3000 {
        v.push(byte(i));
        if v.capacity() != cap {
            cap = v.capacity();
            if cap <= 1024 {
                let c = class_size(cap);
                assert_eq!(live_classes(&pool), [(c, 1)], "cap {cap}");
                assert_eq!(pool.stats().fallback_blocks, 0);
                if let Some((prev, p)) = last {
                    if prev == c {
                        assert_eq!(p, v.as_ptr(), "cap {cap}: moved within class {c}");
                        in_place += 1;
                    }
                }
                last = Some((c, v.as_ptr()));
                classes.push(c);
            } else {
                assert_eq!(live_classes(&pool), []);
                assert_eq!(pool.stats().fallback_blocks, 1, "cap {cap}");
                fallback = true;
                last = None;
            }
        }
    }
    classes.dedup();
    assert!(classes.len() >= 5 && in_place >= 1 && fallback);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Back from the fallback into class 112.
    v.truncate(100);
    v.shrink_to_fit();
    assert_eq!(live_classes(&pool), [(112, 1)]);
    assert_eq!(pool.stats().fallback_blocks, 0);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    // Growing within the class stays in place; one byte more moves to class 128.
    let p = v.as_ptr();
    v.reserve_exact(12);
    assert_eq!((v.capacity(), v.as_ptr()), (112, p));
    v.reserve_exact(13);
    assert_eq!(live_classes(&pool), [(128, 1)]);
    assert!(v.iter().enumerate().all(|(i, &x)| x == byte(i)));
    drop(v);
    assert_eq!(pool.stats().live_blocks(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- over-aligned and zero-sized layouts -----

#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Page4k([u8; 4096]);

#[repr(align(4096))]
struct Zst4k;

fn assert_zero_sized_layouts<A: Allocator>(alloc: &A, what: &str) {
    for pow in 0..=12 {
        let l = layout(0, 1 << pow);
        let p = alloc.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % l.align(), 0, "{what}: {l:?}");
        assert_eq!(p.len(), 0, "{what}: {l:?}");
        // SAFETY: a block of `l` from `alloc`.
        unsafe { alloc.deallocate(p.cast(), l) };
        let p = alloc.allocate_zeroed(l).unwrap();
        assert_eq!(addr(p.cast()) % l.align(), 0, "{what}: {l:?}");
        // SAFETY: as above.
        unsafe { alloc.deallocate(p.cast(), l) };
    }
    let unit = Box::new_in((), alloc);
    let zst = Box::new_in(Zst4k, alloc);
    assert_eq!((&*zst as *const Zst4k).addr() % 4096, 0);
    let mut v: AVec<(), &A> = AVec::new_in(alloc);
    for _ in 0..1000 {
        v.push(());
    }
    assert_eq!(v.len(), 1000);
    drop((unit, zst, v));
}

#[test]
fn pool_over_aligned_and_zero_sized_layouts() {
    let counting = Counting::default();
    // Slots aligned to 4096.
    let pool = Pool::new_in(Layout::new::<Page4k>(), &counting);
    assert_eq!((pool.slot_size(), pool.stats().slot_align), (4096, 4096));
    let n = if cfg!(miri) { 3 } else { 20 };
    let boxes: Vec<_> = (0..n)
        .map(|i| Box::new_in(Page4k([i as u8; 4096]), &pool))
        .collect();
    assert_eq!(pool.in_use(), n);
    for (i, b) in boxes.iter().enumerate() {
        assert_eq!((&**b as *const Page4k).addr() % 4096, 0);
        assert!(b.0.iter().all(|&x| x == i as u8));
    }
    // A 4096-aligned request to a pool of small slots goes to the backing allocator, aligned.
    let small = Pool::new_in(Layout::new::<u64>(), &counting);
    let one = Box::new_in(1u64, &small);
    let big = Box::new_in(Page4k([7; 4096]), &small);
    assert_eq!((&*big as *const Page4k).addr() % 4096, 0);
    assert_eq!((small.in_use(), small.stats().fallback_blocks), (1, 1));
    for size in [1, 8, 4096, 5000] {
        let l = layout(size, 4096);
        let p = small.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % 4096, 0);
        assert!(p.len() >= size);
        // SAFETY: a fresh block of `l` from `small`.
        unsafe { small.deallocate(p.cast(), l) };
    }
    // Zero-sized layouts: dangling, aligned, no slot taken, nothing allocated.
    let allocs = counting.allocs.get();
    assert_zero_sized_layouts(&small, "Pool<u64>");
    assert_eq!((small.in_use(), small.stats().fallback_blocks), (1, 1));
    let zpool = Pool::new_in(Layout::new::<()>(), &counting);
    assert_zero_sized_layouts(&zpool, "Pool<()>");
    assert_eq!((zpool.in_use(), zpool.capacity()), (0, 0));
    assert_eq!(
        counting.allocs.get(),
        allocs,
        "a zero-sized layout allocated"
    );
    let zpool4k = Pool::new_in(Layout::new::<Zst4k>(), &counting);
    assert_zero_sized_layouts(&zpool4k, "Pool<Zst4k>");
    assert_eq!((zpool4k.in_use(), zpool4k.capacity()), (0, 0));
    assert_eq!(*one, 1);
    assert!(big.0.iter().all(|&x| x == 7));
    drop((boxes, one, big));
    drop((pool, small, zpool, zpool4k));
    assert_eq!(counting.live.get(), 0);
}

#[test]
fn size_class_over_aligned_and_zero_sized_layouts() {
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    // Alignment above 16 goes to the backing allocator, whatever the size.
    let big = Box::new_in(Page4k([3; 4096]), &pool);
    assert_eq!((&*big as *const Page4k).addr() % 4096, 0);
    assert_eq!(pool.stats().fallback_blocks, 1);
    assert_eq!(pool.stats().pages, 0);
    for (size, align) in [(64, 32), (16, 4096), (1, 64), (5000, 4096)] {
        let l = layout(size, align);
        let p = pool.allocate(l).unwrap();
        assert_eq!(addr(p.cast()) % align, 0);
        assert_eq!(pool.stats().fallback_blocks, 2);
        // SAFETY: a fresh block of `l` from `pool`.
        unsafe { pool.deallocate(p.cast(), l) };
    }
    assert_eq!(pool.stats().pages, 0);
    // A 4096-aligned block grown and shrunk in the fallback keeps its alignment and contents,
    // and one shrunk to 16-alignment moves into a class.
    let l = layout(64, 4096);
    let p = pool.allocate(l).unwrap().cast::<u8>();
    // SAFETY: 64 fresh bytes of the block.
    unsafe { p.write_bytes(0x3c, 64) };
    let grown = layout(10_000, 4096);
    // SAFETY: `p` is live with layout `l`; `grown` is larger.
    let q = unsafe { pool.grow(p, l, grown) }.unwrap().cast::<u8>();
    assert_eq!(addr(q) % 4096, 0);
    let small = layout(8, 16);
    // SAFETY: `q` is live with layout `grown`; `small` is smaller.
    let r = unsafe { pool.shrink(q, grown, small) }.unwrap();
    assert_eq!(r.len(), 16);
    assert_eq!(
        (pool.stats().live_blocks(), pool.stats().fallback_blocks),
        (1, 1)
    );
    // SAFETY: the first 8 bytes were written above and survived the moves.
    assert_eq!(unsafe { r.cast::<[u8; 8]>().read() }, [0x3c; 8]);
    // SAFETY: `r` is live with layout `small`.
    unsafe { pool.deallocate(r.cast(), small) };
    // Zero-sized layouts: dangling, aligned, no page.
    let allocs = counting.allocs.get();
    assert_zero_sized_layouts(&pool, "SizeClassPool");
    assert_eq!(
        counting.allocs.get(),
        allocs,
        "a zero-sized layout allocated"
    );
    let s = pool.stats();
    assert_eq!((s.live_blocks(), s.fallback_blocks), (0, 1));
    assert!(big.0.iter().all(|&x| x == 3));
    drop(big);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- a Pool on an Arena -----

#[test]
fn pool_on_an_arena_then_arena_reset() {
    let counting = Counting::default();
    let mut arena = Arena::new_in(&counting);
    let n = if cfg!(miri) { 40 } else { 2000 };
    {
        let pool = Pool::new_in(Layout::new::<[u64; 4]>(), &arena);
        let mut used = 0;
        for round in 0..3u64 {
            let boxes: Vec<_> = (0..n)
                .map(|i| Box::new_in([i, round, 0, 1], &pool))
                .collect();
            assert_eq!(pool.in_use(), n as usize);
            for (i, b) in boxes.iter().enumerate() {
                assert_eq!(**b, [i as u64, round, 0, 1]);
            }
            if round == 0 {
                used = arena.used_bytes();
                assert!(used >= n as usize * 32, "the slabs come from the arena");
            } else {
                assert_eq!(
                    arena.used_bytes(),
                    used,
                    "slabs are reused, not taken again"
                );
            }
            drop_in_order(boxes, round);
        }
        // A block too big for the slot comes from the arena too.
        let v: AVec<u64, _> = (0..100u64).fold(AVec::new_in(&pool), |mut v, x| {
            v.push(x);
            v
        });
        assert_eq!(pool.stats().fallback_blocks, 1);
        assert!(arena.used_bytes() > used);
        assert!(v.iter().copied().eq(0..100));
    }
    // The pool is gone: resetting the arena works and it is usable again.
    arena.reset();
    assert_eq!(arena.used_bytes(), 0);
    assert_eq!(*arena.alloc(5u64), 5);
    drop(arena);
    assert_eq!(counting.live.get(), 0);
}

// ----- hashbrown and Vec rebuilt in one SizeClassPool -----

#[test]
fn size_class_rebuilt_maps_and_vecs_stay_bounded() {
    use hashbrown::{DefaultHashBuilder, HashMap};
    type Scp<'a> = SizeClassPool<&'a Counting>;
    let n: u64 = if cfg!(miri) { 12 } else { 1000 };
    let counting = Counting::default();
    let pool: Scp<'_> = SizeClassPool::new_in(&counting);
    // Kept across rounds, cleared and shrunk each round.
    let mut kept: HashMap<u64, u64, DefaultHashBuilder, &Scp<'_>> = HashMap::new_in(&pool);
    let mut peaks = Vec::new();
    for round in 0..40u64 {
        let mut map: HashMap<u64, AVec<u8, &Scp<'_>>, DefaultHashBuilder, &Scp<'_>> =
            HashMap::new_in(&pool);
        let mut vecs: AVec<AVec<u64, &Scp<'_>>, &Scp<'_>> = AVec::new_in(&pool);
        for i in 0..n {
            kept.insert(i, i ^ round);
            let mut bytes = AVec::new_in(&pool);
            bytes.resize((i * 7 % 200) as usize, i as u8);
            map.insert(i, bytes);
            if i % 4 == 0 {
                let mut v = AVec::new_in(&pool);
                v.extend(0..i % 100);
                vecs.push(v);
            }
        }
        for i in (0..n).step_by(2) {
            map.remove(&i);
        }
        for i in 0..n {
            assert_eq!(kept[&i], i ^ round);
            if i % 2 == 1 {
                let b = &map[&i];
                assert!(b.len() == (i * 7 % 200) as usize && b.iter().all(|&x| x == i as u8));
            }
        }
        assert!(
            vecs.iter()
                .enumerate()
                .all(|(k, v)| v.iter().copied().eq(0..(4 * k as u64) % 100))
        );
        let s = pool.stats();
        peaks.push((s.bytes_held, counting.live.get()));
        if round % 2 == 0 {
            drop(map);
            drop(vecs);
        } else {
            drop(vecs);
            drop(map);
        }
        kept.clear();
        kept.shrink_to_fit();
        let s = pool.stats();
        assert_eq!(s.live_blocks(), 0, "round {round}");
        assert_eq!(s.pages, s.empty_pages + kept_in_place(&s), "round {round}");
        assert!(s.empty_bytes <= empty_cache(&pool), "round {round}");
    }
    // Bounded: no round after the second holds more than 1.2x what the second did. (Not
    // exactly as much: which cached page each class gets back, and so the size of the pages it
    // takes after, differs from round to round; measured: 352 to 418 KiB of pages over the 40
    // rounds, 389 KiB in the second.)
    let within = |x: usize, second: usize| x * 5 <= second * 6;
    for (round, p) in peaks.iter().enumerate().skip(2) {
        assert!(
            within(p.0, peaks[1].0) && within(p.1, peaks[1].1),
            "round {}: (bytes_held, backing live) {p:?} above round 2's {:?}",
            round + 1,
            peaks[1]
        );
    }
    drop(kept);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

// ----- memory back -----

#[test]
fn size_class_memory_follows_the_live_set_down() {
    let counting = Counting::default();
    let page = 4096;
    let options = SizeClassOptions {
        largest_pooled: 512,
        page_size: page,
        max_empty_pages: 2,
    };
    let mut pool = SizeClassPool::with_options_in(options, &counting);
    let alloc_n = |pool: &SizeClassPool<&Counting>, l: Layout, n: usize| -> Vec<NonNull<u8>> {
        (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect()
    };
    let class = |pool: &SizeClassPool<&Counting>, size: usize| {
        pool.stats()
            .classes()
            .find(|c| c.block_size == size)
            .unwrap()
    };
    let (l512, l256, l48) = (layout(512, 16), layout(256, 8), layout(48, 16));
    let big = alloc_n(&pool, l512, 40);
    let mid = alloc_n(&pool, l256, 60);
    let small = alloc_n(&pool, l48, 100);
    let s = pool.stats();
    let big_pages = class(&pool, 512).pages;
    // Each class's pages hold its blocks with no more than an eighth to spare, plus a first
    // page (about 1 KiB of blocks) and a header per page.
    for (size, n) in [(512, 40), (256, 60), (48, 100)] {
        let c = class(&pool, size);
        let rule = n * size + n * size / 8 + 1024.max(size) + c.pages * 128;
        assert!(
            c.bytes <= rule,
            "class {size}: {c:?}, the rule allows {rule} B"
        );
    }
    assert_eq!(s.empty_pages, 0);
    assert!(counting.live.get() >= s.bytes_held);
    let table = counting.live.get() - s.bytes_held;
    assert!(
        table < page,
        "besides pages, only the address map's table: {table} bytes"
    );

    // Free all of class 512: its pages are cached up to two largest pages' worth of bytes, the
    // rest go back.
    let big_bytes = class(&pool, 512).bytes;
    for &p in &big {
        // SAFETY: each block is live and freed once, with its layout.
        unsafe { pool.deallocate(p, l512) };
    }
    let t = pool.stats();
    // Its last page (4 KiB at most here) stays formatted in place.
    let kept = class(&pool, 512);
    assert_eq!((kept.live, kept.pages), (0, 1));
    assert!(t.empty_pages > 0 && t.empty_pages < big_pages);
    assert!(t.empty_bytes <= 2 * page && t.empty_bytes > 2 * page - big_bytes.min(page));
    assert_eq!(t.pages, s.pages - big_pages + t.empty_pages + 1);
    assert_eq!(
        t.bytes_held,
        s.bytes_held - big_bytes + t.empty_bytes + kept.bytes
    );
    assert_eq!(counting.live.get(), t.bytes_held + table);

    // A cached page serves another class without a backing allocation.
    let allocs = counting.allocs.get();
    let other = pool.allocate(layout(100, 16)).unwrap().cast::<u8>();
    assert_eq!(counting.allocs.get(), allocs);
    assert_eq!(pool.stats().empty_pages, t.empty_pages - 1);
    // SAFETY: `other` is live with this layout.
    unsafe { pool.deallocate(other, layout(100, 16)) };
    // Its class's only page stays in place.
    assert_eq!(pool.stats().empty_pages, t.empty_pages - 1);
    assert_eq!(class(&pool, 112).pages, 1);

    // Free everything: only the cache's pages are held.
    for (blocks, l) in [(&mid, l256), (&small, l48)] {
        for &p in blocks.iter().rev() {
            // SAFETY: each block is live and freed once, with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    let u = pool.stats();
    assert_eq!(u.live_blocks(), 0);
    assert_eq!(u.pages, u.empty_pages + kept_in_place(&u));
    assert!(u.empty_bytes <= 2 * page);
    assert_eq!(counting.live.get(), u.bytes_held + table);

    // `trim` returns the cached pages and those kept in place.
    pool.trim();
    let v = pool.stats();
    assert_eq!((v.pages, v.empty_pages, v.bytes_held), (0, 0, 0));
    assert_eq!(counting.live.get(), table);
    // Still usable.
    let b = Box::new_in([9u8; 200], &pool);
    assert_eq!(pool.stats().pages, 1);
    assert_eq!(b[199], 9);
    drop(b);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// Pages follow each class's population: a class with one live block holds one small page
/// (about 1 KiB of blocks, or one block for the largest classes), and under random churn over
/// sixteen classes each class holds at most 1.125x the bytes of the most blocks it had in use at
/// once or kept among its recently freed ones, plus a first page, a 4 KiB page and a header per
/// page.
#[test]
fn size_class_memory_follows_each_class() {
    // One live block per class, each in a fresh pool: the peak is its first page plus the
    // address map's table (64 bytes for a page in one 4 KiB granule, 128 for up to three).
    let largest = SizeClassOptions::default().largest_pooled;
    for size in [16, 100, 512, 1000, 4096, largest] {
        let counting = Counting::default();
        let pool = SizeClassPool::new_in(&counting);
        let l = layout(size, 8);
        let p = pool.allocate(l).unwrap();
        let block = p.len();
        let first = (1024 / block).max(1) * block + 128 + block / 128;
        assert!(
            counting.peak.get() <= first + if first <= 4096 { 64 } else { 128 },
            "one block of {size} B: {} B held",
            counting.peak.get()
        );
        // SAFETY: a live block of `pool` with layout `l`.
        unsafe { pool.deallocate(p.cast(), l) };
    }

    // Random churn: n live blocks of 8 to 512 bytes, one replaced at a time.
    let (n, steps) = if cfg!(miri) {
        (60, 300)
    } else {
        (1000, 50_000)
    };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let mut rng = Lcg(7);
    let mut size = || 8 + rng.next() as usize % 505;
    // The blocks in use per class, and their most, counted here (the pool's statistics, which
    // would give them too, cost a walk of every class at each step under Miri): a block's class
    // is the first whose blocks hold it.
    let classes: Vec<usize> = pool.stats().classes().map(|c| c.block_size).collect();
    let class_of = |l: Layout| classes.partition_point(|&block| block < l.size());
    let mut in_use = vec![0usize; classes.len()];
    let mut most_in_use = vec![0usize; classes.len()];
    let mut live: Vec<(NonNull<u8>, Layout)> = Vec::with_capacity(n);
    for _ in 0..n {
        let l = layout(size(), 8);
        live.push((pool.allocate(l).unwrap().cast(), l));
        in_use[class_of(l)] += 1;
    }
    most_in_use.copy_from_slice(&in_use);
    let mut pick = Lcg(11);
    for _ in 0..steps {
        let i = pick.next() as usize % n;
        // SAFETY: a live block of `pool` with its layout, replaced at once.
        unsafe { pool.deallocate(live[i].0, live[i].1) };
        in_use[class_of(live[i].1)] -= 1;
        let l = layout(size(), 8);
        live[i] = (pool.allocate(l).unwrap().cast(), l);
        let c = class_of(l);
        in_use[c] += 1;
        most_in_use[c] = most_in_use[c].max(in_use[c]);
    }
    let s = pool.stats();
    let counted: Vec<usize> = s.classes().map(|c| c.live).collect();
    assert_eq!(counted, in_use, "the pool's blocks in use per class");
    let mut blocks = 0;
    for (i, c) in s.classes().enumerate().filter(|(_, c)| c.pages > 0) {
        let most = most_in_use[i] * c.block_size;
        let first = (1024 / c.block_size).max(1) * c.block_size;
        // Up to 16 KiB (at most 32 blocks) of recently freed blocks stay out of the pages.
        let recent = (16384 / c.block_size).clamp(1, 32) * c.block_size;
        let rule = (most + recent) * 9 / 8 + first + 4096 + c.pages * 128;
        assert!(c.bytes <= rule, "{c:?}: the rule allows {rule} B");
        blocks += c.live * c.block_size;
    }
    let peaks: usize = classes
        .iter()
        .zip(&most_in_use)
        .map(|(size, most)| size * most)
        .sum();
    eprintln!(
        "{n} live blocks of 8 to 512 B: pages hold {} B for {blocks} B of blocks ({:.2}x), peak \
         {} B; the classes' peaks add up to {peaks} B",
        s.bytes_held,
        s.bytes_held as f64 / blocks as f64,
        counting.peak.get()
    );
    for (p, l) in live {
        // SAFETY: live blocks of `pool`, each freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    assert_eq!(pool.stats().live_blocks(), 0);
}

/// A class keeps its last-freed blocks out of their pages (handed out first, most recent
/// first): they pin at most 16 KiB of blocks per class, `trim` puts them back so that their
/// pages can go, and freeing a class's last block does too.
#[test]
fn size_class_recent_blocks_come_back_first_and_trim_releases_their_pages() {
    let counting = Counting::default();
    let mut pool = SizeClassPool::new_in(&counting);
    let l = layout(256, 16);
    let n = if cfg!(miri) { 80 } else { 400 };
    let blocks: Vec<NonNull<u8>> = (0..n).map(|_| pool.allocate(l).unwrap().cast()).collect();
    let pages = pool.stats().pages;
    assert!(pages > 3);
    // Freed last, handed out first.
    for &p in &blocks[n - 3..] {
        // SAFETY: a live block of `pool` with layout `l`, freed once.
        unsafe { pool.deallocate(p, l) };
    }
    let again: Vec<NonNull<u8>> = (0..3).map(|_| pool.allocate(l).unwrap().cast()).collect();
    assert_eq!(again, [blocks[n - 1], blocks[n - 2], blocks[n - 3]]);
    // Free all but the first block: the recent blocks (16 KiB / 256 B = 64, at most 32) keep
    // some pages from emptying; `trim` puts them back and every page but the first one goes.
    for &p in blocks[1..n - 3].iter().chain(&again) {
        // SAFETY: as above.
        unsafe { pool.deallocate(p, l) };
    }
    let s = pool.stats();
    assert_eq!(s.live_blocks(), 1);
    let class = s.classes().find(|c| c.block_size == 256).unwrap();
    assert!(class.pages > 1, "{class:?}");
    assert!(class.pages <= 1 + 32, "{class:?}");
    pool.trim();
    let t = pool.stats();
    let class = t.classes().find(|c| c.block_size == 256).unwrap();
    assert_eq!((class.pages, t.empty_pages), (1, 0), "{t:?}");
    assert_eq!(t.pages, 1);
    // The last block: its class's one page (1 KiB of blocks) stays formatted in place.
    // SAFETY: as above.
    unsafe { pool.deallocate(blocks[0], l) };
    let u = pool.stats();
    assert_eq!((u.pages, u.empty_pages, kept_in_place(&u)), (1, 0, 1));
    pool.trim();
    assert_eq!(pool.stats().pages, 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// A population that falls gives its pages back: 3 000 blocks of 8 to 512 bytes, then two freed
/// for one allocated (at random) down to 150: the pages in use shrink to under a third of what
/// they were, the rest is cached (within its budget) or back with the backing allocator.
/// (Measured: 940 096 -> 273 408 bytes of pages in use; with the 64 KiB pages of before,
/// 1 507 328 -> 1 179 648.)
#[test]
fn size_class_pages_follow_a_falling_population() {
    let (high, low) = if cfg!(miri) { (1000, 50) } else { (3000, 150) };
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let mut rng = Lcg(5);
    let mut size = || 8 + rng.next() as usize % 505;
    let mut live: Vec<(NonNull<u8>, Layout)> = (0..high)
        .map(|_| {
            let l = layout(size(), 8);
            (pool.allocate(l).unwrap().cast(), l)
        })
        .collect();
    let at_high = pool.stats();
    let mut pick = Lcg(9);
    while live.len() > low {
        for _ in 0..2 {
            let (p, l) = live.swap_remove(pick.next() as usize % live.len());
            // SAFETY: a live block of `pool` with its layout, freed once.
            unsafe { pool.deallocate(p, l) };
        }
        let l = layout(size(), 8);
        live.push((pool.allocate(l).unwrap().cast(), l));
    }
    let at_low = pool.stats();
    let in_use = |s: &SizeClassStats| s.bytes_held - s.empty_bytes;
    assert!(
        in_use(&at_low) * 3 < in_use(&at_high),
        "pages in use: {} B at {high} blocks, {} B at {low}",
        in_use(&at_high),
        in_use(&at_low)
    );
    assert!(at_low.empty_bytes <= empty_cache(&pool));
    for (p, l) in live {
        // SAFETY: as above.
        unsafe { pool.deallocate(p, l) };
    }
}

/// A class whose population falls but stays above half its blocks gives pages back under
/// churn: it leaves its emptiest page to empty while more than a quarter of its blocks are free,
/// so its pages come down to about 4/3 of the blocks in use (its recent blocks included), plus
/// the page left to empty and a 4 KiB page, where keeping every page it once needed would hold
/// the 1.67x of the blocks it had at its peak.
#[test]
fn size_class_a_class_above_half_gives_pages_back() {
    let (high, steps) = if cfg!(miri) {
        (300, 3_000)
    } else {
        (3000, 150_000)
    };
    let low = high * 3 / 5;
    let counting = Counting::default();
    let pool = SizeClassPool::new_in(&counting);
    let l = layout(256, 16);
    let class = |pool: &SizeClassPool<&Counting>| {
        pool.stats()
            .classes()
            .find(|c| c.block_size == 256)
            .unwrap()
    };
    let mut live: Vec<NonNull<u8>> = (0..high)
        .map(|_| pool.allocate(l).unwrap().cast())
        .collect();
    let at_high = class(&pool);
    let mut pick = Lcg(3);
    let mut free_one = |pool: &SizeClassPool<&Counting>, live: &mut Vec<NonNull<u8>>| {
        let p = live.swap_remove(pick.next() as usize % live.len());
        // SAFETY: a live block of `pool` with layout `l`, freed once.
        unsafe { pool.deallocate(p, l) };
    };
    // Down to three fifths, two blocks freed for one allocated, then churn at that level.
    while live.len() > low {
        free_one(&pool, &mut live);
        free_one(&pool, &mut live);
        live.push(pool.allocate(l).unwrap().cast());
    }
    for _ in 0..steps {
        free_one(&pool, &mut live);
        live.push(pool.allocate(l).unwrap().cast());
    }
    let at_low = class(&pool);
    let rule = low * 256 * 4 / 3 + 2 * 4096 + at_low.pages * 64;
    assert!(
        at_low.bytes <= rule,
        "{low} blocks of 256 B in use: {at_low:?}, the rule allows {rule} B (at {high}: {at_high:?})"
    );
    assert!(
        at_low.bytes * 5 < at_high.bytes * 4,
        "{at_low:?} against {at_high:?}"
    );
    while !live.is_empty() {
        free_one(&pool, &mut live);
    }
}

/// `[u8; 512]` blocks: slot 512, slabs of 8, 16, 32 slots.
type Big = [u8; 512];

fn big(i: usize) -> Big {
    [i as u8; 512]
}

/// A raw block of `pool` holding `big(i)` (raw, so that `trim` can run while it is live).
fn raw_big<A: Allocator>(pool: &Pool<A>, i: usize) -> NonNull<u8> {
    let p = pool.allocate(Layout::new::<Big>()).unwrap().cast::<u8>();
    // SAFETY: a fresh block of `Big`'s layout.
    unsafe { p.cast::<Big>().write(big(i)) };
    p
}

fn read_big(p: NonNull<u8>) -> Big {
    // SAFETY: callers pass live blocks written by `raw_big`.
    unsafe { p.cast::<Big>().read() }
}

/// Fills three slabs of `Big` slots exactly; returns the blocks and the first slab's slots.
fn fill_three_slabs<A: Allocator>(pool: &Pool<A>) -> (Vec<NonNull<u8>>, usize) {
    let mut blocks = vec![raw_big(pool, 0)];
    let first_slab = pool.capacity();
    while pool.stats().slabs < 3 || pool.in_use() < pool.capacity() {
        blocks.push(raw_big(pool, blocks.len()));
    }
    assert_eq!(pool.stats().slabs, 3);
    (blocks, first_slab)
}

#[test]
fn pool_trim_keeps_the_slabs_with_live_slots() {
    let counting = Counting::default();
    let l = Layout::new::<Big>();
    let mut pool = Pool::new_in(l, &counting);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let full = pool.stats();
    // Keep three slots of the first slab, free everything else.
    let kept_idx = [1, 4, first_slab - 1];
    let mut kept = Vec::new();
    for (i, p) in blocks.into_iter().enumerate() {
        if kept_idx.contains(&i) {
            kept.push((i, p));
        } else {
            // SAFETY: each block is live, from `pool`, freed once with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    assert_eq!(pool.in_use(), 3);
    pool.trim();
    let t = pool.stats();
    assert!(
        t.capacity < full.capacity && t.bytes_held < full.bytes_held,
        "{t:?}"
    );
    assert!(t.capacity >= first_slab && t.slabs >= 1);
    assert_eq!(t.in_use, 3);
    assert!(
        counting.live.get() < full.bytes_held,
        "trimmed slabs went back to the backing allocator"
    );
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    // Allocate again: the kept blocks stay intact, new ones are distinct and correct.
    let again: Vec<NonNull<u8>> = (0..60).map(|i| raw_big(&pool, 100 + i)).collect();
    assert_eq!(pool.in_use(), 63);
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    for (i, &p) in again.iter().enumerate() {
        assert_eq!(read_big(p), big(100 + i));
    }
    let mut addrs: Vec<usize> = again
        .iter()
        .chain(kept.iter().map(|(_, p)| p))
        .map(|&p| addr(p))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), 63);
    for p in again.into_iter().chain(kept.into_iter().map(|(_, p)| p)) {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    assert_eq!(pool.in_use(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// `Pool::trim`'s documented rule ("Returns every slab with no slot in use to the backing
/// allocator"), with live slots in the first slab only and every later slab fully carved.
#[test]
fn pool_trim_returns_every_slab_without_live_slots() {
    let l = Layout::new::<Big>();
    // On `Quarantine`, so that this test checks the rule only (see
    // `pool_trim_keeps_the_free_slots_of_kept_slabs` for reads of released slabs).
    let quarantine = Quarantine::default();
    let mut pool = Pool::new_in(l, &quarantine);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let first_bytes = {
        let probe = Pool::with_capacity(l, first_slab);
        probe.stats().bytes_held
    };
    for &p in &blocks[2..] {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
    pool.trim();
    let t = pool.stats();
    let kept = read_big(blocks[1]);
    // SAFETY: the two blocks left are live, from `pool`, freed once with their layout.
    unsafe {
        pool.deallocate(blocks[0], l);
        pool.deallocate(blocks[1], l);
    }
    assert_eq!(kept, big(1));
    assert_eq!(
        (t.slabs, t.capacity, t.bytes_held),
        (1, first_slab, first_bytes),
        "slabs with no slot in use were kept"
    );
}

/// After `trim`, the free slots of the slabs it kept are all still handed out before the pool
/// asks for a new slab. (On `Quarantine`: a slab that `trim` released reads as zeros, as freed
/// memory may; the pool must not read it at all.)
#[test]
fn pool_trim_keeps_the_free_slots_of_kept_slabs() {
    let quarantine = Quarantine::default();
    let l = Layout::new::<Big>();
    let mut pool = Pool::new_in(l, &quarantine);
    let (blocks, first_slab) = fill_three_slabs(&pool);
    let kept_idx = [1, 4, first_slab - 1];
    let mut kept = Vec::new();
    for (i, p) in blocks.into_iter().enumerate() {
        if kept_idx.contains(&i) {
            kept.push((i, p));
        } else {
            // SAFETY: each block is live, from `pool`, freed once with its layout.
            unsafe { pool.deallocate(p, l) };
        }
    }
    pool.trim();
    let spare = pool.capacity() - pool.in_use();
    let allocs = quarantine.allocs.get();
    let again: Vec<NonNull<u8>> = (0..spare).map(|i| raw_big(&pool, 100 + i)).collect();
    assert_eq!(
        quarantine.allocs.get(),
        allocs,
        "after trim, the {spare} free slots of the kept slabs were not all handed out before a new slab"
    );
    let mut addrs: Vec<usize> = again
        .iter()
        .chain(kept.iter().map(|(_, p)| p))
        .map(|&p| addr(p))
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), spare + kept.len());
    for &(i, p) in &kept {
        assert_eq!(read_big(p), big(i));
    }
    for (i, &p) in again.iter().enumerate() {
        assert_eq!(read_big(p), big(100 + i));
    }
    for p in again.into_iter().chain(kept.into_iter().map(|(_, p)| p)) {
        // SAFETY: each block is live, from `pool`, freed once with its layout.
        unsafe { pool.deallocate(p, l) };
    }
}

#[test]
fn pool_reset_frees_every_slot_and_keeps_the_slabs() {
    let counting = Counting::default();
    let mut pool = Pool::new_in(Layout::new::<Big>(), &counting);
    let boxes: Vec<_> = (0..20).map(|i| Box::new_in(big(i), &pool)).collect();
    let addrs: Vec<usize> = boxes.iter().map(|b| (&**b as *const Big).addr()).collect();
    let before = pool.stats();
    assert_eq!(before.in_use, 20);
    assert!(before.slabs >= 2, "several slabs: {before:?}");
    // Free a few (so the free list is not empty), forget the rest through reset.
    drop_in_order(boxes, 3);
    pool.reset();
    let s = pool.stats();
    assert_eq!(s.in_use, 0);
    assert_eq!(
        (s.capacity, s.slabs, s.bytes_held),
        (before.capacity, before.slabs, before.bytes_held)
    );
    let allocs = counting.allocs.get();
    // The next allocations start over at the first slot of the first slab, in the same order.
    let again: Vec<_> = (0..before.capacity)
        .map(|i| Box::new_in(big(50 + i), &pool))
        .collect();
    assert_eq!((&*again[0] as *const Big).addr(), addrs[0]);
    let again_addrs: Vec<usize> = again.iter().map(|b| (&**b as *const Big).addr()).collect();
    assert_eq!(again_addrs[..20], addrs[..]);
    assert_eq!(counting.allocs.get(), allocs, "reset slabs were not reused");
    assert_eq!(pool.in_use(), before.capacity);
    for (i, b) in again.iter().enumerate() {
        assert_eq!(**b, big(50 + i));
    }
    drop(again);
    assert_eq!(pool.in_use(), 0);
    drop(pool);
    assert_eq!(counting.live.get(), 0);
}

/// A slot given back through a pointer narrowed to its layout's bytes (what a `&mut u32` in an
/// 8-byte slot leaves a caller with) is handed out again as a whole slot, which the next user may
/// write in full: with a layout smaller than the slot the pool re-derives the slot's pointer
/// (under Miri, writing the whole slot through the narrowed pointer would be undefined
/// behaviour), with a whole-slot layout the caller's pointer covers the slot already.
#[test]
fn pool_reuses_slots_freed_through_narrowed_pointers() {
    let pool = Pool::for_type::<u64>();
    let whole = Layout::new::<u64>();
    for freed in [Layout::new::<u32>(), layout(1, 1), whole] {
        let block = pool.allocate(freed).unwrap();
        assert_eq!(block.len(), 8);
        let p = block.cast::<u8>();
        // SAFETY: the block is live and 8 bytes long; the reference covers its first
        // `freed.size()` bytes, which are initialised first, and the pointer given back is
        // derived from it, so it is valid for exactly `freed.size()` bytes.
        let narrowed = unsafe {
            p.write_bytes(1, freed.size());
            let r = std::slice::from_raw_parts_mut(p.as_ptr(), freed.size());
            NonNull::from(r).cast::<u8>()
        };
        // SAFETY: live, from `pool`, with the layout it was allocated with.
        unsafe { pool.deallocate(narrowed, freed) };
        let again = pool.allocate(whole).unwrap().cast::<u64>();
        assert_eq!(
            again.cast::<u8>(),
            p,
            "the freed slot is the next one handed out"
        );
        // SAFETY: a live block of 8 bytes, aligned for `u64`.
        unsafe {
            again.write(u64::MAX);
            assert_eq!(again.read(), u64::MAX);
            pool.deallocate(again.cast(), whole);
        }
    }
    assert_eq!(pool.in_use(), 0);
}

/// Allocates `old` from `alloc`, narrows the pointer to `old.size()` bytes, grows it (zeroed) to
/// `new`, and checks the whole new block through the returned pointer.
fn grow_through_a_narrowed_pointer<A: Allocator>(alloc: &A, old: Layout, new: Layout) {
    let block = alloc.allocate(old).unwrap();
    let p = block.cast::<u8>();
    // SAFETY: the block is live and at least `old.size()` bytes long; the reference covers those
    // bytes, written first, and the pointer passed on is derived from it, so it is valid for
    // exactly `old.size()` bytes (what `grow` may assume, no more).
    let narrowed = unsafe {
        p.write_bytes(7, old.size());
        let r = std::slice::from_raw_parts_mut(p.as_ptr(), old.size());
        NonNull::from(r).cast::<u8>()
    };
    // SAFETY: live, from `alloc`, with the layout it was allocated with; `new` is larger.
    let grown = unsafe { alloc.grow_zeroed(narrowed, old, new) }.unwrap();
    assert!(grown.len() >= new.size());
    let q = grown.cast::<u8>();
    // SAFETY: the grown block is live and `new.size()` bytes long; all of it is written through
    // the returned pointer (Miri checks that the pointer covers it).
    unsafe {
        for i in 0..new.size() {
            assert_eq!(q.add(i).read(), if i < old.size() { 7 } else { 0 });
        }
        q.write_bytes(9, new.size());
        alloc.deallocate(q, new);
    }
}

#[test]
fn growing_within_a_slot_through_a_narrowed_pointer_covers_the_new_size() {
    let pool = Pool::for_type::<[u64; 4]>();
    grow_through_a_narrowed_pointer(&pool, layout(8, 8), layout(32, 8));
    grow_through_a_narrowed_pointer(&pool, layout(3, 1), layout(20, 4));
    assert_eq!(pool.in_use(), 0);
    let pool = SizeClassPool::new();
    // Both sizes share a class, so the block stays where it is.
    assert_eq!(class_size(40), class_size(48));
    grow_through_a_narrowed_pointer(&pool, layout(40, 8), layout(48, 8));
    let pool = arena_pool::SyncPool::for_type::<[u64; 4]>();
    grow_through_a_narrowed_pointer(&pool, layout(8, 8), layout(32, 8));
}

// ----- debug-build detection -----

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

// ----- measured overheads -----

/// Metadata (header, debug bitmap, alignment padding) per slab of a `Pool`, for several slot
/// layouts and slab sizes; and the slab sizes the pool picks by itself.
#[test]
fn pool_metadata_per_slab() {
    let cases = [(8, 8), (24, 8), (64, 64), (512, 8), (600, 8), (4096, 4096)];
    let slab_slots: &[usize] = if cfg!(miri) {
        &[8, 512]
    } else {
        &[8, 64, 512, 4096, 1 << 17]
    };
    for (size, align) in cases {
        let l = layout(size, align);
        for &slots in slab_slots {
            let pool = Pool::with_capacity(l, slots);
            let s = pool.stats();
            assert_eq!((s.slabs, s.capacity), (1, slots));
            let meta = s.bytes_held - s.capacity * s.slot_size;
            eprintln!(
                "Pool slot {size}/{align}: slab of {slots} slots: {meta} B metadata ({:.3} B/slot)",
                meta as f64 / slots as f64
            );
            // At most a header of 64 bytes, one bit per slot, and the alignment padding.
            assert!(meta <= 64 + slots.div_ceil(64) * 8 + align, "{meta}");
            if align <= 64 {
                // Less than 8 bytes of metadata per slot.
                assert!(meta <= 8 * slots, "{meta} for {slots} slots");
            }
        }
        // The slabs the pool picks: the first holds about 512 bytes of slots (at least 4), each
        // later one three tenths of the slots held, at least the first's.
        let pool = Pool::new(l);
        let mut blocks = Vec::new();
        let mut last = (0, 0);
        let mut slabs = Vec::new();
        while slabs.len() < if cfg!(miri) { 3 } else { 12 } {
            blocks.push(pool.allocate(l).unwrap().cast::<u8>());
            let s = pool.stats();
            if s.capacity != last.0 {
                let (slots, bytes) = (s.capacity - last.0, s.bytes_held - last.1);
                slabs.push((slots, bytes - slots * s.slot_size));
                last = (s.capacity, s.bytes_held);
            }
        }
        eprintln!("Pool slot {size}/{align}: natural slabs (slots, metadata B): {slabs:?}");
        let slot = pool.slot_size();
        let first = slabs[0].0;
        assert!(first == 4 || first * slot + slot > 512 && first * slot <= 512);
        let mut held = first;
        for &(slots, _) in &slabs[1..] {
            assert_eq!(
                slots,
                (held * 3 / 10).max(first),
                "after {held} slots: {slabs:?}"
            );
            held += slots;
        }
        for p in blocks {
            // SAFETY: each block is live, from `pool`, with layout `l`.
            unsafe { pool.deallocate(p, l) };
        }
    }
}

/// Blocks per page and waste of each `SizeClassPool` class: the worst internal waste (smallest
/// request of the class) and the page's metadata plus tail.
#[test]
fn size_class_blocks_per_page_and_waste() {
    let options = if cfg!(miri) {
        SizeClassOptions {
            largest_pooled: 512,
            page_size: 4096,
            max_empty_pages: 1,
        }
    } else {
        SizeClassOptions::default()
    };
    let pool = SizeClassPool::with_options(options);
    let o = pool.options();
    let sizes: Vec<usize> = pool.stats().classes().map(|c| c.block_size).collect();
    assert_eq!(*sizes.last().unwrap(), o.largest_pooled);
    let mut prev = 0;
    for (i, &block) in sizes.iter().enumerate() {
        assert_eq!(
            class_size(block),
            block,
            "the class table matches the documented one"
        );
        // Requests prev+1 ..= block share the class.
        for req in [prev + 1, block] {
            let p = pool.allocate(layout(req, 1)).unwrap();
            assert_eq!(p.len(), block, "request {req}");
            // SAFETY: a fresh block of this layout.
            unsafe { pool.deallocate(p.cast(), layout(req, 1)) };
        }
        let waste = block - (prev + 1);
        if block <= 128 {
            assert!(waste < 16);
        } else {
            assert!(waste * 4 <= block, "class {block}: {waste} bytes of waste");
        }
        // Under Miri, which reads the statistics at every block below, every third class and
        // the last one.
        if cfg!(miri) && i % 3 != 2 && i + 1 != sizes.len() {
            prev = block;
            continue;
        }
        // Blocks per page: allocate from a fresh pool until the class takes a third page.
        let fresh = SizeClassPool::with_options(options);
        let l = layout(block, 16);
        let mut blocks = Vec::new();
        let class = |pool: &SizeClassPool| {
            pool.stats()
                .classes()
                .find(|c| c.block_size == block)
                .unwrap()
        };
        // (blocks, bytes) of the first and the second page.
        let mut pages = [(0, 0); 2];
        loop {
            blocks.push(fresh.allocate(l).unwrap().cast::<u8>());
            let c = class(&fresh);
            if c.pages == 3 {
                break;
            }
            pages[c.pages - 1].0 += 1;
            pages[c.pages - 1].1 = c.bytes - if c.pages == 2 { pages[0].1 } else { 0 };
        }
        let [(first_blocks, first_page), (second_blocks, second_page)] = pages;
        let metadata = first_page - first_blocks * block;
        eprintln!(
            "class {block:5}: worst request {:5} wastes {waste:4} B ({:4.1}%); first page \
             {first_blocks:3} blocks in {first_page:5} B (metadata {metadata} B), second \
             {second_blocks:3} in {second_page:5} B",
            prev + 1,
            100.0 * waste as f64 / block as f64,
        );
        // The first page holds about 1 KiB of blocks, at least one, and nothing but its
        // metadata (header + one debug bit per 16 bytes) besides: no tail.
        assert_eq!(first_blocks, (1024 / block).max(1), "class {block}");
        assert!(metadata < 128 + first_page / 128, "class {block}");
        // The second: 4 KiB (an eighth of the class's bytes, at least 4 KiB, in whole 4 KiB
        // granules), filled to within a block, or as many blocks as the first if 4 KiB holds
        // fewer.
        assert!(second_blocks >= first_blocks, "class {block}");
        if second_blocks > first_blocks {
            assert!(second_page <= 4096, "class {block}: {second_page} B");
            assert!(
                second_page + block + 160 > 4096,
                "class {block}: {second_page} B"
            );
        }
        assert!(second_page - second_blocks * block < 128 + second_page / 128);
        for p in blocks {
            // SAFETY: each block is live in `fresh` with layout `l`.
            unsafe { fresh.deallocate(p, l) };
        }
        prev = block;
    }
    // Above the largest class: the backing allocator.
    let p = pool.allocate(layout(o.largest_pooled + 1, 1)).unwrap();
    assert_eq!(pool.stats().fallback_blocks, 1);
    // SAFETY: a fresh block of this layout.
    unsafe { pool.deallocate(p.cast(), layout(o.largest_pooled + 1, 1)) };
}

// ----- alloc / try_alloc and strict mode -----

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
    // Before: the issue's case, served quietly by the backing allocator.
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
