//! Shared code of the benchmark suites: one [`BenchAlloc`] trait over arena-pool and its peers,
//! so that every case runs the same code for every crate; [`TypedAlloc`] for the crates' own
//! typed APIs and [`SlotStore`] for the slot-level pools; [`Mi`], mimalloc as an allocator
//! instance, for the columns beside the system allocator; the [`harness`] that runs a suite under
//! criterion, once per case for the instruction counts, or for the memory counts of the
//! [`meter`] (the `meter` feature); and the start-up set-up that keeps the runs fair
//! ([`fix_malloc_thresholds`]).
//!
//! Each adapter forwards to the `Allocator` trait the crate implements itself: allocator-api2 0.2
//! for arena-pool, bumpalo and bump-scope, allocator-api2 0.4 for blink-alloc and stumpalo.
//! Collections reach every allocator through the same allocator-api2 0.2 types via [`Api02`].

pub mod harness;
pub mod meter;
mod mimalloc_alloc;
pub mod report_data;
mod slots;
mod typed;

pub use mimalloc_alloc::Mi;
pub use slots::{
    FastallocSlots, MiBox, Payload, PoolSlots, SharedArenaSlots, SlabSlots, SlabStore, SlotFamily,
    SlotStore, SyncPoolSlots, SystemBox, TypedPoolSlots,
};
pub use typed::TypedAlloc;

use core::cell::RefCell;
use core::ptr::NonNull;

pub use allocator_api2::alloc::{AllocError, Allocator, Layout};

/// Trait calls per iteration in the `allocator_api` suite (a prime, as in bumpalo's benches).
pub const N: usize = 10_007;

/// What a benchmark case needs from an allocator.
///
/// # Safety
/// `allocate`, `deallocate`, `grow` and `shrink` must keep the contract of allocator-api2 0.2's
/// [`Allocator`] methods of the same names ([`Api02`] relies on it). `reset` may invalidate every
/// block (it takes `&mut self`, so no borrowed block survives it).
pub unsafe trait BenchAlloc: Sized {
    /// Column name in the reports (no `/`: criterion-table splits ids on it).
    const NAME: &'static str;
    /// The crate's default constructor.
    fn new() -> Self;
    /// The crate's own reset (for `System`: free every live block).
    fn reset(&mut self);
    /// [`Allocator::allocate`].
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError>;
    /// [`Allocator::deallocate`].
    ///
    /// # Safety
    /// As for [`Allocator::deallocate`].
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout);
    /// [`Allocator::grow`].
    ///
    /// # Safety
    /// As for [`Allocator::grow`].
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError>;
    /// [`Allocator::shrink`].
    ///
    /// # Safety
    /// As for [`Allocator::shrink`].
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError>;
}

/// The four trait methods, forwarded to `$trait` (allocator-api2 0.2's or 0.4's `Allocator`)
/// through `&$target`, where `$get(self)` gives the `&$target` (the blanket
/// `impl Allocator for &A` is `#[inline(always)]` in both versions).
macro_rules! forward_to {
    ($trait:path, $target:ty, $get:path) => {
        #[inline(always)]
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            <&$target as $trait>::allocate(&$get(self), layout).map_err(|_| AllocError)
        }
        #[inline(always)]
        unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: the caller keeps `Allocator::deallocate`'s contract for this allocator.
            unsafe { <&$target as $trait>::deallocate(&$get(self), ptr, layout) }
        }
        #[inline(always)]
        unsafe fn grow(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: the caller keeps `Allocator::grow`'s contract for this allocator.
            unsafe { <&$target as $trait>::grow(&$get(self), ptr, old, new) }
                .map_err(|_| AllocError)
        }
        #[inline(always)]
        unsafe fn shrink(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: the caller keeps `Allocator::shrink`'s contract for this allocator.
            unsafe { <&$target as $trait>::shrink(&$get(self), ptr, old, new) }
                .map_err(|_| AllocError)
        }
    };
}

