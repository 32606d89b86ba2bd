//! [`Pool`]: fixed-size slots with an intrusive free list, carved lazily from slabs.

use core::alloc::Layout;
use core::cell::Cell;
use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global};
use allocator_api2::boxed::Box;

use super::address_map::AddressMap;
use super::free_list::FreeList;
use super::limit::Limited;
use super::slab::{Slab, SlabList};
use crate::arena::dangling;
use crate::error::Failure;
use crate::reentry::BackingCall;

/// The first slab holds about this many bytes of slots (at least [`MIN_SLAB_SLOTS`] slots): a
/// pool with a few live objects holds one small slab.
const FIRST_SLAB_BYTES: usize = 512;
/// Slabs stop growing at about this many bytes of slots.
const MAX_SLAB_BYTES: usize = 1 << 20;
/// The fewest slots a slab has.
const MIN_SLAB_SLOTS: usize = 4;
/// Slabs are aligned to this and registered in the address map in granules of this size.
const GRANULE_SHIFT: u32 = 12;

/// Called first on the carve path of [`Pool::take_slot`], to mark it as the unlikely branch: a
/// slot is carved once, on its first use, and reused from the free list ever after, so the pop
/// is laid out as the straight path. Inlined, it leaves no call behind.
#[cold]
#[inline(always)]
fn carve_hint() {}

/// A slot's size (the stride) and alignment, as the allocation paths use them: read from the
/// pool ([`Pool`]) or known at compile time ([`TypedPool`](super::TypedPool)), in which case the
/// routing checks against a layout that is known at compile time too (a `Box<T>`'s) fold away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotShape {
    pub(crate) size: usize,
    pub(crate) align: usize,
}

impl SlotShape {
    /// The slots of a pool made for `layout`: its size rounded up to its alignment and to at
    /// least a pointer, aligned to its alignment and at least a pointer's (the free list's link
    /// lives in a free slot).
    pub(crate) const fn for_layout(layout: Layout) -> SlotShape {
        let align = if layout.align() > align_of::<usize>() {
            layout.align()
        } else {
            align_of::<usize>()
        };
        let size = if layout.size() > size_of::<usize>() {
            layout.size()
        } else {
            size_of::<usize>()
        };
        // Rounding a valid layout's size up to its alignment cannot overflow isize::MAX.
        SlotShape {
            size: size.next_multiple_of(align),
            align,
        }
    }

    /// Whether `layout` is served from a slot (routing depends on the layout only).
    #[inline(always)]
    pub(crate) fn pooled(self, layout: Layout) -> bool {
        layout.size() != 0 && layout.size() <= self.size && self.fits_align(layout)
    }

    /// The panic of a strict pool's `alloc` for a `layout` that does not fit these slots, naming
    /// both. (Not a `Failure`: that would make every arena result wider.)
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn refuse(self, layout: Layout) -> ! {
        panic!(
            "arena-pool: a strict pool serves only blocks that fit its slots ({} bytes, aligned \
             to {}): a block of {} bytes aligned to {} does not",
            self.size,
            self.align,
            layout.size(),
            layout.align()
        )
    }

    /// Whether a slot is aligned enough for `layout`. Slots are at least pointer-aligned, so an
    /// alignment known at compile time to be at most that needs no load.
    #[inline(always)]
    fn fits_align(self, layout: Layout) -> bool {
        layout.align() <= align_of::<usize>() || layout.align() <= self.align
    }
}

/// A pool of fixed-size slots: allocation and deallocation are O(1) pops and pushes on an
/// intrusive free list, and a freed slot is handed out again by the next allocation.
///
/// - A layout that fits the slot (size at most the slot size, alignment at most the slot's) is
///   served from the pool and reported with the slot size as its length; a zero-sized layout gets
///   an aligned dangling pointer; any other layout goes to the backing allocator `A`. Routing
///   depends only on the layout, so `deallocate` always finds the way back.
/// - Slabs come from `A`: the first holds about 512 bytes of slots (at least 4), each later one
///   three tenths of the slots held (from the first slab's size up to about 1 MiB). A new slab
///   is taken only when every slot is in use, so the slabs hold at most 1.3x the most slots ever
///   in use at once, plus one first slab (or a `with_capacity` reservation) and a header (40
///   bytes, or the slot alignment) per slab. Slabs are carved lazily: a new slab is not written
///   until its slots are used.
/// - `Box<T, &Pool>` is the owning handle; `Vec` and `hashbrown::HashMap` work too.
/// - Debug builds detect a double free and a pointer that is not the pool's, and panic saying so.
/// - `deallocate` relies on its pointer being valid for the layout's size, as `Global` does
///   (Miri's Stacked Borrows checks it there): with a layout of the slot's size, that pointer
///   itself goes back on the free list. With a smaller layout the pool re-derives the slot's
///   pointer from its slab's, so a pointer narrowed to the value's bytes is fine.
///
/// `Pool` is `Send` when `A` is, never `Sync` (its state is in `Cell`s: share it across threads
/// with `SyncPool`), and not `Clone`: a clone would have to free the original's blocks, so share
/// it as `&Pool` instead.
///
/// ```
/// use arena_pool::Pool;
/// use arena_pool::allocator_api2::boxed::Box;
///
/// #[derive(Debug, PartialEq)]
/// struct Particle { pos: [f32; 3], vel: [f32; 3] }
///
/// let pool = Pool::for_type::<Particle>();
/// let a = Box::new_in(Particle { pos: [0.0; 3], vel: [1.0; 3] }, &pool);
/// let addr = &*a as *const Particle;
/// drop(a); // back on the free list
/// let b = Box::new_in(Particle { pos: [1.0; 3], vel: [0.0; 3] }, &pool);
/// assert_eq!(&*b as *const Particle, addr); // the freed slot is reused
/// assert_eq!(pool.in_use(), 1);
/// ```
pub struct Pool<A: Allocator = Global> {
    layout: Layout,
    /// Slot stride and alignment (see [`SlotShape::for_layout`]).
    shape: SlotShape,
    free: FreeList,
    /// Never-used slots of the slab being carved: `[carve, carve_end)`.
    carve: Cell<NonNull<u8>>,
    carve_end: Cell<NonNull<u8>>,
    slabs: SlabList,
    /// From a block's address to its slab (with the slab's provenance).
    map: AddressMap,
    fallback_blocks: Cell<usize>,
    /// Strict mode: layouts that do not fit a slot are refused instead of going to `alloc`.
    strict: Cell<bool>,
    /// Slots of the first slab, and the fewest of any later one.
    first_slab_slots: usize,
    /// Set while a slab is taken from `alloc` (see [`BackingCall`]).
    backing_call: BackingCall,
    /// The backing allocator, with the pool's allocation limit: every call into it goes
    /// through this.
    alloc: Limited<A>,
}

