//! [`SyncPool`]: a [`Pool`] shared by threads, as striped shards of the single-threaded pool.

use core::alloc::Layout;
use core::cell::Cell;
use core::fmt;
use core::ptr::{self, NonNull};

use alloc::boxed::Box;
use alloc::vec::Vec;

use allocator_api2::alloc::{AllocError, Allocator, Global};

use super::shim::{AtomicBool, AtomicUsize, Me, Ordering, ReentrantLock};
use crate::arena::{Budget, dangling};
use crate::error::Failure;
use crate::pool::{Pool, PoolStats, SlotShape, boxed, relocate, resize_in_place};
use crate::reentry::OnUnwind;
use cache::{BATCH, RegistryRef};

mod cache;

/// A thread-safe pool of fixed-size slots: [`Pool`]'s behaviour through `&SyncPool` from any
/// thread, including blocks allocated on one thread and freed on another.
///
/// # Design
/// The pool is a few **shards**, each a lock around the same single-threaded [`Pool`] code
/// (no second implementation to get wrong), on cache lines of their own:
/// - a thread allocates from its own shard (threads are spread round-robin when they first use
///   any pool), so threads on different shards never contend;
/// - a block is freed into the shard whose slab holds it (the thread's own shard is tried first;
///   for a block from another thread the others are asked in turn, one lock at a time), so
///   every shard keeps exact counts and [`trim`](SyncPool::trim) stays exact;
/// - layouts that do not fit a slot go straight to the backing allocator, with no lock.
///
/// In front of the shards, each thread keeps a **cache** of up to 64 free slots per pool: an
/// allocation, and a free of a whole slot (a `Box<T>` of the pool's `T`), take from it and give
/// to it with no lock and no atomic read-modify-write, on any thread (slots are interchangeable
/// within a pool, so a block freed on another thread goes to that thread's cache). Slots move
/// between a cache and the shards 32 at a time, in one lock: an empty cache takes a batch from
/// its thread's shard, a full one gives its oldest half back to their shards.
/// - The statistics count cached slots as free: [`stats`](SyncPool::stats) is exact whenever no
///   thread is inside the pool.
/// - [`trim`](SyncPool::trim), [`reset`](SyncPool::reset) and drop take every cache back first,
///   so no cached slot outlives the pool or keeps a slab from being trimmed.
/// - A thread's exit gives its cached slots to the pool, where the next thread that needs slots
///   takes them.
/// - A free of a layout smaller than the slot (a pointer narrowed to it) goes to its shard at
///   once, as does every call on a thread while it is inside the backing allocator for this pool
///   (re-entrancy) or exiting.
///
/// There is no lock-free list, so no ABA problem; each lock's acquire/release orders the slot
/// links and the block contents between the threads that use a slot in turn (a slot freed into
/// another thread's cache reaches it with the block, by whatever sent the block there). Memory
/// goes back to the backing allocator only through `&mut self` ([`trim`](SyncPool::trim)) or
/// drop, when no other thread can be inside the pool.
///
/// `SyncPool` is `Sync` when `A` is, and `Send` when `A` is `Send + Sync`.
///
/// ```
/// use arena_pool::SyncPool;
/// use arena_pool::allocator_api2::boxed::Box;
///
/// let pool = &SyncPool::for_type::<[u64; 2]>();
/// let (tx, rx) = std::sync::mpsc::channel();
/// std::thread::scope(|s| {
///     s.spawn(move || {
///         for i in 0..100u64 {
///             tx.send(Box::new_in([i, i * 2], pool)).unwrap();
///         }
///     });
///     s.spawn(move || {
///         // Freed on the receiving thread, back into the producer's shard.
///         let sum: u64 = rx.iter().take(100).map(|b| b[1]).sum();
///         assert_eq!(sum, 9900);
///     });
/// });
/// assert_eq!(pool.stats().in_use, 0);
/// ```
pub struct SyncPool<A: Allocator = Global> {
    /// Owned (allocated as a `Box` would be, freed in `Drop` as one); a raw pointer because the
    /// shards' pools point at the backing allocator inside it.
    shared: NonNull<Shared<A>>,
    /// The shards' slot shape (every shard's `Pool` is made for `shared.slot_layout`), kept in
    /// the handle so that an allocation and a free reach it without going through `shared`.
    shape: SlotShape,
    /// `shared.registry.key()`, kept here for the same reason (fixed for the pool's life).
    key: usize,
}

struct Shared<A: Allocator> {
    // Dropped first: the pools give their slabs back through `alloc`.
    // A `Vec` (of exactly its capacity), so that a fallible constructor never reallocates it.
    shards: Vec<Shard<A>>,
    /// `shards.len() - 1` (a power of two minus one).
    mask: usize,
    slot_layout: Layout,
    /// A whole slot (the slot shape's size and alignment): how slots move between caches and
    /// shards.
    whole_slot: Layout,
    /// The threads' caches of this pool.
    registry: RegistryRef,
    /// Blocks of layouts that do not fit a slot, held from the backing allocator.
    fallback: AtomicUsize,
    /// Strict mode: layouts that do not fit a slot are refused (see `SyncPool::set_strict`).
    strict: AtomicBool,
    /// The allocation limit, and the bytes held from `alloc` by every shard and the blocks that
    /// do not fit a slot.
    limit: SharedLimit,
    alloc: A,
}

/// A `SyncPool`'s allocation limit: the arenas' rule (`Budget`) over a count of the bytes held
/// that every thread updates. A request is counted before its call into the backing allocator
/// (a compare-and-swap that admits it only under the limit), so that requests of several
/// threads at once never pass the limit together, and taken off again when the call fails.
struct SharedLimit {
    /// The limit, when `limited` is set.
    limit: AtomicUsize,
    limited: AtomicBool,
    /// Bytes held from the backing allocator, or being taken from it.
    held: AtomicUsize,
    panic_on_limit: AtomicBool,
}

