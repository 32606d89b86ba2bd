//! The thread-safe types on one thread, through allocator-api2's `Allocator` trait, against a
//! model of the live blocks (see README.md): `SyncArena` with its `LocalArena` handles, and
//! `SyncPool`.
//!
//! `SyncArena`: allocate / allocate_zeroed / grow / grow_zeroed / shrink / deallocate through
//! `&SyncArena` (the shared path) and through up to three `LocalArena` handles alive at once, made
//! and dropped in any order (a block keeps living after its handle is dropped, until the arena is
//! reset); sizes up to 64 KiB and large blocks up to 315 KiB (grown up to 512 KiB), alignments up
//! to 4096 and now and then a size that must fail; `reset` and `trim` (which need every handle
//! dropped first), an allocation limit and injected backing failures; typed-API fills, through a
//! handle or the shared path, whose callbacks place blocks in the same arena and then fail.
//! `SyncPool`, with a slot layout and a shard count from the input: the same operations with
//! layouts that fit the slot and layouts that do not, `reset`, `trim`. Each backing allocator can
//! panic in its next call, or call back there into what it backs: free a block and allocate one
//! (through a handle or the shared path; from the pool); or panic in a `deallocate` call of the
//! next operation.
//!
//! Checked, besides what the block model checks (alignment, length, no overlap, contents, zeroing):
//! the arena's chunks and large blocks are the blocks the backing allocator holds, and
//! `allocated_bytes_including_metadata` what they hold, which never passes the limit (or what was
//! held when it was set); the live shared blocks, the blocks of dropped handles and the pieces of
//! the live handles fit in `used_bytes` and `large_bytes`; a shared allocation adds its size plus
//! less than its alignment to `used_bytes`, a shared deallocation takes back nothing or exactly the
//! block; dropping a handle takes no chunk and frees no block; `reset` empties the arena, frees
//! every large block and keeps at most one chunk; for the pool, `in_use` and `fallback_blocks`
//! match the model, a pooled block is one slot long and the slot freed last is the next one handed
//! out, the backing allocator holds exactly the slabs, the fallback blocks and at most one
//! address-map table; a failure changes no statistic and no block, and happens only with a limit,
//! an injected failure or a huge size; an operation unwound by a backing allocator's panic in
//! `allocate` changes no statistic (of the arena, a handle or the pool) and no block, and the same
//! operation then runs normally; after one unwound from a `deallocate`, every block is intact and
//! the statistics match what the backing allocator holds (but what a reset leaked); a fill returns
//! exactly its items, and a failed one gives back only its own buffer; a nested request through the shared path, or through a handle other than the one
//! waiting, is served unless a limit is set, a failure was injected or the size is huge; one
//! through the waiting handle is served when its piece holds it and refused when it needs a piece;
//! the pool's nested requests follow `pool_ops`; a nested block is checked like any other
//! (alignment, length, no overlap with any block live meanwhile, contents); dropping both gives
//! everything back.

#![no_main]

use std::slice::Iter;

use arbitrary::Arbitrary;
use arena_pool::{ArenaStats, LocalArena, SyncArena, SyncPool};
use arena_pool_fuzz::bundle::Bundle;
use arena_pool_fuzz::fills::{self, Fill};
use arena_pool_fuzz::nested::{self, Armed, Plan, Settled};
use arena_pool_fuzz::pool_checker::{PoolChecker, PoolOp};
use arena_pool_fuzz::{
    BACKING_CAP, Backing, GROW_MAX, Injected, Model, Size, align_from, alloc_op,
    assert_reset_chunks, assert_unwound_shared_fill, assert_unwound_unchanged,
    assert_unwound_within_chunk, catch_injected, dealloc_op, grow_op, ignore_injected_panics,
    kept_given_back, layout, run_catching, shrink_op,
};
use libfuzzer_sys::fuzz_target;

/// Largest ordinary request.
const MAX_SIZE: usize = 64 * 1024;
/// The size from which a request through the `Allocator` methods is a large block.
const LARGE_THRESHOLD: usize = 64 * 1024;
/// Handles alive at once, at most.
const HANDLES: usize = 3;

