//! `Arena` and its scopes through allocator-api2's `Allocator` trait, against a model of the
//! live blocks (see README.md).
//!
//! Operations: allocate / allocate_zeroed / grow / grow_zeroed / shrink / deallocate (on
//! `&Arena` at the top level, on `&ArenaRef` inside scopes), reset, trim, an allocation limit,
//! backing-allocator failures, child scopes (`scope_guard` and `with_scope`, nested), and raw
//! checkpoints (`checkpoint` + `reset_to`). Sizes up to 64 KiB and large blocks of 60 to
//! 315 KiB (grown up to 512 KiB), alignments up to 4096, and now and then a size near
//! `isize::MAX`, 2^32 or 2^40, which must fail. The backing allocator can
//! panic in its next call, or call back into the arena there: free a block and allocate one in
//! the scope the next operation uses.
//!
//! Checked after every operation: each new block is aligned, as long as requested and overlaps
//! no live block; every block keeps its bytes across grow and shrink (checked before each
//! grow / shrink / deallocate, at each scope exit and at the end), `grow_zeroed` zeroes the new
//! bytes; a scope exit and `reset_to` bring `used_bytes` back exactly and free exactly the
//! blocks allocated since; the bytes held from the backing allocator match the arena's
//! statistics and stay within the limit; a failure changes no statistic and no block, and
//! happens only with a limit, an injected backing failure or a huge size; an operation unwound
//! by the backing allocator's panic changes no statistic and no block, and the same operation
//! then runs normally; a nested request is served when it fits the current chunk, refused when
//! it does not (it would need a chunk while the arena takes one), and a nested block is checked
//! like any other (alignment, length, no overlap with any block live meanwhile, contents);
//! dropping the arena gives every chunk back.

#![no_main]

use std::slice::Iter;

use arbitrary::Arbitrary;
use arena_pool::{Arena, ArenaRef, Checkpoint};
use arena_pool_fuzz::nested::{self, Plan, Reentrant, Settled};
use arena_pool_fuzz::{
    Backing, GROW_MAX, Model, Size, align_from, alloc_op, dealloc_op, grow_op,
    ignore_injected_panics, layout, run_catching, shrink_op,
};
use libfuzzer_sys::fuzz_target;

/// Largest ordinary request.
const MAX_SIZE: usize = 64 * 1024;
/// Deepest scope nesting (deeper scope operations are ignored).
const MAX_DEPTH: usize = 32;

#[derive(Arbitrary, Debug)]
struct Input {
    /// `try_with_capacity_in` with this capacity instead of `new_in`.
    capacity: Option<u16>,
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
        by: Size,
        align: u8,
        zeroed: bool,
    },
    Shrink {
        pick: u16,
        keep: u16,
        align: u8,
    },
    Dealloc {
        pick: u16,
    },
    /// `Arena::reset` (top level only).
    Reset,
    /// `Arena::trim` (top level only).
    Trim,
    /// `set_allocation_limit(Some(n * 64))` or `None` (top level only).
    Limit(Option<u16>),
    /// The next `n % 4` backing allocations fail.
    FailNext(u8),
    /// The next backing allocation panics (with `InjectedPanic`).
    PanicNext,
    /// The next backing allocation, if the next operation makes one, first frees block `free`
    /// (if given; chosen when that operation starts) and then allocates `size` / `align` in the
    /// scope that operation uses.
    ReenterNext {
        size: Size,
        align: u8,
        zeroed: bool,
        free: Option<u16>,
    },
    /// Enters a child scope through `scope_guard`; it lasts until `Exit` or the end.
    EnterGuard,
    /// Enters a child scope through `with_scope`; it lasts until `Exit` or the end.
    EnterClosure,
    Exit,
    Checkpoint,
    /// `reset_to` one of the current scope's checkpoints.
    ResetTo(u8),
}

impl Op {
    /// Whether it is handled by [`State::step`] (the others disarm the backing allocator first).
    fn is_step(&self) -> bool {
        matches!(
            self,
            Op::Alloc { .. }
                | Op::Grow { .. }
                | Op::Shrink { .. }
                | Op::Dealloc { .. }
                | Op::FailNext(_)
                | Op::PanicNext
                | Op::ReenterNext { .. }
        )
    }
}