impl SharedLimit {
    fn new() -> SharedLimit {
        SharedLimit {
            limit: AtomicUsize::new(0),
            limited: AtomicBool::new(false),
            held: AtomicUsize::new(0),
            panic_on_limit: AtomicBool::new(false),
        }
    }

    fn get(&self) -> Option<usize> {
        self.limited
            .load(Ordering::Relaxed)
            .then(|| self.limit.load(Ordering::Relaxed))
    }

    /// Sets the limit. A request made meanwhile by another thread is measured against the old
    /// limit or the new one; each is a valid answer for a call that races the setting.
    fn set(&self, limit: Option<usize>) {
        if let Some(limit) = limit {
            self.limit.store(limit, Ordering::Relaxed);
        }
        self.limited.store(limit.is_some(), Ordering::Relaxed);
    }

    /// Counts `more` bytes as held if the limit admits them (`Err` when it does not).
    fn take(&self, more: usize) -> Result<(), ()> {
        let limit = self.get();
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                Budget { limit, held }.admit(more).ok()?;
                held.checked_add(more)
            })
            .map(drop)
            .map_err(drop)
    }

    /// Counts `bytes` as no longer held.
    fn give(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` more as held, admitted already (the excess length of a block).
    fn count(&self, bytes: usize) {
        if bytes != 0 {
            self.held.fetch_add(bytes, Ordering::Relaxed);
        }
    }
}

/// What a `SyncPool` request does when the allocation limit refuses it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OnLimit {
    /// Returns `Err` (`try_alloc`).
    Err,
    /// Panics if the pool panics on its limit (the `Allocator` methods).
    AsAsked,
    /// Panics (`alloc`).
    Panic,
}

/// One shard, on a cache line (pair) of its own. The lock is re-entrant: the shard's pool calls
/// the backing allocator with the lock held (for a slab), and a backing allocator that uses this
/// `SyncPool` meanwhile gets the same pool back on its thread (whose nested slab refill the pool
/// refuses), not a deadlock.
#[repr(align(128))]
struct Shard<A: Allocator>(ReentrantLock<Pool<Backing<A>>>);

/// The backing allocator as the pool of shard `shard` sees it: a pointer to the `Shared` that
/// holds the one allocator of the `SyncPool`.
///
/// Every call of the `SyncPool` into its backing allocator goes through a `Backing`, which counts
/// the bytes against the pool's limit: a shard's (for its slabs and its address map), or one
/// with no shard (`SyncPool::direct`, for the blocks that do not fit a slot).
struct Backing<A: Allocator> {
    shared: NonNull<Shared<A>>,
    /// The shard, or an index past the shards for the blocks that do not fit a slot.
    shard: usize,
    /// Set while the shard is held through `&mut SyncPool` (in `trim`), not through its lock:
    /// the shards are then borrowed mutably, and must not be reached from here.
    exclusive: Cell<bool>,
    /// Whether the last request made here was refused by the limit (read by the thread that
    /// made it, under the shard's lock, or on its own `direct` view).
    refused: Cell<bool>,
}

impl<A: Allocator> Backing<A> {
    /// The pool's limit. Only this field of `Shared` is referenced: `trim` holds the shards
    /// mutably meanwhile.
    fn limit(&self) -> &SharedLimit {
        // SAFETY: `shared` is alive (see `Send` below); the field is never borrowed mutably.
        unsafe { &(*self.shared.as_ptr()).limit }
    }

    /// Runs `call`, a request to the backing allocator for `more` bytes counted as held
    /// meanwhile if the limit admits them: they stay counted when it succeeds, and are given
    /// back when it fails or unwinds. The block returned may be longer than asked for (`base +
    /// more` bytes, `base` being the size of the block it replaces): the pool may use, and later
    /// give back, its whole length, so that length is what stays counted.
    fn taking(
        &self,
        base: usize,
        more: usize,
        call: impl FnOnce() -> Result<NonNull<[u8]>, AllocError>,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let limit = self.limit();
        if limit.take(more).is_err() {
            self.refused.set(true);
            return Err(AllocError);
        }
        let undo = OnUnwind::new(|| limit.give(more));
        let r = call();
        undo.disarm();
        // Admitted: what nested requests in `call` did to the flag does not describe this one.
        self.refused.set(false);
        match r {
            Ok(block) => limit.count(block.len().saturating_sub(base + more)),
            Err(AllocError) => limit.give(more),
        }
        r
    }

    /// Calls `f` with the backing allocator, recording the thread as the holder of the shard's
    /// lock meanwhile (when this is a shard's and the shards are reached through their locks).
    fn call<R>(&self, f: impl FnOnce(&A) -> R) -> R {
        if self.exclusive.get() {
            // SAFETY: `shared` is alive; the allocator is reached through a shared reference
            // to its field only: `trim` holds the shards mutably.
            return f(unsafe { &(*self.shared.as_ptr()).alloc });
        }
        // SAFETY: `shared` is alive (see `Send` below); only shared references to its fields
        // are made, and no `&mut` to the shards exists unless `exclusive` is set.
        let shared = unsafe { self.shared.as_ref() };
        match shared.shards.get(self.shard) {
            Some(shard) => shard.0.holding(Me::get(), || f(&shared.alloc)),
            None => f(&shared.alloc),
        }
    }
}

// SAFETY: `Backing` is a shared reference to the `SyncPool`'s `Shared`, which outlives every
// shard (its allocator is dropped after them); using it from several threads needs `A: Sync`, as
// `&A` would. Its flag is part of the shard's pool, read and written only by the thread that
// holds the shard (under its lock, or through `&mut SyncPool`).
unsafe impl<A: Allocator + Sync> Send for Backing<A> {}

