//! The minimum alignment of an [`Arena`](crate::Arena) (its `MIN_ALIGN` parameter): every block
//! it places starts at a multiple of it and takes a multiple of it, so its position is always a
//! multiple of it, and a type of that alignment or less is bumped with no padding arithmetic.
//!
//! The arena types apply it at their entry points ([`OnRaw`](super::typed::OnRaw)'s `Core` and
//! the `Allocator` impls): every layout reaches the bump core widened here, so the core's rules
//! (the last block ends at the position, in-place growth, roll-back) hold unchanged for the wide
//! layouts, and the position never leaves a multiple of the minimum: chunks start at multiples of
//! [`CHUNK_ALIGN`], a bump adds padding to an alignment of at least the minimum and a size that
//! is a multiple of it, and every other move returns the position to one it had.

use core::alloc::Layout;

use allocator_api2::alloc::{AllocError, Allocator, Global};

use super::Arena;
use super::bump::RawArena;
use super::chunk::CHUNK_ALIGN;
use super::large_spares::Spares;
use crate::error::Failure;

/// A compile-time check of an arena's `MIN_ALIGN`: a power of two, at most [`CHUNK_ALIGN`]
/// (16), the alignment every chunk's first byte has. Evaluating `Valid::<N>::OK` for another
/// `N` fails to compile.
pub(crate) struct Valid<const MIN_ALIGN: usize>;

impl<const MIN_ALIGN: usize> Valid<MIN_ALIGN> {
    pub(crate) const OK: () = assert!(
        MIN_ALIGN.is_power_of_two() && MIN_ALIGN <= CHUNK_ALIGN,
        "arena-pool: an arena's MIN_ALIGN must be a power of two no larger than 16"
    );
}

/// The size and alignment an arena with minimum alignment `min` places `layout` at: the size
/// rounded up to a multiple of `min`, the alignment raised to `min`. For `min == 1`, `layout`'s
/// own. The size may exceed `isize::MAX` by less than `min`; only [`placed`] makes a `Layout`.
#[inline(always)]
pub(crate) fn placed_parts(layout: Layout, min: usize) -> (usize, usize) {
    if min == 1 {
        return (layout.size(), layout.align());
    }
    // `layout.size() <= isize::MAX`, so adding `min - 1 < 16` cannot overflow.
    let size = (layout.size() + (min - 1)) & !(min - 1);
    (size, layout.align().max(min))
}

/// [`placed_parts`] as a `Layout`, or `CapacityOverflow` when the rounded size passes what a
/// `Layout` allows.
#[inline(always)]
pub(crate) fn placed(layout: Layout, min: usize) -> Result<Layout, Failure> {
    if min == 1 {
        return Ok(layout);
    }
    let (size, align) = placed_parts(layout, min);
    Layout::from_size_align(size, align).map_err(|_| Failure::CapacityOverflow)
}

/// [`placed`] for a layout the arena has already placed a block with (or one that fits such a
/// block, or is no larger): its widened form is a valid `Layout`.
///
/// # Safety
/// `placed(layout, min)` is `Ok`: `layout` fits a block this arena allocated (its size between
/// the size requested and the length returned, its alignment the one requested), or its widened
/// size is no larger than such a block's and its alignment is at most that block's or `min`.
#[inline(always)]
pub(crate) unsafe fn placed_unchecked(layout: Layout, min: usize) -> Layout {
    if min == 1 {
        return layout;
    }
    let (size, align) = placed_parts(layout, min);
    debug_assert!(Layout::from_size_align(size, align).is_ok());
    // SAFETY: the caller guarantees that the widened layout is valid.
    unsafe { Layout::from_size_align_unchecked(size, align) }
}

/// A shrink's layouts widened to `min`. Both are valid: `old` fits a block the arena placed
/// (its widened form was checked then), and the widened `new` is no larger than the widened
/// `old` and, rounded up to its alignment, no larger than `new` rounded up to its own alignment
/// (when that is at least `min`) or than the widened `old` (when it is not).
///
/// # Safety
/// `old` fits a block this arena allocated, and `new.size() <= old.size()`.
#[inline(always)]
pub(crate) unsafe fn shrunk(old: Layout, new: Layout, min: usize) -> (Layout, Layout) {
    // SAFETY: both widened layouts are valid (see above).
    unsafe { (placed_unchecked(old, min), placed_unchecked(new, min)) }
}