/// A scope level of the model.
struct Frame {
    /// Blocks (re)allocated from this sequence number on die with the scope.
    start_seq: u64,
    used_at_entry: usize,
    /// The scope's live checkpoints, oldest first, with the sequence number and `used_bytes`
    /// they were taken at.
    checkpoints: Vec<(Checkpoint, u64, usize)>,
}

struct State<'b> {
    backing: &'b Backing,
    model: Model,
    frames: Vec<Frame>,
    limit: Option<usize>,
    /// What `allocated_bytes_including_metadata` may not exceed while a limit is set: the limit,
    /// or what was held when it was set, if more.
    bound: Option<usize>,
    /// What `ReenterNext` asked for, until the next operation (which arms it).
    reenter: Option<(Size, u8, bool, Option<u16>)>,
}

impl State<'_> {
    /// Disarms the backing allocator before an operation that is not an allocator operation,
    /// or at the end of a scope: the block an armed action was to free goes back to the model.
    fn disarm(&mut self) {
        self.backing.disarm();
        self.reenter = None;
    }

    /// The arena's rules for a nested request (made while the arena takes a chunk): served when
    /// the current chunk holds it, refused when it needs a chunk.
    fn check_nested(n: &Settled) {
        let (size, align) = (n.layout.size(), n.layout.align());
        if n.served() {
            assert!(
                size <= n.room,
                "a nested {:?} was served with {} bytes left in the chunk: it needed a chunk while the arena took one",
                n.layout,
                n.room
            );
        } else {
            assert!(
                size != 0 && size + align - 1 > n.room,
                "a nested {:?} was refused with {} bytes left in the chunk",
                n.layout,
                n.room
            );
        }
    }

    fn enter(&mut self, used: usize) {
        self.frames.push(Frame {
            start_seq: self.model.next_seq(),
            used_at_entry: used,
            checkpoints: Vec::new(),
        });
    }

    fn exit(&mut self, view: &ArenaRef<'_>) {
        let frame = self.frames.pop().expect("a scope to exit");
        self.model.forget_since(frame.start_seq);
        assert_eq!(
            view.used_bytes(),
            frame.used_at_entry,
            "a scope exit did not restore used_bytes"
        );
        self.model.verify_all();
        self.check_stats(view);
    }

    fn checkpoint(&mut self, cp: Checkpoint, used: usize) {
        let seq = self.model.next_seq();
        let frame = self.frames.last_mut().expect("a scope");
        frame.checkpoints.push((cp, seq, used));
    }

    /// Picks a checkpoint of the current scope; those after it become invalid.
    fn take_checkpoint(&mut self, k: u8) -> Option<(Checkpoint, u64, usize)> {
        let cps = &mut self.frames.last_mut().expect("a scope").checkpoints;
        if cps.is_empty() {
            return None;
        }
        let i = k as usize % cps.len();
        cps.truncate(i + 1);
        Some(cps[i])
    }

    fn after_reset_to(&mut self, view: &ArenaRef<'_>, seq: u64, used: usize) {
        self.model.forget_since(seq);
        assert_eq!(
            view.used_bytes(),
            used,
            "reset_to did not restore used_bytes"
        );
        self.check_stats(view);
    }

    fn check_stats(&self, view: &ArenaRef<'_>) {
        let s = view.stats();
        assert!(s.used_bytes <= s.allocated_bytes, "{s:?}");
        assert!(s.chunk_capacity <= s.allocated_bytes, "{s:?}");
        // The backing allocator holds the chunks and the large blocks, nothing else.
        assert_eq!(
            s.chunks + s.large_blocks,
            self.backing.live_blocks(),
            "{s:?}"
        );
        assert_eq!(
            s.allocated_bytes_including_metadata,
            self.backing.live_bytes(),
            "{s:?}"
        );
        assert_eq!(s.allocation_limit, self.limit);
        if let Some(bound) = self.bound {
            assert!(
                s.allocated_bytes_including_metadata <= bound,
                "the arena holds more than its limit allows: {s:?}, bound {bound}"
            );
        }
    }

    /// An allocator operation through `a`, whose arena `view` shows: armed with an injected
    /// panic or a nested action if the operations before it said so.
    fn step<A: Reentrant>(&mut self, a: &A, view: &ArenaRef<'_>, op: &Op) {
        match *op {
            Op::FailNext(n) => {
                self.backing.fail_next(u32::from(n % 4));
                return;
            }
            Op::PanicNext => {
                self.backing.panic_next();
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
            _ => {}
        }
        let armed = self.reenter.take().map(|(size, align, zeroed, free)| {
            let free = free
                .and_then(|k| self.model.pick(k))
                .map(|i| self.model.remove(i))
                .map(|b| (b, b.size));
            let plan = Plan {
                layout: layout(size.bytes(MAX_SIZE), align_from(align)),
                zeroed,
                free,
                spans: self.model.spans(),
            };
            // SAFETY: `a` is backed by `self.backing` and lives until this operation is over;
            // the action runs only inside it (it is disarmed right after). The block to free is
            // one of the model's, live in this arena (a scope may free its parents' blocks), and
            // has left the model.
            unsafe { nested::arm(self.backing, a, plan) }
        });
        let before = view.stats();
        let may_fail = self.limit.is_some() || self.backing.failing();
        let backing = self.backing;
        let done = run_catching(backing, || self.apply(a, op));
        backing.disarm();
        let nested = armed.and_then(|armed| armed.settle(backing, &mut self.model));
        let Some(done) = done else {
            // Unwound by the injected panic, which comes before the nested action.
            assert!(
                nested.is_none(),
                "the nested action ran in a call that panicked"
            );
            assert_eq!(
                view.stats(),
                before,
                "{op:?}, unwound by the backing allocator, changed the arena"
            );
            self.model.verify_all();
            self.check_stats(view);
            // Still usable: the same operation, with nothing armed.
            self.step(a, view, op);
            return;
        };
        if let Some(n) = &nested {
            Self::check_nested(n);
            n.insert(&mut self.model, 0);
        }
        let Some((ok, huge)) = done else {
            self.check_stats(view);
            return;
        };
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?}");
            if nested.is_none() {
                assert_eq!(view.stats(), before, "a failed {op:?} changed the arena");
            }
            self.model.verify_all();
        }
        self.check_stats(view);
    }

    /// The operation itself: whether it succeeded and whether its size was huge, or `None`
    /// when there was no block to operate on.
    fn apply<A: Reentrant>(&mut self, a: &A, op: &Op) -> Option<(bool, bool)> {
        let m = &mut self.model;
        Some(match *op {
            Op::Alloc {
                size,
                align,
                zeroed,
            } => {
                let l = layout(size.bytes(MAX_SIZE), align_from(align));
                (alloc_op(a, m, l, zeroed, 0).is_some(), size.is_huge())
            }
            Op::Grow {
                pick,
                by,
                align,
                zeroed,
            } => {
                let i = m.pick(pick)?;
                let b = m.blocks()[i];
                let new = if by.is_huge() {
                    by.bytes(MAX_SIZE).max(b.size)
                } else {
                    (b.size + by.bytes(MAX_SIZE)).min(GROW_MAX).max(b.size)
                };
                let new = layout(new, align_from(align));
                (
                    grow_op(a, m, i, b.size, new, zeroed, 0).is_some(),
                    by.is_huge(),
                )
            }
            Op::Shrink { pick, keep, align } => {
                let i = m.pick(pick)?;
                let b = m.blocks()[i];
                let new = layout(keep as usize % (b.size + 1), align_from(align));
                (shrink_op(a, m, i, b.size, new, 0).is_some(), false)
            }
            Op::Dealloc { pick } => {
                let i = m.pick(pick)?;
                let size = m.blocks()[i].size;
                dealloc_op(a, m, i, size);
                (true, false)
            }
            _ => unreachable!("not an allocator operation: {op:?}"),
        })
    }
}

