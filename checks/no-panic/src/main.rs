//! A link-time proof that the fallible API of arena-pool cannot panic in a release build.
//!
//! Each function below wraps one method (generic ones instantiated with a few types, closures
//! and iterators that cannot panic themselves) in `#[no_panic]`, which makes linking fail when
//! the optimizer cannot remove every path to a panic from the function (the error names the
//! function). Covered: the `try_` methods of `Arena`, `ArenaRef`, `SyncArena` (its shared path,
//! and `try_with_capacity_in`) and `LocalArena`, and the `Allocator` methods
//! (`allocate`, `allocate_zeroed`, `grow`, `grow_zeroed`, `shrink`, `deallocate`) of `Arena`,
//! `ArenaRef`, `Pool`, `TypedPool`, `SizeClassPool`, `SyncArena`, `LocalArena` and `SyncPool`
//! (the sync types on the global allocator). `try_alloc_fmt` is left out: it runs the caller's
//! `Display` implementations through `core::fmt::write`, which the optimizer cannot see through,
//! as it cannot see through any other caller-supplied code.
//!
//! Functions with a known panicking path are listed, with the reason, in `expected-panics.txt`;
//! `.ci/no-panic` builds this crate and fails on any other. Nothing here is meant to run.

use std::alloc::Layout;
use std::cell::Cell;
use std::hint::black_box;
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::{
    AllocOrInitError, Arena, ArenaRef, LocalArena, Pool, SizeClassPool, SyncArena, SyncPool,
    TypedPool,
};
use no_panic::no_panic;

type Block = Result<NonNull<[u8]>, AllocError>;

/// Keeps functions in the binary (`#[no_panic]` acts when a function is linked).
macro_rules! keep {
    ($($f:path),* $(,)?) => {
        black_box([$($f as *const ()),*]);
    };
}

/// A `Clone` type whose `clone` cannot panic (and does not allocate).
#[derive(Clone, Default)]
pub struct Plain(pub u64, pub Cell<u32>);

#[no_panic]
pub fn arena_try_with_capacity(capacity: usize) -> Result<Arena, AllocError> {
    Arena::try_with_capacity(capacity)
}