// SAFETY: every method forwards to the `A` in `Shared`, which is alive (see above), and only
// counts bytes against the limit.
unsafe impl<A: Allocator> Allocator for Backing<A> {
    /// Called by the shard's pool with the shard's lock held (for a slab or an address-map
    /// table): the thread is recorded as the holder meanwhile, so that the backing allocator
    /// may use this `SyncPool` on it without a deadlock. Or, with no shard, for a block that
    /// does not fit a slot.
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(0, layout.size(), || self.call(|a| a.allocate(layout)))
    }

    #[inline]
    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(0, layout.size(), || {
            self.call(|a| a.allocate_zeroed(layout))
        })
    }

    /// Called by the shard's pool with the shard's lock held (an address-map table replaced
    /// while a slab is taken), with the thread recorded as the holder as for `allocate`; or
    /// with the shard held exclusively (`trim`), or once the shards are gone (drop); or, with
    /// no shard, for a block that does not fit a slot.
    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // Out of the count once the backing allocator has the block back, so that another
        // thread admitted in its place never holds it at the same time (the limit caps what the
        // backing allocator holds at any moment); out of it too if `deallocate` unwinds, which
        // leaves the block to the backing allocator: the pool no longer refers to it.
        let limit = self.limit();
        let give = OnUnwind::new(|| limit.give(layout.size()));
        // SAFETY: forwarded from the caller.
        self.call(|a| unsafe { a.deallocate(ptr, layout) });
        give.disarm();
        limit.give(layout.size());
    }

    /// Only for blocks that do not fit a slot (with no shard).
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(old.size(), new.size() - old.size(), || {
            // SAFETY: forwarded from the caller (`new.size() >= old.size()`).
            self.call(|a| unsafe { a.grow(ptr, old, new) })
        })
    }

    /// As `grow`.
    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(old.size(), new.size() - old.size(), || {
            // SAFETY: forwarded from the caller (`new.size() >= old.size()`).
            self.call(|a| unsafe { a.grow_zeroed(ptr, old, new) })
        })
    }

    /// As `grow`.
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller (`new.size() <= old.size()`).
        let block = self.call(|a| unsafe { a.shrink(ptr, old, new) })?;
        // The whole length returned stays counted (see `taking`).
        self.limit().give(old.size().saturating_sub(block.len()));
        Ok(block)
    }
}

// SAFETY: `&SyncPool` reaches the shards only through their locks (each a lock around a
// `Send` pool, as `Backing` is `Send` when `A: Sync`), the fallback counter is atomic, and `&A`
// is shared between threads, which `A: Sync` allows.
unsafe impl<A: Allocator + Sync> Sync for SyncPool<A> {}
// SAFETY: the pool owns its shards and `A`; moving it moves both (so `A: Send`), and the shards'
// pools hold `Backing` pointers that are `Send` when `A: Sync`.
unsafe impl<A: Allocator + Send + Sync> Send for SyncPool<A> {}

impl SyncPool {
    /// A pool of slots for `layout` on the global allocator.
    ///
    /// # Panics
    /// Calls `handle_alloc_error` when its shards cannot be allocated; [`try_new`](Self::try_new)
    /// returns the error instead.
    #[must_use]
    pub fn new(layout: Layout) -> SyncPool {
        SyncPool::new_in(layout, Global)
    }

    /// [`new`](Self::new), with `Err` when the pool's own state (its shards, from the global
    /// allocator) cannot be allocated.
    ///
    /// ```
    /// use core::alloc::Layout;
    ///
    /// let pool = arena_pool::SyncPool::try_new(Layout::new::<u64>()).unwrap();
    /// assert_eq!(pool.slot_size(), 8);
    /// ```
    pub fn try_new(layout: Layout) -> Result<SyncPool, AllocError> {
        SyncPool::try_new_in(layout, Global)
    }

    /// A pool of slots for `T`.
    ///
    /// ```
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// assert_eq!(pool.slot_size(), 8);
    /// ```
    #[must_use]
    pub fn for_type<T>() -> SyncPool {
        SyncPool::new(Layout::new::<T>())
    }
}

impl<A: Allocator> SyncPool<A> {
    /// A pool of slots for `layout`, taking slabs (and blocks that do not fit) from `alloc`, with
    /// twice as many shards as the machine has threads (a power of two, at most 64).
    ///
    /// # The backing allocator
    /// A shard calls `alloc` for a slab with its lock held; the lock is re-entrant, so:
    /// - **`alloc` may panic**: the shard is then as it was before the request, every block in
    ///   place, and its lock is free again;
    /// - **`alloc`'s `deallocate` may panic** (in [`trim`](Self::trim) or the pool's drop): as
    ///   for [`Pool::new_in`]; a drop still frees the pool's own state and drops `alloc`;
    /// - **`alloc` may use this pool** on the same thread: a nested request that needs another
    ///   slab in the shard being refilled is refused (`Err(AllocError)`); every other nested call
    ///   (a free, an allocation from a free slot, a layout that goes to `alloc`, the statistics)
    ///   is served, never a deadlock.
    ///
    /// # Panics
    /// Calls `handle_alloc_error` when its shards cannot be allocated (from the global
    /// allocator); [`try_new_in`](Self::try_new_in) returns the error instead.
    pub fn new_in(layout: Layout, alloc: A) -> SyncPool<A> {
        SyncPool::with_shards_in(layout, default_shards(), alloc)
    }

    /// [`new_in`](Self::new_in), with `Err` when the pool's own state (its shards, from the
    /// global allocator) cannot be allocated; `alloc` is dropped then.
    ///
    /// ```
    /// use arena_pool::allocator_api2::alloc::Global;
    /// use core::alloc::Layout;
    ///
    /// let pool = arena_pool::SyncPool::try_new_in(Layout::new::<[u8; 48]>(), Global).unwrap();
    /// assert_eq!(pool.slot_size(), 48);
    /// ```
    pub fn try_new_in(layout: Layout, alloc: A) -> Result<SyncPool<A>, AllocError> {
        SyncPool::try_with_shards_in(layout, default_shards(), alloc)
    }

