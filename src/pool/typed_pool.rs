//! [`TypedPool`]: a [`Pool`] for the values of one type, whose slot size and alignment are
//! constants.

use core::alloc::Layout;
use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global};
use allocator_api2::boxed::Box;

use super::slot_pool::{Pool, PoolStats, SlotShape};

/// A [`Pool`] of slots for values of type `T`: the same slabs, free list and rules, with the
/// slot size and alignment known at compile time.
///
/// Every allocation of a pool checks the layout it is given against the slot (does it fit, is
/// the slot aligned enough), and every free checks whether the layout is the whole slot. A
/// `Pool` reads its slot size from memory for these checks; a `TypedPool<T>` knows it from `T`,
/// so for a `Box<T, &TypedPool<T>>` (whose layout is `T`'s, a constant too) the checks fold away
/// and an allocation or a free is the free-list pop or push alone. Use it when a pool serves one
/// type, `Pool` when the layout is known only at run time.
///
/// Other layouts are served as a `Pool` serves them (any layout that fits the slot from a slot,
/// the others by the backing allocator `A`), so `Vec<T, &TypedPool<T>>` works as well.
/// [`as_pool`](Self::as_pool) gives the underlying pool.
///
/// ```
/// use arena_pool::TypedPool;
/// use arena_pool::allocator_api2::boxed::Box;
///
/// let pool = TypedPool::<[f32; 6]>::new();
/// let a = Box::new_in([0.5f32; 6], &pool);
/// let addr = &*a as *const [f32; 6];
/// drop(a); // back on the free list
/// let b = Box::new_in([1.5f32; 6], &pool);
/// assert_eq!(&*b as *const [f32; 6], addr); // the freed slot is reused
/// assert_eq!((pool.in_use(), pool.stats().slot_size), (1, 24));
/// ```
pub struct TypedPool<T, A: Allocator = Global> {
    /// Made for `Layout::new::<T>()`, so its slot shape is [`Self::SHAPE`].
    pool: Pool<A>,
    _values: PhantomData<fn() -> T>,
}

impl<T> TypedPool<T> {
    /// A pool for values of type `T` on the global allocator. Allocates nothing yet.
    ///
    /// ```
    /// let pool = arena_pool::TypedPool::<u64>::new();
    /// assert_eq!((pool.capacity(), pool.in_use()), (0, 0));
    /// ```
    pub fn new() -> TypedPool<T> {
        TypedPool::new_in(Global)
    }

    /// A pool whose first slab holds at least `capacity` values.
    ///
    /// # Panics
    /// When the slab size overflows; calls `handle_alloc_error` when the allocator fails.
    ///
    /// ```
    /// let pool = arena_pool::TypedPool::<[u8; 48]>::with_capacity(100);
    /// assert!(pool.capacity() >= 100);
    /// ```
    #[track_caller]
    pub fn with_capacity(capacity: usize) -> TypedPool<T> {
        TypedPool::with_capacity_in(capacity, Global)
    }

    /// Like [`with_capacity`](TypedPool::with_capacity), returning `Err` instead of panicking
    /// or aborting.
    ///
    /// ```
    /// assert!(arena_pool::TypedPool::<u64>::try_with_capacity(1 << 60).is_err());
    /// ```
    pub fn try_with_capacity(capacity: usize) -> Result<TypedPool<T>, AllocError> {
        TypedPool::try_with_capacity_in(capacity, Global)
    }
}

impl<T> Default for TypedPool<T> {
    fn default() -> TypedPool<T> {
        TypedPool::new()
    }
}

impl<T, A: Allocator> TypedPool<T, A> {
    /// The slots of every `TypedPool<T, _>`: those of a `Pool` made for `T`'s layout.
    const SHAPE: SlotShape = SlotShape::for_layout(Layout::new::<T>());

    /// A pool for values of type `T`, taking its slabs (and blocks of other layouts) from
    /// `alloc`. What `alloc` may do (panic, allocate from this pool) is as for
    /// [`Pool::new_in`].
    pub fn new_in(alloc: A) -> TypedPool<T, A> {
        TypedPool {
            pool: Pool::new_in(Layout::new::<T>(), alloc),
            _values: PhantomData,
        }
    }