/// The wrappers of the typed `try_` methods, for `Arena`, `ArenaRef` and `LocalArena` alike.
macro_rules! typed_wrappers {
    (
        $ty:ty,
        $keep:ident;
        $try_alloc_u8:ident,
        $try_alloc_u64:ident,
        $try_alloc_array:ident,
        $try_alloc_zst:ident,
        $try_alloc_with:ident,
        $try_alloc_try_with:ident,
        $try_alloc_layout:ident,
        $try_alloc_slice_copy_u8:ident,
        $try_alloc_slice_copy_u64:ident,
        $try_alloc_slice_clone:ident,
        $try_alloc_slice_fill_with:ident,
        $try_alloc_slice_fill_copy:ident,
        $try_alloc_slice_fill_clone:ident,
        $try_alloc_slice_fill_default:ident,
        $try_alloc_slice_fill_iter_range:ident,
        $try_alloc_slice_fill_iter_slice:ident,
        $try_alloc_slice_try_fill_with:ident,
        $try_alloc_slice_try_fill_iter:ident,
        $try_alloc_sized_slice_fill_default:ident,
        $try_alloc_sized_slice_fill_with:ident,
        $try_alloc_sized_slice_copy:ident,
        $try_alloc_str:ident
    ) => {
        #[no_panic]
        pub fn $try_alloc_u8<'x>(a: &'x $ty, v: u8) -> Result<&'x mut u8, AllocError> {
            a.try_alloc(v)
        }

        #[no_panic]
        pub fn $try_alloc_u64<'x>(a: &'x $ty, v: u64) -> Result<&'x mut u64, AllocError> {
            a.try_alloc(v)
        }

        #[no_panic]
        pub fn $try_alloc_array<'x>(
            a: &'x $ty,
            v: [u8; 4000],
        ) -> Result<&'x mut [u8; 4000], AllocError> {
            a.try_alloc(v)
        }

        #[no_panic]
        pub fn $try_alloc_zst<'x>(a: &'x $ty) -> Result<&'x mut (), AllocError> {
            a.try_alloc(())
        }

        #[no_panic]
        pub fn $try_alloc_with<'x>(a: &'x $ty, v: u32) -> Result<&'x mut u32, AllocError> {
            a.try_alloc_with(|| v.wrapping_mul(3))
        }

        #[no_panic]
        pub fn $try_alloc_try_with<'x>(
            a: &'x $ty,
            v: u32,
        ) -> Result<&'x mut u64, AllocOrInitError<u32>> {
            a.try_alloc_try_with(|| if v > 7 { Ok(u64::from(v)) } else { Err(v) })
        }

        #[no_panic]
        pub fn $try_alloc_layout(a: &$ty, l: Layout) -> Result<NonNull<u8>, AllocError> {
            a.try_alloc_layout(l)
        }

        #[no_panic]
        pub fn $try_alloc_slice_copy_u8<'x>(
            a: &'x $ty,
            s: &[u8],
        ) -> Result<&'x mut [u8], AllocError> {
            a.try_alloc_slice_copy(s)
        }

        #[no_panic]
        pub fn $try_alloc_slice_copy_u64<'x>(
            a: &'x $ty,
            s: &[u64],
        ) -> Result<&'x mut [u64], AllocError> {
            a.try_alloc_slice_copy(s)
        }

        #[no_panic]
        pub fn $try_alloc_slice_clone<'x>(
            a: &'x $ty,
            s: &[Plain],
        ) -> Result<&'x mut [Plain], AllocError> {
            a.try_alloc_slice_clone(s)
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_with<'x>(
            a: &'x $ty,
            n: usize,
        ) -> Result<&'x mut [u32], AllocError> {
            a.try_alloc_slice_fill_with(n, |i| i as u32)
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_copy<'x>(
            a: &'x $ty,
            n: usize,
        ) -> Result<&'x mut [u16], AllocError> {
            a.try_alloc_slice_fill_copy(n, 7u16)
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_clone<'x>(
            a: &'x $ty,
            n: usize,
            v: &Plain,
        ) -> Result<&'x mut [Plain], AllocError> {
            a.try_alloc_slice_fill_clone(n, v)
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_default<'x>(
            a: &'x $ty,
            n: usize,
        ) -> Result<&'x mut [Plain], AllocError> {
            a.try_alloc_slice_fill_default(n)
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_iter_range<'x>(
            a: &'x $ty,
            n: u32,
        ) -> Result<&'x mut [u32], AllocError> {
            a.try_alloc_slice_fill_iter((0..n).map(|i| i ^ 5))
        }

        #[no_panic]
        pub fn $try_alloc_slice_fill_iter_slice<'x>(
            a: &'x $ty,
            s: &[u8],
        ) -> Result<&'x mut [u8], AllocError> {
            a.try_alloc_slice_fill_iter(s.iter().copied().filter(|&b| b != 0))
        }

        #[no_panic]
        pub fn $try_alloc_slice_try_fill_with<'x>(
            a: &'x $ty,
            n: usize,
        ) -> Result<&'x mut [u32], AllocOrInitError<usize>> {
            a.try_alloc_slice_try_fill_with(n, |i| if i < 9 { Ok(i as u32) } else { Err(i) })
        }

        #[no_panic]
        pub fn $try_alloc_slice_try_fill_iter<'x>(
            a: &'x $ty,
            s: &[u8],
        ) -> Result<&'x mut [u8], AllocOrInitError<u8>> {
            a.try_alloc_slice_try_fill_iter(s.iter().map(|&b| if b != 0 { Ok(b) } else { Err(b) }))
        }

        #[no_panic]
        pub fn $try_alloc_sized_slice_fill_default<'x>(
            a: &'x $ty,
        ) -> Result<&'x mut [u64; 32], AllocError> {
            a.try_alloc_sized_slice_fill_default()
        }

        #[no_panic]
        pub fn $try_alloc_sized_slice_fill_with<'x>(
            a: &'x $ty,
        ) -> Result<&'x mut [usize; 16], AllocError> {
            a.try_alloc_sized_slice_fill_with(|i| i * 2)
        }

        #[no_panic]
        pub fn $try_alloc_sized_slice_copy<'x>(
            a: &'x $ty,
            s: &[u32; 8],
        ) -> Result<&'x mut [u32; 8], AllocError> {
            a.try_alloc_sized_slice_copy(s)
        }

        #[no_panic]
        pub fn $try_alloc_str<'x>(a: &'x $ty, s: &str) -> Result<&'x mut str, AllocError> {
            a.try_alloc_str(s)
        }

        /// Keeps every wrapper of this type in the binary.
        pub fn $keep() {
            keep!(
                $try_alloc_u8,
                $try_alloc_u64,
                $try_alloc_array,
                $try_alloc_zst,
                $try_alloc_with,
                $try_alloc_try_with,
                $try_alloc_layout,
                $try_alloc_slice_copy_u8,
                $try_alloc_slice_copy_u64,
                $try_alloc_slice_clone,
                $try_alloc_slice_fill_with,
                $try_alloc_slice_fill_copy,
                $try_alloc_slice_fill_clone,
                $try_alloc_slice_fill_default,
                $try_alloc_slice_fill_iter_range,
                $try_alloc_slice_fill_iter_slice,
                $try_alloc_slice_try_fill_with,
                $try_alloc_slice_try_fill_iter,
                $try_alloc_sized_slice_fill_default,
                $try_alloc_sized_slice_fill_with,
                $try_alloc_sized_slice_copy,
                $try_alloc_str
            );
        }
    };
}

