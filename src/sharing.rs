//! Why the single-threaded types are not `Sync`, in the compiler's words.
//!
//! `Arena`, `ArenaRef`, `LocalArena`, `Pool`, `TypedPool` and `SizeClassPool` keep their state in
//! `Cell`s, so they are not `Sync` (and `&Arena` is not `Send`). Left to the auto trait, the
//! compiler explains that with one error per kind of `Cell` field, naming private types (eight
//! for `Arena`, more for the pools) and never the thread-safe types to use instead.
//!
//! So each of them has an explicit `Sync` impl whose bound is never satisfied: one of the traits
//! below, which no type implements (they are public only in name, in this private module, so no
//! other crate can implement them either). The type is exactly as `!Sync` as before, but the
//! compiler now stops at that bound: one error, in the trait's words, pointing to `SyncArena` /
//! `SyncPool`. (`Send` keeps its own impls and is unchanged.)
//!
//! Where the bound is reached through another obligation (a closure given to `thread::spawn`
//! that captures `&Arena`, a `Vec<T, &Pool>` sent to a thread), the error is the trait's own
//! message and note; where `Sync` itself is required directly (`fn f<T: Sync>()`), rustc keeps
//! `Sync`'s message and names the trait in a `help` line, which is why the traits' names say
//! what to use.

use allocator_api2::alloc::Allocator;

use crate::{Arena, ArenaRef, Pool, SizeClassPool, TypedPool};

/// Never implemented: the bound of the `Sync` impls of `Arena` and `ArenaRef`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shared between threads safely: an arena bumps without atomics or locks",
    label = "`{Self}` is not `Sync`, so `&{Self}` cannot go to another thread",
    note = "to allocate from several threads, use `arena_pool::SyncArena` (and one `SyncArena::local()` handle per thread), or give each thread an `Arena` of its own"
)]
pub trait UseSyncArenaAcrossThreads {}

/// Never implemented: the bound of the `Sync` impl of `LocalArena`.
#[cfg(feature = "std")]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shared between threads safely: it is one thread's handle on a `SyncArena`",
    label = "`{Self}` is not `Sync`, so `&{Self}` cannot go to another thread",
    note = "give each thread a handle of its own with `SyncArena::local()`; the `SyncArena` itself is `Sync` and can be shared"
)]
pub trait OneLocalArenaPerThread {}

/// Never implemented: the bound of the `Sync` impls of `Pool`, `TypedPool` and `SizeClassPool`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shared between threads safely: a pool's free lists have no lock",
    label = "`{Self}` is not `Sync`, so `&{Self}` cannot go to another thread",
    note = "to share a pool between threads, use `arena_pool::SyncPool` (one slot size, any thread may free), or give each thread a pool of its own"
)]
pub trait UseSyncPoolAcrossThreads {}

/// Not `Sync`, ever (the bound is never satisfied): its `Cell`s are not. Share an arena
/// between threads with `SyncArena`, or give each thread its own.
// SAFETY: the bound is never satisfied (nothing implements the trait), so this impl makes no type
// `Sync`; it only replaces the auto trait's reasons in the compiler's errors.
unsafe impl<A: Allocator, const MIN_ALIGN: usize> Sync for Arena<A, MIN_ALIGN> where
    Arena<A, MIN_ALIGN>: UseSyncArenaAcrossThreads
{
}

/// Not `Sync`, ever (the bound is never satisfied), like its [`Arena`].
// SAFETY: as for `Arena`: the bound is never satisfied.
unsafe impl<'a, const MIN_ALIGN: usize> Sync for ArenaRef<'a, MIN_ALIGN> where
    ArenaRef<'a, MIN_ALIGN>: UseSyncArenaAcrossThreads
{
}

/// Not `Sync`, ever (the bound is never satisfied): a handle is one thread's. Make one per
/// thread with [`SyncArena::local`](crate::SyncArena::local).
// SAFETY: as for `Arena`: the bound is never satisfied.
#[cfg(feature = "std")]
unsafe impl<'a, A: Allocator> Sync for crate::LocalArena<'a, A> where
    crate::LocalArena<'a, A>: OneLocalArenaPerThread
{
}

/// Not `Sync`, ever (the bound is never satisfied): its `Cell`s are not. Share a pool between
/// threads with `SyncPool`, or give each thread its own.
// SAFETY: as for `Arena`: the bound is never satisfied.
unsafe impl<A: Allocator> Sync for Pool<A> where Pool<A>: UseSyncPoolAcrossThreads {}

/// Not `Sync`, ever (the bound is never satisfied), like its [`Pool`].
// SAFETY: as for `Arena`: the bound is never satisfied.
unsafe impl<T, A: Allocator> Sync for TypedPool<T, A> where TypedPool<T, A>: UseSyncPoolAcrossThreads
{}

/// Not `Sync`, ever (the bound is never satisfied): its `Cell`s are not.
// SAFETY: as for `Arena`: the bound is never satisfied.
unsafe impl<A: Allocator> Sync for SizeClassPool<A> where SizeClassPool<A>: UseSyncPoolAcrossThreads {}