/// Tags of the arena model's blocks: who serves them.
const SHARED: u8 = 0;
/// A block of a dropped handle: alive until the next reset, never resized or freed again.
const ORPHAN: u8 = 1;
/// `LOCAL + k`: a block of the handle in slot `k`.
const LOCAL: u8 = 2;

#[derive(Arbitrary, Debug)]
struct Input {
    /// `try_with_capacity_in` with this capacity instead of `new_in`.
    capacity: Option<u16>,
    slot_size: u16,
    slot_align: u8,
    /// `with_shards_in` with `shards % 4 + 1` shards.
    shards: u8,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Op {
    /// Through the handle in slot `via % 4 - 1` if there is one, else through `&SyncArena`.
    Alloc {
        via: u8,
        size: Size,
        align: u8,
        zeroed: bool,
    },
    /// The grow, shrink and deallocate operations go through the block's own allocator.
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
    /// A typed-API fill through the handle in slot `via % 4 - 1` if there is one, else through
    /// `&SyncArena`, whose callbacks place blocks in the same arena.
    Fill {
        via: u8,
        fill: Fill,
    },
    /// `SyncArena::local` into slot `k % 3`, if it is empty.
    NewLocal(u8),
    /// Drops the handle of slot `k % 3`.
    DropLocal(u8),
    /// Drops every handle, then `SyncArena::reset`.
    Reset,
    /// Drops every handle, then `SyncArena::trim`.
    Trim,
    /// `set_allocation_limit(Some(n * 64))` or `None`.
    Limit(Option<u16>),
    /// The arena's next `n % 4` backing allocations fail.
    FailNext(u8),
    /// The arena's next backing allocation panics (with `InjectedPanic`).
    PanicNext,
    /// In the next operation (`Reset`, `Trim` and the drop at the end of the input included), the
    /// arena's backing `deallocate` call after `n % 4` others panics (with `InjectedPanic`) before
    /// freeing the block.
    PanicNextFree(u8),
    /// The arena's next backing allocation, if the next operation makes one, first frees block
    /// `free` (pick, fit, among the blocks of the allocator it uses; chosen when that operation
    /// starts), then allocates `size` / `align` through the handle in slot `via % 4 - 1` if there
    /// is one, else through `&SyncArena`.
    ReenterNext {
        via: u8,
        size: Size,
        align: u8,
        zeroed: bool,
        free: Option<(u16, u8)>,
    },
    Pool(PoolOp),
}

impl Op {
    /// Whether it is handled by [`ArenaState::step`] (the others disarm the arena's backing
    /// allocator first).
    fn is_arena_step(&self) -> bool {
        matches!(
            self,
            Op::Alloc { .. }
                | Op::Grow { .. }
                | Op::Shrink { .. }
                | Op::Dealloc { .. }
                | Op::Fill { .. }
                | Op::FailNext(_)
                | Op::PanicNext
                | Op::ReenterNext { .. }
        )
    }
}

/// What `ReenterNext` asked for.
type Reenter = (u8, Size, u8, bool, Option<(u16, u8)>);

type Handles<'s, 'b> = [Option<LocalArena<'s, &'b Backing>>; HANDLES];

// ----- SyncArena -----

struct ArenaState<'b> {
    backing: &'b Backing,
    model: Model,
    limit: Option<usize>,
    /// What `allocated_bytes_including_metadata` may not exceed while a limit is set: the limit,
    /// or what was held when it was set, if more.
    bound: Option<usize>,
    /// Nothing was allocated since the last reset: a trim leaves at most one chunk.
    just_reset: bool,
    /// What `ReenterNext` asked for, until the next operation (which arms it).
    reenter: Option<Reenter>,
    /// The block the operation works on (its sequence number), which leaves the model if the
    /// operation unwinds from a backing `deallocate`.
    operand: Option<u64>,
    /// A reset has kept every chunk for the next cycle (a fresh arena's does that once).
    reused: bool,
}

