//! `Arena` and its scopes through allocator-api2's `Allocator` trait and the typed API, against
//! a model of the live blocks (see README.md).
//!
//! Operations: allocate / allocate_zeroed / grow / grow_zeroed / shrink / deallocate (on
//! `&Arena` at the top level, on `&ArenaRef` inside scopes), reset, trim, an allocation limit,
//! backing-allocator failures, child scopes (`scope_guard` and `with_scope`, nested), and raw
//! checkpoints (`checkpoint` + `reset_to`). Sizes up to 64 KiB and large blocks of 60 to
//! 315 KiB (grown up to 512 KiB), alignments up to 4096, and now and then a size near
//! `isize::MAX`, 2^32 or 2^40, which must fail. Typed-API fills whose callbacks place blocks in
//! the same arena and then fail; an allocation of exactly `chunk_capacity()` bytes (a scope
//! entered next parks on the full chunk); a cycle of 32 KiB blocks followed by several resets
//! (an oversized chunk kept with a probe); `into_slice` / `into_str` of a `Vec` / `String` made
//! before a checkpoint, restored or not. The backing allocator can panic in its next `allocate`
//! call, or call back into the arena there (free a block and allocate one in the scope the next
//! operation uses), or panic in a `deallocate` call of the next operation.
//!
//! Checked after every operation: each new block is aligned, as long as requested and overlaps
//! no live block; every block keeps its bytes across grow and shrink (checked before each
//! grow / shrink / deallocate, at each scope exit and at the end), `grow_zeroed` zeroes the new
//! bytes; a scope exit and `reset_to` bring `used_bytes` back exactly, a scope exit frees the
//! blocks made since it began (a large block resized inside keeps its place) and `reset_to` those
//! made or resized since its checkpoint; a large block resized stays one (and keeps its place)
//! while at least 64 KiB; the bytes held from the backing allocator match the arena's statistics
//! and stay within the limit; a failure changes no statistic and no block, and happens only with
//! a limit, an injected backing failure or a huge size; an operation unwound by the backing
//! allocator's panic in `allocate` changes no statistic and no block, and the same operation then
//! runs normally; after one unwound from a `deallocate`, every block is intact and the arena holds
//! exactly what the backing allocator holds (but what a reset leaked); a nested request is served
//! when it fits the current chunk, refused when it does not (it would need a chunk while the
//! arena takes one), and a nested block is checked like any other (alignment, length, no overlap
//! with any block live meanwhile, contents); a fill returns exactly its items, and a failed one
//! gives back only its own buffer (the blocks its callbacks placed stay intact); `into_slice`
//! keeps the elements, takes no new block, and a large buffer stays a large block; dropping the
//! arena gives every chunk back.

#![no_main]

use std::slice::Iter;

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::collections::String;
use arena_pool::{Arena, ArenaRef, BumpAlloc, Checkpoint};
use arena_pool_fuzz::bundle::Bundle;
use arena_pool_fuzz::fills::{self, Fill, Item};
use arena_pool_fuzz::nested::{self, Plan, Reentrant, Settled};
use arena_pool_fuzz::{
    Backing, Block, GROW_MAX, Injected, Model, Size, align_from, alloc_op, assert_reset_chunks,
    assert_unwound_unchanged, catch_injected, dealloc_op, grow_op, ignore_injected_panics,
    kept_given_back, layout, run_catching, shrink_op,
};
use libfuzzer_sys::fuzz_target;

/// Largest ordinary request.
const MAX_SIZE: usize = 64 * 1024;
/// Deepest scope nesting (deeper scope operations are ignored).
const MAX_DEPTH: usize = 32;
/// Requests of at least this many bytes that do not fit the current chunk get a large block of
/// their own; a large block stays one while it is at least this long.
const LARGE_THRESHOLD: usize = 64 * 1024;

/// Tags of the model's blocks: a large block (known to be one: an allocation or grow that made
/// one, with no nested action in between), or any other.
const OTHER: u8 = 0;
const LARGE: u8 = 1;