/// A `BenchAlloc` for a bump allocator with `new()`, `reset(&mut self)` and an `Allocator` impl
/// of the given allocator-api2 version on `&Self`.
macro_rules! bump_peer {
    ($ty:ty, $name:literal, $trait:path) => {
        // SAFETY: the methods forward to the crate's own `Allocator` impl, whose contract is the
        // same in allocator-api2 0.2 and 0.4; `reset` is the crate's safe `&mut self` reset.
        unsafe impl BenchAlloc for $ty {
            const NAME: &'static str = $name;
            fn new() -> Self {
                <$ty>::new()
            }
            fn reset(&mut self) {
                <$ty>::reset(self);
            }
            forward_to!($trait, Self, core::convert::identity);
        }
    };
}

bump_peer!(
    arena_pool::Arena,
    "arena-pool",
    allocator_api2::alloc::Allocator
);
/// arena-pool's `Arena` with a minimum alignment of 8 (`Arena::with_min_align`): every block at
/// a multiple of 8 and a multiple of 8 long, so a type of alignment 8 or less is bumped with no
/// padding arithmetic. Its column, `arena-pool-min8`, beside `arena-pool` (minimum alignment 1)
/// shows what the minimum alignment wins and costs per row.
pub type ArenaMin8 = arena_pool::Arena<allocator_api2::alloc::Global, 8>;

// SAFETY: the methods forward to the arena's own allocator-api2 0.2 `Allocator` impl; `reset` is
// its safe `&mut self` reset.
unsafe impl BenchAlloc for ArenaMin8 {
    const NAME: &'static str = "arena-pool-min8";
    fn new() -> Self {
        ArenaMin8::with_min_align()
    }
    fn reset(&mut self) {
        ArenaMin8::reset(self);
    }
    forward_to!(
        allocator_api2::alloc::Allocator,
        Self,
        core::convert::identity
    );
}

// arena-pool's thread-safe arena used from one thread: its shared path (one compare-and-swap per
// block) and a `LocalArena` handle (no atomics), beside `Arena` — what thread safety costs.
bump_peer!(
    arena_pool::SyncArena,
    "arena-pool-SyncArena",
    allocator_api2::alloc::Allocator
);

// arena-pool's size-class pool, for the `workloads` suite only: a pool has no reset, and what it
// is measured on is its reuse of the blocks freed by one unit of work in the next. Its `reset`
// does nothing, so a suite that leaves blocks allocated at the reset (the typed API's values,
// `alloc_fmt`'s strings) would grow it without end: it is registered only where every unit
// drops all it allocated before the reset, as each workload does.
// SAFETY: the methods forward to `SizeClassPool`'s own allocator-api2 0.2 `Allocator` impl;
// `reset` invalidates no block, which the trait allows (it *may* invalidate them).
unsafe impl BenchAlloc for arena_pool::SizeClassPool {
    const NAME: &'static str = "arena-pool-SizeClassPool";
    fn new() -> Self {
        arena_pool::SizeClassPool::new()
    }
    /// Nothing: the blocks of a unit of work were all freed before it (see above), and they
    /// stay in the pool's classes for the next unit.
    fn reset(&mut self) {}
    forward_to!(
        allocator_api2::alloc::Allocator,
        Self,
        core::convert::identity
    );
}

/// A [`arena_pool::LocalArena`] handle on a `SyncArena` the adapter owns; `reset` drops the
/// handle, resets the arena and takes a new handle.
///
/// The handle borrows the arena, so the arena lives in a `Box`. The memory meter does not count
/// that box ([`meter::unmetered`]), as no column counts the allocator's own struct (the other
/// adapters hold theirs inline): its memory column is the arena's chunks and blocks.
pub struct LocalHandle {
    /// Owned (from `Box::leak`), freed in `Drop` after the handle.
    shared: NonNull<arena_pool::SyncArena>,
    local: core::mem::ManuallyDrop<arena_pool::LocalArena<'static>>,
}

impl LocalHandle {
    fn local(&self) -> &arena_pool::LocalArena<'static> {
        &self.local
    }
}

