//! The slot-pool operations and their checks, shared by `pool_ops` (`Pool`) and `sync_ops`
//! (`SyncPool` on one thread): [`PoolOp`]s run through the `Allocator` trait against the block
//! model, with the pool's statistics checked after each one. The backing allocator may be armed
//! to panic in its next call, or to call back into the pool there (see [`crate::nested`]), or to
//! panic in a `deallocate` call of the next operation.

use std::ptr::NonNull;

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Pool, PoolStats, SyncPool};

use crate::nested::{self, Plan, Reentrant, Settled};
use crate::{
    BACKING_CAP, Backing, Block, Injected, Model, Size, align_from, alloc_op, catch_injected,
    dealloc_op, grow_op, layout, run_catching, shrink_op,
};

/// Largest ordinary request that does not fit the slot.
const MAX_SIZE: usize = 64 * 1024;

/// Tags of the model's blocks: which path served them.
const ZERO: u8 = 0;
const POOLED: u8 = 1;
const FALLBACK: u8 = 2;

/// A requested size: one that fits the slot, or any other.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum PSize {
    /// 0 ..= the slot size.
    Fit(u16),
    Other(Size),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum PoolOp {
    Alloc {
        size: PSize,
        align: u8,
        zeroed: bool,
    },
    Grow {
        pick: u16,
        fit: u8,
        size: PSize,
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
    Reset,
    Trim,
    /// The pool's next `n % 4` backing allocations fail.
    FailNext(u8),
    /// The pool's next backing allocation panics (with `InjectedPanic`).
    PanicNext,
    /// In the next operation, the pool's backing `deallocate` call after `n % 4` others panics
    /// (with `InjectedPanic`) before freeing the block; at the end of the input, the pool's drop.
    PanicNextFree(u8),
    /// The pool's next backing allocation, if the next operation makes one, first frees block
    /// `free` (pick, fit; chosen when that operation starts), then allocates `size` / `align`
    /// from the pool.
    ReenterNext {
        size: PSize,
        align: u8,
        zeroed: bool,
        free: Option<(u16, u8)>,
    },
}

/// What `ReenterNext` asked for.
type Reenter = (PSize, u8, bool, Option<(u16, u8)>);

/// What the checks need of a slot pool besides its `Allocator` impl.
pub trait SlotPool: Allocator + Reentrant {
    fn stats(&self) -> PoolStats;
    fn in_use(&self) -> usize;
    fn capacity(&self) -> usize;
    fn slot_size(&self) -> usize;
    fn reset(&mut self);
    fn trim(&mut self);
    /// Whether the slot freed last is always the next one handed out: a `Pool`'s free list. A
    /// `SyncPool`'s thread cache keeps that order for the slots it holds, but a slot freed
    /// past the cache (a block shorter than the slot, a full cache) goes to its shard, and the
    /// next one comes from the cache.
    const LIFO: bool;
}

macro_rules! slot_pool {
    ($ty:ty, $lifo:expr) => {
        impl SlotPool for $ty {
            const LIFO: bool = $lifo;
            fn stats(&self) -> PoolStats {
                <$ty>::stats(self)
            }
            fn in_use(&self) -> usize {
                <$ty>::in_use(self)
            }
            fn capacity(&self) -> usize {
                <$ty>::capacity(self)
            }
            fn slot_size(&self) -> usize {
                <$ty>::slot_size(self)
            }
            fn reset(&mut self) {
                <$ty>::reset(self)
            }
            fn trim(&mut self) {
                <$ty>::trim(self)
            }
        }
    };
}
slot_pool!(Pool<&Backing>, true);
slot_pool!(SyncPool<&Backing>, false);

/// A pool under test, its backing allocator and the model of its live blocks.
pub struct PoolChecker<'b, P> {
    pub backing: &'b Backing,
    pub pool: P,
    model: Model,
    slot: usize,
    slot_align: usize,
    /// The last pooled block freed, if no pooled block was handed out since: the next one (on
    /// one thread, a `SyncPool` uses one shard).
    last_freed: Option<NonNull<u8>>,
    /// What `ReenterNext` asked for, until the next operation (which arms it).
    reenter: Option<Reenter>,
    /// The block the operation works on (its sequence number), which leaves the model if the
    /// operation unwinds from a backing `deallocate`.
    operand: Option<u64>,
    /// Slots and fallback blocks handed out by an operation that unwound from a backing
    /// `deallocate` after taking them (a grow or shrink that moved the block): the pool counts
    /// them in use, and no one will free them (the slots until a reset).
    lost_pooled: usize,
    lost_fallback: usize,
}