impl ArenaState<'_> {
    fn check_stats(&self, arena: &SyncArena<&Backing>, handles: &Handles<'_, '_>) {
        let s = arena.stats();
        // The backing allocator holds the chunks and the large blocks (the handles' too, and
        // those kept for reuse).
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
        if s.chunks + s.large_blocks + s.kept_large_blocks == 0 {
            assert_eq!(s.allocated_bytes, 0, "{s:?}");
            assert_eq!(s.used_bytes, 0, "{s:?}");
        } else {
            assert!(
                s.allocated_bytes < s.allocated_bytes_including_metadata,
                "{s:?}"
            );
        }
        assert!(s.used_bytes <= s.allocated_bytes, "{s:?}");
        assert!(s.chunk_capacity <= s.allocated_bytes, "{s:?}");
        assert_eq!(s.allocation_limit, self.limit);
        assert_eq!(arena.allocation_limit(), self.limit);
        if let Some(bound) = self.bound {
            assert!(
                s.allocated_bytes_including_metadata <= bound,
                "the arena holds more than its limit allows: {s:?}, bound {bound}"
            );
        }
        // Shared blocks, the blocks of dropped handles and the live handles' pieces are disjoint
        // parts of what the chunks handed out, and of the large blocks.
        let mut inside = self.model.bytes_tagged(SHARED) + self.model.bytes_tagged(ORPHAN);
        for (k, h) in handles.iter().enumerate() {
            let Some(h) = h else { continue };
            let hs = h.stats();
            let mine = self.model.bytes_tagged(LOCAL + k as u8);
            // The handle's blocks lie in its pieces or are large blocks.
            assert!(
                mine <= hs.used_bytes + hs.large_bytes,
                "handle {k}: {mine} live bytes, {hs:?}"
            );
            assert!(hs.used_bytes <= hs.allocated_bytes, "handle {k}: {hs:?}");
            assert!(
                hs.allocated_bytes <= hs.allocated_bytes_including_metadata,
                "handle {k}: {hs:?}"
            );
            // A handle reports its shared arena's limit (it has none of its own).
            assert_eq!(hs.allocation_limit, self.limit, "handle {k}: {hs:?}");
            // A handle's pieces count in full in the shared arena's `used_bytes`; its large
            // blocks, outside the chunks, do not.
            inside += hs.allocated_bytes_including_metadata - hs.large_bytes;
        }
        // The shared and orphaned blocks the model holds may be large blocks, outside the
        // chunks: they count in `large_bytes`.
        assert!(
            inside <= s.used_bytes + s.large_bytes,
            "blocks and pieces of {inside} bytes, but {s:?}"
        );
    }

    /// Forgets an injected panic in `allocate` or a nested action still pending: before an
    /// operation that does not go through [`step`](Self::step), and at the end of a phase (a
    /// `deallocate` panic stays armed for the operation about to run).
    fn disarm(&mut self) {
        self.backing.disarm();
        self.reenter = None;
    }

    /// Arms the nested action `ReenterNext` asked for, through the handle in slot `via % 4 - 1`
    /// if there is one, else through `&SyncArena`. Returns it with the tag of its blocks.
    fn arm(
        &mut self,
        arena: &SyncArena<&Backing>,
        handles: &Handles<'_, '_>,
        (via, size, align, zeroed, free): Reenter,
    ) -> (Armed, u8) {
        let slot = (via % 4).checked_sub(1).map(usize::from);
        let handle = slot.and_then(|k| handles[k].as_ref().map(|h| (k, h)));
        let tag = handle.map_or(SHARED, |(k, _)| LOCAL + k as u8);
        // The block to free: one of the same allocator's (not a typed one).
        let free = free.and_then(|(k, fit)| {
            let mine: Vec<usize> = (0..self.model.len())
                .filter(|&i| self.model.blocks()[i].tag == tag && !self.model.blocks()[i].typed)
                .collect();
            let i = *mine.get(usize::from(k) % mine.len().max(1))?;
            let b = self.model.remove(i);
            Some((b, b.fit(fit)))
        });
        let plan = Plan {
            layout: layout(size.bytes(MAX_SIZE), align_from(align)),
            zeroed,
            free,
            spans: self.model.spans(),
        };
        // SAFETY: the arena and the handles (in `handles`, which does not move during an
        // operation) are backed by `self.backing` and stay alive and in place until this
        // operation is over; the action runs only inside it (it is disarmed right after). The
        // block to free is one of the model's, live in the allocator the action uses, and has
        // left the model.
        let armed = unsafe {
            match handle {
                Some((_, h)) => nested::arm(self.backing, h, plan),
                None => nested::arm(self.backing, arena, plan),
            }
        };
        (armed, tag)
    }

    /// The rules for a nested request made through `tag`'s allocator while an operation through
    /// `owner`'s waits for the backing allocator: a handle's own request that needs a piece or
    /// is a large block (at least the threshold) is refused and one its piece holds is served
    /// (as in an `Arena`); every other request is served, even one that needs a chunk, unless a
    /// limit is set, a failure was injected or the size is huge.
    fn check_nested(&self, n: &Settled, tag: u8, owner: u8) {
        let (size, align) = (n.layout.size(), n.layout.align());
        if tag == owner && tag >= LOCAL {
            if size >= LARGE_THRESHOLD {
                assert!(
                    !n.served(),
                    "a nested {:?} through the waiting handle, a large block, was served",
                    n.layout
                );
            } else if n.served() {
                assert!(
                    size <= n.room,
                    "a nested {:?} through the waiting handle was served with {} bytes left in its piece",
                    n.layout,
                    n.room
                );
            } else {
                assert!(
                    size != 0 && size + align - 1 > n.room,
                    "a nested {:?} through the waiting handle was refused with {} bytes left in its piece",
                    n.layout,
                    n.room
                );
            }
        } else {
            let may_refuse = self.limit.is_some() || n.failing || size > BACKING_CAP;
            assert!(
                n.served() || may_refuse,
                "a nested {:?} through {tag} (the operation's owner: {owner}) was refused, with no limit or injected failure",
                n.layout
            );
        }
    }

    /// An arena operation: `Alloc`, `Grow`, `Shrink`, `Dealloc`, or one that arms the backing
    /// allocator for the next (`FailNext`, `PanicNext`, `ReenterNext`).
    fn step(&mut self, arena: &SyncArena<&Backing>, handles: &Handles<'_, '_>, op: &Op) {
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
                via,
                size,
                align,
                zeroed,
                free,
            } => {
                self.reenter = Some((via, size, align, zeroed, free));
                return;
            }
            _ => {}
        }
        self.just_reset = false;
        let _ = self.backing.take_unwound();
        self.operand = None;
        let armed = self.reenter.take().map(|r| self.arm(arena, handles, r));
        let before = arena.stats();
        let handle_stats = handles.each_ref().map(|h| h.as_ref().map(|h| h.stats()));
        let seq_before = self.model.next_seq();
        let may_fail = self.limit.is_some() || self.backing.failing();
        let backing = self.backing;
        let done = run_catching(backing, || self.apply(arena, handles, op, &before));
        backing.disarm();
        let nested =
            armed.and_then(|(armed, tag)| Some((armed.settle(backing, &mut self.model)?, tag)));
        let Some(done) = done else {
            if backing.take_unwound() == Some(Injected::Deallocate) {
                // (A panic in `deallocate` is never armed with a nested action.) The block the
                // operation worked on is given up or moved; the others are intact.
                assert!(nested.is_none(), "a nested action ran in {op:?}");
                if let Some(i) = self.operand.take().and_then(|seq| self.model.find_seq(seq)) {
                    self.model.remove(i);
                }
                self.model.verify_all();
                self.check_stats(arena, handles);
                return;
            }
            // Unwound by the injected panic, which comes before the nested action.
            assert!(
                nested.is_none(),
                "the nested action ran in a call that panicked"
            );
            // (A fill keeps the blocks its callbacks placed before the panic.)
            if self.model.next_seq() == seq_before {
                let fill = matches!(op, Op::Fill { .. });
                // A fill through a handle: its piece may have grown from the shared chunk.
                let filler = match op {
                    Op::Fill { via, .. } => (via % 4)
                        .checked_sub(1)
                        .map(usize::from)
                        .filter(|&i| handles[i].is_some()),
                    _ => None,
                };
                if filler.is_some() {
                    assert_unwound_within_chunk(&before, &arena.stats(), op);
                } else if fill {
                    assert_unwound_shared_fill(&before, &arena.stats(), op);
                } else {
                    assert_unwound_unchanged(&before, &arena.stats(), fill, op);
                }
                for (i, (h, s)) in handles.iter().zip(&handle_stats).enumerate() {
                    if let (Some(h), Some(s), true) = (h, s, Some(i) != filler) {
                        assert_unwound_unchanged(s, &h.stats(), fill, op);
                    }
                }
            }
            self.model.verify_all();
            self.check_stats(arena, handles);
            // Still usable: the same operation, with nothing armed.
            self.step(arena, handles, op);
            return;
        };
        let Some((owner, ok, huge)) = done else {
            assert!(
                nested.is_none(),
                "the nested action ran in an operation that did nothing"
            );
            self.check_stats(arena, handles);
            return;
        };
        if let Some((n, tag)) = &nested {
            self.check_nested(n, *tag, owner);
            n.insert(&mut self.model, *tag);
        }
        if let Op::Alloc { size, align, .. } = *op
            && owner == SHARED
            && ok
            && nested.is_none()
        {
            // One bump: the size plus the padding, less than the alignment (and perhaps the
            // rest of the thread's piece, below); or a large block, exactly its size.
            let l = layout(size.bytes(MAX_SIZE), align_from(align));
            let grew = arena.stats().used_bytes - before.used_bytes;
            if arena.stats().large_blocks > before.large_blocks {
                // A large block, outside the chunks: counted apart, in `large_bytes`.
                assert_eq!(
                    grew, 0,
                    "used_bytes grew by {grew} for a large block of {l:?}"
                );
                assert!(arena.stats().large_bytes >= before.large_bytes + l.size());
            } else if l.size() == 0 {
                assert_eq!(grew, 0, "an empty block took room");
            } else {
                // A block that does not fit the rest of the thread's piece may leave that rest
                // behind (when the piece cannot be lengthened), less than the block and its
                // padding: counted as used until the reset.
                let bump = l.size() + l.align() - 1;
                assert!(
                    grew >= l.size() && grew < 2 * bump,
                    "used_bytes grew by {grew} for {l:?}"
                );
            }
        }
        if !ok {
            assert!(may_fail || huge, "spurious failure of {op:?} ({owner})");
            if nested.is_none() {
                assert_eq!(
                    kept_given_back(&before, &arena.stats()),
                    before,
                    "a failed {op:?} changed the arena"
                );
                if owner >= LOCAL {
                    let k = usize::from(owner - LOCAL);
                    assert_eq!(
                        handles[k].as_ref().map(|h| h.stats()),
                        handle_stats[k],
                        "a failed {op:?} changed handle {k}"
                    );
                }
            }
            self.model.verify_all();
        }
        self.check_stats(arena, handles);
    }

    /// The operation itself: the owner of the block operated on, whether it succeeded and
    /// whether its size was huge, or `None` when there was nothing to do.
    fn apply(
        &mut self,
        arena: &SyncArena<&Backing>,
        handles: &Handles<'_, '_>,
        op: &Op,
        before: &ArenaStats,
    ) -> Option<(u8, bool, bool)> {
        let m = &mut self.model;
        Some(match *op {
            Op::Alloc {
                via,
                size,
                align,
                zeroed,
            } => {
                let l = layout(size.bytes(MAX_SIZE), align_from(align));
                let slot = (via % 4).checked_sub(1).map(usize::from);
                let (owner, r) = match slot.and_then(|k| handles[k].as_ref().map(|h| (k, h))) {
                    Some((k, h)) => {
                        let tag = LOCAL + k as u8;
                        (tag, alloc_op(h, m, l, zeroed, tag))
                    }
                    None => (SHARED, alloc_op(arena, m, l, zeroed, SHARED)),
                };
                (owner, r.is_some(), size.is_huge())
            }
            Op::Grow {
                pick,
                fit,
                by,
                align,
                zeroed,
            } => {
                let i = m.pick_untyped(pick)?;
                let b = m.blocks()[i];
                self.operand = Some(b.seq);
                let old = b.fit(fit);
                let new = if by.is_huge() {
                    by.bytes(MAX_SIZE).max(old)
                } else {
                    (old + by.bytes(MAX_SIZE)).min(GROW_MAX).max(old)
                };
                let new = layout(new, align_from(align));
                let r = match b.tag {
                    SHARED => grow_op(arena, m, i, old, new, zeroed, SHARED),
                    ORPHAN => {
                        b.verify(b.len);
                        return None;
                    }
                    t => grow_op(local(handles, t), m, i, old, new, zeroed, t),
                };
                (b.tag, r.is_some(), by.is_huge())
            }
            Op::Shrink {
                pick,
                fit,
                keep,
                align,
            } => {
                let i = m.pick_untyped(pick)?;
                let b = m.blocks()[i];
                self.operand = Some(b.seq);
                let old = b.fit(fit);
                let new = layout(keep as usize % (old + 1), align_from(align));
                let r = match b.tag {
                    SHARED => shrink_op(arena, m, i, old, new, SHARED),
                    ORPHAN => {
                        b.verify(b.len);
                        return None;
                    }
                    t => shrink_op(local(handles, t), m, i, old, new, t),
                };
                (b.tag, r.is_some(), false)
            }
            Op::Dealloc { pick, fit } => {
                let i = m.pick_untyped(pick)?;
                let b = m.blocks()[i];
                let size = b.fit(fit);
                match b.tag {
                    SHARED => {
                        dealloc_op(arena, m, i, size);
                        // Given back when last, else left in place.
                        let after = arena.stats().used_bytes;
                        assert!(
                            after == before.used_bytes || after + size == before.used_bytes,
                            "deallocating {size} bytes took used_bytes from {} to {after}",
                            before.used_bytes
                        );
                    }
                    ORPHAN => b.verify(b.len),
                    t => {
                        dealloc_op(local(handles, t), m, i, size);
                    }
                }
                (b.tag, true, false)
            }
            Op::Fill { via, fill } => {
                let may_fail = self.limit.is_some() || self.backing.failing();
                let slot = (via % 4).checked_sub(1).map(usize::from);
                match slot.and_then(|k| handles[k].as_ref().map(|h| (k, h))) {
                    Some((k, h)) => {
                        let tag = LOCAL + k as u8;
                        let room = || (h.used_bytes(), h.chunk_capacity());
                        let env = fills::Env {
                            backing: self.backing,
                            may_fail,
                            room: Some(&room),
                        };
                        fills::run(h, m, tag, &fill, &env);
                        (tag, true, false)
                    }
                    None => {
                        // The shared path keeps the padding before a block it gives back.
                        let env = fills::Env {
                            backing: self.backing,
                            may_fail,
                            room: None,
                        };
                        fills::run(arena, m, SHARED, &fill, &env);
                        (SHARED, true, false)
                    }
                }
            }
            _ => unreachable!("not an allocator operation: {op:?}"),
        })
    }

    /// Drops the handle in slot `k`: its blocks stay, and so do the arena's chunks.
    fn drop_handle(
        &mut self,
        arena: &SyncArena<&Backing>,
        handles: &mut Handles<'_, '_>,
        k: usize,
    ) {
        let Some(h) = handles[k].take() else { return };
        let before = arena.stats();
        // It calls no backing allocator: a `deallocate` panic armed must not fire.
        let dropped = catch_injected(move || drop(h));
        assert!(
            dropped.is_some(),
            "dropping a handle called the backing allocator's deallocate"
        );
        self.model.retag(LOCAL + k as u8, ORPHAN);
        let after = arena.stats();
        assert_eq!(
            after.chunks, before.chunks,
            "dropping a handle freed a chunk"
        );
        assert!(
            after.used_bytes <= before.used_bytes,
            "{before:?} -> {after:?}"
        );
        self.model.verify_all();
        self.check_stats(arena, handles);
    }
}

