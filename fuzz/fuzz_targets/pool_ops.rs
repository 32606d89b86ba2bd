//! `Pool` through allocator-api2's `Allocator` trait, against a model of the live blocks (see
//! README.md).
//!
//! The slot layout comes from the input (size up to 4 KiB, alignment up to 4096), and so does
//! `new_in` or `with_capacity_in`. Operations: allocate / allocate_zeroed / grow / grow_zeroed /
//! shrink / deallocate with layouts that fit the slot and layouts that do not (those go to the
//! backing allocator), blocks described with any size between their requested size and their
//! length, reset, trim, backing-allocator failures, and sizes no allocator can serve.
//!
//! Checked after every operation, besides what the block model checks (alignment, length, no
//! overlap, contents, zeroing): the slot size; a pooled block is one slot long; `in_use` and
//! `fallback_blocks` match the model; the freed slot is the next one handed out; the backing
//! allocator holds exactly the slabs, the fallback blocks and at most one address-map table; a
//! failure changes nothing and happens only after an injected backing failure or for a huge
//! size; `trim` with no slot in use gives every slab back; dropping the pool gives everything
//! back.

#![no_main]

use std::ptr::NonNull;

use arbitrary::Arbitrary;
use arena_pool::Pool;
use arena_pool::allocator_api2::alloc::Layout;
use arena_pool_fuzz::{
    Backing, Model, Size, align_from, alloc_op, dealloc_op, grow_op, layout, shrink_op,
};
use libfuzzer_sys::fuzz_target;

/// Largest ordinary request that does not fit the slot.
const MAX_SIZE: usize = 64 * 1024;

/// Tags of the model's blocks: which path served them.
const ZERO: u8 = 0;
const POOLED: u8 = 1;
const FALLBACK: u8 = 2;

#[derive(Arbitrary, Debug)]
struct Input {
    slot_size: u16,
    slot_align: u8,
    /// `with_capacity_in` with this many slots instead of `new_in` when non-zero.
    capacity: u8,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum PSize {
    /// 0 ..= the slot size.
    Fit(u16),
    Other(Size),
}

#[derive(Arbitrary, Debug)]
enum Op {
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
    /// The next `n % 4` backing allocations fail.
    FailNext(u8),
}

struct State<'b> {
    backing: &'b Backing,
    model: Model,
    slot: usize,
    slot_align: usize,
    /// The last pooled block freed, if no pooled block was handed out since: the next one.
    last_freed: Option<NonNull<u8>>,
}