    /// Like [`new_in`](SyncPool::new_in) with `shards` shards (rounded up to a power of two,
    /// at least 1, at most 65 536). One shard is a single lock around a [`Pool`], on 128 bytes
    /// of its own.
    ///
    /// # Panics
    /// Calls `handle_alloc_error` when the shards cannot be allocated (from the global
    /// allocator); [`try_with_shards_in`](Self::try_with_shards_in) returns the error instead.
    pub fn with_shards_in(layout: Layout, shards: usize, alloc: A) -> SyncPool<A> {
        SyncPool::build(layout, shards, alloc)
            .unwrap_or_else(|state| alloc::alloc::handle_alloc_error(state))
    }

    /// [`with_shards_in`](Self::with_shards_in), with `Err` when the shards cannot be
    /// allocated; `alloc` is dropped then.
    ///
    /// ```
    /// use arena_pool::allocator_api2::alloc::Global;
    /// use core::alloc::Layout;
    ///
    /// let pool = arena_pool::SyncPool::try_with_shards_in(Layout::new::<u32>(), 3, Global);
    /// assert_eq!(pool.unwrap().shard_count(), 4);
    /// ```
    pub fn try_with_shards_in(
        layout: Layout,
        shards: usize,
        alloc: A,
    ) -> Result<SyncPool<A>, AllocError> {
        SyncPool::build(layout, shards, alloc).map_err(|_| AllocError)
    }

    /// The pool with `shards` shards; on failure, the layout of the state that could not be
    /// allocated (nothing is held then).
    fn build(layout: Layout, shards: usize, alloc: A) -> Result<SyncPool<A>, Layout> {
        let n = shards.clamp(1, 1 << 16).next_power_of_two();
        let mut slots: Vec<Shard<A>> = Vec::new();
        slots
            .try_reserve_exact(n)
            .map_err(|_| Layout::array::<Shard<A>>(n).unwrap_or(Layout::new::<Shard<A>>()))?;
        let state = Layout::new::<Shared<A>>();
        // SAFETY: `Shared` is not zero-sized (it has a `Layout` field, among others).
        let raw = unsafe { alloc::alloc::alloc(state) }.cast::<Shared<A>>();
        // Valid until it is freed in `Drop` (as a `Box`: the global allocator, this layout),
        // after the shards.
        let shared = NonNull::new(raw).ok_or(state)?;
        let shape = SlotShape::for_layout(layout);
        let Some(registry) = RegistryRef::new() else {
            // SAFETY: allocated above with `state`, not written.
            unsafe { alloc::alloc::dealloc(raw.cast(), state) };
            return Err(Layout::new::<cache::Registry>());
        };
        let key = registry.key();
        // SAFETY: a fresh block for one `Shared`, written whole before any use.
        unsafe {
            shared.as_ptr().write(Shared {
                shards: Vec::new(),
                mask: n - 1,
                slot_layout: layout,
                // A slot's size is a multiple of its alignment, a power of two.
                whole_slot: Layout::from_size_align(shape.size, shape.align).unwrap_or(layout),
                registry,
                fallback: AtomicUsize::new(0),
                strict: AtomicBool::new(false),
                limit: SharedLimit::new(),
                alloc,
            });
        }
        // Within the capacity reserved above: no allocation.
        slots.extend((0..n).map(|shard| {
            Shard(ReentrantLock::new(Pool::new_in(
                layout,
                Backing {
                    shared,
                    shard,
                    exclusive: Cell::new(false),
                    refused: Cell::new(false),
                },
            )))
        }));
        // SAFETY: nothing else refers to this field yet; it is written through the raw pointer,
        // without a reference to the whole `Shared` (whose `alloc` the pools point at).
        unsafe {
            (*shared.as_ptr()).shards = slots;
        }
        Ok(SyncPool { shared, shape, key })
    }

    fn shared(&self) -> &Shared<A> {
        // SAFETY: owned by `self` and freed only in `Drop`.
        unsafe { self.shared.as_ref() }
    }

    /// The layout the pool was made for.
    pub fn slot_layout(&self) -> Layout {
        self.shared().slot_layout
    }

    /// The size of each slot (what pooled allocations report).
    pub fn slot_size(&self) -> usize {
        self.shape.size
    }

    /// The number of shards.
    pub fn shard_count(&self) -> usize {
        self.shared().shards.len()
    }

    /// Places `value` in a slot and returns its owning `Box`, which gives the slot back when
    /// dropped, on whichever thread drops it: `Box::new_in(value, &pool)`, with the pool's own
    /// failure messages. A `T` that does not fit a slot goes to the backing allocator unless
    /// the pool is [strict](Self::set_strict).
    ///
    /// # Panics
    /// In strict mode, when `T` does not fit a slot, with a message naming `T`'s layout and the
    /// slot's; at the [allocation limit](Self::set_allocation_limit), with a message naming the
    /// limit. Calls `handle_alloc_error` when the backing allocator fails.
    ///
    /// ```
    /// let pool = arena_pool::SyncPool::for_type::<[u32; 4]>();
    /// let b = std::thread::scope(|s| s.spawn(|| pool.alloc([7u32; 4])).join().unwrap());
    /// assert_eq!(b[3], 7);
    /// drop(b); // freed on this thread, into the slot's shard
    /// assert_eq!(pool.in_use(), 0);
    /// ```
    #[track_caller]
    pub fn alloc<T>(&self, value: T) -> allocator_api2::boxed::Box<T, &Self> {
        match self.allocate_with(Layout::new::<T>(), false, OnLimit::Panic) {
            // SAFETY: a block from this pool for `T`'s layout.
            Ok(block) => unsafe { boxed(block, value, self) },
            Err(AllocError) => self.alloc_failed(Layout::new::<T>()),
        }
    }

    /// Like [`alloc`](Self::alloc), returning `Err` instead of panicking (also at the limit
    /// when the pool [panics on its limit](Self::set_panic_on_limit)) or calling
    /// `handle_alloc_error` (`value` is dropped then, as `Box::try_new_in` drops it).
    pub fn try_alloc<T>(
        &self,
        value: T,
    ) -> Result<allocator_api2::boxed::Box<T, &Self>, AllocError> {
        let block = self.allocate_with(Layout::new::<T>(), false, OnLimit::Err)?;
        // SAFETY: a block from this pool for `T`'s layout.
        Ok(unsafe { boxed(block, value, self) })
    }