// SAFETY: the pool exclusively owns its slabs and points only into them; handed-out blocks
// borrow the pool, so none is alive when it moves. Moving it to another thread moves the slabs,
// which are freed through `A` there, hence `A: Send`. (It is never `Sync`: see `crate::sharing`.)
unsafe impl<A: Allocator + Send> Send for Pool<A> {}

impl Pool {
    /// A pool of slots for `layout` on the global allocator. Allocates nothing yet.
    ///
    /// ```
    /// use core::alloc::Layout;
    /// let pool = arena_pool::Pool::new(Layout::from_size_align(24, 8).unwrap());
    /// assert_eq!(pool.slot_layout().size(), 24);
    /// assert_eq!(pool.capacity(), 0);
    /// ```
    pub fn new(layout: Layout) -> Pool {
        Pool::new_in(layout, Global)
    }

    /// A pool of slots for values of type `T`.
    pub fn for_type<T>() -> Pool {
        Pool::new(Layout::new::<T>())
    }

    /// A pool whose first slab holds at least `capacity` slots.
    ///
    /// # Panics
    /// When the slab size overflows; calls `handle_alloc_error` when the allocator fails.
    ///
    /// ```
    /// let pool = arena_pool::Pool::with_capacity(core::alloc::Layout::new::<u64>(), 1000);
    /// assert!(pool.capacity() >= 1000);
    /// ```
    #[track_caller]
    pub fn with_capacity(layout: Layout, capacity: usize) -> Pool {
        Pool::with_capacity_in(layout, capacity, Global)
    }

    /// Like [`with_capacity`](Pool::with_capacity), returning `Err` instead of panicking or
    /// aborting.
    ///
    /// ```
    /// use core::alloc::Layout;
    /// assert!(arena_pool::Pool::try_with_capacity(Layout::new::<u64>(), 1 << 60).is_err());
    /// ```
    pub fn try_with_capacity(layout: Layout, capacity: usize) -> Result<Pool, AllocError> {
        Pool::try_with_capacity_in(layout, capacity, Global)
    }
}

impl<A: Allocator> Pool<A> {
    /// A pool of slots for `layout`, taking slabs (and oversized blocks) from `alloc`.
    ///
    /// # The backing allocator
    /// - **`alloc` may panic**: the pool is then as it was before the request (a new slab is
    ///   taken only after the address map has made room for it, so none is lost), and usable.
    /// - **`alloc`'s `deallocate` may panic** (in [`trim`](Self::trim) or the pool's drop):
    ///   the pool then no longer refers to the block it was giving back, and keeps, usable, the
    ///   slabs it had not given back yet (a drop leaves them, and the address map's table, to
    ///   `alloc`). Such a `deallocate` must leave its block allocated (it is leaked): a grow or
    ///   shrink that moves a block `alloc` holds gives the old block back last, and unwinds with
    ///   it while its caller still holds the old block.
    /// - **`alloc` may use this pool**: a nested request that needs a new slab while the pool is
    ///   taking one is refused (`Err(AllocError)`); every other nested call (a free, an
    ///   allocation from a free slot or the slab being carved, a layout that goes to `alloc`, the
    ///   statistics) is served.
    pub fn new_in(layout: Layout, alloc: A) -> Pool<A> {
        let shape = SlotShape::for_layout(layout);
        let first_slots = (FIRST_SLAB_BYTES / shape.size).max(MIN_SLAB_SLOTS);
        Pool {
            layout,
            shape,
            free: FreeList::new(),
            carve: Cell::new(NonNull::dangling()),
            carve_end: Cell::new(NonNull::dangling()),
            slabs: SlabList::new(),
            map: AddressMap::new(GRANULE_SHIFT),
            fallback_blocks: Cell::new(0),
            strict: Cell::new(false),
            first_slab_slots: first_slots,
            backing_call: BackingCall::new(),
            alloc: Limited::new(alloc),
        }
    }