/// Runs operations in a child scope until `Exit` or the end of the input.
fn run_scope(scope: &mut ArenaRef<'_>, ops: &mut Iter<'_, Op>, st: &mut State<'_>) {
    while let Some(op) = ops.next() {
        if !op.is_step() {
            st.disarm();
        }
        match op {
            Op::Exit => return,
            Op::EnterGuard if st.frames.len() < MAX_DEPTH => {
                st.enter(scope.used_bytes());
                {
                    let mut guard = scope.scope_guard();
                    run_scope(guard.scope(), ops, st);
                }
                st.exit(scope);
            }
            Op::EnterClosure if st.frames.len() < MAX_DEPTH => {
                st.enter(scope.used_bytes());
                scope.with_scope(|child| run_scope(child, ops, st));
                st.exit(scope);
            }
            Op::Checkpoint => st.checkpoint(scope.checkpoint(), scope.used_bytes()),
            Op::ResetTo(k) => {
                if let Some((cp, seq, used)) = st.take_checkpoint(*k) {
                    // SAFETY: `cp` was taken in this scope, which has not been reset or trimmed
                    // since (only the top level can), no earlier checkpoint was restored since
                    // (those after it were dropped), and the blocks allocated after it leave the
                    // model, so they are not used again.
                    unsafe { scope.reset_to(cp) };
                    st.after_reset_to(scope, seq, used);
                }
            }
            // Through `&ArenaRef`, which is sized (the nested action needs a thin pointer).
            op if op.is_step() => st.step(&&*scope, scope, op),
            // Reset, trim and the limit need the owner; too deep a scope is not entered.
            _ => {}
        }
    }
    st.disarm();
}