    /// Sets a cap on the bytes the pool holds from its backing allocator, or removes it with
    /// `None`, for all its shards together: their slabs, their address maps' tables, and the
    /// blocks of layouts that do not fit a slot. A request that would need more fails with
    /// `AllocError` (`try_alloc`, the `Allocator` methods) or panics naming the limit
    /// ([`alloc`](Self::alloc), and the `Allocator` methods with
    /// [`set_panic_on_limit`](Self::set_panic_on_limit)), as for
    /// [`Pool::set_allocation_limit`]. Requests of several threads at once never pass it
    /// together. What the pool holds already stays, and a free slot is still handed out at the
    /// limit (from the thread's shard: a slot free in another shard is not).
    ///
    /// ```
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// pool.set_allocation_limit(Some(4096));
    /// assert_eq!(pool.allocation_limit(), Some(4096));
    /// let mut boxes = Vec::new();
    /// while let Ok(b) = pool.try_alloc(1u64) {
    ///     boxes.push(b);
    /// }
    /// assert!(pool.stats().bytes_held <= 4096);
    /// boxes.pop(); // its slot is handed out again at the limit
    /// assert!(pool.try_alloc(2u64).is_ok());
    /// ```
    pub fn set_allocation_limit(&self, limit: Option<usize>) {
        self.shared().limit.set(limit);
    }

    /// The allocation limit, if one is set.
    ///
    /// ```
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// assert_eq!(pool.allocation_limit(), None);
    /// ```
    pub fn allocation_limit(&self) -> Option<usize> {
        self.shared().limit.get()
    }

    /// With `true`, the pool's `Allocator` methods panic at the allocation limit ("arena-pool:
    /// the pool's allocation limit of N bytes is reached") instead of returning
    /// `Err(AllocError)`, as [`Pool::set_panic_on_limit`] describes; the shard's lock is free
    /// again and the pool consistent when the panic unwinds. [`try_alloc`](Self::try_alloc)
    /// still returns `Err`.
    ///
    /// ```
    /// use std::panic::{AssertUnwindSafe, catch_unwind};
    /// use arena_pool::allocator_api2::boxed::Box;
    ///
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// pool.set_allocation_limit(Some(0));
    /// pool.set_panic_on_limit(true);
    /// assert!(catch_unwind(AssertUnwindSafe(|| Box::new_in(1u64, &pool))).is_err());
    /// assert!(pool.try_alloc(1u64).is_err());
    /// ```
    pub fn set_panic_on_limit(&self, panic: bool) {
        self.shared()
            .limit
            .panic_on_limit
            .store(panic, Ordering::Relaxed);
    }

    /// Whether the `Allocator` methods panic at the allocation limit.
    ///
    /// ```
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// assert!(!pool.panics_on_limit());
    /// ```
    pub fn panics_on_limit(&self) -> bool {
        self.shared().limit.panic_on_limit.load(Ordering::Relaxed)
    }

    /// The view of the backing allocator for the blocks that do not fit a slot (no shard),
    /// which counts them against the limit.
    #[inline]
    fn direct(&self) -> Backing<A> {
        Backing {
            shared: self.shared,
            shard: usize::MAX,
            exclusive: Cell::new(false),
            refused: Cell::new(false),
        }
    }