impl State<'_> {
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

    /// Checks a block the pool just handed out, at index `i` of the model.
    fn check_new(&mut self, i: usize) {
        let b = self.model.blocks()[i];
        if b.tag == POOLED {
            assert_eq!(b.len, self.slot, "a pooled block is one slot long");
            if let Some(p) = self.last_freed.take() {
                assert_eq!(b.ptr, p, "the slot freed last is the next one handed out");
            }
        }
    }

    fn count(&self, tag: u8) -> usize {
        self.model.blocks().iter().filter(|b| b.tag == tag).count()
    }

    fn check_stats(&self, pool: &Pool<&Backing>) {
        let s = pool.stats();
        assert_eq!(s.slot_size, self.slot);
        assert_eq!(s.slot_align, self.slot_align);
        assert_eq!(pool.in_use(), self.count(POOLED), "{s:?}");
        assert_eq!(s.in_use, pool.in_use());
        assert_eq!(s.fallback_blocks, self.count(FALLBACK), "{s:?}");
        assert!(s.capacity >= s.in_use, "{s:?}");
        let others = self.backing.live_blocks() - s.slabs - s.fallback_blocks;
        assert!(
            others <= 1,
            "the backing allocator holds {others} blocks besides the slabs and fallback blocks"
        );
    }

    fn step(&mut self, pool: &mut Pool<&Backing>, op: &Op) {
        let before = pool.stats();
        let may_fail = self.backing.failing();
        let (ok, huge) = match *op {
            Op::Alloc {
                size,
                align,
                zeroed,
            } => {
                let l = layout(self.size(size), align_from(align));
                let tag = self.tag(l);
                let r = alloc_op(&*pool, &mut self.model, l, zeroed, tag);
                if let Some(i) = r {
                    self.check_new(i);
                }
                (r.is_some(), matches!(size, PSize::Other(s) if s.is_huge()))
            }
            Op::Grow {
                pick,
                fit,
                size,
                align,
                zeroed,
            } => {
                let Some(i) = self.model.pick(pick) else {
                    return;
                };
                let b = self.model.blocks()[i];
                let old = b.fit(fit);
                let huge = matches!(size, PSize::Other(s) if s.is_huge());
                let new = if huge {
                    self.size(size).max(old)
                } else {
                    (old + self.size(size)).min(MAX_SIZE).max(old)
                };
                let new = layout(new, align_from(align));
                let tag = self.tag(new);
                let r = grow_op(&*pool, &mut self.model, i, old, new, zeroed, tag);
                if let Some(j) = r {
                    self.after_move(b, j);
                }
                (r.is_some(), huge)
            }
            Op::Shrink {
                pick,
                fit,
                keep,
                align,
            } => {
                let Some(i) = self.model.pick(pick) else {
                    return;
                };
                let b = self.model.blocks()[i];
                let old = b.fit(fit);
                let new = layout(keep as usize % (old + 1), align_from(align));
                let tag = self.tag(new);
                let r = shrink_op(&*pool, &mut self.model, i, old, new, tag);
                if let Some(j) = r {
                    self.after_move(b, j);
                }
                (r.is_some(), false)
            }
            Op::Dealloc { pick, fit } => {
                let Some(i) = self.model.pick(pick) else {
                    return;
                };
                let size = self.model.blocks()[i].fit(fit);
                let b = dealloc_op(&*pool, &mut self.model, i, size);
                if b.tag == POOLED {
                    self.last_freed = Some(b.ptr);
                }
                (true, false)
            }
            Op::Reset => {
                // `reset` needs every block gone: the fallback blocks are freed first, the
                // pooled ones are forgotten with it.
                while let Some(i) = self.model.blocks().iter().position(|b| b.tag == FALLBACK) {
                    let size = self.model.blocks()[i].size;
                    dealloc_op(&*pool, &mut self.model, i, size);
                }
                self.model.verify_all();
                pool.reset();
                self.model.clear();
                self.last_freed = None;
                assert_eq!(pool.in_use(), 0);
                assert_eq!(pool.capacity(), before.capacity, "reset keeps the slabs");
                (true, false)
            }
            Op::Trim => {
                pool.trim();
                self.last_freed = None;
                self.model.verify_all();
                if self.count(POOLED) == 0 {
                    assert_eq!(pool.stats().bytes_held, 0, "trim with no slot in use");
                }
                (true, false)
            }
            Op::FailNext(n) => {
                self.backing.fail_next(u32::from(n % 4));
                return;
            }
        };
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?}");
            assert_eq!(pool.stats(), before, "a failed {op:?} changed the pool");
            self.model.verify_all();
        }
        self.check_stats(pool);
    }

    /// After block `old` was grown or shrunk into the block at index `j`: the pooled slot it
    /// moved into, or out of, follows the free-list order.
    fn after_move(&mut self, old: arena_pool_fuzz::Block, j: usize) {
        let new = self.model.blocks()[j];
        match (old.tag, new.tag) {
            (POOLED, POOLED) => assert_eq!(new.ptr, old.ptr, "a slot is grown in place"),
            (POOLED, _) => self.last_freed = Some(old.ptr),
            (_, POOLED) => self.check_new(j),
            _ => {}
        }
    }
}

fuzz_target!(|input: Input| {
    let slot_layout = layout(
        input.slot_size as usize % 4097,
        align_from(input.slot_align),
    );
    let slot_align = slot_layout.align().max(size_of::<usize>());
    let slot = slot_layout
        .size()
        .max(size_of::<usize>())
        .next_multiple_of(slot_align);
    let backing = Backing::new();
    let mut pool = if input.capacity > 0 {
        Pool::with_capacity_in(slot_layout, input.capacity as usize, &backing)
    } else {
        Pool::new_in(slot_layout, &backing)
    };
    assert_eq!(pool.slot_layout(), slot_layout);
    assert_eq!(pool.slot_size(), slot);
    assert!(pool.capacity() >= input.capacity as usize);
    let mut st = State {
        backing: &backing,
        model: Model::new(),
        slot,
        slot_align,
        last_freed: None,
    };
    st.check_stats(&pool);
    for op in &input.ops {
        st.step(&mut pool, op);
    }
    st.model.verify_all();
    // Give the blocks back, the fallback ones through the pool, then drop it.
    backing.stop_failing();
    while let Some(i) = st.model.pick(0) {
        let size = st.model.blocks()[i].size;
        dealloc_op(&pool, &mut st.model, i, size);
    }
    assert_eq!(pool.in_use(), 0);
    assert_eq!(pool.stats().fallback_blocks, 0);
    drop(pool);
    assert_eq!(backing.live_blocks(), 0, "the pool leaked");
});
