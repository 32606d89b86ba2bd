//! [`ArenaRef`], the view of an arena that scopes hand out, and [`ArenaRef::with_scope`].

use core::fmt;
use core::marker::PhantomData;

use super::bump::{RawArena, RawCheckpoint};
use super::chunk::ChunkSource;
use super::typed::OnRaw;

/// A view of an [`Arena`](crate::Arena) (or of a [`LocalArena`](crate::LocalArena)) with a
/// lifetime: what [`Arena::as_arena_ref`](crate::Arena::as_arena_ref) (or
/// [`LocalArena::as_arena_ref`](crate::LocalArena::as_arena_ref)) returns, what `(&arena).into()`
/// gives, and what [`with_scope`](ArenaRef::with_scope) passes to its closure: the one type a
/// helper written for "any arena, and its lifetime" takes.
///
/// It has the typed API ([`BumpAlloc`](crate::BumpAlloc), whose methods return `&'a mut T` here,
/// however short the borrow of the `ArenaRef`) and the statistics of `Arena`, implements
/// [`Allocator`](allocator_api2::alloc::Allocator), and nests scopes. It never resets the arena:
/// only the owner can, through `&mut Arena` (or `&mut SyncArena`).
///
/// `ArenaRef` is unsized (it is only ever seen behind a reference), so safe code cannot
/// `mem::swap` or `mem::replace` the states of two arenas or of a scope and its parent.
///
/// ```
/// use arena_pool::{Arena, ArenaRef};
///
/// let mut arena = Arena::new();
/// let arena = arena.as_arena_ref_mut();
/// let a = arena.alloc(1u32);
/// arena.with_scope(|scope: &mut ArenaRef| {
///     let temporary = scope.alloc(2u32);
///     assert_eq!(*temporary, 2);
/// });
/// assert_eq!(*a, 1);
/// ```
///
/// `MIN_ALIGN` is the minimum alignment of the arena it views (see
/// [`Arena::with_min_align`](crate::Arena::with_min_align)): 1 unless the arena was made with
/// another.
#[repr(transparent)]
pub struct ArenaRef<'a, const MIN_ALIGN: usize = 1> {
    _lifetime: PhantomData<&'a ()>,
    // The concrete type is `Arena<A>` or `LocalArena<'_, A>`, both `repr(C)` with their
    // `RawArena` first.
    source: dyn ChunkSource + 'a,
}

impl<'a, const MIN_ALIGN: usize> OnRaw for ArenaRef<'a, MIN_ALIGN> {
    type Src = dyn ChunkSource + 'a;
    const MIN_ALIGN: usize = MIN_ALIGN;