    /// Like [`with_capacity`](Pool::with_capacity), on `alloc`.
    ///
    /// # Panics
    /// When the slab size overflows; calls `handle_alloc_error` when `alloc` fails.
    #[track_caller]
    pub fn with_capacity_in(layout: Layout, capacity: usize, alloc: A) -> Pool<A> {
        let pool = Pool::new_in(layout, alloc);
        match pool.reserve_first(capacity) {
            Ok(()) => pool,
            Err(Some(block)) => alloc::alloc::handle_alloc_error(block),
            Err(None) => panic!("arena-pool: a pool slab of {capacity} slots overflows"),
        }
    }

    /// Like [`with_capacity_in`](Pool::with_capacity_in), returning `Err` instead of panicking
    /// or aborting.
    pub fn try_with_capacity_in(
        layout: Layout,
        capacity: usize,
        alloc: A,
    ) -> Result<Pool<A>, AllocError> {
        let pool = Pool::new_in(layout, alloc);
        pool.reserve_first(capacity).map_err(|_| AllocError)?;
        Ok(pool)
    }

    /// Takes a first slab of at least `capacity` slots (none for 0). `Err(None)` when its size
    /// overflows, `Err(Some(layout))` when the backing allocator refuses a slab of `layout`.
    fn reserve_first(&self, capacity: usize) -> Result<(), Option<Layout>> {
        if capacity == 0 {
            return Ok(());
        }
        let slots = capacity.max(MIN_SLAB_SLOTS);
        let block = self.slab_layout(slots).ok_or(None)?;
        self.add_slab(slots).map_err(|AllocError| Some(block))?;
        self.slabs.advance();
        self.enter_carve_slab();
        Ok(())
    }

    /// The layout the pool was made for.
    pub fn slot_layout(&self) -> Layout {
        self.layout
    }

    /// The size of each slot: the most a pooled block can hold (what `allocate` reports).
    pub fn slot_size(&self) -> usize {
        self.shape.size
    }

    /// Places `value` in a slot and returns its owning [`Box`], which gives the slot back when
    /// dropped: `Box::new_in(value, &pool)`, with the pool's own failure messages.
    ///
    /// A `T` that does not fit a slot (larger, or more aligned) goes to the backing allocator,
    /// as any such layout does (counted in [`stats`](Self::stats)`().fallback_blocks`), unless
    /// the pool is [strict](Self::set_strict).
    ///
    /// # Panics
    /// In strict mode, when `T` does not fit a slot, with a message naming `T`'s layout and the
    /// slot's; at the [allocation limit](Self::set_allocation_limit), with a message naming the
    /// limit. Calls `handle_alloc_error` when the backing allocator fails.
    ///
    /// ```
    /// use arena_pool::Pool;
    ///
    /// let pool = Pool::for_type::<[u64; 4]>();
    /// let a = pool.alloc([1u64, 2, 3, 4]);
    /// let b = pool.alloc([5u64; 4]);
    /// assert_eq!(a[3] + b[0], 9);
    /// assert_eq!(pool.in_use(), 2);
    /// drop(a); // its slot goes back on the free list
    /// assert_eq!(pool.in_use(), 1);
    /// ```
    #[track_caller]
    pub fn alloc<T>(&self, value: T) -> Box<T, &Self> {
        match self.allocate_impl(Layout::new::<T>()) {
            // SAFETY: a block from this pool for `T`'s layout.
            Ok(block) => unsafe { super::boxed(block, value, self) },
            Err(AllocError) => self.alloc_failed(Layout::new::<T>()),
        }
    }

    /// Like [`alloc`](Self::alloc), returning `Err` instead of panicking (in strict mode, when
    /// `T` does not fit a slot, or at the allocation limit, even when the pool
    /// [panics on its limit](Self::set_panic_on_limit)) or calling `handle_alloc_error`.
    /// `value` is dropped then, as `Box::try_new_in` drops it; to keep it, take the room first
    /// with `Box::try_new_uninit_in(&pool)` and move the value in with `Box::write`.
    ///
    /// ```
    /// let pool = arena_pool::Pool::for_type::<u32>();
    /// pool.set_strict(true);
    /// assert_eq!(pool.try_alloc(7u32).map(|b| *b), Ok(7));
    /// assert!(pool.try_alloc([0u64; 2]).is_err()); // 16 bytes: no slot holds it
    /// ```
    pub fn try_alloc<T>(&self, value: T) -> Result<Box<T, &Self>, AllocError> {
        let block = self.allocate_impl(Layout::new::<T>())?;
        // SAFETY: a block from this pool for `T`'s layout.
        Ok(unsafe { super::boxed(block, value, self) })
    }

