//! The model: proptest op sequences on each pool, checked after every op.

use crate::common::Counting;
use crate::{Lcg, addr, class_size, empty_cache, expected_slot, kept_in_place, layout};
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Pool, SizeClassOptions, SizeClassPool, TypedPool};
use proptest::prelude::*;
use std::ptr::NonNull;

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
const MAX_OPS: usize = if cfg!(miri) { 24 } else { 150 };

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
        // The page counts of the classes with pending blocks: an allocation that needs new
        // memory first puts every class's recent blocks back in their pages, and a page that
        // empties so leaves its class with the blocks pending in it.
        let pending_pages: Vec<(usize, usize)> = pending
            .iter()
            .map(|&(k, _)| (k, pool.class_pages(k)))
            .collect();
        let r = if zeroed {
            pool.allocate_zeroed(l)
        } else {
            pool.allocate(l)
        };
        for (k, pages) in pending_pages {
            if pool.class_pages(k) < pages {
                pending.retain(|&(kk, _)| kk != k);
            }
        }
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

/// 256 cases natively, 5 under Miri (see `common::proptest_config`), where shrinking a failure
/// is capped too, to keep the run short.
fn config() -> ProptestConfig {
    ProptestConfig {
        max_shrink_iters: if cfg!(miri) { 16 } else { 4096 },
        ..crate::common::proptest_config(256, 5)
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
