//! [`ArenaRef`], the view of an arena that scopes hand out, and [`ArenaRef::with_scope`].

use core::fmt;
use core::marker::PhantomData;

use super::bump::{RawArena, RawCheckpoint};
use super::chunk::ChunkSource;

/// A view of an [`Arena`](crate::Arena) with a lifetime: what
/// [`Arena::as_arena_ref`](crate::Arena::as_arena_ref) returns and what
/// [`with_scope`](ArenaRef::with_scope) passes to its closure.
///
/// It has the allocation and statistics API of `Arena` (its typed helpers return `&'a mut T`),
/// implements [`Allocator`](allocator_api2::alloc::Allocator), and nests scopes. It never
/// resets the arena: only the owner can, through `&mut Arena`.
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
#[repr(transparent)]
pub struct ArenaRef<'a> {
    _lifetime: PhantomData<&'a ()>,
    // The concrete type is always `Arena<A>`, whose first field is its `RawArena`.
    source: dyn ChunkSource + 'a,
}

impl<'a> ArenaRef<'a> {
    #[inline(always)]
    pub(crate) fn raw(&self) -> &RawArena {
        // SAFETY: every `ArenaRef` is made by `Arena::as_arena_ref(_mut)` from an `Arena<A>`,
        // which is `repr(C)` with its `RawArena` first, so the data pointer of `self` points at
        // that `RawArena`; the reference to `self` covers the whole `Arena<A>`.
        unsafe { &*(self as *const ArenaRef<'a>).cast::<RawArena>() }
    }

    #[inline(always)]
    pub(crate) fn src(&self) -> &dyn ChunkSource {
        &self.source
    }

    /// Runs `f` in a child scope. Everything allocated inside is freed when `f` returns or
    /// unwinds: the position goes back exactly to where it was (`used_bytes` is as before), and
    /// chunks taken inside are kept for reuse by the parent.
    ///
    /// Inside the child, blocks of the parent are never moved, grown in place or rolled back:
    /// `deallocate`, `grow` and `shrink` of a parent's block leave the bump position alone. The
    /// closure's lifetime `'s` keeps the child's allocations from escaping, and the parent is
    /// mutably borrowed for the call, so a collection created outside the scope cannot be used
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
    pub fn with_scope<R>(&mut self, f: impl for<'s> FnOnce(&'s mut ArenaRef<'s>) -> R) -> R {
        /// Restores the parent's position on return and on unwind.
        struct Restore<'r, 'a> {
            arena: &'r mut ArenaRef<'a>,
            checkpoint: RawCheckpoint,
        }
        impl Drop for Restore<'_, '_> {
            fn drop(&mut self) {
                // SAFETY: the checkpoint was taken from this arena on entry; nothing can reset or
                // trim it while it is mutably borrowed here, and the child's blocks cannot be
                // used after its closure has returned (they carry its lifetime).
                unsafe { self.arena.raw().restore(self.checkpoint) }
            }
        }

        let checkpoint = self.raw().enter_scope();
        let restore = Restore {
            arena: self,
            checkpoint,
        };
        let child: *mut ArenaRef<'a> = &mut *restore.arena;
        // SAFETY: the child is the same arena under a shorter lifetime. Its blocks live until
        // `restore` runs, which is after `f` has returned or unwound, and the closure's
        // higher-ranked lifetime keeps them (and the child itself) from escaping `f`. The parent
        // is only used again through `restore`, after the child is gone.
        let child: &mut ArenaRef<'_> = unsafe { &mut *child };
        f(child)
    }
}

impl fmt::Debug for ArenaRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArenaRef")
            .field("stats", &self.stats())
            .finish()
    }
}

super::typed::typed_api!(impl['a] ArenaRef<'a>, 'a, no_examples);
super::stats::stats_api!(impl['a] ArenaRef<'a>);
