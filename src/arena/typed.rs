//! The machinery under the typed API ([`BumpAlloc`](crate::BumpAlloc)): placing values, slices
//! and strings in an arena, panic-safely, over a few allocation primitives ([`Core`]) that every
//! arena type provides.
//!
//! The functions here return the crate's [`Failure`]; the trait's methods either panic with the
//! failure's message or return `AllocError`. Each is written once, generic over the arena type,
//! and monomorphised per type: `Arena<A>`, `ArenaRef` and `LocalArena` bump a [`RawArena`] (their
//! [`Core`] comes from [`OnRaw`]), `SyncArena` bumps its shared chunks with a compare-and-swap.

use core::alloc::Layout;
use core::fmt;
use core::mem;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::AllocError;

use super::bump::{RawArena, dangling};
use super::chunk::ChunkSource;
use super::min_align::{placed, placed_parts, placed_unchecked, shrunk};
use super::stats::ArenaStats;
use crate::error::Failure;

/// The allocation primitives the typed API is written over. Implemented by every arena type of
/// the crate and nameable only inside it: it is the supertrait that seals
/// [`BumpAlloc`](crate::BumpAlloc). Its methods are prefixed `core_` so that generic code bounded
/// by `BumpAlloc` (where a supertrait's methods are visible) meets no second `alloc` or
/// `allocate`.
pub trait Core {
    /// Bumps `layout` in the current chunk when it fits: the fast path, with no call. An empty
    /// layout may bump too (by its padding).
    fn core_bump(&self, layout: Layout) -> Option<NonNull<u8>>;

    /// Gives back a block [`core_bump`](Core::core_bump) handed out (rolled back when it is still
    /// the last block).
    ///
    /// # Safety
    /// `p` was bumped by `core_bump` of this arena with `layout`, and is not used afterwards.
    unsafe fn core_release_bump(&self, p: NonNull<u8>, layout: Layout);

    /// Allocates `layout` when the fast path failed: a new chunk, a spare, a large block. Cold,
    /// out of line. The layout is not empty, except at alignment 1 when `core_bump` failed for it
    /// (an empty layout then gets a dangling pointer); `core_bump` of a `RawArena` never fails
    /// for those.
    fn core_alloc_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure>;

    /// Allocates `layout`: an aligned dangling pointer when it is empty (no room taken), else the
    /// fast path or the slow one.
    #[inline(always)]
    fn core_alloc(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        if layout.size() == 0 {
            return Ok(dangling(layout.align()));
        }
        match self.core_bump(layout) {
            Some(p) => Ok(p),
            None => self.core_alloc_slow(layout),
        }
    }

    /// `Allocator::deallocate`.
    ///
    /// # Safety
    /// `p` is a live block of this arena allocated with `layout`, not used afterwards.
    unsafe fn core_deallocate(&self, p: NonNull<u8>, layout: Layout);

