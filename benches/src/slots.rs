//! [`SlotStore`]: slot-level pools behind one trait (insert a value, get an owning handle, remove
//! it by the handle), so that a `pools` case runs the same code for every crate, and
//! [`SlotFamily`], which names a crate's store for any value type. arena-pool's entries are
//! `Box<T, &Pool>` and `Box<T, &TypedPool<T>>`; the system allocator's is `Box<T>`, mimalloc's
//! allocator-api2's `Box<T, Mi>`.

use core::cell::UnsafeCell;

use crate::Mi;

/// A block of `W` words (`8 * W` bytes), the value the `pools` suite stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Payload<const W: usize>(pub [u64; W]);

impl<const W: usize> Payload<W> {
    /// A payload whose first word is `x`.
    #[inline(always)]
    pub fn new(x: u64) -> Self {
        let mut words = [0; W];
        words[0] = x;
        Payload(words)
    }
}

// fastalloc stores only `Poolable` values; the trait's methods all have defaults.
impl<const W: usize> fastalloc::Poolable for Payload<W> {}

/// A crate's slot store, for any value type.
pub trait SlotFamily {
    /// Column name in the reports (no `/`).
    const NAME: &'static str;
    /// The store for values of type `T`.
    type Store<T: fastalloc::Poolable>: SlotStore<T>;
}

/// A store of `T` values in slots.
pub trait SlotStore<T>: Sized {
    /// The owning handle `insert` returns; giving it to `remove` frees the slot.
    type Handle<'s>
    where
        Self: 's;
    /// A store for up to `capacity` live values (the crates that grow may ignore it; one with a
    /// fixed capacity needs it).
    fn with_capacity(capacity: usize) -> Self;
    /// Stores `value`.
    fn insert(&self, value: T) -> Self::Handle<'_>;
    /// Removes (and drops) the value of `handle`, freeing its slot.
    fn remove<'s>(&'s self, handle: Self::Handle<'s>);
    /// Removes the value of `handle`, freeing its slot, and returns it (for the cases that check
    /// what they get back).
    fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T
    where
        T: Copy;
}

/// Implements [`SlotStore`] for one of arena-pool's pool types, `$store` (naming `T`), with
/// `Box<T, &$store>` as the handle and `$new` making a store.
macro_rules! box_store {
    ($store:ty, $new:expr) => {
        impl<T> SlotStore<T> for $store {
            type Handle<'s>
                = allocator_api2::boxed::Box<T, &'s $store>
            where
                Self: 's;
            fn with_capacity(_capacity: usize) -> Self {
                $new
            }
            #[inline(always)]
            fn insert(&self, value: T) -> Self::Handle<'_> {
                allocator_api2::boxed::Box::new_in(value, self)
            }
            #[inline(always)]
            fn remove<'s>(&'s self, handle: Self::Handle<'s>) {
                drop(handle);
            }
            #[inline(always)]
            fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T {
                allocator_api2::boxed::Box::into_inner(handle)
            }
        }
    };
}

/// arena-pool: `Box<T, &Pool>` on a `Pool` for `T`, which grows as needed.
pub struct PoolSlots;

impl SlotFamily for PoolSlots {
    const NAME: &'static str = "arena-pool";
    type Store<T: fastalloc::Poolable> = arena_pool::Pool;
}

box_store!(arena_pool::Pool, arena_pool::Pool::for_type::<T>());

/// arena-pool: `Box<T, &TypedPool<T>>`, a pool whose slot size and alignment are constants.
pub struct TypedPoolSlots;

impl SlotFamily for TypedPoolSlots {
    const NAME: &'static str = "arena-pool-TypedPool";
    type Store<T: fastalloc::Poolable> = arena_pool::TypedPool<T>;
}

box_store!(arena_pool::TypedPool<T>, arena_pool::TypedPool::new());

/// arena-pool's thread-safe pool, used from one thread: `Box<T, &SyncPool>` (what the lock and the
/// shard routing cost over `Pool`).
pub struct SyncPoolSlots;

impl SlotFamily for SyncPoolSlots {
    const NAME: &'static str = "arena-pool-SyncPool";
    type Store<T: fastalloc::Poolable> = arena_pool::SyncPool;
}

box_store!(arena_pool::SyncPool, arena_pool::SyncPool::for_type::<T>());

/// The system allocator: `std::boxed::Box<T>` (glibc malloc here).
pub struct SystemBox;

impl SlotFamily for SystemBox {
    const NAME: &'static str = "System";
    type Store<T: fastalloc::Poolable> = SystemBox;
}

impl<T> SlotStore<T> for SystemBox {
    type Handle<'s> = Box<T>;
    fn with_capacity(_capacity: usize) -> Self {
        SystemBox
    }
    #[inline(always)]
    fn insert(&self, value: T) -> Self::Handle<'_> {
        Box::new(value)
    }
    #[inline(always)]
    fn remove<'s>(&'s self, handle: Self::Handle<'s>) {
        drop(handle);
    }
    #[inline(always)]
    fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T {
        *handle
    }
}