typed_wrappers!(
    Arena,
    keep_arena_typed;
    arena_try_alloc_u8,
    arena_try_alloc_u64,
    arena_try_alloc_array,
    arena_try_alloc_zst,
    arena_try_alloc_with,
    arena_try_alloc_try_with,
    arena_try_alloc_layout,
    arena_try_alloc_slice_copy_u8,
    arena_try_alloc_slice_copy_u64,
    arena_try_alloc_slice_clone,
    arena_try_alloc_slice_fill_with,
    arena_try_alloc_slice_fill_copy,
    arena_try_alloc_slice_fill_clone,
    arena_try_alloc_slice_fill_default,
    arena_try_alloc_slice_fill_iter_range,
    arena_try_alloc_slice_fill_iter_slice,
    arena_try_alloc_slice_try_fill_with,
    arena_try_alloc_slice_try_fill_iter,
    arena_try_alloc_sized_slice_fill_default,
    arena_try_alloc_sized_slice_fill_with,
    arena_try_alloc_sized_slice_copy,
    arena_try_alloc_str
);
typed_wrappers!(
    ArenaRef<'static>,
    keep_arena_ref_typed;
    arena_ref_try_alloc_u8,
    arena_ref_try_alloc_u64,
    arena_ref_try_alloc_array,
    arena_ref_try_alloc_zst,
    arena_ref_try_alloc_with,
    arena_ref_try_alloc_try_with,
    arena_ref_try_alloc_layout,
    arena_ref_try_alloc_slice_copy_u8,
    arena_ref_try_alloc_slice_copy_u64,
    arena_ref_try_alloc_slice_clone,
    arena_ref_try_alloc_slice_fill_with,
    arena_ref_try_alloc_slice_fill_copy,
    arena_ref_try_alloc_slice_fill_clone,
    arena_ref_try_alloc_slice_fill_default,
    arena_ref_try_alloc_slice_fill_iter_range,
    arena_ref_try_alloc_slice_fill_iter_slice,
    arena_ref_try_alloc_slice_try_fill_with,
    arena_ref_try_alloc_slice_try_fill_iter,
    arena_ref_try_alloc_sized_slice_fill_default,
    arena_ref_try_alloc_sized_slice_fill_with,
    arena_ref_try_alloc_sized_slice_copy,
    arena_ref_try_alloc_str
);
typed_wrappers!(
    LocalArena<'static>,
    keep_local_arena_typed;
    local_arena_try_alloc_u8,
    local_arena_try_alloc_u64,
    local_arena_try_alloc_array,
    local_arena_try_alloc_zst,
    local_arena_try_alloc_with,
    local_arena_try_alloc_try_with,
    local_arena_try_alloc_layout,
    local_arena_try_alloc_slice_copy_u8,
    local_arena_try_alloc_slice_copy_u64,
    local_arena_try_alloc_slice_clone,
    local_arena_try_alloc_slice_fill_with,
    local_arena_try_alloc_slice_fill_copy,
    local_arena_try_alloc_slice_fill_clone,
    local_arena_try_alloc_slice_fill_default,
    local_arena_try_alloc_slice_fill_iter_range,
    local_arena_try_alloc_slice_fill_iter_slice,
    local_arena_try_alloc_slice_try_fill_with,
    local_arena_try_alloc_slice_try_fill_iter,
    local_arena_try_alloc_sized_slice_fill_default,
    local_arena_try_alloc_sized_slice_fill_with,
    local_arena_try_alloc_sized_slice_copy,
    local_arena_try_alloc_str
);