    /// `Allocator::grow`, with the failure's cause.
    ///
    /// # Safety
    /// The `Allocator::grow` contract for this arena.
    unsafe fn core_grow(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, Failure>;

    /// `Allocator::shrink`.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract for this arena.
    unsafe fn core_shrink(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError>;

    /// Shrinks a block that its owner gives up for good, to become a slice that lives as long as
    /// the arena's blocks (`into_slice`): as [`core_shrink`](Core::core_shrink), but the block
    /// never moves to a new block of the arena (a large block may shrink through the backing
    /// allocator), so that a checkpoint taken before it was made does not free it.
    ///
    /// # Safety
    /// The `Allocator::shrink` contract for this arena, with `new.align() == old.align()`; the
    /// block is not resized or deallocated afterwards.
    #[inline(always)]
    unsafe fn core_shrink_settled(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.core_shrink(p, old, new) }
    }

    /// The statistics ([`BumpAlloc::stats`](crate::BumpAlloc::stats)).
    fn core_stats(&self) -> ArenaStats;

    /// The position the next block would be bumped from (an address), for
    /// [`core_rewind`](Core::core_rewind).
    fn core_mark(&self) -> usize;

    /// Moves the position back over the padding in front of a block that was just given back
    /// (from `start` to `mark`), when nothing was allocated after it and `mark` lies in the
    /// current chunk less than `align` bytes before it; otherwise does nothing. (A `SyncArena`'s
    /// shared path never does: another thread may have bumped a block into that padding.)
    ///
    /// # Safety
    /// `mark` was taken by [`core_mark`](Core::core_mark) just before the block that starts at
    /// `start`, of alignment `align`, was allocated, and that block has been given back.
    unsafe fn core_rewind(&self, start: NonNull<u8>, mark: usize, align: usize);
}

/// The arena types that bump a [`RawArena`] of their own, taking chunks from a [`ChunkSource`]:
/// `Arena<A>` (its backing allocator), `ArenaRef` (through a vtable), `LocalArena` (pieces of its
/// `SyncArena`) and a `ScopeGuard` (its scope's).
pub(crate) trait OnRaw {
    /// Where the chunks come from.
    type Src: ChunkSource + ?Sized;
    /// The minimum alignment of every block (see `min_align`): 1, or the `MIN_ALIGN` of an
    /// `Arena` and of its views. Every layout reaches the [`RawArena`] widened to it.
    const MIN_ALIGN: usize = 1;
    /// The bump state.
    fn raw(&self) -> &RawArena;
    /// The source of the chunks.
    fn src(&self) -> &Self::Src;
}

// Every layout is widened to the minimum alignment before it reaches the `RawArena`: checked
// where a new size comes in (allocation, grow, shrink), unchecked where the layout is one the
// arena already placed a block with (its widened form was checked then).
impl<X: OnRaw + ?Sized> Core for X {
    #[inline(always)]
    fn core_bump(&self, layout: Layout) -> Option<NonNull<u8>> {
        let (size, align) = placed_parts(layout, X::MIN_ALIGN);
        self.raw().bump_parts(size, align, X::MIN_ALIGN)
    }

    #[inline(always)]
    unsafe fn core_release_bump(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: `p` was bumped with `layout` (the caller), so its widened form is valid.
        let layout = unsafe { placed_unchecked(layout, X::MIN_ALIGN) };
        // SAFETY: forwarded from the caller; the block was bumped with the widened layout.
        unsafe { self.raw().release_bump(p, layout) }
    }

    #[inline(always)]
    fn core_alloc_slow(&self, layout: Layout) -> Result<NonNull<u8>, Failure> {
        self.raw()
            .alloc_slow(placed(layout, X::MIN_ALIGN)?, false, self.src())
    }

    #[inline(always)]
    unsafe fn core_deallocate(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: `p` was allocated with `layout` (the caller), so its widened form is valid.
        let layout = unsafe { placed_unchecked(layout, X::MIN_ALIGN) };
        // SAFETY: forwarded from the caller, for the widened layout the block was placed with;
        // `src` is the arena's source.
        unsafe { self.raw().deallocate(p, layout, self.src()) }
    }

    #[inline(always)]
    unsafe fn core_grow(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, Failure> {
        // SAFETY: forwarded from the caller; `src` is the arena's source.
        unsafe {
            self.raw()
                .grow::<_, false>(p, old, new, false, X::MIN_ALIGN, self.src())
        }
    }

    #[inline(always)]
    unsafe fn core_shrink(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller, for the widened layouts, which are valid (see
        // `min_align::shrunk`); `src` is the arena's source.
        unsafe {
            let (old, new) = shrunk(old, new, X::MIN_ALIGN);
            self.raw().shrink::<_, false>(p, old, new, self.src())
        }
    }

    #[inline(always)]
    unsafe fn core_shrink_settled(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller, for the widened layouts, which are valid (see
        // `min_align::shrunk`) and keep equal alignments; `src` is the arena's source.
        unsafe {
            let (old, new) = shrunk(old, new, X::MIN_ALIGN);
            self.raw().shrink_settled(p, old, new, self.src())
        }
    }

    fn core_stats(&self) -> ArenaStats {
        self.raw().stats(self.src())
    }

    #[inline(always)]
    fn core_mark(&self) -> usize {
        self.raw().mark()
    }

    #[inline(always)]
    unsafe fn core_rewind(&self, start: NonNull<u8>, mark: usize, align: usize) {
        // SAFETY: forwarded from the caller; the block was placed at the widened alignment.
        unsafe { self.raw().rewind(start, mark, align.max(X::MIN_ALIGN)) }
    }
}

/// Why a fill with a fallible initialiser stopped: the arena could not allocate, or the
/// initialiser returned an error.
pub(crate) enum FillError<E> {
    Alloc(Failure),
    Init(E),
}

impl<E> From<Failure> for FillError<E> {
    fn from(f: Failure) -> FillError<E> {
        FillError::Alloc(f)
    }
}

/// Deallocates a block on drop: releases a block whose initialiser panicked or failed.
struct Release<'r, C: Core + ?Sized> {
    core: &'r C,
    ptr: NonNull<u8>,
    layout: Layout,
}

impl<C: Core + ?Sized> Drop for Release<'_, C> {
    fn drop(&mut self) {
        // SAFETY: the block was allocated from this arena with `layout` and holds no value that
        // is used again (its initialiser did not complete).
        unsafe { self.core.core_deallocate(self.ptr, self.layout) }
    }
}

/// [`Release`] for a block bumped in the current chunk (never a large block): rolls it back,
/// with no slow path to carry.
struct ReleaseBump<'r, C: Core + ?Sized> {
    core: &'r C,
    ptr: NonNull<u8>,
    layout: Layout,
}

impl<C: Core + ?Sized> Drop for ReleaseBump<'_, C> {
    fn drop(&mut self) {
        // SAFETY: the block was bumped in this arena's current chunk with `layout` and holds no
        // value that is used again.
        unsafe { self.core.core_release_bump(self.ptr, self.layout) }
    }
}