    /// Why an allocation of `layout` failed, as a panic naming the cause.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn alloc_failed(&self, layout: Layout) -> ! {
        if self.refuses(layout) {
            self.shape.refuse(layout)
        }
        self.alloc
            .limit_failure()
            .unwrap_or(Failure::OutOfMemory(layout))
            .raise()
    }

    /// The error of a failed `Allocator` call: the limit's panic when the limit refused the
    /// request and the pool [panics on its limit](Self::set_panic_on_limit), `AllocError`
    /// otherwise.
    #[inline]
    #[track_caller]
    pub(crate) fn refused(&self) -> AllocError {
        self.alloc.refuse()
    }

    /// Sets a cap on the bytes the pool holds from its backing allocator, or removes it with
    /// `None`: its slabs (headers included), its address map's table, and the blocks of layouts
    /// that do not fit a slot, which go to the backing allocator. A request that would need more
    /// fails with `AllocError` from the fallible API (`try_alloc` and the `Allocator` methods)
    /// and panics with a message naming the limit from [`alloc`](Self::alloc) ("arena-pool: the
    /// pool's allocation limit of N bytes is reached"). What the pool holds already stays, even
    /// past a new, lower limit, and a free slot is still handed out at the limit: the limit
    /// caps the memory taken, not the slots in use. It is checked only when the pool takes
    /// memory (a new slab, a block of another layout), never on the free-list paths.
    ///
    /// As for an [arena's limit](crate::Arena::set_allocation_limit), a collection's
    /// infallible methods abort at the limit (`handle_alloc_error`) unless they reserve with
    /// their fallible calls or the pool [panics on its limit](Self::set_panic_on_limit).
    ///
    /// ```
    /// use arena_pool::Pool;
    ///
    /// let pool = Pool::for_type::<u64>();
    /// pool.set_allocation_limit(Some(1024));
    /// assert_eq!(pool.allocation_limit(), Some(1024));
    /// let mut boxes = Vec::new();
    /// while let Ok(b) = pool.try_alloc(7u64) {
    ///     boxes.push(b);
    /// }
    /// assert!(pool.stats().bytes_held <= 1024);
    /// boxes.pop(); // a free slot: handed out again at the limit
    /// assert!(pool.try_alloc(8u64).is_ok());
    /// assert!(pool.try_alloc([0u64; 64]).is_err()); // 512 bytes more from the backing allocator
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.alloc.set_limit(limit);
    }

    /// The allocation limit, if one is set (see [`set_allocation_limit`](Self::set_allocation_limit)).
    ///
    /// ```
    /// let pool = arena_pool::Pool::for_type::<u32>();
    /// assert_eq!(pool.allocation_limit(), None);
    /// pool.set_allocation_limit(Some(4096));
    /// assert_eq!(pool.allocation_limit(), Some(4096));
    /// ```
    pub fn allocation_limit(&self) -> Option<usize> {
        self.alloc.limit()
    }

    /// With `true`, the pool's [`Allocator`] methods (`allocate`, `grow`, `shrink`, …, what
    /// collections call) **panic** when the [allocation limit](Self::set_allocation_limit) is
    /// reached, with the same message as [`alloc`](Self::alloc) ("arena-pool: the pool's
    /// allocation limit of N bytes is reached"), instead of returning `Err(AllocError)`, as
    /// [`Arena::set_panic_on_limit`](crate::Arena::set_panic_on_limit) does for an arena: a
    /// collection whose `push` or `insert` hits the limit then unwinds instead of aborting the
    /// process. `false` (the default) restores `Err`.
    ///
    /// The panic is raised once the failed request has undone what it did, so the pool and the
    /// collections on it stay usable after `catch_unwind`. The collections' fallible calls
    /// (`Vec::try_reserve`, `Box::try_new_in`, …) panic too; the pool's own
    /// [`try_alloc`](Self::try_alloc) still returns `Err`. Only the limit panics: a backing
    /// allocator out of memory is still `Err`.
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::Pool;
    /// use arena_pool::allocator_api2::boxed::Box;
    ///
    /// let pool = Pool::for_type::<u64>();
    /// pool.set_allocation_limit(Some(1024));
    /// pool.set_panic_on_limit(true);
    /// assert!(pool.panics_on_limit());
    /// let mut boxes = Vec::new();
    /// let r = catch_unwind(AssertUnwindSafe(|| loop {
    ///     boxes.push(Box::new_in(1u64, &pool)); // panics, not aborts, at the limit
    /// }));
    /// assert!(r.is_err());
    /// assert!(pool.try_alloc(2u64).is_err()); // the pool's own `try_` method: still `Err`
    /// boxes.pop();
    /// assert_eq!(*Box::new_in(3u64, &pool), 3); // a freed slot is served at the limit
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.alloc.set_panic_on_limit(panic);
    }

    /// Whether the `Allocator` methods panic at the allocation limit (see
    /// [`set_panic_on_limit`](Self::set_panic_on_limit)).
    ///
    /// ```
    /// let pool = arena_pool::Pool::for_type::<u32>();
    /// assert!(!pool.panics_on_limit());
    /// ```
    pub fn panics_on_limit(&self) -> bool {
        self.alloc.panics_on_limit()
    }

    /// Strict mode: with `true`, a layout that does not fit a slot (larger than the slot, or
    /// more aligned) is refused with `AllocError` (and [`alloc`](Self::alloc) panics saying so)
    /// instead of going to the backing allocator. A pool that should hold only values of its
    /// own layout then reports a wrong layout at once, instead of quietly serving it from the
    /// backing allocator (which [`stats`](Self::stats)`().fallback_blocks` counts otherwise).
    ///
    /// Zero-sized layouts are served as always (no memory), blocks taken from the backing
    /// allocator before are still freed, and growing or shrinking a block to a layout that does
    /// not fit a slot is refused too: a `Vec` on a strict pool holds at most a slot's worth (and
    /// its first `push` asks for room for 4 elements: reserve with `Vec::with_capacity_in`).
    /// The pooled paths are unchanged: the mode is checked only where a layout does not fit.
    ///
    /// ```
    /// use arena_pool::Pool;
    /// use arena_pool::allocator_api2::boxed::Box;
    ///
    /// let pool = Pool::for_type::<u64>();
    /// let quiet = Box::new_in([0u64; 8], &pool); // 64 bytes: from the backing allocator
    /// assert_eq!(pool.stats().fallback_blocks, 1);
    /// pool.set_strict(true);
    /// assert!(Box::try_new_in([0u64; 8], &pool).is_err()); // refused now
    /// assert!(Box::try_new_in(5u64, &pool).is_ok());
    /// drop(quiet); // still freed through the backing allocator
    /// assert_eq!(pool.stats().fallback_blocks, 0);
    /// ```
    pub fn set_strict(&self, strict: bool) {
        self.strict.set(strict);
    }

    /// Whether the pool is strict (see [`set_strict`](Self::set_strict)).
    pub fn is_strict(&self) -> bool {
        self.strict.get()
    }

    /// Whether strict mode refuses `layout`: it is not empty and does not fit a slot.
    #[inline]
    fn refuses(&self, layout: Layout) -> bool {
        self.strict.get() && layout.size() != 0 && !self.shape.pooled(layout)
    }

    /// Slots in all slabs (free, in use, or not carved yet).
    pub fn capacity(&self) -> usize {
        self.slabs.slot_count()
    }

    /// Slots handed out and not freed.
    ///
    /// Counted when asked: the slots carved from the slabs less the free ones, found by walking
    /// the free list (one read per free slot), so that allocating and freeing keep no count. A
    /// statistics call, not one for a hot loop.
    pub fn in_use(&self) -> usize {
        let carved: usize = self
            .slabs
            .carved_counts(self.carve.get(), self.shape.size)
            .sum();
        carved - self.free.len()
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        self.alloc.inner()
    }

    /// Statistics.
    ///
    /// ```
    /// use arena_pool::allocator_api2::boxed::Box;
    /// let pool = arena_pool::Pool::for_type::<[u64; 4]>();
    /// let boxes: Vec<_> = (0..10).map(|i| Box::new_in([i; 4], &pool)).collect();
    /// let s = pool.stats();
    /// assert_eq!((s.in_use, s.slot_size), (10, 32));
    /// assert!(s.capacity >= 10 && s.slabs == 1);
    /// drop(boxes);
    /// assert_eq!(pool.stats().in_use, 0);
    /// ```
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            slot_size: self.shape.size,
            slot_align: self.shape.align,
            capacity: self.capacity(),
            in_use: self.in_use(),
            slabs: self.slabs.len(),
            bytes_held: self.slabs.bytes(),
            fallback_blocks: self.fallback_blocks.get(),
        }
    }

    /// Forgets every slot: all become free, the slabs are kept. Needs `&mut self`, so no block
    /// of the pool is alive (any `Box`/`Vec` on `&Pool` has ended).
    pub fn reset(&mut self) {
        self.free.clear();
        self.slabs.restart();
        self.enter_carve_slab();
    }

    /// Returns every slab with no slot in use to the backing allocator.
    ///
    /// ```
    /// use arena_pool::allocator_api2::boxed::Box;
    /// let mut pool = arena_pool::Pool::for_type::<u64>();
    /// let boxes: Vec<_> = (0..1000).map(|i| Box::new_in(i, &pool)).collect();
    /// let held = pool.stats().bytes_held;
    /// drop(boxes);
    /// pool.trim();
    /// assert!(pool.stats().bytes_held < held);
    /// assert_eq!(pool.stats().bytes_held, 0);
    /// ```
    pub fn trim(&mut self) {
        // The slabs to release are first put out of reach of allocation: their free slots off
        // the free list, the carve region out of them, and the slabs themselves behind the one
        // being carved, as slabs not carved yet. Then they are released one at a time, each out
        // of the list and the address map before its block goes to the backing allocator, so a
        // `deallocate` that unwinds leaves a pool that no longer refers to that block and still
        // holds the slabs not released yet.
        if self.in_use() == 0 {
            self.free.clear();
            self.slabs.uncarve_all();
            self.enter_carve_slab();
            // SAFETY: no slot is in use, none is on the free list, and no slab is carved; the
            // slabs came from `self.alloc`.
            unsafe {
                self.slabs
                    .release_uncarved(|slab| self.unregister(slab), &self.alloc)
            };
            return;
        }
        // A slab holds a slot in use when it has more carved slots than free ones.
        let mut live: alloc::vec::Vec<usize> = self
            .slabs
            .carved_counts(self.carve.get(), self.shape.size)
            .collect();
        let ranges = self.slabs.sorted_ranges(self.shape.size);
        self.free.for_each(|p| {
            if let Some(r) = SlabList::find(&ranges, p) {
                live[r.index] -= 1;
            }
        });
        let keep = |i: usize| live.get(i).is_some_and(|&n| n > 0);
        if (0..live.len()).all(keep) {
            return;
        }
        // The slabs to release are all still held: the links in their free slots can be read.
        self.free
            .retain(|p| SlabList::find(&ranges, p).is_some_and(|r| keep(r.index)));
        // SAFETY: a slab that is not kept has no slot in use (all its carved slots were free),
        // and none of its slots is on the free list any more; `keep` does not unwind.
        if unsafe { self.slabs.sink(keep) } {
            // Carving moved back to a fully carved slab (or to none): an empty carve region at
            // its end, so that the carve position stays inside the slab being carved.
            let end = match self.slabs.carving() {
                Some(slab) => slab.slots_end(self.shape.size),
                None => NonNull::dangling(),
            };
            self.carve.set(end);
            self.carve_end.set(end);
        }
        // SAFETY: the slabs behind the carving one are those not kept, or never carved: none
        // of their slots is in use or on the free list. They came from `self.alloc`.
        unsafe {
            self.slabs
                .release_uncarved(|slab| self.unregister(slab), &self.alloc)
        };
    }

    /// Whether `p` lies in one of this pool's slabs (how a `SyncPool` finds a block's shard).
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn owns(&self, p: NonNull<u8>) -> bool {
        self.map.get(p.addr().get()).is_some()
    }

    /// Whether a slot can be taken without a new slab: a free one, or one left to carve (how a
    /// `SyncPool` refill stops before it would make the shard grow).
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    pub(crate) fn has_spare_slot(&self) -> bool {
        self.free.has_any()
            || self.carve_end.get().addr().get() - self.carve.get().addr().get() >= self.shape.size
    }

    // ----- the slot path -----

    /// Takes a slot. `slot` is the slot size, `self.shape.size` (a caller may pass it as a
    /// constant): the carve region is cut in steps of it.
    #[inline(always)]
    fn take_slot(&self, slot: usize) -> Result<NonNull<u8>, AllocError> {
        debug_assert_eq!(slot, self.shape.size);
        let p = match self.free.pop() {
            Some(p) => p,
            None => {
                carve_hint();
                let c = self.carve.get();
                if self.carve_end.get().addr().get() - c.addr().get() >= slot {
                    // SAFETY: at least one slot's worth of bytes is left in the carve region.
                    self.carve.set(unsafe { c.add(slot) });
                    c
                } else {
                    self.take_slot_slow()?
                }
            }
        };
        #[cfg(debug_assertions)]
        {
            let (slab, i) = self.owner(p);
            slab.swap_bit(i, true);
        }
        Ok(p)
    }

    #[cold]
    #[inline(never)]
    fn take_slot_slow(&self) -> Result<NonNull<u8>, AllocError> {
        // A backing allocator that allocates from this pool while it takes a slab: the outer
        // call is about to append its slab and carve it, so the nested request is refused.
        if self.backing_call.in_progress() {
            self.alloc.refused_otherwise();
            return Err(AllocError);
        }
        if !self.slabs.advance() {
            self.add_slab(self.next_slab_slots())?;
            self.slabs.advance();
        }
        self.enter_carve_slab();
        let c = self.carve.get();
        // SAFETY: a slab holds at least one slot.
        self.carve.set(unsafe { c.add(self.shape.size) });
        Ok(c)
    }

    /// Slots of the next slab, taken when every slot held is in use: three tenths of those, so
    /// that the slabs then hold 1.3x the slots in use, but at least the first slab's and at most
    /// about [`MAX_SLAB_BYTES`] (or the first slab's, if larger).
    fn next_slab_slots(&self) -> usize {
        let grown = self.slabs.slot_count().saturating_mul(3) / 10;
        // `slot` is never 0; the checked division keeps this path free of a panic.
        let cap = MAX_SLAB_BYTES.checked_div(self.shape.size).unwrap_or(0);
        grown.min(cap).max(self.first_slab_slots)
    }

    /// Points the carve region at the slab being carved.
    fn enter_carve_slab(&self) {
        match self.slabs.carving() {
            Some(slab) => {
                self.carve.set(slab.first_slot());
                self.carve_end.set(slab.slots_end(self.shape.size));
            }
            None => {
                self.carve.set(NonNull::dangling());
                self.carve_end.set(NonNull::dangling());
            }
        }
    }

    fn slab_layout(&self, slots: usize) -> Option<Layout> {
        Slab::layout_for(slots, self.shape.size, self.shape.align, self.map.granule())
    }

    fn granules(&self, slab: Slab) -> usize {
        slab.size().div_ceil(self.map.granule())
    }

    /// Removes a slab from the address map (before it is released).
    fn unregister(&self, slab: Slab) {
        self.map.remove(slab.base(), self.granules(slab));
    }

    /// Debug builds: the slab holding slot `p` and the slot's index, or a panic naming the
    /// foreign pointer.
    #[cfg(debug_assertions)]
    fn owner(&self, p: NonNull<u8>) -> (Slab, usize) {
        if let Some(base) = self.map.get(p.addr().get()) {
            let slab = Slab::from_base(base);
            if let Some(i) = slab.slot_index(p, self.shape.size) {
                return (slab, i);
            }
        }
        panic!("arena-pool: Pool::deallocate: {p:p} was not allocated by this pool");
    }

    /// Takes a slab of `slots` slots from the backing allocator and appends it.
    ///
    /// The address map makes room for the slab first, so that once the slab's block is taken
    /// nothing can fail or call the backing allocator before the slab is registered: a backing
    /// allocator that unwinds leaves at most a larger map table behind, never a lost block.
    /// While it runs, the pool is marked busy: a nested slab refill is refused.
    fn add_slab(&self, slots: usize) -> Result<(), AllocError> {
        let layout = self.slab_layout(slots).ok_or(AllocError)?;
        if !self.alloc.admits(layout.size()) {
            return Err(AllocError);
        }
        let granules = layout.size().div_ceil(self.map.granule());
        let block = self.backing_call.run(|| {
            self.map.reserve(granules, &self.alloc)?;
            self.alloc.allocate(layout)
        })?;
        // SAFETY: a fresh block of `layout`, computed by `Slab::layout_for` for these slots.
        let slab = unsafe { Slab::init(block.cast(), layout, slots, self.shape.size) };
        // The room reserved above is still there (a nested refill was refused): this makes no
        // call into the backing allocator.
        if let Err(e) = self.map.insert(slab.base(), granules, &self.alloc) {
            // SAFETY: the block is ours, fresh, and not registered anywhere.
            unsafe { self.alloc.deallocate(block.cast(), layout) };
            return Err(e);
        }
        self.slabs.push(slab);
        Ok(())
    }

    /// Puts slot `p` back on the free list. With `whole`, `p` itself goes on the list; without,
    /// its pointer is re-derived from the slab's own (found in the address map).
    ///
    /// Why `whole` may skip the map: the caller's pointer may carry a narrower provenance than
    /// the slot (a `Box<u32>` in a slot of 8 bytes), and the list hands it to the next user as a
    /// whole slot. But a pointer given to `deallocate` must be valid for its layout's size (the
    /// rule `Global`'s deallocation holds callers to as well), so when that size is the slot
    /// size, the caller's pointer already covers the whole slot.
    ///
    /// # Safety
    /// `p` is a slot of this pool currently in use; with `whole`, `p` is valid for reads and
    /// writes of the whole slot.
    #[inline(always)]
    unsafe fn give_back(&self, p: NonNull<u8>, whole: bool) {
        #[cfg(debug_assertions)]
        {
            let (slab, i) = self.owner(p);
            if !slab.swap_bit(i, false) {
                panic!("arena-pool: Pool::deallocate: double free of {p:p}");
            }
        }
        let slot = if whole {
            p
        } else {
            match self.rederive(p) {
                Some(slot) => slot,
                None => return, // not ours: only a broken contract gets here, nothing is touched
            }
        };
        // SAFETY: the slot is ours and no longer in use; `slot` is valid for the whole slot
        // (the caller's pointer by `whole`'s contract, or one re-derived from the slab
        // registered for its address), and slots are pointer-sized and -aligned.
        unsafe { self.free.push(slot) };
    }

    /// The pool's own pointer to the slot at `p`'s address, with its slab's provenance; `None`
    /// when no slab of the pool holds that address. Out of line: it keeps the whole-slot free
    /// path small enough to be inlined into its callers.
    #[inline(never)]
    pub(crate) fn rederive(&self, p: NonNull<u8>) -> Option<NonNull<u8>> {
        let base = self.map.get(p.addr().get())?;
        Some(base.with_addr(p.addr()))
    }

    // ----- the Allocator rules -----
    //
    // Each rule takes the slot shape `s`: `self.shape` for `Pool`, the same values as constants
    // for `TypedPool` (whose pool was made for its type's layout), so that they fold. The rules
    // carve and route by `s`, so it must be this pool's shape: the `_as` functions are `unsafe`
    // for that reason, and debug builds check it.

    #[inline]
    pub(crate) fn allocate_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: the pool's own shape.
        unsafe { self.allocate_as(self.shape, layout, false) }
    }

    #[inline]
    pub(crate) fn allocate_zeroed_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: the pool's own shape.
        unsafe { self.allocate_as(self.shape, layout, true) }
    }

    /// # Safety
    /// The `Allocator::deallocate` contract.
    #[inline]
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller; the pool's own shape.
        unsafe { self.deallocate_as(self.shape, p, layout) }
    }

    /// # Safety
    /// The `Allocator::grow`/`shrink` contract for `old` and `new`.
    #[inline]
    pub(crate) unsafe fn reallocate_impl(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller; the pool's own shape.
        unsafe { self.reallocate_as(self.shape, p, old, new, zeroed) }
    }

    /// `allocate` (`allocate_zeroed` with `zeroed`).
    ///
    /// # Safety
    /// `s` is this pool's shape (`self.shape`).
    #[inline(always)]
    pub(crate) unsafe fn allocate_as(
        &self,
        s: SlotShape,
        layout: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert_eq!(s, self.shape);
        if s.pooled(layout) {
            let p = self.take_slot(s.size)?;
            if zeroed {
                // SAFETY: the slot is ours and `s.size` bytes long (`s` is the pool's shape).
                unsafe { p.write_bytes(0, s.size) };
            }
            Ok(NonNull::slice_from_raw_parts(p, s.size))
        } else if layout.size() == 0 {
            Ok(NonNull::slice_from_raw_parts(dangling(layout.align()), 0))
        } else if self.strict.get() {
            self.alloc.refused_otherwise();
            Err(AllocError)
        } else {
            let block = if zeroed {
                self.alloc.allocate_zeroed(layout)?
            } else {
                self.alloc.allocate(layout)?
            };
            self.fallback_blocks.set(self.fallback_blocks.get() + 1);
            Ok(block)
        }
    }

    /// `deallocate`.
    ///
    /// # Safety
    /// The `Allocator::deallocate` contract, and `s` is this pool's shape (`self.shape`).
    #[inline(always)]
    pub(crate) unsafe fn deallocate_as(&self, s: SlotShape, p: NonNull<u8>, layout: Layout) {
        debug_assert_eq!(s, self.shape);
        if layout.size() == s.size && s.fits_align(layout) {
            // SAFETY: a pooled layout (the slot size is never 0) means `p` came from a slot
            // (routing is by layout); the `Allocator::deallocate` contract makes `p` valid for
            // `layout.size()` bytes, here the whole slot.
            unsafe { self.give_back(p, true) }
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { self.deallocate_other(s, p, layout) }
        }
    }

    /// `deallocate` of a layout smaller than the slot, or not pooled: out of line and cold, so
    /// that its calls (the address map's look-up, the backing allocator) do not make the
    /// whole-slot path around it keep its caller's values out of the registers a call clobbers.
    ///
    /// # Safety
    /// As [`deallocate_as`](Self::deallocate_as).
    #[cold]
    #[inline(never)]
    unsafe fn deallocate_other(&self, s: SlotShape, p: NonNull<u8>, layout: Layout) {
        if s.pooled(layout) {
            // SAFETY: a pooled layout means `p` came from a slot (routing is by layout).
            unsafe { self.give_back(p, false) }
        } else if layout.size() != 0 {
            self.fallback_blocks.set(self.fallback_blocks.get() - 1);
            // SAFETY: a non-pooled, non-empty layout means `p` came from `self.alloc`.
            unsafe { self.alloc.deallocate(p, layout) }
        }
    }

    /// `grow`, `grow_zeroed` and `shrink`: in place within a slot, delegated to `A` when both
    /// sides are there, moved across otherwise.
    ///
    /// # Safety
    /// The `Allocator::grow`/`shrink` contract for `old` and `new`, and `s` is this pool's shape
    /// (`self.shape`).
    #[inline(always)]
    pub(crate) unsafe fn reallocate_as(
        &self,
        s: SlotShape,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert_eq!(s, self.shape);
        let (from_slot, to_slot) = (s.pooled(old), s.pooled(new));
        if from_slot && to_slot {
            // SAFETY: forwarded from the caller; both layouts fit a slot, so `p` is a live slot
            // of `s.size` bytes, and `rederive` gives its slab's own pointer.
            return unsafe {
                super::resize_in_place(p, old, new, zeroed, s.size, |p| self.rederive(p))
            };
        }
        if !to_slot && new.size() != 0 && self.strict.get() {
            // Strict: `new` would go to the backing allocator (the block is unchanged).
            self.alloc.refused_otherwise();
            return Err(AllocError);
        }
        // SAFETY: forwarded from the caller; both layouts route to `self.alloc` exactly when
        // the flag says so.
        unsafe {
            super::relocate(
                self,
                &self.alloc,
                !from_slot && !to_slot,
                p,
                old,
                new,
                zeroed,
            )
        }
    }
}