    /// A failed request: the limit's panic when the limit refused it (`by_limit`) and
    /// `on_limit` asks for the panic; `AllocError` otherwise. Called once the request has undone
    /// what it did.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn failed(&self, by_limit: bool, on_limit: OnLimit) -> AllocError {
        if let (true, Some(limit)) = (by_limit, self.allocation_limit()) {
            let panic = match on_limit {
                OnLimit::Err => false,
                OnLimit::AsAsked => self.panics_on_limit(),
                OnLimit::Panic => true,
            };
            if panic {
                Failure::PoolLimitReached { limit }.raise()
            }
        }
        AllocError
    }

    /// The `Allocator` methods' failure: the limit's panic is raised, when asked for, where the
    /// request failed.
    #[inline(always)]
    pub(crate) fn refused(&self) -> AllocError {
        AllocError
    }

    /// Why an allocation of `layout` failed, as a panic naming the cause.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn alloc_failed(&self, layout: Layout) -> ! {
        let shape = self.shape;
        if self.is_strict() && layout.size() != 0 && !shape.pooled(layout) {
            shape.refuse(layout)
        }
        Failure::OutOfMemory(layout).raise()
    }

    /// Strict mode, as for [`Pool::set_strict`]: with `true`, a layout that does not fit a slot
    /// is refused with `AllocError` (and [`alloc`](Self::alloc) panics saying so) instead of
    /// going to the backing allocator. The pooled paths do not read it.
    ///
    /// ```
    /// use arena_pool::allocator_api2::boxed::Box;
    ///
    /// let pool = arena_pool::SyncPool::for_type::<u64>();
    /// pool.set_strict(true);
    /// assert!(Box::try_new_in([0u64; 8], &pool).is_err());
    /// assert_eq!(*pool.alloc(5u64), 5);
    /// ```
    pub fn set_strict(&self, strict: bool) {
        self.shared().strict.store(strict, Ordering::Relaxed);
    }

    /// Whether the pool is strict (see [`set_strict`](Self::set_strict)).
    pub fn is_strict(&self) -> bool {
        self.shared().strict.load(Ordering::Relaxed)
    }

    /// The backing allocator.
    pub fn allocator(&self) -> &A {
        &self.shared().alloc
    }

    /// Statistics, summed over the shards (each locked in turn) less the slots in the threads'
    /// caches: a snapshot only while no other thread uses the pool.
    ///
    /// ```
    /// use arena_pool::allocator_api2::boxed::Box;
    /// let pool = arena_pool::SyncPool::for_type::<u32>();
    /// let b = Box::new_in(5u32, &pool);
    /// assert_eq!(pool.stats().in_use, 1);
    /// drop(b);
    /// assert_eq!(pool.stats().in_use, 0);
    /// ```
    pub fn stats(&self) -> PoolStats {
        let shared = self.shared();
        let mut total = PoolStats {
            slot_size: self.shape.size,
            slot_align: self.shape.align,
            fallback_blocks: shared.fallback.load(Ordering::Relaxed),
            ..PoolStats::default()
        };
        for shard in shared.shards.iter() {
            let s = shard.0.lock(Me::get()).stats();
            total.capacity += s.capacity;
            total.in_use += s.in_use;
            total.slabs += s.slabs;
            total.bytes_held += s.bytes_held;
        }
        // The shards count the slots in the threads' caches as in use; they are not.
        total.in_use = total.in_use.saturating_sub(shared.registry.cached());
        total
    }

    /// Slots handed out and not freed (see [`stats`](SyncPool::stats)).
    pub fn in_use(&self) -> usize {
        self.stats().in_use
    }

    /// Slots in all slabs (see [`stats`](SyncPool::stats)).
    pub fn capacity(&self) -> usize {
        self.stats().capacity
    }

    /// Returns every slab with no slot in use to the backing allocator, after taking back the
    /// slots of every thread's cache.
    pub fn trim(&mut self) {
        /// Clears a shard's `exclusive` flag when its `trim` returns or unwinds.
        struct Exclusive<A: Allocator>(*mut Pool<Backing<A>>);
        impl<A: Allocator> Drop for Exclusive<A> {
            fn drop(&mut self) {
                // SAFETY: the pool is a shard of the `SyncPool` borrowed mutably by `trim`; the
                // `&mut` its `trim` took from this pointer has ended.
                unsafe { (*self.0).allocator().exclusive.set(false) };
            }
        }
        self.take_back_caches();
        for shard in self.shards_mut() {
            let pool: *mut Pool<Backing<A>> = shard.0.get_mut();
            // SAFETY: `pool` comes from the `&mut` above, and is used only through this pointer
            // from here on.
            unsafe { (*pool).allocator().exclusive.set(true) };
            let exclusive = Exclusive(pool);
            // SAFETY: as above.
            unsafe { (*pool).trim() };
            drop(exclusive);
        }
    }

    /// Forgets every slot (all become free, the threads' caches emptied) and keeps the slabs.
    /// Needs `&mut self`, so no block of the pool is alive.
    pub fn reset(&mut self) {
        // Emptied first: a cached slot must not be handed out again after the reset.
        self.take_back_caches();
        for shard in self.shards_mut() {
            shard.0.get_mut().reset();
        }
    }

    /// Gives every slot of the threads' caches back to its shard. Needs `&mut self`: no thread is
    /// inside the pool, so none uses its cache meanwhile (see `cache::Registry::take_back`).
    fn take_back_caches(&mut self) {
        let s = self.shared();
        s.registry.take_back(false, |p| {
            self.give_back(&mut [p], 0);
        });
    }

    /// The shards, for the `&mut self` methods.
    fn shards_mut(&mut self) -> &mut [Shard<A>] {
        // SAFETY: `shared` is ours and valid until `Drop`; `&mut self` proves no other thread
        // and no guard uses the shards. The reference covers the `shards` field only, not the
        // backing allocator the pools point at.
        unsafe { &mut (*self.shared.as_ptr()).shards }
    }

    // ----- the Allocator rules -----

    /// Whether `layout` is served from a slot (as `Pool` decides it).
    #[inline(always)]
    fn pooled(&self, layout: Layout) -> bool {
        self.shape.pooled(layout)
    }

    /// Runs `f` on the shard pool that holds `p`, under that shard's lock (the thread's own
    /// shard is tried first); `None` when no shard holds `p`. Always inlined: it is the whole of
    /// a free's work, and a call would add its frame to every free.
    #[inline(always)]
    fn with_owner<R>(&self, p: NonNull<u8>, f: impl FnOnce(&Pool<Backing<A>>) -> R) -> Option<R> {
        let s = self.shared();
        let me = Me::get();
        let home = me.hint() & s.mask;
        // The index is masked to the shard count: `get` never fails.
        if let Some(shard) = s.shards.get(home) {
            let pool = shard.0.lock(me);
            if pool.owns(p) {
                return Some(f(&pool));
            }
        }
        self.with_other_owner(p, me, home, f)
    }

    /// `with_owner`'s search of the shards other than `home`, out of line: a thread's blocks are
    /// mostly in its own shard.
    #[cold]
    #[inline(never)]
    fn with_other_owner<R>(
        &self,
        p: NonNull<u8>,
        me: Me,
        home: usize,
        f: impl FnOnce(&Pool<Backing<A>>) -> R,
    ) -> Option<R> {
        let s = self.shared();
        for i in 1..s.shards.len() {
            let Some(shard) = s.shards.get((home + i) & s.mask) else {
                continue; // never: the index is masked to the shard count
            };
            let pool = shard.0.lock(me);
            if pool.owns(p) {
                return Some(f(&pool));
            }
        }
        None
    }

    #[inline(always)]
    pub(crate) fn allocate_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.allocate_with(layout, false, OnLimit::AsAsked)
    }

    #[inline]
    pub(crate) fn allocate_zeroed_impl(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.allocate_with(layout, true, OnLimit::AsAsked)
    }

    #[inline(always)]
    fn allocate_with(
        &self,
        layout: Layout,
        zeroed: bool,
        on_limit: OnLimit,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if self.pooled(layout) {
            if let Some(p) = cache::pop(self.key) {
                return Ok(self.slot_block(p, zeroed));
            }
        }
        self.allocate_slow(layout, zeroed, on_limit)
    }

    /// Slot `p` (ours now) as the block an allocation returns, zeroed if asked.
    #[inline(always)]
    fn slot_block(&self, p: NonNull<u8>, zeroed: bool) -> NonNull<[u8]> {
        if zeroed {
            // SAFETY: a slot of `shape.size` bytes, ours now, valid for all of them.
            unsafe { p.write_bytes(0, self.shape.size) };
        }
        NonNull::slice_from_raw_parts(p, self.shape.size)
    }

    /// An allocation the thread's cache did not serve: a layout that does not fit a slot, or a
    /// slot from the shards. Out of line and cold, with one call site, so that the inlined path
    /// is the cache's pop alone, laid out straight (a layout that does not fit a slot costs a
    /// call into the backing allocator anyway).
    #[cold]
    #[inline(never)]
    fn allocate_slow(
        &self,
        layout: Layout,
        zeroed: bool,
        on_limit: OnLimit,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if !self.pooled(layout) {
            return self.allocate_other(layout, zeroed, on_limit);
        }
        let p = self.take_slot_slow(on_limit)?;
        Ok(self.slot_block(p, zeroed))
    }

    /// A layout that does not fit a slot: a dangling block when empty, the backing allocator's
    /// otherwise.
    #[inline]
    fn allocate_other(
        &self,
        layout: Layout,
        zeroed: bool,
        on_limit: OnLimit,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let s = self.shared();
        if layout.size() == 0 {
            Ok(NonNull::slice_from_raw_parts(dangling(layout.align()), 0))
        } else if s.strict.load(Ordering::Relaxed) {
            Err(AllocError)
        } else {
            let direct = self.direct();
            let r = if zeroed {
                direct.allocate_zeroed(layout)
            } else {
                direct.allocate(layout)
            };
            let block = r.map_err(|_| self.failed(direct.refused.get(), on_limit))?;
            s.fallback.fetch_add(1, Ordering::Relaxed);
            Ok(block)
        }
    }

    /// # Safety
    /// The `Allocator::deallocate` contract.
    #[inline(always)]
    pub(crate) unsafe fn deallocate_impl(&self, p: NonNull<u8>, layout: Layout) {
        // A pooled layout of the slot's size: the caller's pointer is valid for the whole slot,
        // and may be handed out again as it is.
        if layout.size() == self.shape.size && self.pooled(layout) {
            // Debug builds: a foreign pointer is caught before it is cached (not under loom,
            // whose models would explore every extra lock taken).
            #[cfg(all(debug_assertions, not(loom)))]
            if self.with_owner(p, |_| ()).is_none() {
                panic!("arena-pool: SyncPool::deallocate: {p:p} was not allocated by this pool");
            }
            if !cache::push(self.key, p) {
                self.cache_slot_slow(p);
            }
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.deallocate_other(p, layout) }
    }

    /// `deallocate` of a block that is not a whole slot: a pointer narrowed to less than its
    /// slot (given back to its shard at once, which re-derives the slot's pointer from its
    /// slab's), or a block of the backing allocator. Out of line, as `allocate_other`.
    ///
    /// # Safety
    /// The `Allocator::deallocate` contract.
    #[inline(never)]
    unsafe fn deallocate_other(&self, p: NonNull<u8>, layout: Layout) {
        let s = self.shared();
        if self.pooled(layout) {
            // SAFETY: the caller's block, a slot of the shard pool that holds it.
            let freed = self.with_owner(p, |pool| unsafe { pool.deallocate(p, layout) });
            if freed.is_none() && cfg!(debug_assertions) {
                panic!("arena-pool: SyncPool::deallocate: {p:p} was not allocated by this pool");
            }
        } else if layout.size() != 0 {
            s.fallback.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: a non-pooled, non-empty layout means `p` came from `alloc` (routing is by
            // layout alone), through the view that counts such blocks.
            unsafe { self.direct().deallocate(p, layout) }
        }
    }

    /// An allocation the thread's cache could not serve: from the cache after a refill (from an
    /// orphaned cache, or a batch from the thread's shard), or from the shard directly when the
    /// thread cannot use its cache (a nested call from the backing allocator, or a thread that
    /// is exiting).
    #[cold]
    #[inline(never)]
    fn take_slot_slow(&self, on_limit: OnLimit) -> Result<NonNull<u8>, AllocError> {
        let s = self.shared();
        let Some(busy) = cache::enter(&s.registry) else {
            let mut one = [NonNull::dangling()];
            self.take_slots(&mut one, on_limit)?;
            let [p] = one;
            return Ok(p);
        };
        let cache = busy.cache();
        if let Some(p) = cache.pop() {
            return Ok(p);
        }
        if s.registry.adopt(cache) == 0 {
            let mut got = [NonNull::dangling(); BATCH];
            let n = self.take_slots(&mut got, on_limit)?;
            // Reversed: the first slot taken is handed out first.
            for &p in got.iter().take(n).rev() {
                cache.push_slow(p);
            }
        }
        cache.pop().ok_or(AllocError)
    }

    /// Takes up to `out.len()` slots from the thread's shard into `out`, under one lock: at
    /// least one (which may take a new slab), then those the shard has without a new slab.
    /// Returns how many.
    /// A failure is `failed`'s, as the shard's `Backing` tells it (read under the shard's lock).
    fn take_slots(&self, out: &mut [NonNull<u8>], on_limit: OnLimit) -> Result<usize, AllocError> {
        let s = self.shared();
        let me = Me::get();
        // The home shard is masked to the shard count: `get` never fails.
        let shard = s.shards.get(me.hint() & s.mask).ok_or(AllocError)?;
        let pool = shard.0.lock(me);
        let mut n = 0;
        for slot in out.iter_mut() {
            if n > 0 && !pool.has_spare_slot() {
                break;
            }
            match pool.allocate(s.whole_slot) {
                Ok(p) => *slot = p.cast(),
                Err(_) if n == 0 => {
                    return Err(self.failed(pool.allocator().refused.get(), on_limit));
                }
                Err(_) => break,
            }
            n += 1;
        }
        Ok(n)
    }

    /// A whole slot freed that the thread's cache could not take: into the cache after giving
    /// its oldest half back to the shards, or to its shard directly when the thread cannot use
    /// its cache (see `take_slot_slow`).
    #[cold]
    #[inline(never)]
    fn cache_slot_slow(&self, p: NonNull<u8>) {
        let s = self.shared();
        let Some(busy) = cache::enter(&s.registry) else {
            // SAFETY: `p` is a live slot of this pool (the caller's contract), of a whole slot.
            let freed = self.with_owner(p, |pool| unsafe { pool.deallocate(p, s.whole_slot) });
            if freed.is_none() && cfg!(debug_assertions) {
                panic!("arena-pool: SyncPool::deallocate: {p:p} was not allocated by this pool");
            }
            return;
        };
        let cache = busy.cache();
        #[cfg(debug_assertions)]
        if cache.holds(p) {
            panic!("arena-pool: SyncPool::deallocate: double free of {p:p}");
        }
        if cache.len() == cache::CAP {
            let mut out = [NonNull::dangling(); BATCH];
            let k = cache.take_oldest(&mut out);
            let hint = self.give_back(&mut out[..k], cache.hint.get());
            cache.hint.set(hint);
        }
        cache.push_slow(p);
    }

    /// Gives cached slots (whole slots of this pool, taken from their shards and not in use)
    /// back to their shards, one lock per shard that holds some of them, trying shard `first`
    /// first. Returns the last shard that took one.
    fn give_back(&self, slots: &mut [NonNull<u8>], first: usize) -> usize {
        let s = self.shared();
        let me = Me::get();
        let mut left = slots.len();
        let mut last = first;
        for k in 0..s.shards.len() {
            if left == 0 {
                break;
            }
            let i = first.wrapping_add(k) & s.mask;
            let Some(shard) = s.shards.get(i) else {
                continue; // never: the index is masked to the shard count
            };
            let pool = shard.0.lock(me);
            let mut kept = 0;
            for j in 0..left {
                let Some(&p) = slots.get(j) else { break };
                if pool.owns(p) {
                    // SAFETY: a whole slot of this shard's pool, taken from it, not in use.
                    unsafe { pool.deallocate(p, s.whole_slot) };
                    last = i;
                } else if let Some(slot) = slots.get_mut(kept) {
                    *slot = p;
                    kept += 1;
                }
            }
            left = kept;
        }
        if left != 0 && cfg!(debug_assertions) {
            panic!(
                "arena-pool: SyncPool::deallocate: a cached slot was not allocated by this pool"
            );
        }
        last
    }

    /// `grow`, `grow_zeroed`, `shrink`: in place within a slot, by `A` when both layouts go
    /// there, moved across otherwise.
    ///
    /// # Safety
    /// The `Allocator::grow`/`shrink` contract.
    pub(crate) unsafe fn reallocate_impl(
        &self,
        p: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let (from_slot, to_slot) = (self.pooled(old), self.pooled(new));
        if from_slot && to_slot {
            // SAFETY: forwarded from the caller; both layouts fit a slot, so `p` is a live slot
            // of `slot` bytes, and `rederive` gives the owning shard's slab pointer.
            return unsafe {
                resize_in_place(p, old, new, zeroed, self.shape.size, |p| {
                    self.with_owner(p, |pool| pool.rederive(p)).flatten()
                })
            };
        }
        if !to_slot && new.size() != 0 && self.is_strict() {
            // Strict: `new` would go to the backing allocator (the block is unchanged).
            return Err(AllocError);
        }
        let direct = self.direct();
        // SAFETY: forwarded from the caller; both layouts go to `alloc` (through the view that
        // counts such blocks) exactly when neither fits a slot.
        let r = unsafe { relocate(self, &direct, !from_slot && !to_slot, p, old, new, zeroed) };
        // A new block through the pool raised the limit's panic already, if asked; a block
        // that stays with the backing allocator is answered here.
        r.map_err(|_| self.failed(direct.refused.get(), OnLimit::AsAsked))
    }
}