#[derive(Arbitrary, Debug)]
struct Input {
    /// `try_with_capacity_in` with this capacity instead of `new_in`.
    capacity: Option<u16>,
    ops: std::vec::Vec<Op>,
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
    /// Allocates exactly `chunk_capacity()` bytes (alignment 1): the current chunk is then full,
    /// and a scope entered next parks. Through the typed API (`try_alloc_slice_fill_copy`) when
    /// `typed`.
    FillChunk {
        typed: bool,
    },
    /// A typed-API fill whose callbacks place blocks in the same arena (or scope).
    Fill(Fill),
    /// `Arena::reset` (top level only).
    Reset,
    /// Top level only: `blocks % 24 + 1` blocks of 32 KiB, then `resets % 6 + 1` resets (a big
    /// cycle followed by small ones: the reset keeps an oversized chunk with a probe).
    Cycle {
        blocks: u8,
        resets: u8,
    },
    /// `Arena::trim` (top level only).
    Trim,
    /// `set_allocation_limit(Some(n * 64))` or `None` (top level only).
    Limit(Option<u16>),
    /// The next `n % 4` backing allocations fail.
    FailNext(u8),
    /// The next backing allocation panics (with `InjectedPanic`).
    PanicNext,
    /// In the next operation (a scope exit, a reset, the drop at the end of the input
    /// included), the backing `deallocate` call after `n % 4` others panics (with
    /// `InjectedPanic`) before freeing the block.
    PanicNextFree(u8),
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
    /// A `Vec` (of `u64` when `wide`, else `u8`) or a `String` of capacity `cap` made in the
    /// current scope (at the top level, through the `ArenaRef` when `via_ref`), `len % (cap + 1)`
    /// elements pushed, a checkpoint taken (one of the scope's from then on), then `into_slice`
    /// / `into_str`; with `restore`, `reset_to` that checkpoint at once.
    IntoSlice {
        cap: Size,
        len: u16,
        wide: bool,
        string: bool,
        via_ref: bool,
        restore: bool,
    },
}

impl Op {
    /// Whether it is handled by [`State::step`] (the others disarm the backing allocator's
    /// `allocate` panic and nested action first).
    fn is_step(&self) -> bool {
        matches!(
            self,
            Op::Alloc { .. }
                | Op::Grow { .. }
                | Op::Shrink { .. }
                | Op::Dealloc { .. }
                | Op::FillChunk { .. }
                | Op::Fill(_)
                | Op::FailNext(_)
                | Op::PanicNext
                | Op::ReenterNext { .. }
        )
    }
}

/// What an allocator operation runs on: the arena or a scope, with the typed API of the same.
trait Target: Reentrant {
    type Typed: BumpAlloc + ?Sized;
    fn typed(&self) -> &Self::Typed;
}

impl<'b> Target for Arena<&'b Backing> {
    type Typed = Arena<&'b Backing>;
    fn typed(&self) -> &Self::Typed {
        self
    }
}

impl<'a> Target for &ArenaRef<'a> {
    type Typed = ArenaRef<'a>;
    fn typed(&self) -> &Self::Typed {
        self
    }
}

/// A scope level of the model.
struct Frame {
    /// Blocks made from this sequence number on die with the scope.
    start_seq: u64,
    used_at_entry: usize,
    /// The scope's live checkpoints, oldest first, with the sequence number and `used_bytes`
    /// they were taken at.
    checkpoints: std::vec::Vec<(Checkpoint, u64, usize)>,
}

struct State<'b> {
    backing: &'b Backing,
    model: Model,
    frames: std::vec::Vec<Frame>,
    limit: Option<usize>,
    /// What `allocated_bytes_including_metadata` may not exceed while a limit is set: the limit,
    /// or what was held when it was set, if more.
    bound: Option<usize>,
    /// What `ReenterNext` asked for, until the next operation (which arms it).
    reenter: Option<(Size, u8, bool, Option<u16>)>,
    /// The block the operation works on (its sequence number), which leaves the model if the
    /// operation unwinds from a backing `deallocate`.
    operand: Option<u64>,
    /// A reset has kept every chunk for the next cycle (a fresh arena's does that once).
    reused: bool,
}