    #[inline(always)]
    fn raw(&self) -> &RawArena {
        // SAFETY: every `ArenaRef` is made by `as_arena_ref(_mut)` of an `Arena<A>` or a
        // `LocalArena<'_, A>`, both `repr(C)` with their `RawArena` first, so the data pointer of
        // `self` points at that `RawArena`; the reference to `self` covers the whole value.
        unsafe { &*(self as *const ArenaRef<'a, MIN_ALIGN>).cast::<RawArena>() }
    }

    #[inline(always)]
    fn src(&self) -> &(dyn ChunkSource + 'a) {
        &self.source
    }
}

impl<'a, const MIN_ALIGN: usize> ArenaRef<'a, MIN_ALIGN> {
    /// Runs `f` in a child scope. Everything allocated inside is freed when `f` returns or
    /// unwinds: the position goes back exactly to where it was (`used_bytes` is as before), and
    /// chunks taken inside are kept for reuse by the parent.
    ///
    /// Inside the child, blocks of the parent are never moved, grown in place or rolled back:
    /// `deallocate`, `grow` and `shrink` of a parent's block leave the bump position alone. (To
    /// make that a single address compare, entering the scope steps the position `MIN_ALIGN`
    /// bytes (one byte by default) past the parent's last block; `used_bytes` counts them while
    /// the scope is active.) The closure's lifetime `'s` keeps the child's allocations from
    /// escaping, and the parent is mutably borrowed for the call, so a collection created outside the scope cannot be used
    /// inside it: move it in only after the scope, or create it inside.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let mut arena = Arena::new();
    /// let kept = arena.alloc_str("kept");
    /// let before = arena.used_bytes();
    /// let total = arena.with_scope(|scope| {
    ///     // A nested scope needs `&mut scope`: run it before collections borrow `scope`.
    ///     let inner = scope.with_scope(|inner| inner.alloc_slice_copy(&[7u8; 10]).len());
    ///     let mut scratch = Vec::new_in(&*scope);
    ///     scratch.extend(0..1000u64);
    ///     inner + scratch.len()
    /// });
    /// assert_eq!(total, 1010);
    /// assert_eq!(arena.used_bytes(), before);
    /// ```
    pub fn with_scope<R>(
        &mut self,
        f: impl for<'s> FnOnce(&'s mut ArenaRef<'s, MIN_ALIGN>) -> R,
    ) -> R {
        /// Restores the parent's position on return and on unwind.
        struct Restore<'r, 'a, const MIN_ALIGN: usize> {
            arena: &'r mut ArenaRef<'a, MIN_ALIGN>,
            checkpoint: RawCheckpoint,
        }
        impl<const MIN_ALIGN: usize> Drop for Restore<'_, '_, MIN_ALIGN> {
            fn drop(&mut self) {
                // SAFETY: the checkpoint was taken from this arena on entry; nothing can reset or
                // trim it while it is mutably borrowed here, and the child's blocks cannot be
                // used after its closure has returned (they carry its lifetime).
                unsafe { self.arena.raw().restore(self.checkpoint, self.arena.src()) }
            }
        }

        let checkpoint = self.raw().enter_scope(MIN_ALIGN, self.src());
        let restore = Restore {
            arena: self,
            checkpoint,
        };
        // The child's blocks live until `restore` runs, after `f` returns or unwinds; the
        // parent is used again only through `restore`, once the child is gone.
        // SAFETY: the closure's higher-ranked lifetime keeps the child and its blocks in `f`.
        let child = unsafe { shorten(&mut *restore.arena) };
        f(child)
    }
}

impl<'a, const MIN_ALIGN: usize> ArenaRef<'a, MIN_ALIGN> {
    /// Starts a scope that lasts until the returned guard is dropped: the form for scopes that
    /// do not fit a closure. Allocate through the guard itself or through one binding of
    /// [`ScopeGuard::scope`] (calling `guard.scope()` again while a result of the first call is
    /// alive does not compile); dropping the guard (also during unwinding) restores the position
    /// exactly as [`with_scope`](ArenaRef::with_scope) does.
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// let parent = arena.as_arena_ref_mut();
    /// let kept = parent.alloc(1u8);
    /// let before = parent.used_bytes();
    /// {
    ///     let mut guard = parent.scope_guard();
    ///     let scope = guard.scope();
    ///     scope.alloc_slice_fill_copy(100, 0u64);
    ///     assert!(scope.used_bytes() > before);
    /// } // restored here
    /// assert_eq!(parent.used_bytes(), before);
    /// assert_eq!(*kept, 1);
    /// ```
    pub fn scope_guard<'p>(&'p mut self) -> ScopeGuard<'p, MIN_ALIGN> {
        let checkpoint = self.raw().enter_scope(MIN_ALIGN, self.src());
        // SAFETY: blocks allocated through the guard borrow the guard, so they are gone before
        // its drop restores the position.
        let arena = unsafe { shorten(self) };
        ScopeGuard { arena, checkpoint }
    }

