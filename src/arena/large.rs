//! Large blocks: a request of at least [`LARGE_THRESHOLD`] bytes through the `Allocator` methods
//! (a collection's buffer), a block that grows to that size, and a typed request of that size
//! that does not fit the current chunk get a block of their own from the backing allocator,
//! outside the chunk ring. Memory follows the data: such a block grows and shrinks through the
//! backing allocator's `grow`/`shrink` (realloc, which on glibc moves large blocks by remapping
//! pages rather than copying), and once freed (by `deallocate`, a reset, the exit of the scope it
//! was made in) it goes back to the backing allocator or is kept for the next cycles' requests
//! within what the cycles before had in use (see `large_spares`); drop frees every one.
//!
//! A block is `[header | padding | data]`, aligned to the data's alignment (at least 16); the
//! header links it into the owner's list of large blocks, newest first. Each block carries a
//! sequence number, taken when it is made and kept however it is resized or moved since, so that
//! a scope's exit (or a checkpoint's restore) frees exactly the blocks made since it began: those
//! are the newest ones. A block that existed before a checkpoint is never freed by its restore.
//!
//! This module keeps the list and the block headers; the owner (an arena, or a `SyncArena` under
//! its lock) calls the backing allocator, checks its limit and links blocks in.
//!
//! Why the threshold is a fixed 64 KiB: below it a block stays a bump block, so small and
//! mid-sized blocks keep bump speed and share chunks; at 64 KiB (16 pages) one backing call per
//! block is small next to writing the block (and a loop's later cycles take kept blocks with
//! none), and a growing collection has left behind only the chunks its smaller sizes took. A lower threshold saves little more memory for a growing
//! `Vec` or hash table, a higher one leaves their abandoned buffers in the chunks (the memory
//! suite of `benches/` measures both).

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

/// Requests of at least this many bytes that do not fit the current chunk get a block of their
/// own (see the module documentation for why this value).
pub(crate) const LARGE_THRESHOLD: usize = 64 * 1024;

/// The least alignment of a large block (its header's fields need 8).
const BLOCK_ALIGN: usize = 16;

/// The header at the start of every large block.
#[repr(C)]
struct LargeHeader {
    /// The next newer block of the list (`None` for the newest).
    newer: Option<NonNull<LargeHeader>>,
    /// The next older block.
    older: Option<NonNull<LargeHeader>>,
    /// Bytes of the whole block (its layout's size).
    size: usize,
    /// Alignment of the whole block (its layout's alignment).
    align: usize,
    /// When the block was made (kept across resizes): larger is newer.
    seq: u64,
    /// For the last block of a chunk that grew out of it: 1 + the chunk bytes in use before it
    /// then (so that the chunk that holds the block where it started is known); 0 otherwise.
    origin: usize,
}

/// The layout of the whole block for data of `data`'s layout, and the offset of the data; `None`
/// when it overflows.
/// The block's size is rounded up to a multiple of 16, as a chunk's is (what a typical `malloc`
/// hands out anyway), so the data may hold up to 15 bytes more than asked.
pub(crate) fn block_layout(data: Layout) -> Option<(Layout, usize)> {
    let align = data.align().max(BLOCK_ALIGN);
    let offset = offset_for(align);
    let size = offset
        .checked_add(data.size())?
        .checked_next_multiple_of(BLOCK_ALIGN)?;
    Some((Layout::from_size_align(size, align).ok()?, offset))
}

/// How a large block whose block has layout `block` goes from the caller's `old` layout to `new`
/// (see [`resize_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resize {
    /// `new` is empty: the block goes back, the caller gets a dangling pointer.
    Free,
    /// `new` is below the threshold: the data moves into a block of the arena's chunks, where
    /// the caller's later `deallocate` and `grow` (with a layout below the threshold, which is
    /// never looked up among the large blocks) find it as any block of that size.
    IntoChunks,
    /// The alignment changes: the data moves to a new large block of this layout, which takes
    /// the old block's place among the large blocks.
    NewBlock(Layout),
    /// `new` fits the room the block was given: nothing moves, no call.
    InPlace,
    /// The backing allocator grows or shrinks the block to this layout (keeping its place).
    Backing(Layout),
}

/// The one decision both arenas make to resize a large block of layout `block` from the
/// caller's `old` to `new`. With `settle` (a block its owner gives up for good, see
/// `RawArena::shrink_settled`) it stays a large block at any size. `None` when `new`'s block
/// layout overflows.
pub(crate) fn resize_plan(block: Layout, old: Layout, new: Layout, settle: bool) -> Option<Resize> {
    if new.size() == 0 {
        return Some(Resize::Free);
    }
    let (wanted, _) = block_layout(new)?;
    Some(if new.size() < LARGE_THRESHOLD && !settle {
        Resize::IntoChunks
    } else if wanted.align() != block.align() {
        Resize::NewBlock(wanted)
    } else if new.size() >= old.size() && wanted.size() <= block.size() {
        Resize::InPlace
    } else {
        Resize::Backing(wanted)
    })
}

