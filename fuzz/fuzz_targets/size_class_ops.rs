//! `SizeClassPool` through allocator-api2's `Allocator` trait, against a model of the live
//! blocks (see README.md).
//!
//! The options come from the input now and then (largest pooled size, page size 4 KiB ..= 1 MiB,
//! empty pages kept). Operations: allocate / allocate_zeroed / grow / grow_zeroed / shrink /
//! deallocate with sizes 0 ..= 16 KiB (so both pooled and large blocks) and alignments up to
//! 4096, blocks described with any size between their requested size and their length, trim,
//! backing-allocator failures, and sizes no allocator can serve. The backing allocator can panic
//! in its next call, or call back into the pool there: free a block and allocate one; or panic in
//! a `deallocate` call of the next operation (of the drop at the end).
//!
//! Checked after every operation, besides what the block model checks (alignment, length, no
//! overlap, contents, zeroing): a pooled block is exactly its class long (16-byte steps up to
//! 128 B, then four classes per power of two, computed here independently); the live count of
//! every class and the fallback count match the model; the cache of empty pages stays within its
//! limit and `trim` empties it; the bytes held are whole pages; the backing allocator holds
//! exactly the pages, the fallback blocks and at most one address-map table; a failure changes
//! nothing and happens only after an injected backing failure or for a huge size; an operation
//! unwound by the backing allocator's panic in `allocate` changes no statistic and no block, and
//! the same operation then runs normally; after one unwound from a `deallocate`, every other
//! block is intact, the statistics still match the model (a block the operation took and could
//! not hand out counts as lost, at most one per class and one large) and the pool works on; a
//! nested request for a large block is served unless a failure
//! was injected, and a nested block is checked like any other (alignment, length, class, no
//! overlap with any block live meanwhile, contents); dropping the pool gives everything back (but
//! the large blocks lost, and what a drop that unwound left).

#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::{SizeClassOptions, SizeClassPool};
use arena_pool_fuzz::nested::{self, Plan, Settled};
use arena_pool_fuzz::{
    BACKING_CAP, Backing, Injected, Model, Size, align_from, alloc_op, catch_injected, dealloc_op,
    grow_op, ignore_injected_panics, layout, run_catching, shrink_op,
};
use libfuzzer_sys::fuzz_target;

/// Largest ordinary request.
const MAX_SIZE: usize = 16 * 1024;

/// Tags of the model's blocks: which path served them.
const ZERO: u8 = 0;
const POOLED: u8 = 1;
const FALLBACK: u8 = 2;

#[derive(Arbitrary, Debug)]
struct Options {
    largest_pooled: u16,
    /// log2 of the page size, reduced into 12 ..= 20.
    page_shift: u8,
    max_empty_pages: u8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// `with_options_in` with these instead of `new_in`.
    options: Option<Options>,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Alloc {
        size: Size,
        align: u8,
        zeroed: bool,
    },
    Grow {
        pick: u16,
        fit: u8,
        by: Size,
        align: u8,
        zeroed: bool,
    },
    Shrink {
        pick: u16,
        fit: u8,
        keep: u16,
        align: u8,
    },
    Dealloc {
        pick: u16,
        fit: u8,
    },
    Trim,
    /// The next `n % 4` backing allocations fail.
    FailNext(u8),
    /// The next backing allocation panics (with `InjectedPanic`).
    PanicNext,
    /// In the next operation, the backing `deallocate` call after `n % 4` others panics (with
    /// `InjectedPanic`) before freeing the block; at the end of the input, the pool's drop.
    PanicNextFree(u8),
    /// The next backing allocation, if the next operation makes one, first frees block `free`
    /// (pick, fit; chosen when that operation starts), then allocates `size` / `align` from the
    /// pool.
    ReenterNext {
        size: Size,
        align: u8,
        zeroed: bool,
        free: Option<(u16, u8)>,
    },
}

/// What `ReenterNext` asked for.
type Reenter = (Size, u8, bool, Option<(u16, u8)>);

/// The block size of a pooled request, from the documented table alone.
fn class_size(size: usize) -> usize {
    if size <= 128 {
        size.next_multiple_of(16)
    } else {
        // Four classes between consecutive powers of two: steps of a quarter of the lower one.
        let lower = 1usize << (usize::BITS - 1 - (size - 1).leading_zeros());
        size.next_multiple_of(lower / 4)
    }
}