impl Drop for LocalHandle {
    fn drop(&mut self) {
        // SAFETY: the handle is dropped once, here, before the arena it borrows; the arena came
        // from `Box::leak` and nothing refers to it after the handle. The arena is dropped in
        // place (its chunks' frees are counted), then its box is freed uncounted, as it was
        // taken (a `Box<MaybeUninit<_>>` of the same layout frees without dropping again).
        unsafe {
            core::mem::ManuallyDrop::drop(&mut self.local);
            core::ptr::drop_in_place(self.shared.as_ptr());
            let slot = self
                .shared
                .as_ptr()
                .cast::<core::mem::MaybeUninit<arena_pool::SyncArena>>();
            meter::unmetered(|| drop(Box::from_raw(slot)));
        }
    }
}

// SAFETY: the methods forward to `LocalArena`'s own `Allocator` impl; `reset` ends the handle
// before resetting the arena (no block of it is used afterwards, as `BenchAlloc::reset` requires).
unsafe impl BenchAlloc for LocalHandle {
    const NAME: &'static str = "arena-pool-LocalArena";
    fn new() -> Self {
        // The box is not counted (see the type's docs); the arena takes no memory until used.
        let shared = NonNull::from(Box::leak(meter::unmetered(|| {
            Box::new(arena_pool::SyncArena::new())
        })));
        // SAFETY: the arena lives until `Drop`, after the handle (see there).
        let local = unsafe { shared.as_ref() }.local();
        LocalHandle {
            shared,
            local: core::mem::ManuallyDrop::new(local),
        }
    }
    fn reset(&mut self) {
        // SAFETY: as in `Drop`: the handle ends before the arena is reset, then a new one is taken.
        unsafe {
            core::mem::ManuallyDrop::drop(&mut self.local);
            self.shared.as_mut().reset();
            self.local = core::mem::ManuallyDrop::new(self.shared.as_ref().local());
        }
    }
    forward_to!(
        allocator_api2::alloc::Allocator,
        arena_pool::LocalArena<'static>,
        LocalHandle::local
    );
}

bump_peer!(bumpalo::Bump, "bumpalo", allocator_api2::alloc::Allocator);
bump_peer!(
    bump_scope::Bump,
    "bump-scope",
    allocator_api2::alloc::Allocator
);

// blink-alloc's typed API lives on `Blink`, a front end owning the `BlinkAlloc`: the adapter is
// the `Blink`, so both suites go through the same object (its `allocator()` is a field access).
// SAFETY: the methods forward to `BlinkAlloc`'s own `Allocator` impl, whose contract is the same
// in allocator-api2 0.2 and 0.4; `reset` is `Blink`'s safe `&mut self` reset.
unsafe impl BenchAlloc for blink_alloc::Blink {
    const NAME: &'static str = "blink-alloc";
    fn new() -> Self {
        blink_alloc::Blink::new()
    }
    fn reset(&mut self) {
        blink_alloc::Blink::reset(self);
    }
    forward_to!(
        allocator_api2_04::alloc::Allocator,
        blink_alloc::BlinkAlloc,
        blink_alloc::Blink::allocator
    );
}
bump_peer!(
    stumpalo::Arena,
    "stumpalo",
    allocator_api2_04::alloc::Allocator
);

/// The type of [`MALLOC`].
#[cfg(not(feature = "meter"))]
type MallocImpl = allocator_api2::alloc::System;
#[cfg(feature = "meter")]
type MallocImpl = allocator_api2::alloc::Global;

/// What [`SystemAlloc`] and [`Malloc`] call: `System` itself in the timed and counted builds ...
#[cfg(not(feature = "meter"))]
const MALLOC: MallocImpl = allocator_api2::alloc::System;
/// ... and in the memory meter's build the global allocator (the meter, over `System`), so that
/// the meter sees the calls (`System` does not go through the global allocator).
#[cfg(feature = "meter")]
const MALLOC: MallocImpl = allocator_api2::alloc::Global;