impl<'b, P: SlotPool> PoolChecker<'b, P> {
    /// Checks `pool`, made with `slot_layout` on `backing`: its slot size and alignment are the
    /// layout's, rounded up to a pointer and to each other.
    pub fn new(pool: P, slot_layout: Layout, backing: &'b Backing) -> Self {
        let slot_align = slot_layout.align().max(size_of::<usize>());
        let slot = slot_layout
            .size()
            .max(size_of::<usize>())
            .next_multiple_of(slot_align);
        let checker = PoolChecker {
            backing,
            pool,
            model: Model::new(),
            slot,
            slot_align,
            last_freed: None,
            reenter: None,
            operand: None,
            lost_pooled: 0,
            lost_fallback: 0,
        };
        checker.check_stats();
        checker
    }

    fn tag(&self, l: Layout) -> u8 {
        if l.size() == 0 {
            ZERO
        } else if l.size() <= self.slot && l.align() <= self.slot_align {
            POOLED
        } else {
            FALLBACK
        }
    }

    fn size(&self, s: PSize) -> usize {
        match s {
            PSize::Fit(n) => n as usize % (self.slot + 1),
            PSize::Other(s) => s.bytes(MAX_SIZE),
        }
    }

    fn count(&self, tag: u8) -> usize {
        self.model.blocks().iter().filter(|b| b.tag == tag).count()
    }

    /// Checks a block the pool just handed out, at index `i` of the model.
    fn check_new(&mut self, i: usize) {
        let b = self.model.blocks()[i];
        if b.tag == POOLED {
            assert_eq!(b.len, self.slot, "a pooled block is one slot long");
            if let Some(p) = self.last_freed.take().filter(|_| P::LIFO) {
                assert_eq!(b.ptr, p, "the slot freed last is the next one handed out");
            }
        }
    }

    /// After block `old` was grown or shrunk into the block at index `j`: the pooled slot it
    /// moved into, or out of, follows the free-list order.
    fn after_move(&mut self, old: Block, j: usize) {
        let new = self.model.blocks()[j];
        match (old.tag, new.tag) {
            (POOLED, POOLED) => assert_eq!(new.ptr, old.ptr, "a slot is resized in place"),
            (POOLED, _) => self.last_freed = Some(old.ptr),
            (_, POOLED) => self.check_new(j),
            _ => {}
        }
    }

    fn check_stats(&self) {
        let s = self.pool.stats();
        assert_eq!(s.slot_size, self.slot);
        assert_eq!(s.slot_align, self.slot_align);
        assert_eq!(self.pool.slot_size(), self.slot);
        assert_eq!(
            self.pool.in_use(),
            self.count(POOLED) + self.lost_pooled,
            "{s:?}"
        );
        assert_eq!(s.in_use, self.pool.in_use());
        assert_eq!(
            s.fallback_blocks,
            self.count(FALLBACK) + self.lost_fallback,
            "{s:?}"
        );
        assert!(s.capacity >= s.in_use, "{s:?}");
        assert_eq!(self.pool.capacity(), s.capacity);
        let others = self.backing.live_blocks() - s.slabs - s.fallback_blocks;
        assert!(
            others <= 1,
            "the backing allocator holds {others} blocks besides the slabs and fallback blocks"
        );
    }

    /// Forgets an injected panic (in `allocate` or `deallocate`) or a nested action still
    /// pending: before an operation that does not go through [`step`](Self::step), and at the
    /// end.
    pub fn disarm(&mut self) {
        self.disarm_alloc();
        self.backing.disarm_free();
    }

    /// Forgets an injected panic in `allocate` or a nested action still pending (a panic in
    /// `deallocate` stays, for the operation about to run).
    fn disarm_alloc(&mut self) {
        self.backing.disarm();
        self.reenter = None;
    }

    /// After an operation that unwound from a backing `deallocate`: the block it worked on leaves
    /// the model (given up or moved), slots and fallback blocks it took and could not hand out
    /// are counted as lost, and everything else is as the model says.
    fn after_free_unwound(&mut self, op: PoolOp, reset: bool) {
        if let Some(i) = self.operand.take().and_then(|seq| self.model.find_seq(seq)) {
            self.model.remove(i);
        }
        if reset {
            self.model.clear();
            self.lost_pooled = 0;
        }
        self.last_freed = None;
        let s = self.pool.stats();
        let lost = |have: usize, model: usize, before: usize| {
            let lost = have.checked_sub(model).unwrap_or_else(|| {
                panic!("{op:?} unwound from deallocate: the pool counts {have} blocks, the model {model} ({s:?})")
            });
            assert!(
                reset || (before..=before + 1).contains(&lost),
                "{op:?} unwound from deallocate: {lost} blocks in use that no one holds, {before} before ({s:?})"
            );
            lost
        };
        self.lost_pooled = lost(s.in_use, self.count(POOLED), self.lost_pooled);
        self.lost_fallback = lost(s.fallback_blocks, self.count(FALLBACK), self.lost_fallback);
        self.model.verify_all();
        self.check_stats();
    }

