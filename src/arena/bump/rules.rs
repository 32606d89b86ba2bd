//! The `Allocator` rules of [`RawArena`] (docs/DESIGN.md §3.1): allocate, deallocate, grow and
//! shrink, in place when the block is the scope's last, else through [`resize`]; the typed API's
//! mark and rewind; and the answer of a failed `Allocator` method ([`refuse`], [`raise_if_asked`]).

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::AllocError;

use super::front::RawFront;
use super::{RawArena, dangling, satisfies};
use crate::arena::chunk::ChunkSource;
use crate::arena::large::LARGE_THRESHOLD;
use crate::arena::min_align::{placed, placed_parts, placed_unchecked};
use crate::arena::poison::{poison, unpoison};
use crate::arena::resize;
use crate::error::Failure;

impl RawArena {
    /// The start of `[p, p + size)` when it is the last block of the current scope (it ends at
    /// `ptr`; no block of an enclosing scope does, see the invariants of `bump`), re-derived from
    /// our own position: the caller's `p` may carry a narrower provenance than the chunk.
    #[inline(always)]
    pub(super) fn last_start(&self, p: NonNull<u8>, size: usize) -> Option<NonNull<u8>> {
        let ptr = self.ptr.get();
        if p.addr().get().wrapping_add(size) != ptr.addr().get() {
            return None;
        }
        // `p`'s address with our pointer's provenance (`p` lies in the current chunk, at or
        // below `ptr`). Spelled as `with_addr` rather than `ptr - size`, the compiler sees that the
        // result is `p`'s value and reuses the caller's register: a growing collection's
        // in-place path loses a subtraction and a register copy.
        Some(ptr.with_addr(p.addr()))
    }