/// Bytes of data a block of `block`'s layout (from [`block_layout`]) holds.
pub(crate) fn data_size(block: Layout) -> usize {
    block.size() - offset_for(block.align())
}

/// Where the data of a block aligned to `align` (a power of two) starts: the header, rounded up
/// to the alignment. Written with a mask (no panicking path for an alignment read back from a
/// header, which the optimizer cannot see is non-zero).
fn offset_for(align: usize) -> usize {
    let mask = align.wrapping_sub(1);
    (size_of::<LargeHeader>() + mask) & !mask
}

/// A large block, seen through its header (a copyable handle; the list owns the memory).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Large(NonNull<LargeHeader>);

impl Large {
    /// Writes the header of a fresh block of `layout` (from [`block_layout`]); not linked yet.
    ///
    /// # Safety
    /// `block` is valid for writes of `layout.size()` bytes, aligned to `layout.align()`, and
    /// not used by anything else.
    pub(crate) unsafe fn init(block: NonNull<u8>, layout: Layout) -> Large {
        let header = block.cast::<LargeHeader>();
        // SAFETY: the caller guarantees the block is writable and aligned (at least 16, enough
        // for the header), and every block layout is at least a header long.
        unsafe {
            header.write(LargeHeader {
                newer: None,
                older: None,
                size: layout.size(),
                align: layout.align(),
                seq: 0,
                origin: 0,
            })
        };
        Large(header)
    }

    /// The large block whose header starts at `block` (what [`block`](Self::block) returned).
    ///
    /// # Safety
    /// `block` is the start of a block whose header [`init`](Self::init) wrote, still held.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by `SyncArena`
    pub(crate) unsafe fn from_block(block: NonNull<u8>) -> Large {
        Large(block.cast())
    }

    /// Writes the header of a block a source handed out for `block` (from [`block_layout`]): its
    /// length, at least `block`'s size, is the size it is given back with (a source may hand
    /// out a larger block it kept for reuse). Not linked yet.
    ///
    /// # Safety
    /// As for [`init`](Self::init), for the whole of `taken`, aligned to `block.align()`.
    pub(crate) unsafe fn init_taken(taken: NonNull<[u8]>, block: Layout) -> Large {
        debug_assert!(taken.len() >= block.size());
        let layout = Layout::from_size_align(taken.len(), block.align()).unwrap_or(block);
        // SAFETY: forwarded from the caller; `layout` is `block`'s alignment and a size the
        // block has.
        unsafe { Large::init(taken.cast(), layout) }
    }

    /// The block of `b`, resized by the backing allocator to `layout` (moved or not): its header
    /// came along with its bytes; only the size changes.
    ///
    /// # Safety
    /// `block` holds a header written by `init` (copied there by the resize), is of `layout`,
    /// whose alignment is the one the header records, and is not linked anywhere.
    pub(crate) unsafe fn resized(block: NonNull<u8>, layout: Layout) -> Large {
        let b = Large(block.cast());
        debug_assert_eq!(b.size_align().1, layout.align());
        // SAFETY: as in `set_newer`; the block is the caller's alone.
        unsafe { (*b.0.as_ptr()).size = layout.size() };
        b
    }

    /// The header's raw pointer. Every access goes through one field at a time (never the whole
    /// header by value): a `SyncArena` reads a block's layout without its lock while another
    /// thread relinks the list under it, which writes only the links of the blocks it touches.
    fn raw(self) -> *mut LargeHeader {
        self.0.as_ptr()
    }

    fn newer(self) -> Option<NonNull<LargeHeader>> {
        // SAFETY: a `Large` exists only for a header written by `init` whose block its list (or
        // its owner, between an unlink and a free) still holds. The links are read and written
        // only by the list's owner (under its lock, for a `SyncArena`).
        unsafe { (*self.raw()).newer }
    }

    fn older(self) -> Option<NonNull<LargeHeader>> {
        // SAFETY: as in `newer`.
        unsafe { (*self.raw()).older }
    }

    /// The next older block of its list (the list must not change meanwhile).
    pub(crate) fn next_older(self) -> Option<Large> {
        self.older().map(Large)
    }

    /// The block's sequence number: larger is newer.
    pub(crate) fn seq(self) -> u64 {
        // SAFETY: as in `newer`.
        unsafe { (*self.raw()).seq }
    }