    /// The current position, for [`reset_to`](ArenaRef::reset_to).
    ///
    /// ```
    /// let mut arena = arena_pool::Arena::new();
    /// let arena = arena.as_arena_ref_mut();
    /// let cp = arena.checkpoint();
    /// arena.alloc_slice_fill_copy(100, 1u32);
    /// // SAFETY: `cp` comes from this scope, and nothing allocated after it is used again.
    /// unsafe { arena.reset_to(cp) };
    /// assert_eq!(arena.used_bytes(), 0);
    /// ```
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint(Position::Raw(self.raw().checkpoint(self.src())))
    }

    /// Returns the position to `checkpoint`, freeing everything allocated after it.
    ///
    /// # Safety
    /// - `checkpoint` was taken from this arena, in the current scope (not in an enclosing
    ///   scope, and not in a child scope that has ended since),
    /// - the arena has not been reset or trimmed since it was taken, and no position before it
    ///   was restored since (a checkpoint is invalidated by going back past it),
    /// - no block allocated after it (reference, `Vec`, `Box`, …) is used afterwards. A block
    ///   grown, or shrunk, through the `Allocator` methods after it counts as allocated after it,
    ///   since a resize may move a block (a `Vec` made before the checkpoint and pushed to after
    ///   it is not used again). [`into_slice`](crate::BumpAlloc::into_slice) and
    ///   [`into_str`](crate::BumpAlloc::into_str) are not such a resize: they never move the
    ///   block, so their result lives as long as the block did.
    ///
    /// # Panics
    /// When `checkpoint` is a [`SyncArena`](crate::SyncArena)'s.
    pub unsafe fn reset_to(&mut self, checkpoint: Checkpoint) {
        #[cfg_attr(not(feature = "std"), allow(irrefutable_let_patterns))]
        let Position::Raw(cp) = checkpoint.0 else {
            panic!("arena-pool: reset_to: the checkpoint is a SyncArena's, not this arena's");
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.raw().restore(cp, self.src()) }
    }
}

/// A scope that lasts until the guard is dropped; from [`ArenaRef::scope_guard`] or
/// [`Arena::scope_guard`](crate::Arena::scope_guard).
///
/// The guard allocates itself ([`BumpAlloc`](crate::BumpAlloc)) and hands out the scope through
/// [`scope`](ScopeGuard::scope) and [`as_arena_ref`](ScopeGuard::as_arena_ref); every allocation
/// borrows the guard: it cannot be dropped (restoring the position) while any of them is alive.
/// (It does not implement `Deref` to `ArenaRef`: allocations through such a deref would outlive
/// the guard.) The parent stays mutably borrowed while the guard lives, so its collections cannot
/// grow or free meanwhile.
///
/// ```
/// use arena_pool::Arena;
///
/// let mut arena = Arena::new();
/// {
///     let guard = arena.scope_guard();
///     let a = guard.alloc(1u32);
///     let b = guard.alloc_str("two"); // `a` is still alive: both borrow the guard shared
///     assert_eq!((*a, &*b), (1, "two"));
/// } // both are freed here
/// assert_eq!(arena.used_bytes(), 0);
/// ```
///
/// Forgetting the guard (`mem::forget`) is safe: the scope's memory then stays used until the
/// arena is reset.
///
/// `MIN_ALIGN` is the minimum alignment of the arena (see
/// [`Arena::with_min_align`](crate::Arena::with_min_align)).
pub struct ScopeGuard<'p, const MIN_ALIGN: usize = 1> {
    arena: &'p mut ArenaRef<'p, MIN_ALIGN>,
    checkpoint: RawCheckpoint,
}

impl<'p, const MIN_ALIGN: usize> ScopeGuard<'p, MIN_ALIGN> {
    /// The scope, for allocating and for nested scopes. It borrows the guard mutably, so call it
    /// once and keep the binding: `guard.scope().alloc(..)` twice fails to compile while the
    /// first result is alive (E0499), where the binding (or the guard itself, or
    /// [`as_arena_ref`](ScopeGuard::as_arena_ref)) serves both.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let mut arena = Arena::new();
    /// let mut guard = arena.scope_guard();
    /// let scope = guard.scope(); // one binding for everything the scope allocates
    /// let a = scope.alloc(1u32);
    /// let b = scope.alloc(2u32);
    /// let c = scope.with_scope(|inner| *inner.alloc(3u32)); // nested scopes too
    /// assert_eq!(*a + *b + c, 6);
    /// ```
    pub fn scope<'g>(&'g mut self) -> &'g mut ArenaRef<'g, MIN_ALIGN> {
        // SAFETY: blocks allocated through the result borrow the guard (see `scope_guard`).
        unsafe { shorten(self.arena) }
    }

    /// The scope, shared: allocations through it borrow the guard.
    pub fn as_arena_ref(&self) -> &ArenaRef<'_, MIN_ALIGN> {
        self.arena
    }
}