/// The layout of `[T; len]`, known to be valid because a block of it was allocated.
///
/// # Safety
/// `Layout::array::<T>(len)` succeeded before.
unsafe fn array_layout<T>(len: usize) -> Layout {
    // SAFETY: the caller saw `Layout::array::<T>(len)` succeed, so the product does not overflow
    // and rounds to at most isize::MAX.
    unsafe { Layout::from_size_align_unchecked(size_of::<T>() * len, align_of::<T>()) }
}

/// A growable buffer in the arena for collecting an iterator or formatted text: grows in place
/// while it is the last block, drops its elements and gives its block back if dropped unfinished.
pub(crate) struct Building<'r, T, C: Core + ?Sized> {
    core: &'r C,
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

impl<'r, T, C: Core + ?Sized> Building<'r, T, C> {
    pub(crate) fn new(core: &'r C) -> Self {
        let cap = if size_of::<T>() == 0 { usize::MAX } else { 0 };
        Building {
            core,
            ptr: NonNull::dangling(),
            len: 0,
            cap,
        }
    }

    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), Failure> {
        if self.cap - self.len >= additional {
            return Ok(());
        }
        let needed = self
            .len
            .checked_add(additional)
            .ok_or(Failure::CapacityOverflow)?;
        let new_cap = needed.max(self.cap.saturating_mul(2)).max(4);
        let new_layout = Layout::array::<T>(new_cap).map_err(|_| Failure::CapacityOverflow)?;
        let p = if self.cap == 0 {
            self.core.core_alloc(new_layout)?
        } else {
            // SAFETY: `ptr` is our live block of `cap` elements, allocated from this arena with
            // that array layout (valid, as it was allocated), and the new layout is larger.
            unsafe {
                self.core
                    .core_grow(self.ptr.cast(), array_layout::<T>(self.cap), new_layout)?
            }
        };
        self.ptr = p.cast();
        self.cap = new_cap;
        Ok(())
    }

    pub(crate) fn push(&mut self, value: T) -> Result<(), Failure> {
        self.reserve(1)?;
        // SAFETY: `len < cap` after the reserve, so the slot is inside our block.
        unsafe { self.ptr.add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Gives the unused tail back (in place when the block is last) and returns the elements.
    pub(crate) fn finish(self) -> NonNull<[T]> {
        let this = mem::ManuallyDrop::new(self);
        // SAFETY: the block is ours with `cap` elements, of which `len` are initialised; it
        // becomes the finished slice, which nothing resizes or frees.
        let ptr = unsafe { shrink_to_len(this.core, this.ptr, this.len, this.cap) };
        NonNull::slice_from_raw_parts(ptr, this.len)
    }
}

impl<T: Copy, C: Core + ?Sized> Building<'_, T, C> {
    pub(crate) fn extend_from_slice(&mut self, items: &[T]) -> Result<(), Failure> {
        self.reserve(items.len())?;
        // SAFETY: `len + items.len() <= cap` after the reserve; `items` is borrowed from outside
        // our block (a fresh one, or ours, which nobody else can see).
        unsafe {
            ptr::copy_nonoverlapping(items.as_ptr(), self.ptr.add(self.len).as_ptr(), items.len())
        };
        self.len += items.len();
        Ok(())
    }
}