struct State<'b> {
    backing: &'b Backing,
    model: Model,
    options: SizeClassOptions,
    /// What `ReenterNext` asked for, until the next operation (which arms it).
    reenter: Option<Reenter>,
    /// The block the operation works on (its sequence number), which leaves the model if the
    /// operation unwinds from a backing `deallocate`.
    operand: Option<u64>,
    /// Blocks of each class (by block size), and large blocks, handed out by an operation that
    /// unwound from a backing `deallocate` after taking them (a grow or shrink that moved the
    /// block to another class): the pool counts them live, and no one will free them.
    lost: BTreeMap<usize, usize>,
    lost_fallback: usize,
}

impl State<'_> {
    fn tag(&self, l: Layout) -> u8 {
        if l.size() == 0 {
            ZERO
        } else if l.size() <= self.options.largest_pooled && l.align() <= 16 {
            POOLED
        } else {
            FALLBACK
        }
    }

    fn check_new(&self, i: usize) {
        let b = self.model.blocks()[i];
        if b.tag == POOLED {
            assert_eq!(
                b.len,
                class_size(b.size),
                "a pooled block is its class long"
            );
            assert!(b.ptr.addr().get().is_multiple_of(16));
        }
    }

    fn count(&self, tag: u8) -> usize {
        self.model.blocks().iter().filter(|b| b.tag == tag).count()
    }

    /// Live blocks of class `block_size` in the model.
    fn class_count(&self, block_size: usize) -> usize {
        self.model
            .blocks()
            .iter()
            .filter(|b| b.tag == POOLED && class_size(b.size) == block_size)
            .count()
    }

    fn lost_pooled(&self) -> usize {
        self.lost.values().sum()
    }

    fn check_stats(&self, pool: &SizeClassPool<&Backing>) {
        let s = pool.stats();
        for c in s.classes() {
            let live = self.class_count(c.block_size) + self.lost.get(&c.block_size).unwrap_or(&0);
            assert_eq!(c.live, live, "class {}: {s:?}", c.block_size);
        }
        assert_eq!(s.live_blocks(), self.count(POOLED) + self.lost_pooled());
        assert_eq!(
            s.fallback_blocks,
            self.count(FALLBACK) + self.lost_fallback,
            "{s:?}"
        );
        let o = self.options;
        assert!(s.empty_bytes <= o.max_empty_pages * o.page_size, "{s:?}");
        assert!(s.empty_pages <= s.pages, "{s:?}");
        let mut class_bytes = 0;
        for c in s.classes() {
            // A class's pages hold at least one of its blocks each, and at most a largest page.
            assert!(c.bytes >= c.pages * c.block_size, "{c:?}");
            assert!(c.bytes <= c.pages * o.page_size, "{c:?}");
            class_bytes += c.bytes;
        }
        assert_eq!(s.bytes_held, class_bytes + s.empty_bytes, "{s:?}");
        let others = self.backing.live_blocks() - s.pages - s.fallback_blocks;
        assert!(
            others <= 1,
            "the backing allocator holds {others} blocks besides the pages and fallback blocks"
        );
    }

    /// The pool's rules for a nested request that can be told cheaply: an empty or large one
    /// (which goes to the backing allocator) is served unless a failure was injected or the size
    /// is huge. A pooled one may be refused when it needs a page (the pool may be taking one).
    fn check_nested(&self, n: &Settled) {
        let may_refuse = n.failing || n.layout.size() > BACKING_CAP || self.tag(n.layout) == POOLED;
        assert!(
            n.served() || may_refuse,
            "a nested {:?} was refused (no injected failure)",
            n.layout
        );
    }

    /// After an operation that unwound from a backing `deallocate`: the block it worked on leaves
    /// the model (given up or moved), blocks it took and could not hand out are counted as lost,
    /// and everything else is as the model says.
    fn after_free_unwound(&mut self, pool: &SizeClassPool<&Backing>, op: &Op) {
        if let Some(i) = self.operand.take().and_then(|seq| self.model.find_seq(seq)) {
            self.model.remove(i);
        }
        let s = pool.stats();
        let lost = |have: usize, model: usize, before: usize| {
            let lost = have.checked_sub(model).unwrap_or_else(|| {
                panic!("{op:?} unwound from deallocate: the pool counts {have} blocks, the model {model} ({s:?})")
            });
            assert!(
                (before..=before + 1).contains(&lost),
                "{op:?} unwound from deallocate: {lost} blocks in use that no one holds, {before} before ({s:?})"
            );
            lost
        };
        for c in s.classes() {
            let before = self.lost.get(&c.block_size).copied().unwrap_or(0);
            let now = lost(c.live, self.class_count(c.block_size), before);
            if now > 0 {
                self.lost.insert(c.block_size, now);
            }
        }
        self.lost_fallback = lost(s.fallback_blocks, self.count(FALLBACK), self.lost_fallback);
        self.model.verify_all();
        self.check_stats(pool);
    }

    fn step(&mut self, pool: &mut SizeClassPool<&Backing>, op: &Op) {
        // A panic in `deallocate` is armed for this operation only.
        self.step_armed(pool, op);
        if !matches!(op, Op::PanicNextFree(_)) {
            self.backing.disarm_free();
        }
    }

    fn step_armed(&mut self, pool: &mut SizeClassPool<&Backing>, op: &Op) {
        self.operand = None;
        match *op {
            Op::FailNext(n) => {
                self.backing.fail_next(u32::from(n % 4));
                return;
            }
            Op::PanicNext => {
                self.backing.panic_next();
                return;
            }
            Op::PanicNextFree(n) => {
                self.backing.disarm();
                self.reenter = None;
                self.backing.panic_in_free(u32::from(n % 4));
                return;
            }
            Op::ReenterNext {
                size,
                align,
                zeroed,
                free,
            } => {
                self.reenter = Some((size, align, zeroed, free));
                return;
            }
            // It calls the backing allocator only to free (a panic in `deallocate` stays armed).
            Op::Trim => {
                self.backing.disarm();
                self.reenter = None;
            }
            _ => {}
        }
        let armed = self.reenter.take().map(|(size, align, zeroed, free)| {
            let free = free.and_then(|(k, fit)| {
                let i = self.model.pick(k)?;
                let b = self.model.remove(i);
                Some((b, b.fit(fit)))
            });
            let plan = Plan {
                layout: layout(size.bytes(MAX_SIZE), align_from(align)),
                zeroed,
                free,
                spans: self.model.spans(),
            };
            // SAFETY: the pool is backed by `self.backing` and stays alive and in place until
            // this operation is over; the action runs only inside it (it is disarmed right
            // after). The block to free is one of the model's, live in the pool, and has left
            // the model.
            unsafe { nested::arm(self.backing, &*pool, plan) }
        });
        let before = pool.stats();
        let may_fail = self.backing.failing();
        let backing = self.backing;
        let done = run_catching(backing, || self.apply(pool, op));
        backing.disarm();
        let nested = armed.and_then(|armed| armed.settle(backing, &mut self.model));
        let Some(done) = done else {
            if backing.take_unwound() == Some(Injected::Deallocate) {
                // (A panic in `deallocate` is never armed with a nested action.)
                assert!(nested.is_none(), "a nested action ran in {op:?}");
                self.after_free_unwound(pool, op);
                return;
            }
            // Unwound by the injected panic, which comes before the nested action.
            assert!(
                nested.is_none(),
                "the nested action ran in a call that panicked"
            );
            assert_eq!(
                pool.stats(),
                before,
                "{op:?}, unwound by the backing allocator, changed the pool"
            );
            self.model.verify_all();
            self.check_stats(pool);
            // Still usable: the same operation, with nothing armed.
            self.step_armed(pool, op);
            return;
        };
        if let Some(n) = &nested {
            self.check_nested(n);
            let tag = self.tag(n.layout);
            if let Some(i) = n.insert(&mut self.model, tag) {
                self.check_new(i);
            }
        }
        let Some((ok, huge)) = done else {
            self.check_stats(pool);
            return;
        };
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?}");
            if nested.is_none() {
                assert_eq!(pool.stats(), before, "a failed {op:?} changed the pool");
            }
            self.model.verify_all();
        }
        self.check_stats(pool);
    }

    /// The operation itself: whether it succeeded and whether its size was huge, or `None`
    /// when there was no block to operate on.
    fn apply(&mut self, pool: &mut SizeClassPool<&Backing>, op: &Op) -> Option<(bool, bool)> {
        Some(match *op {
            Op::Alloc {
                size,
                align,
                zeroed,
            } => {
                let l = layout(size.bytes(MAX_SIZE), align_from(align));
                let tag = self.tag(l);
                let r = alloc_op(&*pool, &mut self.model, l, zeroed, tag);
                if let Some(i) = r {
                    self.check_new(i);
                }
                (r.is_some(), size.is_huge())
            }
            Op::Grow {
                pick,
                fit,
                by,
                align,
                zeroed,
            } => {
                let i = self.model.pick(pick)?;
                self.operand = Some(self.model.blocks()[i].seq);
                let old = self.model.blocks()[i].fit(fit);
                let new = if by.is_huge() {
                    by.bytes(MAX_SIZE).max(old)
                } else {
                    (old + by.bytes(MAX_SIZE)).min(MAX_SIZE).max(old)
                };
                let new = layout(new, align_from(align));
                let tag = self.tag(new);
                let r = grow_op(&*pool, &mut self.model, i, old, new, zeroed, tag);
                if let Some(j) = r {
                    self.check_new(j);
                }
                (r.is_some(), by.is_huge())
            }
            Op::Shrink {
                pick,
                fit,
                keep,
                align,
            } => {
                let i = self.model.pick(pick)?;
                self.operand = Some(self.model.blocks()[i].seq);
                let old = self.model.blocks()[i].fit(fit);
                let new = layout(keep as usize % (old + 1), align_from(align));
                let tag = self.tag(new);
                let r = shrink_op(&*pool, &mut self.model, i, old, new, tag);
                if let Some(j) = r {
                    self.check_new(j);
                }
                (r.is_some(), false)
            }
            Op::Dealloc { pick, fit } => {
                let i = self.model.pick(pick)?;
                let size = self.model.blocks()[i].fit(fit);
                dealloc_op(&*pool, &mut self.model, i, size);
                (true, false)
            }
            Op::Trim => {
                pool.trim();
                self.model.verify_all();
                let s = pool.stats();
                assert_eq!(s.empty_pages, 0, "trim leaves no empty page: {s:?}");
                if self.count(POOLED) + self.lost_pooled() == 0 {
                    assert_eq!(s.pages, 0, "trim with no block in use: {s:?}");
                }
                (true, false)
            }
            Op::FailNext(_) | Op::PanicNext | Op::PanicNextFree(_) | Op::ReenterNext { .. } => {
                unreachable!("handled by step: {op:?}")
            }
        })
    }
}