impl State<'_> {
    /// Disarms the backing allocator's `allocate` panic and nested action before an operation
    /// that is not an allocator operation, or at the end of a scope (a `deallocate` panic stays
    /// armed for the operation about to run).
    fn disarm(&mut self) {
        self.backing.disarm();
        self.reenter = None;
    }

    /// Whether the backing allocator has a nested action armed: one that was armed and is no
    /// longer ran.
    fn nested_armed(&self) -> bool {
        self.backing.nested_armed()
    }

    /// The arena's rules for a nested request (made while the arena takes a chunk, through the
    /// `Allocator` methods): served when the current chunk holds it, refused when it needs a
    /// chunk or is a large block (at least the threshold, even where the chunk has room).
    fn check_nested(n: &Settled) {
        let (size, align) = (n.layout.size(), n.layout.align());
        if size >= LARGE_THRESHOLD {
            assert!(
                !n.served(),
                "a nested {:?}, a large block, was served while the arena took memory",
                n.layout
            );
        } else if n.served() {
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
            checkpoints: std::vec::Vec::new(),
        });
    }

    /// After a scope's exit; `unwound`: the exit unwound from a backing `deallocate`, so the
    /// position may not have been restored (the blocks it made are gone all the same).
    fn exit(&mut self, view: &ArenaRef<'_>, unwound: bool) {
        if unwound {
            assert_eq!(self.backing.take_unwound(), Some(Injected::Deallocate));
        }
        let frame = self.frames.pop().expect("a scope to exit");
        self.model.forget_made_since(frame.start_seq);
        if !unwound {
            assert_eq!(
                view.used_bytes(),
                frame.used_at_entry,
                "a scope exit did not restore used_bytes"
            );
        }
        self.model.verify_all();
        self.check_stats(view);
    }

    fn checkpoint(&mut self, cp: Checkpoint, used: usize) {
        let seq = self.model.next_seq();
        let frame = self.frames.last_mut().expect("a scope");
        frame.checkpoints.push((cp, seq, used));
    }

    /// Picks a checkpoint of the current scope; those after it become invalid.
    fn take_checkpoint(&mut self, k: usize) -> Option<(Checkpoint, u64, usize)> {
        let cps = &mut self.frames.last_mut().expect("a scope").checkpoints;
        if cps.is_empty() {
            return None;
        }
        let i = k % cps.len();
        cps.truncate(i + 1);
        Some(cps[i])
    }

    /// After `reset_to` a checkpoint taken at `seq` with `used` bytes used: the blocks made or
    /// resized since are gone. `unwound`: it unwound from a backing `deallocate` (the position
    /// may not have been restored).
    fn after_reset_to(&mut self, view: &ArenaRef<'_>, seq: u64, used: usize, unwound: bool) {
        if unwound {
            assert_eq!(self.backing.take_unwound(), Some(Injected::Deallocate));
        }
        self.model.forget_since(seq);
        if !unwound {
            assert_eq!(
                view.used_bytes(),
                used,
                "reset_to did not restore used_bytes"
            );
        }
        self.model.verify_all();
        self.check_stats(view);
    }

    fn check_stats(&self, view: &ArenaRef<'_>) {
        let s = view.stats();
        assert!(s.used_bytes <= s.allocated_bytes, "{s:?}");
        assert!(s.chunk_capacity <= s.allocated_bytes, "{s:?}");
        // The backing allocator holds the chunks and the large blocks (in use or kept), nothing
        // else.
        assert_eq!(
            s.chunks + s.large_blocks + s.kept_large_blocks,
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

    /// `Arena::reset`, with its checks; one that unwound from a backing `deallocate` may have
    /// leaked the blocks it had not given back yet (when it renews its chunk): written off.
    fn reset(&mut self, arena: &mut Arena<&Backing>) {
        let before = arena.stats();
        let done = run_catching(self.backing, || arena.reset());
        self.model.clear();
        self.frames[0].checkpoints.clear();
        let after = arena.stats();
        if done.is_none() {
            assert_eq!(self.backing.take_unwound(), Some(Injected::Deallocate));
            let leaked = self
                .backing
                .live_blocks()
                .checked_sub(after.chunks + after.large_blocks + after.kept_large_blocks);
            let leaked_bytes = self
                .backing
                .live_bytes()
                .checked_sub(after.allocated_bytes_including_metadata);
            let (Some(blocks), Some(bytes)) = (leaked, leaked_bytes) else {
                panic!(
                    "after a reset that unwound, the arena counts blocks the backing allocator does not hold: {after:?}"
                );
            };
            self.backing.write_off(blocks, bytes);
        } else {
            assert_eq!(after.used_bytes, 0);
            // Reset keeps at most one chunk, but once, and no large block in use (those it
            // keeps for reuse are counted apart).
            assert_reset_chunks(before, after, &mut self.reused);
            assert_eq!(after.large_blocks, 0, "{after:?}");
            // (The chunk kept may be one renewed for the cycle's need: larger than what is held
            // at the reset when the cycle rolled blocks back. The limit bounds it, which
            // `check_stats` checks.)
        }
        self.check_stats(arena.as_arena_ref());
    }

    /// After an allocator operation that unwound from a backing `deallocate`: the block it worked
    /// on leaves the model (given up, or moved), every other block is intact, and the arena
    /// holds what the backing allocator holds.
    fn after_free_unwound(&mut self, view: &ArenaRef<'_>) {
        if let Some(i) = self.operand.take().and_then(|seq| self.model.find_seq(seq)) {
            self.model.remove(i);
        }
        self.model.verify_all();
        self.check_stats(view);
    }

    /// An allocator operation through `a`, whose arena `view` shows: armed with an injected
    /// panic or a nested action if the operations before it said so.
    fn step<A: Target>(&mut self, a: &A, view: &ArenaRef<'_>, op: &Op) {
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
        let _ = self.backing.take_unwound();
        self.operand = None;
        let armed = self.reenter.take().map(|(size, align, zeroed, free)| {
            let free = free
                .and_then(|k| self.model.pick_untyped(k))
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
        let seq_before = self.model.next_seq();
        let may_fail = self.limit.is_some() || self.backing.failing();
        let backing = self.backing;
        let done = run_catching(backing, || self.apply(a, view, op));
        backing.disarm();
        let nested = armed.and_then(|armed| armed.settle(backing, &mut self.model));
        let Some(done) = done else {
            if backing.take_unwound() == Some(Injected::Deallocate) {
                // (A panic in `deallocate` is never armed with a nested action.)
                assert!(nested.is_none(), "a nested action ran in {op:?}");
                self.after_free_unwound(view);
                return;
            }
            // Unwound by the injected panic, which comes before the nested action.
            assert!(
                nested.is_none(),
                "the nested action ran in a call that panicked"
            );
            // (A fill keeps the blocks its callbacks placed before the panic.)
            if self.model.next_seq() == seq_before {
                let fill = matches!(op, Op::Fill(_));
                assert_unwound_unchanged(&before, &view.stats(), fill, op);
            }
            self.model.verify_all();
            self.check_stats(view);
            // Still usable: the same operation, with nothing armed.
            self.step(a, view, op);
            return;
        };
        if let Some(n) = &nested {
            Self::check_nested(n);
            n.insert(&mut self.model, OTHER);
        }
        let Some((ok, huge)) = done else {
            self.check_stats(view);
            return;
        };
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?}");
            if nested.is_none() {
                assert_eq!(
                    kept_given_back(&before, &view.stats()),
                    before,
                    "a failed {op:?} changed the arena"
                );
            }
            self.model.verify_all();
        }
        self.check_stats(view);
    }

    /// Tags block `j`, the result of a grow or shrink of `old` to `new` (or of an allocation,
    /// `old` being `None`), as a large block when it is known to be one: a large block resized
    /// to at least the threshold stays one and keeps its place (it was made when `old` was made,
    /// and the arena holds as many large blocks as before); one resized below it moves into the
    /// chunks; another block is a large block when the arena holds one more than before.
    /// Nothing is known when a nested action ran meanwhile (it may free a large block).
    fn classify(
        &mut self,
        j: usize,
        old: Option<Block>,
        large_before: usize,
        view: &ArenaRef<'_>,
        nested: bool,
    ) {
        if nested {
            return;
        }
        let large_now = view.stats().large_blocks;
        let new_size = self.model.blocks()[j].size;
        match old {
            Some(b) if b.tag == LARGE && new_size >= LARGE_THRESHOLD => {
                assert_eq!(
                    large_now, large_before,
                    "a large block of {} bytes resized to {new_size} did not stay one",
                    b.size
                );
                self.model.set_tag(j, LARGE);
                let seq = self.model.blocks()[j].seq;
                self.model.set_stamps(j, b.born, seq);
            }
            Some(b) if b.tag == LARGE => assert_eq!(
                large_now + 1,
                large_before,
                "a large block of {} bytes resized to {new_size} stayed one",
                b.size
            ),
            _ if large_now == large_before + 1 => self.model.set_tag(j, LARGE),
            _ => {}
        }
    }

    /// The operation itself: whether it succeeded and whether its size was huge, or `None`
    /// when there was no block to operate on.
    fn apply<A: Target>(&mut self, a: &A, view: &ArenaRef<'_>, op: &Op) -> Option<(bool, bool)> {
        let nested_armed = self.nested_armed();
        let large_before = view.stats().large_blocks;
        Some(match *op {
            Op::Alloc {
                size,
                align,
                zeroed,
            } => {
                let l = layout(size.bytes(MAX_SIZE), align_from(align));
                let r = alloc_op(a, &mut self.model, l, zeroed, OTHER);
                if let Some(i) = r {
                    let ran = nested_armed && !self.nested_armed();
                    self.classify(i, None, large_before, view, ran);
                }
                (r.is_some(), size.is_huge())
            }
            Op::Grow {
                pick,
                by,
                align,
                zeroed,
            } => {
                let i = self.model.pick_untyped(pick)?;
                let b = self.model.blocks()[i];
                self.operand = Some(b.seq);
                let new = if by.is_huge() {
                    by.bytes(MAX_SIZE).max(b.size)
                } else {
                    (b.size + by.bytes(MAX_SIZE)).min(GROW_MAX).max(b.size)
                };
                let new = layout(new, align_from(align));
                let r = grow_op(a, &mut self.model, i, b.size, new, zeroed, OTHER);
                if let Some(j) = r {
                    let ran = nested_armed && !self.nested_armed();
                    self.classify(j, Some(b), large_before, view, ran);
                }
                (r.is_some(), by.is_huge())
            }
            Op::Shrink { pick, keep, align } => {
                let i = self.model.pick_untyped(pick)?;
                let b = self.model.blocks()[i];
                self.operand = Some(b.seq);
                let new = layout(keep as usize % (b.size + 1), align_from(align));
                let r = shrink_op(a, &mut self.model, i, b.size, new, OTHER);
                if let Some(j) = r {
                    let ran = nested_armed && !self.nested_armed();
                    self.classify(j, Some(b), large_before, view, ran);
                }
                (r.is_some(), false)
            }
            Op::Dealloc { pick } => {
                let i = self.model.pick_untyped(pick)?;
                let size = self.model.blocks()[i].size;
                dealloc_op(a, &mut self.model, i, size);
                (true, false)
            }
            Op::FillChunk { typed } => {
                let n = view.chunk_capacity();
                let l = layout(n, 1);
                let ok = if typed {
                    let s: Option<&mut [u8]> = a.typed().try_alloc_slice_fill_copy(n, 0x77).ok();
                    s.map(|s| {
                        let p = std::ptr::NonNull::from(s).cast::<u8>();
                        self.model.insert_typed(p, n, l, OTHER)
                    })
                    .is_some()
                } else {
                    alloc_op(a, &mut self.model, l, false, OTHER).is_some()
                };
                if ok && !(nested_armed && !self.nested_armed()) {
                    // Through the `Allocator` methods, a request of at least the threshold is a
                    // large block even where the chunk has room: the chunk stays as it was.
                    let left = if typed || n < LARGE_THRESHOLD { 0 } else { n };
                    assert_eq!(
                        view.chunk_capacity(),
                        left,
                        "{n} bytes, the chunk's capacity, typed: {typed}"
                    );
                }
                (ok, false)
            }
            Op::Fill(fill) => {
                let room = || (view.used_bytes(), view.chunk_capacity());
                let env = fills::Env {
                    backing: self.backing,
                    may_fail: self.limit.is_some() || self.backing.failing(),
                    room: Some(&room),
                };
                fills::run(a.typed(), &mut self.model, OTHER, &fill, &env);
                (true, false)
            }
            _ => unreachable!("not an allocator operation: {op:?}"),
        })
    }

    /// `IntoSlice` through `x`, whose arena `view` shows: a `Vec` or `String` made, a checkpoint
    /// taken (registered in the current scope), `into_slice` / `into_str`; the slice enters the
    /// model as made when the `Vec` was (before the checkpoint). Returns whether the checkpoint
    /// was registered.
    fn make_slice<'s, X>(&mut self, x: &'s X, view: &ArenaRef<'_>, op: &Op) -> bool
    where
        X: BumpAlloc + ?Sized,
        &'s X: Allocator,
        X::Blocks<'s>: 's,
    {
        let Op::IntoSlice {
            cap,
            len,
            wide,
            string,
            ..
        } = *op
        else {
            unreachable!()
        };
        let bytes = cap.bytes(MAX_SIZE);
        let made = self.model.take_seq();
        let large_before = view.stats().large_blocks;
        // The buffer, its elements, and the checkpoint.
        enum Buf<'s, X: ?Sized + 's>
        where
            &'s X: Allocator,
        {
            Bytes(Vec<u8, &'s X>),
            Words(Vec<u64, &'s X>),
            Text(String<&'s X>),
        }
        let buf = if string {
            let mut s = String::new_in(x);
            if s.try_reserve_exact(bytes).is_err() {
                return false;
            }
            let n = len as usize % (s.capacity() + 1);
            for _ in 0..n {
                s.push('x');
            }
            Buf::Text(s)
        } else if wide {
            let mut v = Vec::new_in(x);
            if v.try_reserve_exact(bytes / 8).is_err() {
                return false;
            }
            let n = len as usize % (v.capacity() + 1);
            v.extend((0..n).map(u64::at));
            Buf::Words(v)
        } else {
            let mut v = Vec::new_in(x);
            if v.try_reserve_exact(bytes).is_err() {
                return false;
            }
            let n = len as usize % (v.capacity() + 1);
            v.extend((0..n).map(u8::at));
            Buf::Bytes(v)
        };
        let was_large = view.stats().large_blocks == large_before + 1;
        self.checkpoint(view.checkpoint(), view.used_bytes());
        let before = view.stats();
        let held = self.backing.live_blocks();
        let done = run_catching(self.backing, || match buf {
            Buf::Bytes(v) => {
                let n = v.len();
                let s = X::into_slice(v);
                for (i, b) in s.iter().enumerate() {
                    assert_eq!(*b, u8::at(i), "into_slice lost element {i} of {n}");
                }
                (std::ptr::NonNull::from(s).cast::<u8>(), n, 1)
            }
            Buf::Words(v) => {
                let n = v.len();
                let s = X::into_slice(v);
                for (i, b) in s.iter().enumerate() {
                    assert_eq!(*b, u64::at(i), "into_slice lost element {i} of {n}");
                }
                (std::ptr::NonNull::from(s).cast::<u8>(), n * 8, 8)
            }
            Buf::Text(t) => {
                let n = t.len();
                let s = X::into_str(t);
                assert!(s.bytes().all(|b| b == b'x'), "into_str lost text");
                (std::ptr::NonNull::from(s).cast::<u8>(), n, 1)
            }
        });
        let Some((p, n, align)) = done else {
            // An empty slice of a large block gives the block back, which may unwind.
            assert_eq!(self.backing.take_unwound(), Some(Injected::Deallocate));
            self.model.verify_all();
            self.check_stats(view);
            return true;
        };
        let after = view.stats();
        // The buffer never moves to a new block of the arena.
        assert_eq!(after.chunks, before.chunks, "into_slice took a chunk");
        assert!(
            after.used_bytes <= before.used_bytes,
            "into_slice bumped: {before:?} -> {after:?}"
        );
        if n == 0 && was_large {
            // (An empty slice gives the large block back.)
            assert!(after.large_blocks + 1 >= before.large_blocks);
            assert!(self.backing.live_blocks() + 1 >= held);
        } else {
            assert_eq!(
                after.large_blocks, before.large_blocks,
                "into_slice of {n} bytes (a large buffer: {was_large}) moved it: {before:?} -> {after:?}"
            );
            assert_eq!(self.backing.live_blocks(), held, "into_slice took a block");
            if was_large {
                assert_eq!(
                    after.used_bytes, before.used_bytes,
                    "a large buffer of {n} bytes did not stay a large block"
                );
            }
        }
        let i = self
            .model
            .insert_typed(p, n, Layout::from_size_align(n, align).unwrap(), OTHER);
        self.model.set_stamps(i, made, made);
        self.check_stats(view);
        true
    }
}

/// Runs operations in a child scope until `Exit` or the end of the input.
fn run_scope(scope: &mut ArenaRef<'_>, ops: &mut Iter<'_, Op>, st: &mut State<'_>) {
    // Entering the scope was the operation a `deallocate` panic was armed for.
    st.backing.disarm_free();
    while let Some(op) = ops.next() {
        if !op.is_step() {
            st.disarm();
        }
        match op {
            // The exit, in the parent, is the next operation.
            Op::Exit => return,
            Op::PanicNextFree(n) => {
                st.backing.panic_in_free(u32::from(n % 4));
                continue;
            }
            Op::EnterGuard if st.frames.len() < MAX_DEPTH => {
                st.enter(scope.used_bytes());
                let done = catch_injected(|| {
                    let mut guard = scope.scope_guard();
                    run_scope(guard.scope(), ops, st);
                });
                st.exit(scope, done.is_none());
            }
            Op::EnterClosure if st.frames.len() < MAX_DEPTH => {
                st.enter(scope.used_bytes());
                let done = catch_injected(|| scope.with_scope(|child| run_scope(child, ops, st)));
                st.exit(scope, done.is_none());
            }
            Op::Checkpoint => st.checkpoint(scope.checkpoint(), scope.used_bytes()),
            Op::ResetTo(k) => reset_to(scope, st, *k as usize),
            op @ Op::IntoSlice { restore, .. } => {
                if st.make_slice(&*scope, scope, op) && *restore {
                    reset_to(scope, st, usize::MAX);
                }
            }
            // Through `&ArenaRef`, which is sized (the nested action needs a thin pointer).
            op if op.is_step() => st.step(&&*scope, scope, op),
            // Reset, trim and the limit need the owner; too deep a scope is not entered.
            _ => {}
        }
        st.backing.disarm_free();
    }
    st.disarm();
}

/// `reset_to` checkpoint `k` (modulo their number; `usize::MAX`: the last one) of the current
/// scope, if it has one.
fn reset_to(scope: &mut ArenaRef<'_>, st: &mut State<'_>, k: usize) {
    let k = if k == usize::MAX {
        st.frames
            .last()
            .map_or(0, |f| f.checkpoints.len().saturating_sub(1))
    } else {
        k
    };
    if let Some((cp, seq, used)) = st.take_checkpoint(k) {
        // SAFETY: `cp` was taken in this scope, which has not been reset or trimmed since (only
        // the top level can, and both drop its checkpoints), no earlier checkpoint was restored
        // since (those after it were dropped), and the blocks made or resized after it leave
        // the model, so they are not used again.
        let done = run_catching(st.backing, || unsafe { scope.reset_to(cp) });
        st.after_reset_to(scope, seq, used, done.is_none());
    }
}

/// Runs the operations at the top level (the arena's owner).
fn run_top(arena: &mut Arena<&Backing>, ops: &mut Iter<'_, Op>, st: &mut State<'_>) {
    while let Some(op) = ops.next() {
        if !op.is_step() {
            st.disarm();
        }
        match op {
            Op::PanicNextFree(n) => {
                st.backing.panic_in_free(u32::from(n % 4));
                continue;
            }
            Op::Reset => st.reset(arena),
            Op::Cycle { blocks, resets } => {
                for _ in 0..blocks % 24 + 1 {
                    alloc_op(&*arena, &mut st.model, layout(32 << 10, 1), false, OTHER);
                }
                st.check_stats(arena.as_arena_ref());
                for _ in 0..resets % 6 + 1 {
                    st.reset(arena);
                }
            }
            Op::Trim => {
                let done = run_catching(st.backing, || arena.trim());
                if done.is_none() {
                    assert_eq!(st.backing.take_unwound(), Some(Injected::Deallocate));
                }
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
                let done = catch_injected(|| {
                    let mut guard = arena.scope_guard();
                    run_scope(guard.scope(), ops, st);
                });
                st.exit(arena.as_arena_ref(), done.is_none());
            }
            Op::EnterClosure => {
                st.enter(arena.used_bytes());
                let done = catch_injected(|| arena.with_scope(|child| run_scope(child, ops, st)));
                st.exit(arena.as_arena_ref(), done.is_none());
            }
            Op::Checkpoint => st.checkpoint(arena.checkpoint(), arena.used_bytes()),
            Op::ResetTo(k) => reset_to(arena.as_arena_ref_mut(), st, *k as usize),
            op @ Op::IntoSlice {
                via_ref, restore, ..
            } => {
                let registered = if *via_ref {
                    st.make_slice(arena.as_arena_ref(), arena.as_arena_ref(), op)
                } else {
                    st.make_slice(&*arena, arena.as_arena_ref(), op)
                };
                if registered && *restore {
                    reset_to(arena.as_arena_ref_mut(), st, usize::MAX);
                }
            }
            _ => st.step(&*arena, arena.as_arena_ref(), op),
        }
        st.backing.disarm_free();
    }
    st.disarm();
}

// A corpus file may bundle several inputs (see `arena_pool_fuzz::bundle`): each runs on a fresh
// `Arena`.
fuzz_target!(|bundle: Bundle<Input>| {
    ignore_injected_panics();
    for input in bundle.0 {
        run_input(input);
    }
});

/// One input, from a fresh `Arena` to its drop.
fn run_input(input: Input) {
    let backing = Backing::new();
    let mut arena = match input.capacity {
        Some(c) => Arena::try_with_capacity_in(c as usize, &backing)
            .expect("a first chunk of at most 64 KiB"),
        None => Arena::new_in(&backing),
    };
    let mut st = State {
        backing: &backing,
        model: Model::new(),
        frames: std::vec::Vec::new(),
        limit: None,
        bound: None,
        reenter: None,
        operand: None,
        reused: false,
    };
    st.enter(0);
    st.check_stats(arena.as_arena_ref());
    run_top(&mut arena, &mut input.ops.iter(), &mut st);
    st.model.verify_all();
    // A `deallocate` panic armed by the last operation applies to the drop, which may then leak
    // what it had not given back yet.
    let dropped = catch_injected(move || drop(arena));
    backing.disarm_free();
    if dropped.is_none() {
        backing.write_off_all();
    }
    assert_eq!(backing.live_blocks(), 0, "the arena leaked chunks");
}