    /// Like [`with_capacity`](TypedPool::with_capacity), on `alloc`.
    ///
    /// # Panics
    /// As for [`with_capacity`](TypedPool::with_capacity).
    #[track_caller]
    pub fn with_capacity_in(capacity: usize, alloc: A) -> TypedPool<T, A> {
        TypedPool {
            pool: Pool::with_capacity_in(Layout::new::<T>(), capacity, alloc),
            _values: PhantomData,
        }
    }

    /// Like [`with_capacity_in`](TypedPool::with_capacity_in), returning `Err` instead of
    /// panicking or aborting.
    pub fn try_with_capacity_in(capacity: usize, alloc: A) -> Result<TypedPool<T, A>, AllocError> {
        Ok(TypedPool {
            pool: Pool::try_with_capacity_in(Layout::new::<T>(), capacity, alloc)?,
            _values: PhantomData,
        })
    }

    /// The underlying pool (its statistics, its slot layout, `T`'s).
    pub fn as_pool(&self) -> &Pool<A> {
        &self.pool
    }

    /// Places `value` in a slot and returns its owning [`Box`], which gives the slot back when
    /// dropped: `Box::new_in(value, &pool)`.
    ///
    /// # Panics
    /// At the [allocation limit](Self::set_allocation_limit), with a message naming the limit.
    /// Calls `handle_alloc_error` when the backing allocator fails (a `T` always fits a slot).
    ///
    /// ```
    /// use arena_pool::TypedPool;
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Node { value: u32, next: Option<u32> }
    ///
    /// let pool = TypedPool::<Node>::new();
    /// let a = pool.alloc(Node { value: 1, next: None });
    /// let b = pool.alloc(Node { value: 2, next: Some(1) });
    /// assert_eq!(b.next, Some(a.value));
    /// assert_eq!(pool.in_use(), 2);
    /// ```
    #[track_caller]
    pub fn alloc(&self, value: T) -> Box<T, &Self> {
        match self.allocate_impl(Layout::new::<T>()) {
            // SAFETY: a block from this pool for `T`'s layout.
            Ok(block) => unsafe { super::boxed(block, value, self) },
            Err(AllocError) => self.pool.alloc_failed(Layout::new::<T>()),
        }
    }

    /// Like [`alloc`](Self::alloc), returning `Err` when the backing allocator fails or at the
    /// allocation limit (even when the pool [panics on its limit](Self::set_panic_on_limit));
    /// `value` is dropped then, as `Box::try_new_in` drops it.
    pub fn try_alloc(&self, value: T) -> Result<Box<T, &Self>, AllocError> {
        let block = self.allocate_impl(Layout::new::<T>())?;
        // SAFETY: a block from this pool for `T`'s layout.
        Ok(unsafe { super::boxed(block, value, self) })
    }

    /// The error of a failed `Allocator` call (see [`Pool::set_panic_on_limit`]).
    #[inline]
    #[track_caller]
    pub(crate) fn refused(&self) -> AllocError {
        self.pool.refused()
    }