impl<T, C: Core + ?Sized> Drop for Building<'_, T, C> {
    fn drop(&mut self) {
        // SAFETY: the first `len` elements are initialised and owned by us.
        unsafe { ptr::drop_in_place(NonNull::slice_from_raw_parts(self.ptr, self.len).as_ptr()) };
        if size_of::<T>() != 0 && self.cap != 0 {
            // SAFETY: our block of `cap` elements, not used again.
            unsafe {
                self.core
                    .core_deallocate(self.ptr.cast(), array_layout::<T>(self.cap))
            };
        }
    }
}

/// Gives the unused tail of an array block that its owner gives up for good back (in place when
/// it is the last block; a large block shrinks through the backing allocator, and may move there)
/// and returns where the array is now. The block never moves to a new block of the arena (see
/// [`Core::core_shrink_settled`]).
///
/// # Safety
/// `ptr` is a live block of this arena for `[T; cap]` (dangling when `cap` is 0 or `T` is
/// zero-sized), `len <= cap` (of them initialised, moved along if the block moves), and the block
/// is never resized or deallocated afterwards.
pub(crate) unsafe fn shrink_to_len<T, C: Core + ?Sized>(
    core: &C,
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
) -> NonNull<T> {
    if size_of::<T>() != 0 && cap > len {
        // SAFETY: the block was allocated for `cap` elements, so both array layouts (`len` is
        // smaller) were valid.
        let (old, new) = unsafe { (array_layout::<T>(cap), array_layout::<T>(len)) };
        // SAFETY: the caller's block of `old`, given up for good; both layouts have `T`'s
        // alignment. When it fails, the block is as it was.
        let shrunk = unsafe { core.core_shrink_settled(ptr.cast(), old, new) };
        if let Ok(p) = shrunk {
            return p.cast();
        }
    }
    ptr
}

/// Collects formatted text into a [`Building`] buffer.
struct FmtSink<'r, C: Core + ?Sized> {
    buf: Building<'r, u8, C>,
    failure: Option<Failure>,
}

impl<C: Core + ?Sized> fmt::Write for FmtSink<'_, C> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.extend_from_slice(s.as_bytes()).map_err(|e| {
            self.failure = Some(e);
            fmt::Error
        })
    }
}

/// Room for one `T` (a dangling pointer for a zero-sized `T`).
#[inline(always)]
pub(crate) fn place<T, C: Core + ?Sized>(core: &C) -> Result<NonNull<T>, Failure> {
    if size_of::<T>() == 0 {
        return Ok(NonNull::dangling());
    }
    core.core_alloc(Layout::new::<T>()).map(NonNull::cast)
}

/// Room for `len` values of `T`.
#[inline]
pub(crate) fn place_array<T, C: Core + ?Sized>(
    core: &C,
    len: usize,
) -> Result<NonNull<T>, Failure> {
    if size_of::<T>() == 0 {
        return Ok(NonNull::dangling());
    }
    let layout = Layout::array::<T>(len).map_err(|_| Failure::CapacityOverflow)?;
    core.core_alloc(layout).map(NonNull::cast)
}

