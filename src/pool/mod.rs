//! Pools: [`Pool`] (one slot size), [`TypedPool`] (one type) and [`SizeClassPool`] (mixed sizes), allocators that free and
//! reuse every block.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use allocator_api2::alloc::{AllocError, Allocator};

mod address_map;
mod free_list;
mod limit;
mod size_class;
mod slab;
mod slot_pool;
mod typed_pool;

pub use size_class::{ClassStats, SizeClassOptions, SizeClassPool, SizeClassStats};
#[cfg(feature = "std")]
pub(crate) use slot_pool::SlotShape;
pub use slot_pool::{Pool, PoolStats};
pub use typed_pool::TypedPool;

/// Fuzz builds only: the size-class and slab arithmetic, re-exported by `crate::__fuzzing`.
#[cfg(fuzzing)]
pub(crate) mod fuzzing {
    pub(crate) use super::size_class::{class_of, class_size};
    pub(crate) use super::slab::Slab;
}

/// Moves `value` into `block` and returns its owning `Box`, which gives the block back to `pool`
/// with `T`'s layout (the panicking and `try_` constructors of the pools, which allocate through
/// their inherent rules so as to choose their own failure).
///
/// # Safety
/// `block` is a block `pool` handed out for `Layout::new::<T>()`, not in use.
#[inline(always)]
pub(crate) unsafe fn boxed<T, P: Allocator>(
    block: NonNull<[u8]>,
    value: T,
    pool: P,
) -> allocator_api2::boxed::Box<T, P> {
    let p = block.cast::<T>().as_ptr();
    // SAFETY: the block is aligned and long enough for a `T` (it was allocated for `T`'s
    // layout) and not in use; the `Box` gives it back to `pool` with that layout.
    unsafe {
        p.write(value);
        allocator_api2::boxed::Box::from_raw_in(p, pool)
    }
}

/// How a pool grows or shrinks a block it cannot keep in place: when both layouts go to the
/// backing allocator, that allocator's own `grow`/`shrink`; otherwise a new block through the
/// pool's routing, a copy of `min(old, new)` bytes, and the old block given back the way it came.
///
/// # Safety
/// The `Allocator::grow`/`shrink` contract for `p`, `old` and `new` on `pool`; `both_backing`
/// is true only when both layouts route to `backing`, which then allocated `p` with `old`.
pub(crate) unsafe fn relocate<P: Allocator, A: Allocator>(
    pool: &P,
    backing: &A,
    both_backing: bool,
    p: NonNull<u8>,
    old: Layout,
    new: Layout,
    zeroed: bool,
) -> Result<NonNull<[u8]>, AllocError> {
    if both_backing && old.size() != 0 && new.size() != 0 {
        // SAFETY: forwarded from the caller: `backing` allocated `p` with `old`.
        return unsafe {
            match (new.size() >= old.size(), zeroed) {
                (true, false) => backing.grow(p, old, new),
                (true, true) => backing.grow_zeroed(p, old, new),
                (false, _) => backing.shrink(p, old, new),
            }
        };
    }
    let q = if zeroed {
        pool.allocate_zeroed(new)?
    } else {
        pool.allocate(new)?
    };
    // SAFETY: `q` is a fresh block, distinct from the live block `p`; both hold at least
    // `min(old, new)` bytes. `p` is then given back through the pool, routed by `old`.
    unsafe {
        ptr::copy_nonoverlapping(
            p.as_ptr(),
            q.cast::<u8>().as_ptr(),
            old.size().min(new.size()),
        );
        pool.deallocate(p, old);
    }
    Ok(q)
}

/// How a pool grows or shrinks a block that stays where it is, in a slot (or class block) of
/// `block` bytes: returns the whole block, with the bytes from `old.size()` to `new.size()`
/// zeroed when `zeroed` asks for it.
///
/// The caller's pointer is valid for `old.size()` bytes only. When that is the whole block it is
/// returned as it is; otherwise `rederive` gives the pool's own pointer to the block (with the
/// provenance of its slab or page), and `None` from it fails the call.
///
/// # Safety
/// The `Allocator::grow`/`shrink` contract for `p`, `old` and `new`; `p` is a live block of
/// `block >= max(old.size(), new.size())` bytes, and `rederive(p)`, when `Some`, is a pointer to
/// the same address valid for the whole block.
#[inline(always)]
pub(crate) unsafe fn resize_in_place(
    p: NonNull<u8>,
    old: Layout,
    new: Layout,
    zeroed: bool,
    block: usize,
    rederive: impl FnOnce(NonNull<u8>) -> Option<NonNull<u8>>,
) -> Result<NonNull<[u8]>, AllocError> {
    let p = if old.size() == block {
        p
    } else {
        rederive(p).ok_or(AllocError)?
    };
    if zeroed && new.size() > old.size() {
        // SAFETY: the block holds `block >= new.size()` bytes and `p` is valid for all of them:
        // it is the caller's pointer covering the whole block, or the pool's own.
        unsafe { p.add(old.size()).write_bytes(0, new.size() - old.size()) };
    }
    Ok(NonNull::slice_from_raw_parts(p, block))
}

/// Debug builds: sets (`live`) or clears bit `i` of a pool's live bitmap, returning its old value.
///
/// # Safety
/// `bits` points to a bitmap of at least `i / 64 + 1` words, owned by the pool and not
/// referenced elsewhere.
#[cfg(debug_assertions)]
pub(crate) unsafe fn swap_live_bit(bits: NonNull<u64>, i: usize, live: bool) -> bool {
    // SAFETY: the caller guarantees word `i / 64` lies in the bitmap.
    let word = unsafe { bits.add(i / 64) };
    let mask = 1u64 << (i % 64);
    // SAFETY: as above; the word is read and written by value, with no reference formed.
    unsafe {
        let old = word.read();
        word.write(if live { old | mask } else { old & !mask });
        old & mask != 0
    }
}