/// The system allocator (`std::alloc::System`, glibc malloc here) as if it were an arena: it
/// records every live block so that `reset` can free them. The bookkeeping (a `Vec` push per
/// allocation, a search from the end per deallocate/grow/shrink, usually one step) is part of its
/// time and instruction numbers: read this column as a baseline, not as malloc's exact cost. The
/// memory meter does not count the list ([`meter::unmetered`]): its memory column is the blocks.
#[derive(Default)]
pub struct SystemAlloc {
    live: RefCell<Vec<(NonNull<u8>, Layout)>>,
}

impl SystemAlloc {
    /// Index of the live block at `ptr`, searched from the most recent one.
    fn find(&self, ptr: NonNull<u8>) -> usize {
        let live = self.live.borrow();
        live.iter()
            .rposition(|&(p, _)| p == ptr)
            .expect("block not allocated by this SystemAlloc")
    }
}

// SAFETY: every method forwards to `MALLOC`'s `Allocator` impl with the caller's arguments; the
// list only records the blocks, and `reset` frees each recorded block once, with its layout.
unsafe impl BenchAlloc for SystemAlloc {
    const NAME: &'static str = "System";
    fn new() -> Self {
        SystemAlloc::default()
    }
    fn reset(&mut self) {
        for (ptr, layout) in self.live.get_mut().drain(..) {
            // SAFETY: `ptr` is live (recorded at allocation, removed when freed or moved) and was
            // allocated by `MALLOC` with `layout`.
            unsafe { MALLOC.deallocate(ptr, layout) }
        }
    }
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let block = MALLOC.allocate(layout)?;
        meter::unmetered(|| self.live.borrow_mut().push((block.cast(), layout)));
        Ok(block)
    }
    #[inline(always)]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let i = self.find(ptr);
        self.live.borrow_mut().swap_remove(i);
        // SAFETY: forwarded from the caller's `Allocator::deallocate` contract.
        unsafe { MALLOC.deallocate(ptr, layout) }
    }
    #[inline(always)]
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let i = self.find(ptr);
        // SAFETY: forwarded from the caller's `Allocator::grow` contract.
        let block = unsafe { MALLOC.grow(ptr, old, new) }?;
        self.live.borrow_mut()[i] = (block.cast(), new);
        Ok(block)
    }
    #[inline(always)]
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let i = self.find(ptr);
        // SAFETY: forwarded from the caller's `Allocator::shrink` contract.
        let block = unsafe { MALLOC.shrink(ptr, old, new) }?;
        self.live.borrow_mut()[i] = (block.cast(), new);
        Ok(block)
    }
}

impl Drop for SystemAlloc {
    fn drop(&mut self) {
        self.reset();
        // The list was grown unmetered (see `allocate`): it is freed so too.
        let live = core::mem::take(self.live.get_mut());
        meter::unmetered(|| drop(live));
    }
}

/// The system allocator as a program uses it: every block freed by the code that allocated it,
/// nothing recorded, and a `reset` that does nothing. For suites whose units of work free all
/// they allocate before the reset (the `workloads` suite); elsewhere [`SystemAlloc`], whose reset
/// frees what a case left, stands for it. (With tens of thousands of live blocks,
/// `SystemAlloc`'s search of its list on every free would be most of the column's time.)
#[derive(Default)]
pub struct Malloc;

// SAFETY: the methods forward to `MALLOC`'s `Allocator` impl with the caller's arguments;
// `reset` invalidates no block, which the trait allows (it *may* invalidate them).
unsafe impl BenchAlloc for Malloc {
    const NAME: &'static str = "System";
    fn new() -> Self {
        Malloc
    }
    /// Nothing: the unit of work freed every block it allocated (see the type's docs).
    fn reset(&mut self) {}
    forward_to!(allocator_api2::alloc::Allocator, MallocImpl, malloc_of);
}

/// What [`Malloc`] forwards to.
#[inline(always)]
fn malloc_of(_: &Malloc) -> &'static MallocImpl {
    &MALLOC
}