fuzz_target!(|input: Input| {
    ignore_injected_panics();
    let backing = Backing::new();
    let mut pool = match &input.options {
        Some(o) => SizeClassPool::with_options_in(
            SizeClassOptions {
                largest_pooled: o.largest_pooled as usize,
                page_size: 1 << (12 + o.page_shift % 9),
                max_empty_pages: o.max_empty_pages as usize % 8,
            },
            &backing,
        ),
        None => SizeClassPool::new_in(&backing),
    };
    let options = pool.options();
    assert!(options.page_size.is_power_of_two());
    assert!((4096..=1 << 20).contains(&options.page_size));
    assert_eq!(class_size(options.largest_pooled), options.largest_pooled);
    assert!(options.largest_pooled * 8 <= options.page_size);
    let mut st = State {
        backing: &backing,
        model: Model::new(),
        options,
        reenter: None,
        operand: None,
        lost: BTreeMap::new(),
        lost_fallback: 0,
    };
    st.check_stats(&pool);
    for op in &input.ops {
        st.step(&mut pool, op);
    }
    // A panic in `deallocate` armed by the last operation applies to the drop (the blocks are
    // freed before, unarmed); the drop may then leak what it had not freed yet.
    let free_panic = backing.pending_free_panic();
    backing.disarm();
    backing.disarm_free();
    st.model.verify_all();
    backing.stop_failing();
    while let Some(i) = st.model.pick(0) {
        let size = st.model.blocks()[i].size;
        dealloc_op(&pool, &mut st.model, i, size);
    }
    let s = pool.stats();
    assert_eq!(
        (s.live_blocks(), s.fallback_blocks),
        (st.lost_pooled(), st.lost_fallback)
    );
    if let Some(skip) = free_panic {
        backing.panic_in_free(skip);
    }
    let dropped = catch_injected(move || drop(pool));
    backing.disarm_free();
    if dropped.is_none() {
        backing.write_off_all();
    }
    // No one frees the large blocks lost in an unwind.
    assert_eq!(backing.live_blocks(), st.lost_fallback, "the pool leaked");
    backing.write_off_all();
});