/// The handle whose blocks carry `tag`.
fn local<'h, 's, 'b>(handles: &'h Handles<'s, 'b>, tag: u8) -> &'h LocalArena<'s, &'b Backing> {
    handles[usize::from(tag - LOCAL)]
        .as_ref()
        .expect("a block of a live handle")
}

/// Runs operations on `&SyncArena` (with handles) until one needs `&mut SyncArena` (returned,
/// after every handle is dropped) or the input ends.
fn shared_phase(
    arena: &SyncArena<&Backing>,
    ops: &mut Iter<'_, Op>,
    st: &mut ArenaState<'_>,
    pool: &mut PoolChecker<'_, SyncPool<&Backing>>,
) -> Option<Op> {
    let mut handles: Handles<'_, '_> = [None, None, None];
    let mut next = None;
    for op in ops.by_ref() {
        // An injected panic or nested action applies to the next operation only.
        if !op.is_arena_step() {
            st.disarm();
        }
        if !matches!(op, Op::Pool(_)) {
            pool.disarm();
        }
        match *op {
            // `run` resets or trims, after the handles are dropped, under the `deallocate` panic
            // armed for it.
            Op::Reset | Op::Trim => {
                next = Some(*op);
                break;
            }
            Op::PanicNextFree(n) => {
                st.backing.panic_in_free(u32::from(n % 4));
                continue;
            }
            Op::NewLocal(k) => {
                let k = usize::from(k) % HANDLES;
                if handles[k].is_none() {
                    let before = arena.stats();
                    let h = arena.local();
                    // No backing call: at most its first piece, lent from this thread's piece,
                    // counts as used (and no longer as the chunk's room, if the thread's piece
                    // ends at the chunk's cursor).
                    let mut after = arena.stats();
                    let lent = after.used_bytes - before.used_bytes;
                    assert!(lent <= 256, "a new handle took {lent} bytes");
                    after.used_bytes -= lent;
                    if after.chunk_capacity + lent == before.chunk_capacity {
                        after.chunk_capacity += lent;
                    }
                    assert_eq!(after, before, "a new handle took memory");
                    assert_eq!(h.stats().used_bytes, 0);
                    handles[k] = Some(h);
                }
            }
            Op::DropLocal(k) => st.drop_handle(arena, &mut handles, usize::from(k) % HANDLES),
            Op::Limit(limit) => {
                st.limit = limit.map(|n| n as usize * 64);
                arena.set_allocation_limit(st.limit);
                let held = arena.stats().allocated_bytes_including_metadata;
                st.bound = st.limit.map(|l| l.max(held));
                st.check_stats(arena, &handles);
            }
            Op::Pool(p) => pool.step(p),
            Op::Alloc { .. }
            | Op::Grow { .. }
            | Op::Shrink { .. }
            | Op::Dealloc { .. }
            | Op::Fill { .. }
            | Op::FailNext(_)
            | Op::PanicNext
            | Op::ReenterNext { .. } => st.step(arena, &handles, op),
        }
        // A `deallocate` panic is armed for one operation.
        st.backing.disarm_free();
    }
    st.disarm();
    pool.disarm();
    for k in 0..HANDLES {
        st.drop_handle(arena, &mut handles, k);
    }
    next
}