    /// The pool's rules for a nested request: a layout that goes to the backing allocator (or
    /// an empty one) is served unless a failure was injected or the size is huge; a pooled one is
    /// served when a slot is free (it may be refused when it needs a slab: the pool may be
    /// taking one).
    fn check_nested(&self, n: &Settled) {
        let tag = self.tag(n.layout);
        let may_refuse =
            n.failing || n.layout.size() > BACKING_CAP || (tag == POOLED && n.room == 0);
        assert!(
            n.served() || may_refuse,
            "a nested {:?} was refused ({} free slots, no injected failure)",
            n.layout,
            n.room
        );
    }

    pub fn step(&mut self, op: PoolOp) {
        // A panic in `deallocate` is armed for this operation only.
        self.step_armed(op);
        if !matches!(op, PoolOp::PanicNextFree(_)) {
            self.backing.disarm_free();
        }
    }

    fn step_armed(&mut self, op: PoolOp) {
        self.operand = None;
        match op {
            PoolOp::FailNext(n) => {
                self.backing.fail_next(u32::from(n % 4));
                return;
            }
            PoolOp::PanicNext => {
                self.backing.panic_next();
                return;
            }
            PoolOp::PanicNextFree(n) => {
                self.disarm_alloc();
                self.backing.panic_in_free(u32::from(n % 4));
                return;
            }
            PoolOp::ReenterNext {
                size,
                align,
                zeroed,
                free,
            } => {
                self.reenter = Some((size, align, zeroed, free));
                return;
            }
            // They call the backing allocator only to free.
            PoolOp::Reset | PoolOp::Trim => self.disarm_alloc(),
            _ => {}
        }
        let armed = self.reenter.take().map(|(size, align, zeroed, free)| {
            let free = free.and_then(|(k, fit)| {
                let i = self.model.pick(k)?;
                let b = self.model.remove(i);
                Some((b, b.fit(fit)))
            });
            let plan = Plan {
                layout: layout(self.size(size), align_from(align)),
                zeroed,
                free,
                spans: self.model.spans(),
            };
            // The free list's order is the nested action's business now.
            self.last_freed = None;
            // SAFETY: the pool is backed by `self.backing` and stays in place (in `self`) until
            // this operation is over; the action runs only inside it (it is disarmed right
            // after). The block to free is one of the model's, live in the pool, and has left
            // the model.
            unsafe { nested::arm(self.backing, &self.pool, plan) }
        });
        let before = self.pool.stats();
        let may_fail = self.backing.failing();
        let backing = self.backing;
        let resetting = std::cell::Cell::new(false);
        let done = run_catching(backing, || self.apply(op, &resetting));
        backing.disarm();
        let nested = armed.and_then(|armed| armed.settle(backing, &mut self.model));
        if nested.is_some() {
            self.last_freed = None;
        }
        let Some(done) = done else {
            if backing.take_unwound() == Some(Injected::Deallocate) {
                // (A panic in `deallocate` is never armed with a nested action.)
                assert!(nested.is_none(), "a nested action ran in {op:?}");
                self.after_free_unwound(op, resetting.get());
                return;
            }
            // Unwound by the injected panic, which comes before the nested action.
            assert!(
                nested.is_none(),
                "the nested action ran in a call that panicked"
            );
            assert_eq!(
                self.pool.stats(),
                before,
                "{op:?}, unwound by the backing allocator, changed the pool"
            );
            self.model.verify_all();
            self.check_stats();
            // Still usable: the same operation, with nothing armed.
            self.step_armed(op);
            return;
        };
        if let Some(n) = &nested {
            self.check_nested(n);
            let tag = self.tag(n.layout);
            if let Some(i) = n.insert(&mut self.model, tag)
                && tag == POOLED
            {
                assert_eq!(
                    self.model.blocks()[i].len,
                    self.slot,
                    "a nested pooled block"
                );
            }
        }
        let Some((ok, huge)) = done else {
            self.check_stats();
            return;
        };
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?}");
            if nested.is_none() {
                assert_eq!(
                    self.pool.stats(),
                    before,
                    "a failed {op:?} changed the pool"
                );
            }
            self.model.verify_all();
        }
        self.check_stats();
    }

    /// The operation itself: whether it succeeded and whether its size was huge, or `None`
    /// when there was no block to operate on.
    fn apply(&mut self, op: PoolOp, resetting: &std::cell::Cell<bool>) -> Option<(bool, bool)> {
        let before = self.pool.stats();
        Some(match op {
            PoolOp::Alloc {
                size,
                align,
                zeroed,
            } => {
                let l = layout(self.size(size), align_from(align));
                let tag = self.tag(l);
                let r = alloc_op(&self.pool, &mut self.model, l, zeroed, tag);
                if let Some(i) = r {
                    self.check_new(i);
                }
                (r.is_some(), matches!(size, PSize::Other(s) if s.is_huge()))
            }
            PoolOp::Grow {
                pick,
                fit,
                size,
                align,
                zeroed,
            } => {
                let i = self.model.pick(pick)?;
                let b = self.model.blocks()[i];
                self.operand = Some(b.seq);
                let old = b.fit(fit);
                let huge = matches!(size, PSize::Other(s) if s.is_huge());
                let new = if huge {
                    self.size(size).max(old)
                } else {
                    (old + self.size(size)).min(MAX_SIZE).max(old)
                };
                let new = layout(new, align_from(align));
                let tag = self.tag(new);
                let r = grow_op(&self.pool, &mut self.model, i, old, new, zeroed, tag);
                if let Some(j) = r {
                    self.after_move(b, j);
                }
                (r.is_some(), huge)
            }
            PoolOp::Shrink {
                pick,
                fit,
                keep,
                align,
            } => {
                let i = self.model.pick(pick)?;
                let b = self.model.blocks()[i];
                self.operand = Some(b.seq);
                let old = b.fit(fit);
                let new = layout(keep as usize % (old + 1), align_from(align));
                let tag = self.tag(new);
                let r = shrink_op(&self.pool, &mut self.model, i, old, new, tag);
                if let Some(j) = r {
                    self.after_move(b, j);
                }
                (r.is_some(), false)
            }
            PoolOp::Dealloc { pick, fit } => {
                let i = self.model.pick(pick)?;
                let size = self.model.blocks()[i].fit(fit);
                let b = dealloc_op(&self.pool, &mut self.model, i, size);
                if b.tag == POOLED {
                    self.last_freed = Some(b.ptr);
                }
                (true, false)
            }
            PoolOp::Reset => {
                // `reset` forgets the slots: the fallback blocks are freed first.
                while let Some(i) = self.model.blocks().iter().position(|b| b.tag == FALLBACK) {
                    let size = self.model.blocks()[i].size;
                    dealloc_op(&self.pool, &mut self.model, i, size);
                }
                self.model.verify_all();
                resetting.set(true);
                self.pool.reset();
                self.model.clear();
                self.lost_pooled = 0;
                self.last_freed = None;
                assert_eq!(self.pool.in_use(), 0);
                assert_eq!(
                    self.pool.capacity(),
                    before.capacity,
                    "reset keeps the slabs"
                );
                (true, false)
            }
            PoolOp::Trim => {
                self.pool.trim();
                self.last_freed = None;
                self.model.verify_all();
                if self.count(POOLED) + self.lost_pooled == 0 {
                    let s = self.pool.stats();
                    assert_eq!((s.bytes_held, s.slabs), (0, 0), "trim with no slot in use");
                }
                (true, false)
            }
            PoolOp::FailNext(_)
            | PoolOp::PanicNext
            | PoolOp::PanicNextFree(_)
            | PoolOp::ReenterNext { .. } => {
                unreachable!("handled by step: {op:?}")
            }
        })
    }

    /// Frees every live block (the fallback ones through the pool) and drops the pool, which
    /// must give everything back but the fallback blocks lost in an unwind. A panic in
    /// `deallocate` armed by the last operation applies to the drop (the blocks are freed
    /// before, unarmed); the drop may then leak what it had not freed yet.
    pub fn finish(mut self) {
        let free_panic = self.backing.pending_free_panic();
        self.disarm();
        self.backing.stop_failing();
        self.model.verify_all();
        while let Some(i) = self.model.pick(0) {
            let size = self.model.blocks()[i].size;
            dealloc_op(&self.pool, &mut self.model, i, size);
        }
        let s = self.pool.stats();
        assert_eq!(
            (s.in_use, s.fallback_blocks),
            (self.lost_pooled, self.lost_fallback),
            "{s:?}"
        );
        let PoolChecker {
            backing,
            pool,
            lost_fallback,
            ..
        } = self;
        if let Some(skip) = free_panic {
            backing.panic_in_free(skip);
        }
        let dropped = catch_injected(move || drop(pool));
        backing.disarm_free();
        if dropped.is_some() {
            // No one frees the fallback blocks lost in an unwind. (A drop that unwound may
            // leak what it had not freed yet: nothing to count then.)
            assert_eq!(backing.live_blocks(), lost_fallback, "the pool leaked");
        }
        backing.write_off_all();
    }
}