fn default_shards() -> usize {
    if cfg!(loom) {
        return 2;
    }
    std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .saturating_mul(2)
        .clamp(2, 64)
}

impl<A: Allocator> Drop for SyncPool<A> {
    fn drop(&mut self) {
        /// Frees the `Shared` (dropping the backing allocator) once the shards are gone, also
        /// when a shard's pool unwinds out of the backing allocator's `deallocate`.
        struct FreeShared<A: Allocator>(*mut Shared<A>);
        impl<A: Allocator> Drop for FreeShared<A> {
            fn drop(&mut self) {
                // SAFETY: allocated in the constructor from the global allocator with `Shared`'s
                // layout (as a `Box` is), and freed only here, once the shards are dropped (see
                // below).
                drop(unsafe { Box::from_raw(self.0) });
            }
        }
        // The caches first: emptied, and the registry marked dead, so that no thread reaches
        // the pool through its cache any more (their slots go with the slabs).
        self.shared().registry.take_back(true, |_| {});
        let shared = FreeShared(self.shared.as_ptr());
        // The shards first, through the raw pointer: their pools give their slabs back through
        // `Backing` pointers to `alloc`, which a `Box` of the whole `Shared` would invalidate.
        // SAFETY: `shared` is valid and ours; the field is replaced, never dropped twice.
        let shards = unsafe { ptr::replace(&raw mut (*shared.0).shards, Vec::new()) };
        // A shard's pool that unwinds here has given back what it could; the slice's drop still
        // drops the other shards and frees the box before `shared` frees the `Shared` in the
        // unwind, so no `Backing` pointer is left when it does.
        drop(shards);
        drop(shared);
    }
}

impl<A: Allocator> fmt::Debug for SyncPool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncPool")
            .field("shards", &self.shard_count())
            .field("stats", &self.stats())
            .finish()
    }
}