    /// [`alloc_block`](Self::alloc_block) for the `Allocator` methods: the failure is answered on the cold
    /// path ([`alloc_slow_or_refuse`](Self::alloc_slow_or_refuse)). `layout` is placed widened to
    /// the minimum alignment `min` (1, or an `Arena`'s `MIN_ALIGN`; see `min_align`), whose
    /// `Layout` is checked on the cold paths only.
    #[inline(always)]
    fn allocator_alloc<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        min: usize,
        src: &S,
    ) -> Result<NonNull<u8>, AllocError> {
        let (size, align) = placed_parts(layout, min);
        // An empty layout gets a dangling pointer; a collection's buffer of at least the
        // threshold is a large block even where the chunk has room: it moves as the collection
        // grows, and in a chunk each move would leave the old buffer behind until the reset.
        // Both in one test (`size - 1` wraps for 0), which folds away for a layout known at
        // compile time.
        if size.wrapping_sub(1) >= LARGE_THRESHOLD - 1 {
            if size == 0 {
                return Ok(dangling(align));
            }
            return self.alloc_large_or_refuse(placed_or_refuse(layout, min, src)?, src);
        }
        match self.bump_parts(size, align, min) {
            Some(p) => Ok(p),
            None => self.alloc_slow_or_refuse(placed_or_refuse(layout, min, src)?, src),
        }
    }

    /// `Allocator::allocate`, at the minimum alignment `min`.
    #[inline(always)]
    pub(crate) fn allocate<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        min: usize,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.allocator_alloc(layout, min, src)?;
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// `Allocator::allocate_zeroed`, at the minimum alignment `min`.
    #[inline]
    pub(crate) fn allocate_zeroed<S: ChunkSource + ?Sized>(
        &self,
        layout: Layout,
        min: usize,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let p = self.allocator_alloc(layout, min, src)?;
        // SAFETY: `p` is a fresh block of `layout.size()` writable bytes; no reference is formed.
        unsafe { p.write_bytes(0, layout.size()) };
        Ok(NonNull::slice_from_raw_parts(p, layout.size()))
    }

    /// `Allocator::deallocate`: rolls the position back when `p` is the last block of the scope;
    /// a large block (only a block of at least the threshold can be one) goes back to the
    /// backing allocator.
    ///
    /// # Safety
    /// `p` was allocated by this arena with `layout` (any size between the requested size and the
    /// returned length) and is not used afterwards; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn deallocate<S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<u8>,
        layout: Layout,
        src: &S,
    ) {
        // A freed block is never touched again (a rolled-back one is handed out anew by a later
        // bump, which unpoisons it).
        if let Some(start) = self.last_start(p, layout.size()) {
            if layout.size() >= LARGE_THRESHOLD {
                // A roll-back that big is what retention must see (the size test folds away for
                // a layout known at compile time).
                self.note_peak(self.in_use());
            }
            poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
            self.ptr.set(start);
        } else if layout.size() >= LARGE_THRESHOLD {
            // SAFETY: forwarded from the caller.
            unsafe { self.deallocate_not_last(p, layout, src) }
        } else {
            poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
        }
    }

    /// [`deallocate`](Self::deallocate) of a block bumped in the current chunk (never a large
    /// block): rolled back when it is last.
    ///
    /// # Safety
    /// As for `deallocate`; the block lies in a chunk.
    #[inline(always)]
    pub(crate) unsafe fn release_bump(&self, p: NonNull<u8>, layout: Layout) {
        poison(p.as_ptr(), p.as_ptr().wrapping_add(layout.size()));
        if let Some(start) = self.last_start(p, layout.size()) {
            self.ptr.set(start);
        }
    }

    /// The position, as an address: a mark for [`rewind`](Self::rewind).
    #[inline(always)]
    pub(crate) fn mark(&self) -> usize {
        self.ptr.get().addr().get()
    }

    /// Moves the position back over the padding in front of a block that was just given back:
    /// from `start` to `mark`, when the position is at `start` and `mark` lies in the current
    /// chunk (or headless piece), less than `align` bytes before it (so that only that padding
    /// lies between them).
    ///
    /// # Safety
    /// `mark` was taken, by [`mark`](Self::mark), just before the block that starts at `start`
    /// (of alignment `align`) was allocated, and that block has been given back.
    #[inline]
    pub(crate) unsafe fn rewind(&self, start: NonNull<u8>, mark: usize, align: usize) {
        let ptr = self.ptr.get();
        let Some(first) = self.current_start() else {
            return;
        };
        let start = start.addr().get();
        if ptr.addr().get() == start
            && mark >= first.addr().get()
            && mark <= start
            && start - mark < align
        {
            // `mark` lies in the current chunk (or headless piece) at or before `ptr`, so it is
            // non-null; our own pointer carries the chunk's provenance.
            if let Some(m) = core::num::NonZero::new(mark) {
                self.ptr.set(ptr.with_addr(m));
            }
        }
    }

    /// Grows a block: in place when the block is last, its start satisfies the new alignment
    /// and the chunk has room (no stack frame on this path); otherwise
    /// [`grow_elsewhere`](Self::grow_elsewhere). `ALLOCATOR` is true on the `Allocator` methods'
    /// path, where a failure at the allocation limit may panic on the cold path (see
    /// [`raise_if_asked`]), and false for the typed helpers, which get the failure's cause.
    ///
    /// `old` and `new` are the caller's layouts, placed widened to the minimum alignment `min`
    /// (see `min_align`): the in-place path reads the widened sizes and alignment as numbers, the
    /// cold path checks the widened `new`. With `zeroed`, every byte from the caller's old size on
    /// reads zero, the widened old block's padding included.
    ///
    /// # Safety
    /// The `Allocator::grow` contract: `p` is a live block of this arena fitting `old`, and
    /// `new.size() >= old.size()`; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn grow<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
        min: usize,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        debug_assert!(new.size() >= old.size());
        let (old_size, old_align) = placed_parts(old, min);
        let (new_size, new_align) = placed_parts(new, min);
        if let Some(start) = self.last_start(p, old_size) {
            let room = self.end.get().addr().get() - start.addr().get();
            let addr = start.addr().get();
            // SAFETY: `start` is `p`'s address, a block placed at the widened `old` alignment
            // (the contract).
            unsafe { core::hint::assert_unchecked(addr & (old_align - 1) == 0) };
            if addr & (new_align - 1) == 0 && new_size <= room {
                // SAFETY: `new_size <= end - start`.
                self.ptr.set(unsafe { start.add(new_size) });
                unpoison(start.as_ptr(), self.ptr.get().as_ptr());
                if zeroed {
                    // SAFETY: `[start, start + new_size)` is ours now; the tail past the
                    // caller's old size is written through a raw pointer.
                    unsafe { start.add(old.size()).write_bytes(0, new_size - old.size()) };
                }
                return Ok(start);
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            if zeroed {
                self.grow_elsewhere::<S, ALLOCATOR, true>(p, old, new, min, src)
            } else {
                self.grow_elsewhere::<S, ALLOCATOR, false>(p, old, new, min, src)
            }
        }
    }

    /// The common way a block that is not last grows: a small block copied to a fresh block
    /// bumped in the current chunk. `None` (nothing changed) when the block is last, large or
    /// empty, `new` is of at least the threshold (a large block), or the current chunk has no
    /// room for `new`; the rest of
    /// [`grow_elsewhere`](Self::grow_elsewhere) then does the work. It is the first thing
    /// `grow_elsewhere` tries, and everything else is one more call away, so that this path
    /// saves two registers rather than six (a `Vec` of `Vec`s grown by pushes spends most of its
    /// growth here).
    ///
    /// # Safety
    /// As for [`grow`](Self::grow), `old_size` being the size of the caller's old layout.
    #[inline(always)]
    unsafe fn grow_to_bump(
        &self,
        p: NonNull<u8>,
        old_size: usize,
        new: Layout,
    ) -> Option<NonNull<u8>> {
        // An empty `new` takes no room (not even padding): `grow_moving` answers it.
        if old_size >= LARGE_THRESHOLD
            || new.size() == 0
            || new.size() >= LARGE_THRESHOLD
            || self.last_start(p, old_size).is_some()
        {
            return None;
        }
        let q = self.bump(new)?;
        // SAFETY: `q` is a fresh block bumped after every live block of the chunk and `p` is a
        // live block that is not a large one, so they do not overlap; `p` is readable for
        // `old_size` bytes, `q` writable for `new.size() >= old_size`.
        unsafe { ptr::copy_nonoverlapping(p.as_ptr(), q.as_ptr(), old_size) };
        poison(p.as_ptr(), p.as_ptr().wrapping_add(old_size));
        Some(q)
    }

    /// The rest of [`grow`](Self::grow): the block moves, within the chunk when it is last,
    /// else to a fresh block; `old` and `new` are widened to `min` here (a widened `new` past
    /// what a `Layout` allows is `CapacityOverflow`).
    ///
    /// # Safety
    /// As for [`grow`](Self::grow).
    #[cold]
    #[inline(never)]
    unsafe fn grow_elsewhere<S: ChunkSource + ?Sized, const ALLOCATOR: bool, const ZEROED: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        min: usize,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        let asked = old.size();
        // SAFETY: `p` fits `old` (the contract), so the widened `old` was valid when the block
        // was placed.
        let old = unsafe { placed_unchecked(old, min) };
        let new = placed(new, min)?;
        if !ZEROED {
            // SAFETY: forwarded from the caller.
            if let Some(q) = unsafe { self.grow_to_bump(p, old.size(), new) } {
                return Ok(q);
            }
        }
        // SAFETY: forwarded from the caller.
        let q = unsafe { self.grow_moving_or_raise::<S, ALLOCATOR>(p, old, new, ZEROED, src) }?;
        if ZEROED {
            // The widened old block's padding was copied with it: the caller reads it as zeros.
            // SAFETY: `[asked, old.size())` lies inside the grown block, which is ours.
            unsafe { q.add(asked).write_bytes(0, old.size() - asked) };
        }
        Ok(q)
    }

    /// The rest of [`grow_elsewhere`](Self::grow_elsewhere), out of line so that the common
    /// case before it saves few registers.
    ///
    /// # Safety
    /// As for [`grow`](Self::grow).
    #[cold]
    #[inline(never)]
    unsafe fn grow_moving_or_raise<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
        src: &S,
    ) -> Result<NonNull<u8>, Failure> {
        // SAFETY: forwarded from the caller.
        let grown = unsafe { resize::grow(&RawFront::new(self, src), p, old, new, zeroed) };
        if ALLOCATOR {
            if let Err(f) = grown {
                // Everything the attempt did is undone: the arena may panic now.
                raise_if_asked(f, || src);
            }
        }
        grown
    }

    /// Shrinks a block: the last block gives its tail back in place; any other block keeps its
    /// place and length (the slack is lost until reset). A block must move only when the new
    /// alignment is larger than its start satisfies ([`shrink_elsewhere`](Self::shrink_elsewhere)).
    /// `ALLOCATOR` as for [`grow`](Self::grow): on the `Allocator` methods' path a failure at the
    /// limit may panic there.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract: `p` is a live block of this arena fitting `old`, and
    /// `new.size() <= old.size()`; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn shrink<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_as::<S, ALLOCATOR, false>(p, old, new, src) }
    }

    /// Shrinks a block its owner gives up for good, to become a slice that lives as long as the
    /// arena's blocks (`into_slice`): it is never resized or deallocated again, only freed with
    /// everything else by a reset, its scope's exit or drop. So it never moves to a new block:
    /// the last block gives its tail back, a large block shrinks through the backing allocator
    /// and stays a large block at any size (its place among them kept), and any other block
    /// keeps its place. A block made before a checkpoint is thus still there when it is
    /// restored.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract, with `new.align() == old.align()`; the block is not
    /// resized or deallocated afterwards; `src` is the arena's source.
    #[inline(always)]
    pub(crate) unsafe fn shrink_settled<S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.align() == old.align());
        // SAFETY: forwarded from the caller.
        unsafe { self.shrink_as::<S, false, true>(p, old, new, src) }
    }

    /// [`shrink`](Self::shrink), and with `SETTLE` [`shrink_settled`](Self::shrink_settled).
    ///
    /// # Safety
    /// As for `shrink`, and with `SETTLE` as for `shrink_settled`.
    #[inline(always)]
    unsafe fn shrink_as<S: ChunkSource + ?Sized, const ALLOCATOR: bool, const SETTLE: bool>(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.size() <= old.size());
        // SAFETY: `p` was allocated with `old` (the contract).
        if !unsafe { satisfies(p, old, new) } {
            // SAFETY: forwarded from the caller.
            return unsafe { self.shrink_elsewhere::<S, ALLOCATOR, SETTLE>(p, old, new, src) };
        }
        let Some(start) = self.last_start(p, old.size()) else {
            if old.size() >= LARGE_THRESHOLD {
                // Possibly a large block.
                // SAFETY: forwarded from the caller.
                return unsafe { self.shrink_elsewhere::<S, ALLOCATOR, SETTLE>(p, old, new, src) };
            }
            // The caller may keep using the whole block.
            return Ok(NonNull::slice_from_raw_parts(p, old.size()));
        };
        // SAFETY: `new.size() <= old.size()`, so this stays inside the old block.
        let new_end = unsafe { start.add(new.size()) };
        poison(new_end.as_ptr(), self.ptr.get().as_ptr());
        self.ptr.set(new_end);
        Ok(NonNull::slice_from_raw_parts(start, new.size()))
    }

    /// The rest of [`shrink`](Self::shrink) (see [`resize::shrink`]): a large block shrinks
    /// through the backing allocator (with `SETTLE`, staying a large block at any size), and a
    /// block that needs a larger alignment moves.
    ///
    /// # Safety
    /// As for [`shrink`](Self::shrink), and with `SETTLE` as for
    /// [`shrink_settled`](Self::shrink_settled).
    #[cold]
    #[inline(never)]
    unsafe fn shrink_elsewhere<
        S: ChunkSource + ?Sized,
        const ALLOCATOR: bool,
        const SETTLE: bool,
    >(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        src: &S,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { resize::shrink(&RawFront::new(self, src), p, old, new, SETTLE) }
            .map_err(|f| shrink_failed::<S, ALLOCATOR>(f, src))
    }
}