#[no_panic]
pub fn sync_arena_try_with_capacity_in(capacity: usize) -> Result<SyncArena, AllocError> {
    SyncArena::try_with_capacity_in(capacity, Global)
}

typed_wrappers!(
    SyncArena,
    keep_sync_arena_typed;
    sync_arena_try_alloc_u8,
    sync_arena_try_alloc_u64,
    sync_arena_try_alloc_array,
    sync_arena_try_alloc_zst,
    sync_arena_try_alloc_with,
    sync_arena_try_alloc_try_with,
    sync_arena_try_alloc_layout,
    sync_arena_try_alloc_slice_copy_u8,
    sync_arena_try_alloc_slice_copy_u64,
    sync_arena_try_alloc_slice_clone,
    sync_arena_try_alloc_slice_fill_with,
    sync_arena_try_alloc_slice_fill_copy,
    sync_arena_try_alloc_slice_fill_clone,
    sync_arena_try_alloc_slice_fill_default,
    sync_arena_try_alloc_slice_fill_iter_range,
    sync_arena_try_alloc_slice_fill_iter_slice,
    sync_arena_try_alloc_slice_try_fill_with,
    sync_arena_try_alloc_slice_try_fill_iter,
    sync_arena_try_alloc_sized_slice_fill_default,
    sync_arena_try_alloc_sized_slice_fill_with,
    sync_arena_try_alloc_sized_slice_copy,
    sync_arena_try_alloc_str
);