/// Runs the operations at the top level (the arena's owner).
fn run_top(arena: &mut Arena<&Backing>, ops: &mut Iter<'_, Op>, st: &mut State<'_>) {
    while let Some(op) = ops.next() {
        if !op.is_step() {
            st.disarm();
        }
        match op {
            Op::Reset => {
                let before = arena.stats();
                arena.reset();
                st.model.clear();
                st.frames[0].checkpoints.clear();
                let after = arena.stats();
                assert_eq!(after.used_bytes, 0);
                // Reset keeps at most one chunk (the largest, or one renewed for the cycle's need;
                // none when the chunk a renewal takes is refused: an injected failure, or the
                // limit) and frees every large block.
                assert!(after.chunks <= 1, "{before:?} -> {after:?}");
                assert_eq!(after.large_blocks, 0, "{after:?}");
                // (The chunk kept may be one renewed for the cycle's need, large blocks included:
                // larger than what is held at the reset when the cycle freed a large block. The
                // limit bounds it, which `check_stats` checks.)
                st.check_stats(arena.as_arena_ref());
            }
            Op::Trim => {
                arena.trim();
                st.frames[0].checkpoints.clear();
                st.model.verify_all();
                st.check_stats(arena.as_arena_ref());
            }
            Op::Limit(limit) => {
                st.limit = limit.map(|n| n as usize * 64);
                arena.set_allocation_limit(st.limit);
                let held = arena.allocated_bytes_including_metadata();
                st.bound = st.limit.map(|l| l.max(held));
                st.check_stats(arena.as_arena_ref());
            }
            Op::Exit => {}
            Op::EnterGuard => {
                st.enter(arena.used_bytes());
                {
                    let mut guard = arena.scope_guard();
                    run_scope(guard.scope(), ops, st);
                }
                st.exit(arena.as_arena_ref());
            }
            Op::EnterClosure => {
                st.enter(arena.used_bytes());
                arena.with_scope(|child| run_scope(child, ops, st));
                st.exit(arena.as_arena_ref());
            }
            Op::Checkpoint => st.checkpoint(arena.checkpoint(), arena.used_bytes()),
            Op::ResetTo(k) => {
                if let Some((cp, seq, used)) = st.take_checkpoint(*k) {
                    // SAFETY: `cp` was taken at the top level of this arena, which has not been
                    // reset or trimmed since (both drop the checkpoints), no earlier checkpoint
                    // was restored since, and the blocks allocated after it leave the model.
                    unsafe { arena.reset_to(cp) };
                    st.after_reset_to(arena.as_arena_ref(), seq, used);
                }
            }
            _ => st.step(&*arena, arena.as_arena_ref(), op),
        }
    }
    st.disarm();
}

fuzz_target!(|input: Input| {
    ignore_injected_panics();
    let backing = Backing::new();
    let mut arena = match input.capacity {
        Some(c) => Arena::try_with_capacity_in(c as usize, &backing)
            .expect("a first chunk of at most 64 KiB"),
        None => Arena::new_in(&backing),
    };
    let mut st = State {
        backing: &backing,
        model: Model::new(),
        frames: Vec::new(),
        limit: None,
        bound: None,
        reenter: None,
    };
    st.enter(0);
    st.check_stats(arena.as_arena_ref());
    run_top(&mut arena, &mut input.ops.iter(), &mut st);
    st.model.verify_all();
    drop(arena);
    assert_eq!(backing.live_blocks(), 0, "the arena leaked chunks");
});