/// [`place_array`] for the panicking API: a failure is raised in a cold path, so the fast path
/// returns a bare pointer (no `Result` through memory, no stack frame).
#[inline(always)]
#[track_caller]
pub(crate) fn place_array_or_raise<T, C: Core + ?Sized>(core: &C, len: usize) -> NonNull<T> {
    if size_of::<T>() == 0 {
        return NonNull::dangling();
    }
    let Ok(layout) = Layout::array::<T>(len) else {
        Failure::CapacityOverflow.raise()
    };
    // An empty array takes no room (docs/DESIGN.md §3.1). With alignment 1 the bump itself moves nothing
    // for it and never fails on an arena's own chunks (no padding, no size, and `ptr <= end`), so
    // the test is left out.
    if align_of::<T>() > 1 && layout.size() == 0 {
        return dangling(layout.align()).cast();
    }
    match core.core_bump(layout) {
        Some(p) => p.cast(),
        None => alloc_or_raise_slow(core, layout).cast(),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn alloc_or_raise_slow<C: Core + ?Sized>(core: &C, layout: Layout) -> NonNull<u8> {
    // Empty only at alignment 1, when the bump failed for it (see `Core::core_alloc_slow`).
    match core.core_alloc_slow(layout) {
        Ok(p) => p,
        Err(e) => e.raise(),
    }
}

/// [`slice_copy`] for the panicking API (see [`place_array_or_raise`]).
#[inline(always)]
#[track_caller]
pub(crate) fn slice_copy_or_raise<T: Copy, C: Core + ?Sized>(
    core: &C,
    items: &[T],
) -> NonNull<[T]> {
    let dst = place_array_or_raise::<T, _>(core, items.len());
    // SAFETY: `dst` is a fresh block for `items.len()` values.
    unsafe { copy_into(dst, items) }
}

/// Places `value` in a fresh block, for the panicking API: room from [`Core::core_alloc`] (a
/// failure raised), then the write. With no initialiser that could panic there is nothing to
/// release, so unlike [`alloc_with_or_raise`] the fast and the cold way to room meet before the
/// write, as in a `SyncArena`'s own allocation path (see its `core_alloc`): a loop of `alloc`
/// calls on a `SyncArena` then takes no extra jump per call. A debug build (no copy elision) also
/// keeps fewer copies of a large value on the stack than through a closure.
#[inline(always)]
#[track_caller]
pub(crate) fn put_or_raise<T, C: Core + ?Sized>(core: &C, value: T) -> NonNull<T> {
    let p = match place::<T, _>(core) {
        Ok(p) => p,
        Err(e) => e.raise(),
    };
    // SAFETY: `p` is fresh room for a `T` (dangling, for a zero-sized `T`).
    unsafe { p.write(value) };
    p
}

/// [`put_or_raise`] for the fallible API.
#[inline(always)]
pub(crate) fn put<T, C: Core + ?Sized>(core: &C, value: T) -> Result<NonNull<T>, Failure> {
    let p = place::<T, _>(core)?;
    // SAFETY: `p` is fresh room for a `T` (dangling, for a zero-sized `T`).
    unsafe { p.write(value) };
    Ok(p)
}

/// Allocates room for a `T`, then writes `f()` there; the room is released if `f` panics.
///
/// The fast path is a bump and a write; everything else (a new chunk, a failure) is in a cold
/// function, so the fast path needs no stack frame.
#[inline(always)]
pub(crate) fn alloc_with<T, C: Core + ?Sized>(
    core: &C,
    f: impl FnOnce() -> T,
) -> Result<NonNull<T>, Failure> {
    if size_of::<T>() != 0 {
        if let Some(p) = core.core_bump(Layout::new::<T>()) {
            // SAFETY: `p` is fresh room for a `T` in the current chunk.
            return Ok(unsafe { init_with(core, p.cast(), f) });
        }
    }
    alloc_with_slow(core, f)
}

#[cold]
#[inline(never)]
fn alloc_with_slow<T, C: Core + ?Sized>(
    core: &C,
    f: impl FnOnce() -> T,
) -> Result<NonNull<T>, Failure> {
    let p = place::<T, _>(core)?;
    // SAFETY: `p` is fresh room for a `T` (dangling, for a zero-sized `T`).
    Ok(unsafe { init_placed_with(core, p, f) })
}

/// [`alloc_with`] for the panicking API: a failure is raised in the cold path, so the fast path
/// returns a bare pointer and tail-calls the cold one.
#[inline(always)]
#[track_caller]
pub(crate) fn alloc_with_or_raise<T, C: Core + ?Sized>(
    core: &C,
    f: impl FnOnce() -> T,
) -> NonNull<T> {
    if size_of::<T>() != 0 {
        if let Some(p) = core.core_bump(Layout::new::<T>()) {
            // SAFETY: `p` is fresh room for a `T` in the current chunk.
            return unsafe { init_with(core, p.cast(), f) };
        }
    }
    alloc_with_or_raise_slow(core, f)
}

#[cold]
#[inline(never)]
#[track_caller]
fn alloc_with_or_raise_slow<T, C: Core + ?Sized>(core: &C, f: impl FnOnce() -> T) -> NonNull<T> {
    match alloc_with_slow(core, f) {
        Ok(p) => p,
        Err(e) => e.raise(),
    }
}

/// Writes `f()` to `p`; the room is released if `f` panics.
///
/// # Safety
/// `p` is fresh room for a `T` bumped in this arena's current chunk.
#[inline(always)]
unsafe fn init_with<T, C: Core + ?Sized>(
    core: &C,
    p: NonNull<T>,
    f: impl FnOnce() -> T,
) -> NonNull<T> {
    let release = ReleaseBump {
        core,
        ptr: p.cast(),
        layout: Layout::new::<T>(),
    };
    // SAFETY: forwarded from the caller.
    unsafe { p.write(f()) };
    mem::forget(release);
    p
}

/// [`init_with`] for room placed by any path (a large block among them).
///
/// # Safety
/// `p` is fresh room for a `T` allocated from this arena (or dangling for a zero-sized `T`).
unsafe fn init_placed_with<T, C: Core + ?Sized>(
    core: &C,
    p: NonNull<T>,
    f: impl FnOnce() -> T,
) -> NonNull<T> {
    let release = Release {
        core,
        ptr: p.cast(),
        layout: Layout::new::<T>(),
    };
    // SAFETY: forwarded from the caller.
    unsafe { p.write(f()) };
    mem::forget(release);
    p
}

/// Like [`alloc_with`] for a fallible initialiser: on `Err` the room is released (rolled back
/// when it is still the last block) and the error returned.
#[inline]
pub(crate) fn alloc_try_with<T, E, C: Core + ?Sized>(
    core: &C,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<Result<NonNull<T>, E>, Failure> {
    let p = place::<T, _>(core)?;
    let release = Release {
        core,
        ptr: p.cast(),
        layout: Layout::new::<T>(),
    };
    match f() {
        Ok(value) => {
            // SAFETY: `p` is fresh room for a `T`.
            unsafe { p.write(value) };
            mem::forget(release);
            Ok(Ok(p))
        }
        Err(e) => {
            drop(release);
            Ok(Err(e))
        }
    }
}

/// Writes `f(i)?` to slot `i` of `dst` for every `i < len`. If `f` returns an error or panics,
/// the values written so far are dropped, the block is released (rolled back when it is still
/// the last block, and rewound to `mark` when one is given: see [`Core::core_rewind`]) and the
/// error returned.
///
/// # Safety
/// `dst` is a fresh block of this arena allocated for `[T; len]` (a valid array layout), just
/// after `mark` was taken.
#[inline]
pub(crate) unsafe fn try_fill_with<T, E, C: Core + ?Sized>(
    core: &C,
    dst: NonNull<T>,
    len: usize,
    mark: Option<usize>,
    mut f: impl FnMut(usize) -> Result<T, E>,
) -> Result<(), E> {
    struct Partial<'r, T, C: Core + ?Sized> {
        core: &'r C,
        dst: NonNull<T>,
        done: usize,
        len: usize,
        mark: Option<usize>,
    }
    impl<T, C: Core + ?Sized> Drop for Partial<'_, T, C> {
        fn drop(&mut self) {
            // SAFETY: a block was allocated for `[T; len]`, so its layout is valid.
            let layout = unsafe { array_layout::<T>(self.len) };
            // SAFETY: the first `done` slots were written and are owned by this guard; the block
            // was allocated for `[T; len]` and is not used again.
            unsafe {
                ptr::drop_in_place(NonNull::slice_from_raw_parts(self.dst, self.done).as_ptr());
                self.core.core_deallocate(self.dst.cast(), layout);
            }
            if let Some(mark) = self.mark {
                if layout.size() != 0 {
                    // SAFETY: `mark` was taken just before the block was allocated (the
                    // caller), and the block was given back just above.
                    unsafe { self.core.core_rewind(self.dst.cast(), mark, layout.align()) };
                }
            }
        }
    }
    let mut partial = Partial {
        core,
        dst,
        done: 0,
        len,
        mark,
    };
    while partial.done < len {
        let i = partial.done;
        // On `Err`, `partial` drops what was written and releases the block.
        let value = f(i)?;
        // SAFETY: `i < len`, so the slot is inside the block.
        unsafe { dst.add(i).write(value) };
        partial.done = i + 1;
    }
    mem::forget(partial);
    Ok(())
}

/// A slice of `len` values made by `f`, stopping at its first error: the arena is then as
/// before (when `f` allocated nothing in it meanwhile), its padding included.
#[inline]
pub(crate) fn slice_try_fill_with<T, E, C: Core + ?Sized>(
    core: &C,
    len: usize,
    f: impl FnMut(usize) -> Result<T, E>,
) -> Result<NonNull<[T]>, FillError<E>> {
    let mark = core.core_mark();
    let dst = place_array::<T, _>(core, len)?;
    // SAFETY: `dst` is a fresh block for `[T; len]`, allocated just after `mark` was taken.
    unsafe { try_fill_with(core, dst, len, Some(mark), f) }.map_err(FillError::Init)?;
    Ok(NonNull::slice_from_raw_parts(dst, len))
}

/// A slice of `len` values made by `f`.
#[inline]
pub(crate) fn slice_fill_with<T, C: Core + ?Sized>(
    core: &C,
    len: usize,
    mut f: impl FnMut(usize) -> T,
) -> Result<NonNull<[T]>, Failure> {
    let dst = place_array::<T, _>(core, len)?;
    // SAFETY: `dst` is a fresh block for `[T; len]`.
    let filled = unsafe { try_fill_with(core, dst, len, None, |i| Ok::<T, Never>(f(i))) };
    let Ok(()) = filled;
    Ok(NonNull::slice_from_raw_parts(dst, len))
}

/// An error that cannot happen: the initialisers of the infallible fills.
pub(crate) enum Never {}

/// A copy of `items`.
#[inline]
pub(crate) fn slice_copy<T: Copy, C: Core + ?Sized>(
    core: &C,
    items: &[T],
) -> Result<NonNull<[T]>, Failure> {
    let dst = place_array::<T, _>(core, items.len())?;
    // SAFETY: `dst` is a fresh block for `items.len()` values.
    Ok(unsafe { copy_into(dst, items) })
}

/// An array of `N` values made by `f`.
#[inline]
pub(crate) fn array_fill_with<T, const N: usize, C: Core + ?Sized>(
    core: &C,
    mut f: impl FnMut(usize) -> T,
) -> Result<NonNull<[T; N]>, Failure> {
    let dst = place::<[T; N], _>(core)?;
    // SAFETY: `[T; N]` has the layout of `Layout::array::<T>(N)`, and `dst` is fresh.
    let filled = unsafe { try_fill_with(core, dst.cast::<T>(), N, None, |i| Ok::<T, Never>(f(i))) };
    let Ok(()) = filled;
    Ok(dst)
}

/// The items of `iter`, however many it yields (its `size_hint` is only a first guess, even an
/// impossible one, and it may allocate in this arena while it runs), up to its first error. With
/// `REWIND`, an error (or a panic) gives back the buffer and the alignment padding its first
/// block took, and nothing else: what the iterator placed in the arena stays (so the arena is as
/// it was when the iterator placed nothing).
pub(crate) fn slice_try_from_iter<T, E, C: Core + ?Sized, const REWIND: bool>(
    core: &C,
    iter: impl IntoIterator<Item = Result<T, E>>,
) -> Result<NonNull<[T]>, FillError<E>> {
    /// Drops the buffer (its items, its block) and, with `REWIND`, the padding before its first
    /// block; disarmed by `finish`.
    struct Rewind<'r, T, C: Core + ?Sized, const REWIND: bool> {
        buf: mem::ManuallyDrop<Building<'r, T, C>>,
        /// The position just before the buffer's first block was allocated: only that block's
        /// alignment padding lies between the two. Taken there, not before the iterator runs,
        /// because the iterator may place blocks of its own in the arena before its first item.
        mark: usize,
    }
    impl<T, C: Core + ?Sized, const REWIND: bool> Drop for Rewind<'_, T, C, REWIND> {
        fn drop(&mut self) {
            let (core, start, cap) = (self.buf.core, self.buf.ptr, self.buf.cap);
            // SAFETY: the buffer is dropped once, here, and not used afterwards.
            unsafe { mem::ManuallyDrop::drop(&mut self.buf) };
            if REWIND && size_of::<T>() != 0 && cap != 0 {
                // `core_rewind` moves the position only when it is at `start` and `mark` lies
                // less than the alignment before it in the same chunk: then the buffer never
                // left its first block, and only that block's padding lies in between (a block it
                // moved out of is at least four elements long, so a later block lies further
                // from `mark` than the alignment).
                // SAFETY: `mark` was taken just before the buffer's first block was allocated,
                // and its last block, at `start`, was given back just above.
                unsafe { core.core_rewind(start.cast(), self.mark, align_of::<T>()) };
            }
        }
    }
    let iter = iter.into_iter();
    let mut guard = Rewind::<T, C, REWIND> {
        buf: mem::ManuallyDrop::new(Building::new(core)),
        mark: 0,
    };
    // The lower bound is only a hint: one too large to reserve may be a lie, so grow as the items
    // come instead (a failed reservation changes nothing).
    if REWIND {
        guard.mark = core.core_mark();
    }
    let _ = guard.buf.reserve(iter.size_hint().0);
    for item in iter {
        let item = item.map_err(FillError::Init)?;
        if REWIND && guard.buf.cap == 0 {
            // The buffer's first block comes now (the iterator has run).
            guard.mark = core.core_mark();
        }
        // On `Err`, `guard` drops the items taken, gives the block back and rewinds.
        guard.buf.push(item)?;
    }
    // SAFETY: the buffer is taken out once, and `guard` is forgotten, so it does not drop it.
    let buf = unsafe { mem::ManuallyDrop::take(&mut guard.buf) };
    mem::forget(guard);
    Ok(buf.finish())
}

