//! Resizing a block that cannot grow or shrink where it is, written once for both arenas
//! (docs/DESIGN.md §2): the decision (a large block is resized as [`resize_plan`] says, the last
//! block of the current chunk is re-placed from where it starts, any other block is copied to a
//! fresh one) and the large block's resize itself. Each arena answers the [`Front`] primitives
//! with its own bump and locking; the in-place paths, which are the bump itself, stay with each
//! arena, inlined into its callers.
//!
//! Every function here changes nothing when it fails, and leaves the arena consistent when the
//! backing allocator unwinds: a large block being resized is linked back (it is still the
//! caller's), and a block that moves is given back only once its bytes are copied.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use super::bump::{dangling, satisfies};
use super::large::{Large, Resize, resize_plan};
use crate::error::Failure;
use crate::reentry::OnUnwind;

/// What the shared resize asks of an arena: its bump for blocks that move, and its large-block
/// list and backing allocator, each under the arena's own locking.
pub(crate) trait Front {
    /// The large block whose data is the caller's block `p` of `layout`, taken out of the list
    /// and its counts (the caller links it back or frees it); `None` when it is not one (only a
    /// block of at least the threshold can be).
    fn unlink_large(&self, p: NonNull<u8>, layout: Layout) -> Option<Large>;

    /// Re-places `p` for `new`, keeping its first `keep` bytes, when it is the last block of the
    /// current chunk and the arena can do better for it than a copy to a fresh block (grow it
    /// from where it starts, after moving a probe or lengthening the chunk). `None`, with nothing
    /// changed, otherwise.
    ///
    /// # Safety
    /// `p` is the caller's live block of `old`, not a large block; `keep` is at most
    /// `old.size()` and `new.size()`.
    unsafe fn move_last(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
    ) -> Option<Result<NonNull<u8>, Failure>>;

    /// Copies the first `keep` bytes of `p` to a fresh block for `new`, then gives `p` back (its
    /// room is reused when it was the last block). `grows`: a new chunk taken for it leaves room
    /// for the block to go on growing in place.
    ///
    /// # Safety
    /// As for [`move_last`](Front::move_last).
    unsafe fn move_to_fresh(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        keep: usize,
        grows: bool,
    ) -> Result<NonNull<u8>, Failure>;

    /// A fresh block in the chunks for `layout`, which is below the threshold: where a large
    /// block's data goes when it shrinks below it.
    fn alloc_in_chunks(&self, layout: Layout) -> Result<NonNull<u8>, Failure>;

    /// A fresh large block of at least `block`'s layout (from `block_layout`; the slice's length
    /// is its size), within the limit and counted, not linked.
    fn take_large(&self, block: Layout) -> Result<NonNull<[u8]>, Failure>;

    /// The backing allocator's grow or shrink of `b`'s whole block to `block` (of `b`'s
    /// alignment), within the limit and recounted. On failure `b` is unchanged.
    ///
    /// # Safety
    /// `b` is unlinked and its data is the caller's live block.
    unsafe fn resize_large_block(&self, b: Large, block: Layout) -> Result<NonNull<[u8]>, Failure>;

    /// Gives `b` back to the backing allocator and uncounts it.
    ///
    /// # Safety
    /// `b` is unlinked and its data is not used again.
    unsafe fn free_large(&self, b: Large);

    /// Links `b` back where its sequence number belongs.
    fn link_large(&self, b: Large);

    /// A large block kept for reuse that holds `block` (of its alignment), taken out of the
    /// kept ones (see `large_spares`); `None` when none does, or the arena keeps none.
    fn take_kept(&self, block: Layout) -> Option<Large>;

    /// Whether the arena keeps any large block for reuse (a cheap test before
    /// [`take_kept`](Front::take_kept)'s search).
    fn has_kept(&self) -> bool;

    /// Links `new`, a block that took over `old`'s data (a fresh one, or with `kept` one from
    /// [`take_kept`](Front::take_kept)), where `old` (unlinked) was: with its sequence number,
    /// so that a checkpoint taken since `old` was made still spares it.
    fn link_large_for(&self, old: Large, new: Large, kept: bool);
}