/// Runs the whole input: shared phases separated by resets and trims.
fn run(
    arena: &mut SyncArena<&Backing>,
    ops: &[Op],
    st: &mut ArenaState<'_>,
    pool: &mut PoolChecker<'_, SyncPool<&Backing>>,
) {
    let mut ops = ops.iter();
    while let Some(op) = shared_phase(arena, &mut ops, st, pool) {
        let before = arena.stats();
        let backing = st.backing;
        match op {
            Op::Reset => {
                let done = run_catching(backing, || arena.reset());
                st.model.clear();
                let after = arena.stats();
                if done.is_none() {
                    // Unwound from a backing `deallocate`: what it had not given back yet may
                    // be leaked (written off).
                    assert_eq!(backing.take_unwound(), Some(Injected::Deallocate));
                    st.just_reset = false;
                    let leaked = backing
                        .live_blocks()
                        .checked_sub(after.chunks + after.large_blocks + after.kept_large_blocks);
                    let leaked_bytes = backing
                        .live_bytes()
                        .checked_sub(after.allocated_bytes_including_metadata);
                    let (Some(blocks), Some(bytes)) = (leaked, leaked_bytes) else {
                        panic!(
                            "after a reset that unwound, the arena counts blocks the backing allocator does not hold: {after:?}"
                        );
                    };
                    backing.write_off(blocks, bytes);
                } else {
                    st.just_reset = true;
                    assert_eq!(after.used_bytes, 0, "{after:?}");
                    // Reset keeps at most one chunk, but once, and no large block in use (those
                    // it keeps for reuse are counted apart).
                    assert_reset_chunks(before, after, &mut st.reused);
                    assert_eq!(after.large_blocks, 0, "{after:?}");
                    // (The chunk kept may be one renewed for the cycle's need: larger than what
                    // is held at the reset when the cycle rolled blocks back. The limit bounds
                    // it, which `check_stats` checks.)
                }
            }
            Op::Trim => {
                let done = run_catching(backing, || arena.trim());
                let after = arena.stats();
                assert_eq!(
                    after.used_bytes, before.used_bytes,
                    "trim freed used memory"
                );
                if done.is_none() {
                    assert_eq!(backing.take_unwound(), Some(Injected::Deallocate));
                } else if st.just_reset {
                    assert!(after.chunks <= 1, "trim after reset kept {after:?}");
                }
                st.model.verify_all();
            }
            _ => unreachable!("shared_phase returns only Reset and Trim"),
        }
        backing.disarm_free();
        st.check_stats(arena, &[None, None, None]);
    }
}