impl<const MIN_ALIGN: usize> Arena<Global, MIN_ALIGN> {
    /// An empty arena on the global allocator whose every block starts at a multiple of
    /// `MIN_ALIGN` and takes a multiple of it (a power of two of at most 16, checked at compile
    /// time). Allocates nothing until the first allocation.
    ///
    /// A type of alignment `MIN_ALIGN` or less is then placed with no padding arithmetic: an
    /// arena that mostly holds 8-byte values (`u64`, pointers, most structs) saves a few
    /// instructions per allocation with `MIN_ALIGN = 8`, and pays for it in padding after smaller
    /// values (a `u8` takes 8 bytes). The arena's views ([`ArenaRef`](crate::ArenaRef), scopes)
    /// keep its minimum alignment. [`Arena::new`] is `Arena<Global, 1>`, which rounds nothing.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::alloc::Global;
    ///
    /// let arena = Arena::<Global, 8>::with_min_align();
    /// let a: *const u8 = arena.alloc(1u8);
    /// let b: *const u64 = arena.alloc(2u64);
    /// assert_eq!(a as usize % 8, 0);
    /// assert_eq!(b as usize - a as usize, 8); // the `u8` took 8 bytes
    /// ```
    ///
    /// Any other `MIN_ALIGN` does not compile:
    ///
    /// ```compile_fail
    /// let arena = arena_pool::Arena::<arena_pool::allocator_api2::alloc::Global, 24>::with_min_align();
    /// ```
    #[must_use]
    pub const fn with_min_align() -> Self {
        Arena::with_min_align_in(Global)
    }

    /// [`with_min_align`](Arena::with_min_align) with a first chunk that holds at least
    /// `capacity` bytes, as [`with_capacity`](Arena::with_capacity).
    ///
    /// # Panics
    /// When the capacity overflows; calls [`handle_alloc_error`](alloc::alloc::handle_alloc_error)
    /// when the global allocator fails.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::alloc::Global;
    ///
    /// let arena = Arena::<Global, 16>::with_min_align_and_capacity(4096);
    /// assert!(arena.chunk_capacity() >= 4096);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_min_align_and_capacity(capacity: usize) -> Self {
        Arena::with_min_align_and_capacity_in(capacity, Global)
    }

    /// Like [`with_min_align_and_capacity`](Arena::with_min_align_and_capacity), returning `Err`
    /// instead of panicking.
    pub fn try_with_min_align_and_capacity(capacity: usize) -> Result<Self, AllocError> {
        Arena::try_with_min_align_and_capacity_in(capacity, Global)
    }
}

impl<A: Allocator, const MIN_ALIGN: usize> Arena<A, MIN_ALIGN> {
    /// [`with_min_align`](Arena::with_min_align) on the backing allocator `alloc` (see
    /// [`new_in`](Arena::new_in)).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::alloc::Global;
    ///
    /// let arena: Arena<Global, 4> = Arena::with_min_align_in(Global);
    /// assert_eq!(arena.alloc(3u16) as *const u16 as usize % 4, 0);
    /// ```
    pub const fn with_min_align_in(alloc: A) -> Self {
        // Fails to compile for a `MIN_ALIGN` that is not a power of two of at most 16.
        #[allow(clippy::let_unit_value)]
        let () = Valid::<MIN_ALIGN>::OK;
        Arena {
            raw: RawArena::new(),
            spares: Spares::new(),
            alloc,
        }
    }

    /// [`with_min_align_and_capacity`](Arena::with_min_align_and_capacity) on the backing
    /// allocator `alloc`.
    ///
    /// # Panics
    /// When the capacity overflows; calls [`handle_alloc_error`](alloc::alloc::handle_alloc_error)
    /// when `alloc` fails.
    #[track_caller]
    pub fn with_min_align_and_capacity_in(capacity: usize, alloc: A) -> Self {
        match Arena::try_reserving(capacity, alloc) {
            Ok(arena) => arena,
            Err(e) => e.raise(),
        }
    }

    /// Like [`with_min_align_and_capacity_in`](Arena::with_min_align_and_capacity_in), returning
    /// `Err` instead of panicking.
    pub fn try_with_min_align_and_capacity_in(
        capacity: usize,
        alloc: A,
    ) -> Result<Self, AllocError> {
        Ok(Arena::try_reserving(capacity, alloc)?)
    }

    /// An arena on `alloc` whose first chunk holds at least `capacity` bytes.
    fn try_reserving(capacity: usize, alloc: A) -> Result<Self, Failure> {
        let arena = Arena::with_min_align_in(alloc);
        arena.raw.reserve_first(capacity, &arena)?;
        Ok(arena)
    }
}