impl<A: Allocator> Drop for Pool<A> {
    fn drop(&mut self) {
        // The slabs stay in the address map as they are released: nothing reads it again. A
        // `deallocate` that unwinds leaves the slabs not released yet, and the map's table, to
        // the backing allocator.
        // SAFETY: ownership proves no block is alive; the slabs and the map's table came from
        // `self.alloc`.
        unsafe {
            self.slabs.release_all(&self.alloc);
            self.map.release(&self.alloc);
        }
    }
}

impl<A: Allocator> fmt::Debug for Pool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("stats", &self.stats())
            .finish()
    }
}

/// A snapshot of a [`Pool`]'s memory, from [`Pool::stats`].
///
/// ```
/// let pool = arena_pool::Pool::for_type::<u64>();
/// let a = pool.alloc(1u64);
/// let stats = pool.stats();
/// assert_eq!((stats.in_use, stats.slot_size), (1, 8));
/// assert!(stats.capacity >= 1 && stats.bytes_held > 0);
/// drop(a);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolStats {
    /// Bytes per slot (the block length pooled allocations report).
    pub slot_size: usize,
    /// Alignment of every slot.
    pub slot_align: usize,
    /// Slots in all slabs.
    pub capacity: usize,
    /// Slots handed out and not freed (counted when asked: see [`Pool::in_use`]).
    pub in_use: usize,
    /// Slabs held from the backing allocator.
    pub slabs: usize,
    /// Bytes of all slabs, headers included.
    pub bytes_held: usize,
    /// Blocks that did not fit a slot, currently allocated from the backing allocator.
    pub fallback_blocks: usize,
}