// mimalloc as a program uses it, as [`Malloc`] is the system allocator: every block freed by the
// code that allocated it and a `reset` that does nothing, so for the same suites only (the
// `workloads` suite). The memory meter does not see its memory: no suite registers it in memory
// mode (see [`Mi`]).
// SAFETY: the methods forward to `Mi`'s own allocator-api2 0.2 `Allocator` impl with the
// caller's arguments; `reset` invalidates no block, which the trait allows (it *may* invalidate
// them).
unsafe impl BenchAlloc for Mi {
    const NAME: &'static str = "mimalloc";
    fn new() -> Self {
        Mi
    }
    /// Nothing: the unit of work freed every block it allocated (see [`Malloc`]).
    fn reset(&mut self) {}
    forward_to!(
        allocator_api2::alloc::Allocator,
        Self,
        core::convert::identity
    );
}

/// `&A` as an allocator-api2 0.2 [`Allocator`], so that `allocator_api2::vec::Vec` (and later
/// hashbrown) run the same code on every crate, including those that implement only 0.4.
pub struct Api02<'a, A>(pub &'a A);

impl<A> Clone for Api02<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A> Copy for Api02<'_, A> {}

// SAFETY: `BenchAlloc` requires its methods to keep the contract of `Allocator`'s methods of the
// same names; the methods not listed use the trait's defaults, built on these.
unsafe impl<A: BenchAlloc> Allocator for Api02<'_, A> {
    #[inline(always)]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.0.allocate(layout)
    }
    #[inline(always)]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's `Allocator::deallocate` contract.
        unsafe { self.0.deallocate(ptr, layout) }
    }
    #[inline(always)]
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::grow` contract.
        unsafe { self.0.grow(ptr, old, new) }
    }
    #[inline(always)]
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller's `Allocator::shrink` contract.
        unsafe { self.0.shrink(ptr, old, new) }
    }
}

/// A fixed, seedless hasher for maps of integer keys (the same hashing work for every crate and
/// every run): the key mixed by a multiply-xor-shift.
#[derive(Clone, Copy, Default)]
pub struct MixHasher(u64);

impl core::hash::Hasher for MixHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 29)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 ^= x;
    }
}

impl core::hash::BuildHasher for MixHasher {
    type Hasher = MixHasher;
    #[inline]
    fn build_hasher(&self) -> MixHasher {
        MixHasher(0)
    }
}

/// A xorshift64 sequence: fixed-seed pseudo-random numbers, the same for every crate and run.
#[derive(Clone, Copy)]
pub struct XorShift(u64);

impl XorShift {
    /// The sequence from `seed` (not zero).
    pub const fn new(seed: u64) -> XorShift {
        assert!(seed != 0, "xorshift needs a non-zero seed");
        XorShift(seed)
    }

    /// The next number.
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // an endless sequence, not an iterator
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// The next number below `n`.
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Fixes glibc malloc's thresholds for the whole run, so that one crate's heap history cannot
/// skew the next crate's numbers (with the default *dynamic* mmap threshold, whichever crate ran
/// first paid page faults on every large chunk). Blocks up to 32 MiB (glibc's maximum
/// for this setting on 64-bit) come from the heap, and freed memory is not returned to the system.
/// Elsewhere (another libc or OS) it does nothing and says so.
pub fn fix_malloc_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use core::ffi::c_int;
        // From glibc's <malloc.h>.
        const M_TRIM_THRESHOLD: c_int = -1;
        const M_MMAP_THRESHOLD: c_int = -3;
        unsafe extern "C" {
            fn mallopt(param: c_int, value: c_int) -> c_int;
        }
        let set = |param, value| {
            // SAFETY: `mallopt` is glibc's documented tuning call, declared with <malloc.h>'s
            // signature; it is called at start-up, before any other thread exists.
            unsafe { mallopt(param, value) == 1 }
        };
        let ok = set(M_MMAP_THRESHOLD, 32 << 20) & set(M_TRIM_THRESHOLD, 1 << 30);
        if !ok {
            eprintln!("warning: mallopt failed: malloc thresholds are glibc's dynamic defaults");
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    eprintln!("note: not glibc: malloc thresholds left at the platform's defaults");
}