/// Grows the caller's block `p` of `old` to `new` where the arena's in-place path could not:
/// a large block as [`resize_large`] decides, the last block by [`Front::move_last`] when it
/// can, any other by [`Front::move_to_fresh`]. With `zeroed`, the bytes past `old.size()` are
/// zeroed.
///
/// # Safety
/// The `Allocator::grow` contract: `p` is a live block of this arena fitting `old`, and
/// `new.size() >= old.size()`.
#[inline(always)]
pub(crate) unsafe fn grow<F: Front + ?Sized>(
    front: &F,
    p: NonNull<u8>,
    old: Layout,
    new: Layout,
    zeroed: bool,
) -> Result<NonNull<u8>, Failure> {
    if let Some(b) = front.unlink_large(p, old) {
        // SAFETY: `b` is the caller's block, of `old`, unlinked.
        return unsafe { resize_large(front, b, old, new, zeroed, false) };
    }
    // SAFETY: forwarded from the caller; `p` is not a large block, and all of it is kept.
    let q = match unsafe { front.move_last(p, old, new, old.size()) } {
        Some(moved) => moved?,
        // SAFETY: as above.
        None => unsafe { front.move_to_fresh(p, old, new, old.size(), true) }?,
    };
    if zeroed {
        // SAFETY: `q` is writable for `new.size()` bytes; the tail past `old.size()` is written
        // through a raw pointer, never through a reference to uninitialised memory.
        unsafe { q.add(old.size()).write_bytes(0, new.size() - old.size()) };
    }
    Ok(q)
}

/// Shrinks the caller's block `p` of `old` to `new` where the arena's in-place path could not:
/// a large block as [`resize_large`] decides (with `settle`, it stays a large block at any
/// size), a block whose start satisfies `new` keeps its place and its whole length (the caller
/// may go on using it), and only a block that needs a larger alignment moves.
///
/// # Safety
/// The `Allocator::shrink` contract: `p` is a live block of this arena fitting `old`, and
/// `new.size() <= old.size()`. With `settle`, the block is never resized or deallocated again.
#[inline(always)]
pub(crate) unsafe fn shrink<F: Front + ?Sized>(
    front: &F,
    p: NonNull<u8>,
    old: Layout,
    new: Layout,
    settle: bool,
) -> Result<NonNull<[u8]>, Failure> {
    if let Some(b) = front.unlink_large(p, old) {
        // SAFETY: `b` is the caller's block, of `old`, unlinked; `settle` from the caller.
        let q = unsafe { resize_large(front, b, old, new, false, settle) }?;
        return Ok(NonNull::slice_from_raw_parts(q, new.size()));
    }
    // SAFETY: `p` was allocated with `old` (the contract).
    if unsafe { satisfies(p, old, new) } {
        return Ok(NonNull::slice_from_raw_parts(p, old.size()));
    }
    // SAFETY: forwarded from the caller; `p` is not a large block, and `new.size()` bytes of it
    // are kept.
    let q = match unsafe { front.move_last(p, old, new, new.size()) } {
        Some(moved) => moved?,
        // SAFETY: as above.
        None => unsafe { front.move_to_fresh(p, old, new, new.size(), false) }?,
    };
    Ok(NonNull::slice_from_raw_parts(q, new.size()))
}