/// mimalloc as an allocator instance: allocator-api2's `Box<T, Mi>` (see [`Mi`]; the memory
/// meter does not see it, so no suite registers it in memory mode).
pub struct MiBox;

impl SlotFamily for MiBox {
    const NAME: &'static str = "mimalloc";
    type Store<T: fastalloc::Poolable> = MiBox;
}

impl<T> SlotStore<T> for MiBox {
    type Handle<'s> = allocator_api2::boxed::Box<T, Mi>;
    fn with_capacity(_capacity: usize) -> Self {
        MiBox
    }
    #[inline(always)]
    fn insert(&self, value: T) -> Self::Handle<'_> {
        allocator_api2::boxed::Box::new_in(value, Mi)
    }
    #[inline(always)]
    fn remove<'s>(&'s self, handle: Self::Handle<'s>) {
        drop(handle);
    }
    #[inline(always)]
    fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T {
        allocator_api2::boxed::Box::into_inner(handle)
    }
}

/// slab: `Slab::insert` and `Slab::remove`, the handle being the key. Its methods take
/// `&mut self`; the cell lends that out for the length of one call.
pub struct SlabStore<T>(UnsafeCell<slab::Slab<T>>);

/// The [`SlotFamily`] of [`SlabStore`].
pub struct SlabSlots;

impl SlotFamily for SlabSlots {
    const NAME: &'static str = "slab";
    type Store<T: fastalloc::Poolable> = SlabStore<T>;
}

impl<T> SlotStore<T> for SlabStore<T> {
    type Handle<'s>
        = usize
    where
        T: 's;
    fn with_capacity(capacity: usize) -> Self {
        SlabStore(UnsafeCell::new(slab::Slab::with_capacity(capacity)))
    }
    #[inline(always)]
    fn insert(&self, value: T) -> usize {
        // SAFETY: the cell is `!Sync` and no method hands out a reference into the slab, so this
        // `&mut` is the only reference to it while the call lasts.
        unsafe { (*self.0.get()).insert(value) }
    }
    #[inline(always)]
    fn remove(&self, key: usize) {
        // SAFETY: as in `insert`.
        drop(unsafe { (*self.0.get()).remove(key) });
    }
    #[inline(always)]
    fn take(&self, key: usize) -> T {
        // SAFETY: as in `insert`.
        unsafe { (*self.0.get()).remove(key) }
    }
}

/// fastalloc: `FixedPool` (its fastest pool), sized for the case's largest live set, with its
/// `OwnedHandle`.
pub struct FastallocSlots;

impl SlotFamily for FastallocSlots {
    const NAME: &'static str = "fastalloc";
    type Store<T: fastalloc::Poolable> = fastalloc::FixedPool<T>;
}

impl<T: fastalloc::Poolable> SlotStore<T> for fastalloc::FixedPool<T> {
    type Handle<'s>
        = fastalloc::OwnedHandle<'s, T>
    where
        T: 's;
    fn with_capacity(capacity: usize) -> Self {
        fastalloc::FixedPool::new(capacity.max(1)).expect("fastalloc pool")
    }
    #[inline(always)]
    fn insert(&self, value: T) -> Self::Handle<'_> {
        self.allocate(value).expect("fastalloc pool exhausted")
    }
    #[inline(always)]
    fn remove<'s>(&'s self, handle: Self::Handle<'s>) {
        drop(handle);
    }
    #[inline(always)]
    fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T
    where
        T: Copy,
    {
        // The slot is freed when the handle drops, after the copy.
        *handle
    }
}

/// shared_arena: its single-threaded `Pool`, with its `PoolBox`.
pub struct SharedArenaSlots;

impl SlotFamily for SharedArenaSlots {
    const NAME: &'static str = "shared_arena";
    type Store<T: fastalloc::Poolable> = shared_arena::Pool<T>;
}

impl<T> SlotStore<T> for shared_arena::Pool<T> {
    type Handle<'s>
        = shared_arena::PoolBox<T>
    where
        T: 's;
    fn with_capacity(capacity: usize) -> Self {
        shared_arena::Pool::with_capacity(capacity)
    }
    #[inline(always)]
    fn insert(&self, value: T) -> Self::Handle<'_> {
        self.alloc(value)
    }
    #[inline(always)]
    fn remove<'s>(&'s self, handle: Self::Handle<'s>) {
        drop(handle);
    }
    #[inline(always)]
    fn take<'s>(&'s self, handle: Self::Handle<'s>) -> T
    where
        T: Copy,
    {
        // The slot is freed when the handle drops, after the copy.
        *handle
    }
}