    /// Sets a cap on the bytes the pool holds from its backing allocator, or removes it with
    /// `None`, as [`Pool::set_allocation_limit`] does: slabs, the address map's table and blocks
    /// of other layouts count; a request that would need more fails (`try_alloc`, the
    /// `Allocator` methods) or panics naming the limit ([`alloc`](Self::alloc)); a free slot is
    /// still handed out at the limit.
    ///
    /// ```
    /// use arena_pool::TypedPool;
    ///
    /// let pool = TypedPool::<[u64; 2]>::new();
    /// pool.set_allocation_limit(Some(2048));
    /// let mut boxes = Vec::new();
    /// while let Ok(b) = pool.try_alloc([1, 2]) {
    ///     boxes.push(b);
    /// }
    /// assert!(pool.stats().bytes_held <= 2048);
    /// drop(boxes.pop());
    /// assert!(pool.try_alloc([3, 4]).is_ok()); // the freed slot
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.pool.set_allocation_limit(limit)
    }

    /// The allocation limit, if one is set.
    ///
    /// ```
    /// let pool = arena_pool::TypedPool::<u64>::new();
    /// pool.set_allocation_limit(Some(4096));
    /// assert_eq!(pool.allocation_limit(), Some(4096));
    /// ```
    pub fn allocation_limit(&self) -> Option<usize> {
        self.pool.allocation_limit()
    }

    /// With `true`, the `Allocator` methods panic at the allocation limit instead of returning
    /// `Err(AllocError)`, as [`Pool::set_panic_on_limit`] describes; `try_alloc` still returns
    /// `Err`.
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::TypedPool;
    /// use arena_pool::allocator_api2::boxed::Box;
    ///
    /// let pool = TypedPool::<u64>::new();
    /// pool.set_allocation_limit(Some(0));
    /// pool.set_panic_on_limit(true);
    /// let r = catch_unwind(AssertUnwindSafe(|| Box::new_in(1u64, &pool)));
    /// assert!(r.is_err()); // a panic naming the limit, not an abort
    /// assert!(pool.try_alloc(1).is_err());
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.pool.set_panic_on_limit(panic)
    }

    /// Whether the `Allocator` methods panic at the allocation limit.
    ///
    /// ```
    /// let pool = arena_pool::TypedPool::<u64>::new();
    /// pool.set_panic_on_limit(true);
    /// assert!(pool.panics_on_limit());
    /// ```
    pub fn panics_on_limit(&self) -> bool {
        self.pool.panics_on_limit()
    }

    /// Strict mode, as for [`Pool::set_strict`]: layouts that do not fit a slot (other than
    /// `T`'s, through a `Vec<T, &TypedPool<T>>` say) are refused instead of going to the backing
    /// allocator.
    pub fn set_strict(&self, strict: bool) {
        self.pool.set_strict(strict)
    }

    /// Whether the pool is strict (see [`set_strict`](Self::set_strict)).
    pub fn is_strict(&self) -> bool {
        self.pool.is_strict()
    }

    /// Slots in all slabs (free, in use, or not carved yet).
    pub fn capacity(&self) -> usize {
        self.pool.capacity()
    }

    /// Slots handed out and not freed.
    pub fn in_use(&self) -> usize {
        self.pool.in_use()
    }

    /// Statistics, as for [`Pool::stats`].
    pub fn stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        self.pool.allocator()
    }

    /// Forgets every slot, keeping the slabs, as [`Pool::reset`] does.
    pub fn reset(&mut self) {
        self.pool.reset()
    }

    /// Returns every slab with no slot in use to the backing allocator, as [`Pool::trim`] does.
    pub fn trim(&mut self) {
        self.pool.trim()
    }

    // ----- the Allocator rules: the pool's, with the shape as a constant -----
    //
    // `SHAPE` is the pool's shape: the pool was made for `Layout::new::<T>()`, and a pool's
    // shape is `SlotShape::for_layout` of its layout.

    #[inline(always)]
    pub(crate) fn allocate_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: `SHAPE` is the pool's shape (above).
        unsafe { self.pool.allocate_as(Self::SHAPE, layout, false) }
    }

    #[inline]
    pub(crate) fn allocate_zeroed_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: `SHAPE` is the pool's shape (above).
        unsafe { self.pool.allocate_as(Self::SHAPE, layout, true) }
    }

    /// # Safety
    /// The `Allocator::deallocate` contract.
    #[inline(always)]
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller; `SHAPE` is the pool's shape (above).
        unsafe { self.pool.deallocate_as(Self::SHAPE, p, layout) }
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
        // SAFETY: forwarded from the caller; `SHAPE` is the pool's shape (above).
        unsafe { self.pool.reallocate_as(Self::SHAPE, p, old, new, zeroed) }
    }
}

impl<T, A: Allocator> fmt::Debug for TypedPool<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedPool")
            .field("type", &core::any::type_name::<T>())
            .field("stats", &self.stats())
            .finish()
    }
}