// A corpus file may bundle several inputs (see `arena_pool_fuzz::bundle`): each runs on a fresh
// `SyncArena` and `SyncPool`.
fuzz_target!(|bundle: Bundle<Input>| {
    ignore_injected_panics();
    for input in bundle.0 {
        run_input(input);
    }
});

/// One input, from a fresh `SyncArena` and `SyncPool` to their drop.
fn run_input(input: Input) {
    let arena_backing = Backing::new();
    let pool_backing = Backing::new();

    let slot_layout = layout(
        input.slot_size as usize % 4097,
        align_from(input.slot_align),
    );
    let shards = usize::from(input.shards % 4) + 1;
    let pool = SyncPool::with_shards_in(slot_layout, shards, &pool_backing);
    assert_eq!(pool.slot_layout(), slot_layout);
    assert_eq!(pool.shard_count(), shards.next_power_of_two());
    let mut pool = PoolChecker::new(pool, slot_layout, &pool_backing);

    let mut arena = match input.capacity {
        Some(c) => {
            let a = SyncArena::try_with_capacity_in(c as usize, &arena_backing)
                .expect("a first chunk of at most 64 KiB");
            assert!(a.stats().chunk_capacity >= c as usize);
            a
        }
        None => SyncArena::new_in(&arena_backing),
    };
    let mut st = ArenaState {
        backing: &arena_backing,
        model: Model::new(),
        limit: None,
        bound: None,
        just_reset: false,
        reenter: None,
        operand: None,
        reused: false,
    };
    st.check_stats(&arena, &[None, None, None]);
    run(&mut arena, &input.ops, &mut st, &mut pool);
    st.model.verify_all();
    // A `deallocate` panic armed by the last operation applies to the drop, which may then leak
    // what it had not given back yet.
    let dropped = catch_injected(move || drop(arena));
    arena_backing.disarm_free();
    if dropped.is_none() {
        arena_backing.write_off_all();
    }
    assert_eq!(arena_backing.live_blocks(), 0, "the arena leaked chunks");
    pool.finish();
}