impl<'p, const MIN_ALIGN: usize> OnRaw for ScopeGuard<'p, MIN_ALIGN> {
    type Src = dyn ChunkSource + 'p;
    const MIN_ALIGN: usize = MIN_ALIGN;

    #[inline(always)]
    fn raw(&self) -> &RawArena {
        self.arena.raw()
    }

    #[inline(always)]
    fn src(&self) -> &(dyn ChunkSource + 'p) {
        self.arena.src()
    }
}

impl<const MIN_ALIGN: usize> Drop for ScopeGuard<'_, MIN_ALIGN> {
    fn drop(&mut self) {
        // SAFETY: the checkpoint was taken on entry from this arena, which stayed mutably
        // borrowed by the guard, so it was not reset or trimmed; every block allocated through
        // the guard borrowed it and is gone now.
        unsafe { self.arena.raw().restore(self.checkpoint, self.arena.src()) }
    }
}

impl<const MIN_ALIGN: usize> fmt::Debug for ScopeGuard<'_, MIN_ALIGN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeGuard")
            .field("stats", &self.arena.stats())
            .finish()
    }
}

/// A saved arena position, from [`ArenaRef::checkpoint`],
/// [`Arena::checkpoint`](crate::Arena::checkpoint) or
/// [`SyncArena::checkpoint`](crate::SyncArena::checkpoint), for the `unsafe` `reset_to` of the
/// same arena.
///
/// ```
/// let mut arena = arena_pool::Arena::new();
/// let kept = arena.alloc(1u32) as *mut u32;
/// let cp = arena.checkpoint();
/// arena.alloc_str("temporary");
/// // SAFETY: `cp` is this arena's, and nothing allocated after it is used again.
/// unsafe { arena.reset_to(cp) };
/// assert_eq!(arena.used_bytes(), 4);
/// // SAFETY: allocated before the checkpoint, so still valid.
/// assert_eq!(unsafe { *kept }, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint(pub(crate) Position);

/// What a [`Checkpoint`] saved: a position of a `RawArena` (`Arena`, a scope, a `LocalArena`)
/// or of a `SyncArena`'s shared path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Position {
    Raw(RawCheckpoint),
    #[cfg(feature = "std")]
    Shared(crate::sync::SharedCheckpoint),
}

/// The same arena seen with the lifetime of the borrow: how a child scope is made.
///
/// # Safety
/// Blocks allocated through the result must not be used after the caller restores the position
/// it had when the scope began (the result's lifetime alone does not ensure that for the
/// closure form, the closure's higher-ranked lifetime does).
// Clippy sees a cast between types that differ only in a lifetime as unnecessary; it is the point.
#[allow(clippy::unnecessary_cast)]
unsafe fn shorten<'s, const MIN_ALIGN: usize>(
    arena: &'s mut ArenaRef<'_, MIN_ALIGN>,
) -> &'s mut ArenaRef<'s, MIN_ALIGN> {
    let p = arena as *mut ArenaRef<'_, MIN_ALIGN> as *mut ArenaRef<'s, MIN_ALIGN>;
    // SAFETY: same type but for the lifetime parameter, which only shrinks; the caller upholds
    // the scope rule above.
    unsafe { &mut *p }
}

impl<const MIN_ALIGN: usize> fmt::Debug for ArenaRef<'_, MIN_ALIGN> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArenaRef")
            .field("stats", &self.stats())
            .finish()
    }
}

super::stats::stats_api!(impl['a, const MIN_ALIGN: usize] ArenaRef<'a, MIN_ALIGN>);