    /// The block's size and alignment: written when the block is made or resized (while no list
    /// holds it), never by a list, so these may be read without the list owner's lock.
    fn size_align(self) -> (usize, usize) {
        // SAFETY: as in `newer`; `size` and `align` change only while the block is unlinked and
        // its owner's alone (see `resized`).
        unsafe { ((*self.raw()).size, (*self.raw()).align) }
    }

    fn set_newer(self, newer: Option<NonNull<LargeHeader>>) {
        // SAFETY: as in `header`; the owner's list is used by one thread at a time.
        unsafe { (*self.0.as_ptr()).newer = newer }
    }

    fn set_older(self, older: Option<NonNull<LargeHeader>>) {
        // SAFETY: as in `set_newer`.
        unsafe { (*self.0.as_ptr()).older = older }
    }

    /// See [`LargeHeader::origin`].
    pub(crate) fn origin(self) -> usize {
        // SAFETY: as in `newer`; written only by the block's owner.
        unsafe { (*self.raw()).origin }
    }

    pub(crate) fn set_origin(self, origin: usize) {
        // SAFETY: as in `set_newer`.
        unsafe { (*self.0.as_ptr()).origin = origin }
    }

    fn set_seq(self, seq: u64) {
        // SAFETY: as in `set_newer`.
        unsafe { (*self.0.as_ptr()).seq = seq }
    }

    /// The start of the block, with its provenance.
    pub(crate) fn block(self) -> NonNull<u8> {
        self.0.cast()
    }

    /// The layout the block was taken with.
    pub(crate) fn layout(self) -> Layout {
        let (size, align) = self.size_align();
        // SAFETY: the block was allocated with exactly this size and alignment.
        unsafe { Layout::from_size_align_unchecked(size, align) }
    }

    /// Where the data starts, with the block's provenance.
    pub(crate) fn data(self) -> NonNull<u8> {
        // SAFETY: the offset lies within the block (a block holds its header and its data).
        unsafe { self.block().add(offset_for(self.size_align().1)) }
    }

    /// Bytes of data the block holds.
    pub(crate) fn data_size(self) -> usize {
        data_size(self.layout())
    }
}

/// The large blocks of an arena, newest first, with their bytes (the total the limit and the
/// allowance read on every large request; the count and the data bytes, for the statistics,
/// are walked: the lists are short, and every arena carries the state).
pub(crate) struct LargeList {
    newest: Cell<Option<Large>>,
    /// The sequence number of the next block made.
    next_seq: Cell<u64>,
    /// Bytes of the blocks (their layouts' sizes).
    bytes: Cell<usize>,
}

impl LargeList {
    pub(crate) const fn new() -> LargeList {
        LargeList {
            newest: Cell::new(None),
            next_seq: Cell::new(0),
            bytes: Cell::new(0),
        }
    }

    /// Whether the list holds no block.
    pub(crate) fn is_empty(&self) -> bool {
        self.newest.get().is_none()
    }

    /// Blocks held (walked).
    pub(crate) fn count(&self) -> usize {
        self.blocks().count()
    }