/// The items of `iter` (see [`slice_try_from_iter`]).
pub(crate) fn slice_from_iter<T, C: Core + ?Sized>(
    core: &C,
    iter: impl IntoIterator<Item = T>,
) -> Result<NonNull<[T]>, Failure> {
    match slice_try_from_iter::<_, _, _, false>(core, iter.into_iter().map(Ok::<T, Never>)) {
        Ok(p) => Ok(p),
        Err(FillError::Alloc(e)) => Err(e),
        Err(FillError::Init(never)) => match never {},
    }
}

/// Formatted text. Inlined into each `alloc_fmt`, whose only work it is.
#[inline(always)]
pub(crate) fn format<C: Core + ?Sized>(
    core: &C,
    args: fmt::Arguments<'_>,
) -> Result<NonNull<str>, Failure> {
    if let Some(s) = args.as_str() {
        return slice_copy(core, s.as_bytes()).map(str_ptr);
    }
    let mut sink = FmtSink {
        buf: Building::new(core),
        failure: None,
    };
    if fmt::Write::write_fmt(&mut sink, args).is_err() {
        return Err(sink.failure.unwrap_or(Failure::Format));
    }
    Ok(str_ptr(sink.buf.finish()))
}

/// Reinterprets a byte slice pointer as a `str` pointer (the caller knows it is UTF-8).
fn str_ptr(p: NonNull<[u8]>) -> NonNull<str> {
    // `str` and `[u8]` have the same layout and metadata.
    NonNull::new(p.as_ptr() as *mut str).unwrap_or_else(|| unreachable!())
}

/// Copies `items` to `dst` and returns the slice there.
///
/// # Safety
/// `dst` is a fresh block of the arena with room for `items.len()` values of `T` (so it cannot
/// overlap `items`, which the caller borrows).
#[inline(always)]
unsafe fn copy_into<T: Copy>(dst: NonNull<T>, items: &[T]) -> NonNull<[T]> {
    // SAFETY: `dst` is writable for `items.len()` values and does not overlap `items` (above).
    unsafe { ptr::copy_nonoverlapping(items.as_ptr(), dst.as_ptr(), items.len()) };
    NonNull::slice_from_raw_parts(dst, items.len())
}

/// Hands out a reference to an arena block for the lifetime of the arena's blocks.
///
/// # Safety
/// `p` is an initialised block of the arena that no one else references, and `'x` is no longer
/// than the blocks of the arena live (see [`BumpAlloc::Blocks`](crate::BumpAlloc::Blocks)):
/// blocks stay valid until reset, scope exit or drop, all of which end that lifetime first.
#[inline(always)]
pub(crate) unsafe fn out<'x, T: ?Sized>(p: NonNull<T>) -> &'x mut T {
    // SAFETY: forwarded from the caller.
    unsafe { &mut *p.as_ptr() }
}