/// Grows or shrinks large block `b`, unlinked, the caller's block of `old`, to `new`, as
/// [`resize_plan`] decides. While it stays a large block it keeps its place in the list (its
/// sequence number), however it moves: a scope or checkpoint that began after it was made never
/// frees it. With `zeroed`, the bytes past `old.size()` are zeroed. On failure, and when the
/// backing allocator unwinds, `b` is linked back unchanged.
///
/// # Safety
/// `b` is unlinked and its data is the caller's live block of `old`. With `settle`, the block is
/// never resized or deallocated again.
#[cold]
#[inline(never)]
pub(crate) unsafe fn resize_large<F: Front + ?Sized>(
    front: &F,
    b: Large,
    old: Layout,
    new: Layout,
    zeroed: bool,
    settle: bool,
) -> Result<NonNull<u8>, Failure> {
    let relink = OnUnwind::new(|| front.link_large(b));
    let copied = old.size().min(new.size());
    let q = match resize_plan(b.layout(), old, new, settle).ok_or(Failure::CapacityOverflow)? {
        Resize::Free => {
            relink.disarm();
            // SAFETY: the caller gives its block up for an empty one; `b` is unlinked.
            unsafe { front.free_large(b) };
            return Ok(dangling(new.align()));
        }
        Resize::IntoChunks => {
            let q = front.alloc_in_chunks(new)?;
            // SAFETY: `q` is a fresh block, distinct from `b`'s data; both hold `copied` bytes.
            unsafe { ptr::copy_nonoverlapping(b.data().as_ptr(), q.as_ptr(), copied) };
            relink.disarm();
            // SAFETY: `b` is unlinked, and its data was the caller's old block.
            unsafe { front.free_large(b) };
            q
        }
        Resize::NewBlock(block) => {
            let (moved, kept) = match front.take_kept(block) {
                Some(k) => (k, true),
                None => {
                    let p = front.take_large(block)?;
                    // SAFETY: a fresh block of at least `block`'s layout, ours alone.
                    (unsafe { Large::init_taken(p, block) }, false)
                }
            };
            relink.disarm();
            // SAFETY: `b` is unlinked, the caller's, holding `copied` bytes; `moved` is ours.
            unsafe { move_large(front, b, moved, kept, copied) }
        }
        Resize::InPlace => {
            relink.disarm();
            let data = b.data();
            front.link_large(b);
            data
        }
        // A block that grows past its room takes a kept block that holds it, when there is one,
        // rather than calling the backing allocator.
        Resize::Backing(block) if new.size() > old.size() && front.has_kept() => {
            match front.take_kept(block) {
                Some(k) => {
                    relink.disarm();
                    // SAFETY: `b` is unlinked, the caller's, holding `copied` bytes; `k` is
                    // ours, out of every list.
                    unsafe { move_large(front, b, k, true, copied) }
                }
                // SAFETY: as below.
                None => unsafe { resize_through_backing(front, b, block, relink) }?,
            }
        }
        // SAFETY: `b` is unlinked and the caller's; `block` has its alignment.
        Resize::Backing(block) => unsafe { resize_through_backing(front, b, block, relink) }?,
    };
    if zeroed && new.size() > old.size() {
        // SAFETY: `q` is writable for `new.size()` bytes; the tail is written through a raw
        // pointer.
        unsafe { q.add(old.size()).write_bytes(0, new.size() - old.size()) };
    }
    Ok(q)
}

/// Moves large block `b`'s first `copied` bytes to `moved` (fresh, or with `kept` one of the
/// kept blocks), links `moved` in `b`'s place and frees `b`; returns the data's new address.
///
/// # Safety
/// `b` is unlinked and its data is the caller's live block of at least `copied` bytes, not used
/// again; `moved` is out of every list, ours alone, and holds at least `copied` bytes.
unsafe fn move_large<F: Front + ?Sized>(
    front: &F,
    b: Large,
    moved: Large,
    kept: bool,
    copied: usize,
) -> NonNull<u8> {
    // Read before the block is linked: once linked, a `SyncArena`'s other threads may write its
    // links.
    let data = moved.data();
    // SAFETY: both blocks hold at least `copied` bytes, and they are distinct (the caller).
    unsafe { ptr::copy_nonoverlapping(b.data().as_ptr(), data.as_ptr(), copied) };
    front.link_large_for(b, moved, kept);
    // SAFETY: `b` is unlinked, and its data was the caller's old block.
    unsafe { front.free_large(b) };
    data
}

/// The backing allocator's grow or shrink of large block `b` to `block`; `b` linked back,
/// resized, on success, and unchanged by `relink` on failure or unwind.
///
/// # Safety
/// `b` is unlinked and its data is the caller's live block; `block` has `b`'s alignment.
unsafe fn resize_through_backing<F: Front + ?Sized, G: FnOnce()>(
    front: &F,
    b: Large,
    block: Layout,
    relink: OnUnwind<G>,
) -> Result<NonNull<u8>, Failure> {
    // SAFETY: forwarded from the caller.
    let p = unsafe { front.resize_large_block(b, block) }?;
    relink.disarm();
    // SAFETY: the block, moved or not, holds the old block's bytes (its header, sequence number
    // included, among them) and is of `block`'s layout.
    let b = unsafe { Large::resized(p.cast(), block) };
    let data = b.data();
    front.link_large(b);
    Ok(data)
}