    /// Bytes held (whole blocks).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.get()
    }

    /// Bytes of data held (walked).
    pub(crate) fn data_bytes(&self) -> usize {
        self.blocks().map(Large::data_size).sum()
    }

    /// The sequence number the next block will get: blocks made from now on have at least this
    /// one ([`pop_since`](Self::pop_since)).
    pub(crate) fn mark(&self) -> u64 {
        self.next_seq.get()
    }

    /// Links `block`, a new block, in as the newest, with a new sequence number, and counts it.
    pub(crate) fn push(&self, block: Large) {
        let seq = self.next_seq.get();
        self.next_seq.set(seq + 1);
        block.set_seq(seq);
        self.link_before(block, None, self.newest.get());
        self.count_in(block);
    }

    /// Links `block` in where its sequence number belongs and counts it: where an unlinked block
    /// goes back after a resize (done or failed), in the place it had.
    pub(crate) fn reinsert(&self, block: Large) {
        let seq = block.seq();
        let (mut newer, mut older) = (None, self.newest.get());
        while let Some(o) = older {
            if o.seq() < seq {
                break;
            }
            newer = Some(o);
            older = o.older().map(Large);
        }
        self.link_before(block, newer, older);
        self.count_in(block);
    }

    fn link_before(&self, block: Large, newer: Option<Large>, older: Option<Large>) {
        block.set_newer(newer.map(|n| n.0));
        block.set_older(older.map(|o| o.0));
        match newer {
            Some(n) => n.set_older(Some(block.0)),
            None => self.newest.set(Some(block)),
        }
        if let Some(o) = older {
            o.set_newer(Some(block.0));
        }
    }

    fn count_in(&self, block: Large) {
        self.bytes.set(self.bytes.get() + block.layout().size());
    }

    /// Links `new`, a fresh block that took over the data of `old` (unlinked), where `old` was:
    /// with its sequence number.
    pub(crate) fn reinsert_for(&self, old: Large, new: Large) {
        new.set_seq(old.seq());
        self.reinsert(new);
    }

    /// Takes `block` out of the list and its totals (it is then the caller's to free).
    pub(crate) fn unlink(&self, block: Large) {
        let (newer, older) = (block.newer(), block.older());
        match newer {
            Some(n) => Large(n).set_older(older),
            None => self.newest.set(older.map(Large)),
        }
        if let Some(o) = older {
            Large(o).set_newer(newer);
        }
        block.set_newer(None);
        block.set_older(None);
        self.bytes.set(self.bytes.get() - block.layout().size());
    }

    /// The block whose data starts at `p`'s address, if one of the list's does, with the list's
    /// own pointer (`p` may carry a narrower provenance). `align` is the data's alignment (the
    /// `Allocator` contract gives the same alignment back). Walks from the newest block: the
    /// blocks a collection frees are mostly its newest.
    pub(crate) fn find(&self, p: NonNull<u8>, align: usize) -> Option<Large> {
        let offset = offset_for(align.max(BLOCK_ALIGN));
        let target = p.addr().get().checked_sub(offset)?;
        let mut b = self.newest.get();
        while let Some(x) = b {
            if x.0.addr().get() == target {
                return Some(x);
            }
            b = x.next_older();
        }
        None
    }

    /// The newest block.
    pub(crate) fn newest(&self) -> Option<Large> {
        self.newest.get()
    }

    /// The blocks, newest first. The list must not change while this is read.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = Large> + '_ {
        core::iter::successors(self.newest.get(), |b| b.next_older())
    }

    /// Unlinks and returns the newest block if it was made at or after `mark`.
    pub(crate) fn pop_since(&self, mark: u64) -> Option<Large> {
        let b = self.newest.get().filter(|b| b.seq() >= mark)?;
        self.unlink(b);
        Some(b)
    }

    /// Moves every block of `other` into this list as new blocks (newest, with new sequence
    /// numbers: a scope of this list's owner that is active now frees them when it ends),
    /// emptying `other`. (For `LocalArena`, a `std` type.)
    #[cfg(feature = "std")]
    pub(crate) fn adopt(&self, other: &LargeList) {
        while let Some(b) = other.pop_since(0) {
            self.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resize_plans() {
        let l = |size, align| Layout::from_size_align(size, align).unwrap();
        let big = l(100_001, 8);
        let (block, _) = block_layout(big).unwrap();
        assert_eq!(resize_plan(block, big, l(0, 8), false), Some(Resize::Free));
        assert_eq!(
            resize_plan(block, big, l(1000, 8), false),
            Some(Resize::IntoChunks)
        );
        assert_eq!(
            resize_plan(block, big, l(1000, 8), true),
            Some(Resize::Backing(block_layout(l(1000, 8)).unwrap().0))
        );
        assert_eq!(
            resize_plan(block, big, l(100_000, 64), false),
            Some(Resize::NewBlock(block_layout(l(100_000, 64)).unwrap().0))
        );
        // The block was rounded up to 16 bytes: a grow into that is in place.
        assert_eq!(
            resize_plan(block, big, l(100_010, 8), false),
            Some(Resize::InPlace)
        );
        assert_eq!(
            resize_plan(block, big, l(200_000, 8), false),
            Some(Resize::Backing(block_layout(l(200_000, 8)).unwrap().0))
        );
        assert_eq!(
            resize_plan(block, big, l(isize::MAX as usize - 7, 8), false),
            None
        );
    }

    #[test]
    fn block_layouts_hold_the_header_and_keep_the_data_aligned() {
        for align in [1, 8, 16, 32, 64, 4096] {
            let data = Layout::from_size_align(LARGE_THRESHOLD + 3, align).unwrap();
            let (block, offset) = block_layout(data).unwrap();
            assert!(offset >= size_of::<LargeHeader>());
            assert_eq!(offset % align, 0);
            assert_eq!(block.align(), align.max(BLOCK_ALIGN));
            assert_eq!(block.size(), (offset + data.size()).next_multiple_of(16));
        }
        let huge = Layout::from_size_align(isize::MAX as usize - 15, 16).unwrap();
        assert!(block_layout(huge).is_none());
    }
}