/// The wrappers of the `Allocator` methods of one type.
macro_rules! allocator_wrappers {
    (
        $ty:ty,
        $keep:ident;
        $allocate:ident,
        $allocate_zeroed:ident,
        $deallocate:ident,
        $grow:ident,
        $grow_zeroed:ident,
        $shrink:ident
    ) => {
        #[no_panic]
        pub fn $allocate(a: &$ty, l: Layout) -> Block {
            a.allocate(l)
        }

        #[no_panic]
        pub fn $allocate_zeroed(a: &$ty, l: Layout) -> Block {
            a.allocate_zeroed(l)
        }

        /// # Safety
        /// The `Allocator::deallocate` contract.
        #[no_panic]
        pub unsafe fn $deallocate(a: &$ty, p: NonNull<u8>, l: Layout) {
            // SAFETY: forwarded from the caller.
            unsafe { a.deallocate(p, l) }
        }

        /// # Safety
        /// The `Allocator::grow` contract.
        #[no_panic]
        pub unsafe fn $grow(a: &$ty, p: NonNull<u8>, old: Layout, new: Layout) -> Block {
            // SAFETY: forwarded from the caller.
            unsafe { a.grow(p, old, new) }
        }

        /// # Safety
        /// The `Allocator::grow_zeroed` contract.
        #[no_panic]
        pub unsafe fn $grow_zeroed(a: &$ty, p: NonNull<u8>, old: Layout, new: Layout) -> Block {
            // SAFETY: forwarded from the caller.
            unsafe { a.grow_zeroed(p, old, new) }
        }

        /// # Safety
        /// The `Allocator::shrink` contract.
        #[no_panic]
        pub unsafe fn $shrink(a: &$ty, p: NonNull<u8>, old: Layout, new: Layout) -> Block {
            // SAFETY: forwarded from the caller.
            unsafe { a.shrink(p, old, new) }
        }

        /// Keeps every wrapper of this type in the binary.
        pub fn $keep() {
            keep!(
                $allocate,
                $allocate_zeroed,
                $deallocate,
                $grow,
                $grow_zeroed,
                $shrink
            );
        }
    };
}

allocator_wrappers!(
    Arena,
    keep_arena_allocator;
    arena_allocate,
    arena_allocate_zeroed,
    arena_deallocate,
    arena_grow,
    arena_grow_zeroed,
    arena_shrink
);
allocator_wrappers!(
    ArenaRef<'static>,
    keep_arena_ref_allocator;
    arena_ref_allocate,
    arena_ref_allocate_zeroed,
    arena_ref_deallocate,
    arena_ref_grow,
    arena_ref_grow_zeroed,
    arena_ref_shrink
);
allocator_wrappers!(
    Pool,
    keep_pool_allocator;
    pool_allocate,
    pool_allocate_zeroed,
    pool_deallocate,
    pool_grow,
    pool_grow_zeroed,
    pool_shrink
);
allocator_wrappers!(
    TypedPool<[u64; 3]>,
    keep_typed_pool_allocator;
    typed_pool_allocate,
    typed_pool_allocate_zeroed,
    typed_pool_deallocate,
    typed_pool_grow,
    typed_pool_grow_zeroed,
    typed_pool_shrink
);
allocator_wrappers!(
    SizeClassPool,
    keep_size_class_allocator;
    size_class_allocate,
    size_class_allocate_zeroed,
    size_class_deallocate,
    size_class_grow,
    size_class_grow_zeroed,
    size_class_shrink
);
allocator_wrappers!(
    SyncArena,
    keep_sync_arena_allocator;
    sync_arena_allocate,
    sync_arena_allocate_zeroed,
    sync_arena_deallocate,
    sync_arena_grow,
    sync_arena_grow_zeroed,
    sync_arena_shrink
);
allocator_wrappers!(
    LocalArena<'static>,
    keep_local_arena_allocator;
    local_arena_allocate,
    local_arena_allocate_zeroed,
    local_arena_deallocate,
    local_arena_grow,
    local_arena_grow_zeroed,
    local_arena_shrink
);
allocator_wrappers!(
    SyncPool,
    keep_sync_pool_allocator;
    sync_pool_allocate,
    sync_pool_allocate_zeroed,
    sync_pool_deallocate,
    sync_pool_grow,
    sync_pool_grow_zeroed,
    sync_pool_shrink
);

fn main() {
    keep!(arena_try_with_capacity);
    keep_arena_typed();
    keep_arena_ref_typed();
    keep_arena_allocator();
    keep_arena_ref_allocator();
    keep_pool_allocator();
    keep_typed_pool_allocator();
    keep_size_class_allocator();
    keep_local_arena_typed();
    keep_sync_arena_typed();
    keep!(sync_arena_try_with_capacity_in);
    keep_sync_arena_allocator();
    keep_local_arena_allocator();
    keep_sync_pool_allocator();
}