/// The answer of a shrink that failed (it had to move the block): for the `Allocator` methods
/// ([`refuse`]) the limit's panic when the arena asks for it, else `AllocError`.
#[inline(always)]
fn shrink_failed<S: ChunkSource + ?Sized, const ALLOCATOR: bool>(
    f: Failure,
    src: &S,
) -> AllocError {
    if ALLOCATOR {
        refuse(f, || src)
    } else {
        AllocError
    }
}

/// The answer of an `Allocator` method that failed: `AllocError`, or the limit's panic (see
/// [`raise_if_asked`]).
#[cold]
#[inline(never)]
pub(crate) fn refuse<'s, S: ChunkSource + ?Sized + 's>(
    f: Failure,
    src: impl FnOnce() -> &'s S,
) -> AllocError {
    raise_if_asked(f, src);
    AllocError
}

/// Raises the limit's panic when `f` is the allocation limit and the arena that owns the limit
/// (`src()`) asks for it (`set_panic_on_limit`); otherwise does nothing.
///
/// Called on the failure paths of the `Allocator` methods only, once the failed request has
/// undone everything it did (every rule here changes nothing when it fails), so the arena is
/// consistent and usable when the panic unwinds. It is handed a closure that finds the limit's
/// owner (a `LocalArena` loads its `SyncArena` pointer for that), so that even that load stays
/// off the fast paths.
#[inline]
pub(crate) fn raise_if_asked<'s, S: ChunkSource + ?Sized + 's>(
    f: Failure,
    src: impl FnOnce() -> &'s S,
) {
    if let Failure::LimitReached { .. } = f {
        if src().panics_on_limit() {
            f.raise()
        }
    }
}

/// `layout` widened to the minimum alignment `min` for a cold path of the `Allocator` methods;
/// a size too large to widen is refused there as any other failure is ([`refuse`]).
#[inline(always)]
fn placed_or_refuse<S: ChunkSource + ?Sized>(
    layout: Layout,
    min: usize,
    src: &S,
) -> Result<Layout, AllocError> {
    placed(layout, min).map_err(|f| refuse(f, || src))
}
