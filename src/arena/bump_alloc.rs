//! [`BumpAlloc`]: the typed API (values, slices, strings, formatted text placed in an arena),
//! one trait for every arena type of the crate.

use core::alloc::Layout;
use core::fmt;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::vec::Vec;

use super::typed::{self, Core, FillError, out};
use crate::AllocOrInitError;
use crate::error::Failure;

mod inherent;

/// The typed API of every arena: places values, slices, strings and formatted text in the arena
/// and returns references to them. Implemented by [`Arena`](crate::Arena),
/// [`ArenaRef`](crate::ArenaRef), [`ScopeGuard`](crate::ScopeGuard),
/// [`LocalArena`](crate::LocalArena) and [`SyncArena`](crate::SyncArena) (sealed: no other type
/// can implement it).
///
/// Every method is also an inherent method of each of these types, with the type's lifetimes
/// (a one-line forwarder to the method here), so `arena.alloc(1)` needs no import. The trait is
/// what code generic over the arena kinds names, `fn f<X: BumpAlloc + ?Sized>(a: &X)`, and its
/// documentation is the typed API's.
///
/// **Values are never dropped.** The arena runs no destructor: a `String` or a `Vec` placed with
/// [`alloc`](BumpAlloc::alloc) leaks its heap buffer. A value that must be dropped goes in an
/// owning box, `allocator_api2::boxed::Box::new_in(value, &arena)`.
///
/// # How long the references live
/// A method called through `&'s self` returns references of any lifetime `'r` that
/// [`Self::Blocks<'s>`](BumpAlloc::Blocks) outlives (the bound `Self::Blocks<'s>: 'r` on each
/// method), which is as long as the arena's blocks stay valid:
///
/// | type | `Blocks<'s>` | the references live |
/// |---|---|---|
/// | `Arena<A>`, `SyncArena<A>`, `ScopeGuard<'_>` | `&'s ()` | as long as the borrow of the arena (or guard): reset, scope exit and drop need `&mut` or ownership |
/// | `ArenaRef<'a>` | `&'a ()` | for `'a`, the scope's (or the arena borrow's) lifetime, however short the borrow of the `ArenaRef` |
/// | `LocalArena<'a, A>` | `&'a ()` | for `'a`, the borrow of the `SyncArena`: they outlive the handle |
///
/// Generic code over any arena gets references that live as long as its borrow:
///
/// ```
/// use arena_pool::{Arena, BumpAlloc, SyncArena};
///
/// fn squares<X: BumpAlloc + ?Sized>(arena: &X, n: u32) -> &[u32] {
///     arena.alloc_slice_fill_with(n as usize, |i| (i as u32) * (i as u32))
/// }
///
/// let mut arena = Arena::new();
/// assert_eq!(squares(&arena, 4), &[0, 1, 4, 9]);
/// arena.with_scope(|scope| assert_eq!(squares(scope, 3), &[0, 1, 4]));
/// let shared = SyncArena::new();
/// assert_eq!(squares(&shared, 2), &[0, 1]);
/// assert_eq!(squares(&shared.local(), 2), &[0, 1]);
/// ```
///
/// Code whose results must live as long as the arena's blocks, longer than its borrow of a scope
/// or of a `LocalArena`, takes an [`&ArenaRef<'a>`](crate::ArenaRef): every arena but the shared
/// path of a `SyncArena` gives one (`arena.as_arena_ref()`, a scope, `guard.as_arena_ref()`,
/// `local.as_arena_ref()`), and its references live for `'a`:
///
/// ```
/// use arena_pool::{ArenaRef, SyncArena};
///
/// fn label<'a>(arena: &ArenaRef<'a>, i: u32) -> &'a str {
///     arena.alloc_fmt(format_args!("item {i}"))
/// }
///
/// let shared = SyncArena::new();
/// let text = label(shared.local().as_arena_ref(), 7); // the handle is gone, not its blocks
/// assert_eq!(text, "item 7");
/// ```
///
/// (Generic code can state it too, with the bound `X::Blocks<'s>: 'r` on a `&'s X`; the compiler
/// then needs the borrow's lifetime named at the call, `X::alloc::<'s, 'r, _>(arena, value)`,
/// which methods with another borrowed argument, such as `alloc_str`, do not accept.)
#[allow(clippy::mut_from_ref)]
pub trait BumpAlloc: Core {
    /// A type that outlives exactly as long as the blocks handed out through a `&'s Self` stay
    /// valid (see [the table above](BumpAlloc#how-long-the-references-live)).
    type Blocks<'s>: ?Sized
    where
        Self: 's;

    /// All the statistics of the arena at once (every arena kind's `stats`), for generic code.
    ///
    /// ```
    /// use arena_pool::{Arena, BumpAlloc, SyncArena};
    ///
    /// fn used<X: BumpAlloc + ?Sized>(arena: &X) -> usize {
    ///     arena.alloc_slice_fill_copy(10, 0u8);
    ///     arena.stats().used_bytes
    /// }
    ///
    /// assert_eq!(used(&Arena::new()), 10);
    /// assert_eq!(used(&SyncArena::new().local()), 10);
    /// ```
    fn stats(&self) -> crate::ArenaStats {
        self.core_stats()
    }

    /// Places `value` in the arena and returns a reference to it; the value is **never
    /// dropped** (for one with drop glue use `allocator_api2::boxed::Box::new_in(value, &arena)`).
    ///
    /// # Panics
    /// When the arena cannot allocate, with a message naming the cause (size overflow,
    /// allocation limit); calls `handle_alloc_error` when the backing allocator is out of memory.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let x = arena.alloc(42u32);
    /// *x += 1;
    /// assert_eq!(*x, 43);
    /// ```
    #[inline(always)]
    #[track_caller]
    fn alloc<'s, 'r, T>(&'s self, value: T) -> &'r mut T
    where
        Self::Blocks<'s>: 'r,
    {
        let p = typed::put_or_raise(self, value);
        // SAFETY: a fresh initialised block, valid for `Blocks<'s>`; see `out`.
        unsafe { out(p) }
    }

    /// Like [`alloc`](BumpAlloc::alloc) (the value is never dropped), returning `Err` instead of
    /// panicking (the value is dropped then).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// assert_eq!(arena.try_alloc(7u64).map(|x| *x), Ok(7));
    /// ```
    #[inline(always)]
    fn try_alloc<'s, 'r, T>(&'s self, value: T) -> Result<&'r mut T, AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::put(self, value)) }
    }

    /// Places `f()` in the arena, built in place where the compiler can; the value is **never
    /// dropped** (see [`alloc`](BumpAlloc::alloc)). If `f` panics, the room is given back.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `f` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// assert_eq!(*arena.alloc_with(|| 2 + 12), 14);
    /// ```
    #[inline(always)]
    #[track_caller]
    fn alloc_with<'s, 'r, T, F: FnOnce() -> T>(&'s self, f: F) -> &'r mut T
    where
        Self::Blocks<'s>: 'r,
    {
        let p = typed::alloc_with_or_raise(self, f);
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { out(p) }
    }

    /// Like [`alloc_with`](BumpAlloc::alloc_with) (never dropped), returning `Err` instead of
    /// panicking when the arena cannot allocate (`f` is not called then).
    #[inline(always)]
    fn try_alloc_with<'s, 'r, T, F: FnOnce() -> T>(&'s self, f: F) -> Result<&'r mut T, AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::alloc_with(self, f)) }
    }

    /// Places the `Ok` value of `f()`, never dropped (see [`alloc`](BumpAlloc::alloc)); on `Err`
    /// the room is given back (the position rewinds when nothing was allocated after it) and
    /// the error returned.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let used = arena.used_bytes();
    /// let r: Result<&mut u64, &str> = arena.alloc_try_with(|| Err("no"));
    /// assert_eq!(r, Err("no"));
    /// assert_eq!(arena.used_bytes(), used);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_try_with<'s, 'r, T, E, F: FnOnce() -> Result<T, E>>(
        &'s self,
        f: F,
    ) -> Result<&'r mut T, E>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::alloc_try_with(self, f) {
            // SAFETY: a fresh initialised block; see `out`.
            Ok(r) => r.map(|p| unsafe { out(p) }),
            Err(e) => e.raise(),
        }
    }

    /// Like [`alloc_try_with`](BumpAlloc::alloc_try_with) (never dropped), returning
    /// [`AllocOrInitError::Alloc`] instead of panicking.
    ///
    /// ```
    /// use arena_pool::{AllocOrInitError, Arena};
    ///
    /// let arena = Arena::new();
    /// let r: Result<&mut u32, AllocOrInitError<&str>> = arena.try_alloc_try_with(|| Err("bad"));
    /// assert_eq!(r, Err(AllocOrInitError::Init("bad")));
    /// ```
    #[inline]
    fn try_alloc_try_with<'s, 'r, T, E, F: FnOnce() -> Result<T, E>>(
        &'s self,
        f: F,
    ) -> Result<&'r mut T, AllocOrInitError<E>>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::alloc_try_with(self, f) {
            // SAFETY: a fresh initialised block; see `out`.
            Ok(Ok(p)) => Ok(unsafe { out(p) }),
            Ok(Err(e)) => Err(AllocOrInitError::Init(e)),
            Err(_) => Err(AllocOrInitError::Alloc(AllocError)),
        }
    }

    /// Allocates an uninitialised block of `layout`, aligned to `layout.align()`; it is valid as
    /// long as the references of the other methods (see
    /// [`Blocks`](BumpAlloc::Blocks)).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use core::alloc::Layout;
    ///
    /// let arena = Arena::new();
    /// let p = arena.alloc_layout(Layout::from_size_align(64, 32).unwrap());
    /// assert_eq!(p.as_ptr() as usize % 32, 0);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_layout(&self, layout: Layout) -> NonNull<u8> {
        match self.core_alloc(layout) {
            Ok(p) => p,
            Err(e) => e.raise(),
        }
    }

    /// Like [`alloc_layout`](BumpAlloc::alloc_layout), returning `Err` instead of panicking.
    #[inline]
    fn try_alloc_layout(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.core_alloc(layout).map_err(|_| AllocError)
    }

    /// Copies `items` into the arena.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let s = arena.alloc_slice_copy(&[1, 2, 3, 4, 5]);
    /// s[0] = 9;
    /// assert_eq!(s, &[9, 2, 3, 4, 5]);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_copy<'s, 'r, T: Copy>(&'s self, items: &[T]) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        let p = typed::slice_copy_or_raise(self, items);
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { out(p) }
    }

    /// Like [`alloc_slice_copy`](BumpAlloc::alloc_slice_copy), returning `Err` instead of
    /// panicking.
    #[inline]
    fn try_alloc_slice_copy<'s, 'r, T: Copy>(
        &'s self,
        items: &[T],
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_copy(self, items)) }
    }

    /// Clones `items` into the arena; the clones are **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)). If a `clone` panics, the clones made so far are dropped and
    /// the room is given back.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `T::clone` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use std::cell::Cell; // `Clone` but not `Copy`, and owns no heap memory (nothing to leak)
    ///
    /// let arena = Arena::new();
    /// let cells = arena.alloc_slice_clone(&[Cell::new(1), Cell::new(2)]);
    /// cells[0].set(5);
    /// assert_eq!((cells[0].get(), cells[1].get()), (5, 2));
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_clone<'s, 'r, T: Clone>(&'s self, items: &[T]) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        let clone = |i: usize| {
            // SAFETY: the fill calls its closure only with `i < items.len()`.
            unsafe { items.get_unchecked(i) }.clone()
        };
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::slice_fill_with(self, items.len(), clone)) }
    }

    /// Like [`alloc_slice_clone`](BumpAlloc::alloc_slice_clone) (never dropped), returning `Err`
    /// instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_slice_clone<'s, 'r, T: Clone>(
        &'s self,
        items: &[T],
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        let clone = |i: usize| {
            // SAFETY: the fill calls its closure only with `i < items.len()`.
            unsafe { items.get_unchecked(i) }.clone()
        };
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_fill_with(self, items.len(), clone)) }
    }

    /// A slice of `len` values, `f(i)` at index `i`, **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)). If `f` panics, the values made so far are dropped and the
    /// room is given back.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `f` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let arr = arena.alloc_slice_fill_with(12, |n| n as u8 + 1);
    /// assert_eq!(arr[2], 3);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_fill_with<'s, 'r, T, F: FnMut(usize) -> T>(
        &'s self,
        len: usize,
        f: F,
    ) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::slice_fill_with(self, len, f)) }
    }

    /// Like [`alloc_slice_fill_with`](BumpAlloc::alloc_slice_fill_with) (never dropped),
    /// returning `Err` instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_slice_fill_with<'s, 'r, T, F: FnMut(usize) -> T>(
        &'s self,
        len: usize,
        f: F,
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_fill_with(self, len, f)) }
    }

    /// A slice of `len` values, the `Ok` value of `f(i)` at index `i`, **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)). At the first `Err` (or a panic), the values made so far are
    /// dropped, the room is given back and the error returned: the position rewinds and
    /// `used_bytes` is as before, when `f` allocated nothing in this arena meanwhile (on a
    /// `SyncArena`'s shared path, where other threads bump too, the alignment padding before the
    /// block stays used).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `f` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let digits = arena.alloc_slice_try_fill_with(3, |i| "123"[i..=i].parse::<u8>());
    /// assert_eq!(digits, Ok(&mut [1, 2, 3][..]));
    /// let used = arena.used_bytes();
    /// let bad = arena.alloc_slice_try_fill_with(3, |i| "1x3"[i..=i].parse::<u8>());
    /// assert!(bad.is_err());
    /// assert_eq!(arena.used_bytes(), used);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_try_fill_with<'s, 'r, T, E, F: FnMut(usize) -> Result<T, E>>(
        &'s self,
        len: usize,
        f: F,
    ) -> Result<&'r mut [T], E>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::slice_try_fill_with(self, len, f) {
            // SAFETY: a fresh initialised block; see `out`.
            Ok(p) => Ok(unsafe { out(p) }),
            Err(FillError::Init(e)) => Err(e),
            Err(FillError::Alloc(e)) => e.raise(),
        }
    }

    /// Like [`alloc_slice_try_fill_with`](BumpAlloc::alloc_slice_try_fill_with) (never
    /// dropped), returning [`AllocOrInitError::Alloc`] instead of panicking when the arena
    /// cannot allocate (`f` is not called then).
    ///
    /// ```
    /// use arena_pool::{AllocOrInitError, Arena};
    ///
    /// let arena = Arena::new();
    /// let r = arena.try_alloc_slice_try_fill_with(4, |i| if i < 3 { Ok(i) } else { Err("short") });
    /// assert_eq!(r, Err(AllocOrInitError::Init("short")));
    /// ```
    #[inline]
    fn try_alloc_slice_try_fill_with<'s, 'r, T, E, F: FnMut(usize) -> Result<T, E>>(
        &'s self,
        len: usize,
        f: F,
    ) -> Result<&'r mut [T], AllocOrInitError<E>>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::slice_try_fill_with(self, len, f) {
            // SAFETY: a fresh initialised block; see `out`.
            Ok(p) => Ok(unsafe { out(p) }),
            Err(FillError::Init(e)) => Err(AllocOrInitError::Init(e)),
            Err(FillError::Alloc(_)) => Err(AllocOrInitError::Alloc(AllocError)),
        }
    }

    /// A slice of `len` copies of `value`.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// assert_eq!(arena.alloc_slice_fill_copy(3, 7u8), &[7, 7, 7]);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_fill_copy<'s, 'r, T: Copy>(&'s self, len: usize, value: T) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::slice_fill_with(self, len, |_| value)) }
    }

    /// Like [`alloc_slice_fill_copy`](BumpAlloc::alloc_slice_fill_copy), returning `Err` instead
    /// of panicking.
    #[inline]
    fn try_alloc_slice_fill_copy<'s, 'r, T: Copy>(
        &'s self,
        len: usize,
        value: T,
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_fill_with(self, len, |_| value)) }
    }

    /// A slice of `len` clones of `value`, **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)). Panic-safe like
    /// [`alloc_slice_clone`](BumpAlloc::alloc_slice_clone).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `T::clone` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use std::cell::Cell;
    ///
    /// let arena = Arena::new();
    /// let cells = arena.alloc_slice_fill_clone(3, &Cell::new(7u8));
    /// cells[0].set(1);
    /// assert_eq!(cells.iter().map(Cell::get).sum::<u8>(), 15);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_fill_clone<'s, 'r, T: Clone>(&'s self, len: usize, value: &T) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::slice_fill_with(self, len, |_| value.clone())) }
    }

    /// Like [`alloc_slice_fill_clone`](BumpAlloc::alloc_slice_fill_clone) (never dropped),
    /// returning `Err` instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_slice_fill_clone<'s, 'r, T: Clone>(
        &'s self,
        len: usize,
        value: &T,
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_fill_with(self, len, |_| value.clone())) }
    }

    /// A slice of `len` default values, **never dropped** (see [`alloc`](BumpAlloc::alloc)).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `T::default` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// assert_eq!(arena.alloc_slice_fill_default::<u16>(4), &[0; 4]);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_slice_fill_default<'s, 'r, T: Default>(&'s self, len: usize) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::slice_fill_with(self, len, |_| T::default())) }
    }

    /// Like [`alloc_slice_fill_default`](BumpAlloc::alloc_slice_fill_default) (never dropped),
    /// returning `Err` instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_slice_fill_default<'s, 'r, T: Default>(
        &'s self,
        len: usize,
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::slice_fill_with(self, len, |_| T::default())) }
    }

    /// A slice of every item of `iter`, **never dropped** (see [`alloc`](BumpAlloc::alloc)). Its
    /// `size_hint` is only a first guess (a wrong one costs a copy, never correctness), and it
    /// may itself allocate in this arena while it runs. If it panics, the items taken so far are
    /// dropped.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when the iterator panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let squares = arena.alloc_slice_fill_iter((1..=4).map(|i| i * i));
    /// assert_eq!(squares, &[1, 4, 9, 16]);
    /// ```
    #[track_caller]
    fn alloc_slice_fill_iter<'s, 'r, T, I: IntoIterator<Item = T>>(&'s self, iter: I) -> &'r mut [T]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a finished block of initialised items; see `out`.
        unsafe { raised(typed::slice_from_iter(self, iter)) }
    }

    /// Like [`alloc_slice_fill_iter`](BumpAlloc::alloc_slice_fill_iter) (never dropped),
    /// returning `Err` instead of panicking when the arena cannot allocate.
    fn try_alloc_slice_fill_iter<'s, 'r, T, I: IntoIterator<Item = T>>(
        &'s self,
        iter: I,
    ) -> Result<&'r mut [T], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a finished block of initialised items; see `out`.
        unsafe { fallible(typed::slice_from_iter(self, iter)) }
    }

    /// A slice of the `Ok` items of `iter`, **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)), as [`alloc_slice_fill_iter`](BumpAlloc::alloc_slice_fill_iter)
    /// collects them. At the first `Err` (or a panic), the items taken so far are dropped, the
    /// room is given back and the error returned: the position rewinds and `used_bytes` is as
    /// before, when the iterator allocated nothing in this arena meanwhile (on a `SyncArena`'s
    /// shared path, the alignment padding before the block stays used).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when the iterator panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let nums = arena.alloc_slice_try_fill_iter("4 8 15".split(' ').map(str::parse::<u32>));
    /// assert_eq!(nums, Ok(&mut [4, 8, 15][..]));
    /// let used = arena.used_bytes();
    /// assert!(arena.alloc_slice_try_fill_iter("4 x".split(' ').map(str::parse::<u32>)).is_err());
    /// assert_eq!(arena.used_bytes(), used);
    /// ```
    #[track_caller]
    fn alloc_slice_try_fill_iter<'s, 'r, T, E, I: IntoIterator<Item = Result<T, E>>>(
        &'s self,
        iter: I,
    ) -> Result<&'r mut [T], E>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::slice_try_from_iter::<_, _, _, true>(self, iter) {
            // SAFETY: a finished block of initialised items; see `out`.
            Ok(p) => Ok(unsafe { out(p) }),
            Err(FillError::Init(e)) => Err(e),
            Err(FillError::Alloc(e)) => e.raise(),
        }
    }

    /// Like [`alloc_slice_try_fill_iter`](BumpAlloc::alloc_slice_try_fill_iter) (never
    /// dropped), returning [`AllocOrInitError::Alloc`] instead of panicking when the arena
    /// cannot allocate (the items taken so far are dropped then too).
    fn try_alloc_slice_try_fill_iter<'s, 'r, T, E, I: IntoIterator<Item = Result<T, E>>>(
        &'s self,
        iter: I,
    ) -> Result<&'r mut [T], AllocOrInitError<E>>
    where
        Self::Blocks<'s>: 'r,
    {
        match typed::slice_try_from_iter::<_, _, _, true>(self, iter) {
            // SAFETY: a finished block of initialised items; see `out`.
            Ok(p) => Ok(unsafe { out(p) }),
            Err(FillError::Init(e)) => Err(AllocOrInitError::Init(e)),
            Err(FillError::Alloc(_)) => Err(AllocOrInitError::Alloc(AllocError)),
        }
    }

    /// An array of `N` default values, **never dropped** (see [`alloc`](BumpAlloc::alloc)).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `T::default` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let arr: &mut [u8; 128] = arena.alloc_sized_slice_fill_default();
    /// assert!(arr.iter().all(|&b| b == 0));
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_sized_slice_fill_default<'s, 'r, T: Default, const N: usize>(
        &'s self,
    ) -> &'r mut [T; N]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::array_fill_with::<T, N, _>(self, |_| T::default())) }
    }

    /// Like [`alloc_sized_slice_fill_default`](BumpAlloc::alloc_sized_slice_fill_default) (never
    /// dropped), returning `Err` instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_sized_slice_fill_default<'s, 'r, T: Default, const N: usize>(
        &'s self,
    ) -> Result<&'r mut [T; N], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::array_fill_with::<T, N, _>(self, |_| T::default())) }
    }

    /// An array of `N` values, `f(i)` at index `i`, **never dropped** (see
    /// [`alloc`](BumpAlloc::alloc)); panic-safe like
    /// [`alloc_slice_fill_with`](BumpAlloc::alloc_slice_fill_with).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when `f` panics.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let arr: &mut [usize; 4] = arena.alloc_sized_slice_fill_with(|i| i * 10);
    /// assert_eq!(arr, &[0, 10, 20, 30]);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_sized_slice_fill_with<'s, 'r, T, const N: usize, F: FnMut(usize) -> T>(
        &'s self,
        f: F,
    ) -> &'r mut [T; N]
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { raised(typed::array_fill_with::<T, N, _>(self, f)) }
    }

    /// Like [`alloc_sized_slice_fill_with`](BumpAlloc::alloc_sized_slice_fill_with) (never
    /// dropped), returning `Err` instead of panicking when the arena cannot allocate.
    #[inline]
    fn try_alloc_sized_slice_fill_with<'s, 'r, T, const N: usize, F: FnMut(usize) -> T>(
        &'s self,
        f: F,
    ) -> Result<&'r mut [T; N], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::array_fill_with::<T, N, _>(self, f)) }
    }

    /// A copy of the array `items`.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let a: &mut [i32; 3] = arena.alloc_sized_slice_copy(&[1, 2, 3]);
    /// a[1] = 0;
    /// assert_eq!(a, &[1, 0, 3]);
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_sized_slice_copy<'s, 'r, T: Copy, const N: usize>(
        &'s self,
        items: &[T; N],
    ) -> &'r mut [T; N]
    where
        Self::Blocks<'s>: 'r,
    {
        let p = typed::alloc_with_or_raise(self, || *items);
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { out(p) }
    }

    /// Like [`alloc_sized_slice_copy`](BumpAlloc::alloc_sized_slice_copy), returning `Err`
    /// instead of panicking.
    #[inline]
    fn try_alloc_sized_slice_copy<'s, 'r, T: Copy, const N: usize>(
        &'s self,
        items: &[T; N],
    ) -> Result<&'r mut [T; N], AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        unsafe { fallible(typed::alloc_with(self, || *items)) }
    }

    /// A copy of the string `s`.
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc).
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let s = arena.alloc_str("hello world");
    /// s.make_ascii_uppercase();
    /// assert_eq!(s, "HELLO WORLD");
    /// ```
    #[inline]
    #[track_caller]
    fn alloc_str<'s, 'r>(&'s self, s: &str) -> &'r mut str
    where
        Self::Blocks<'s>: 'r,
    {
        let p = typed::slice_copy_or_raise(self, s.as_bytes());
        // SAFETY: a fresh initialised block; see `out`.
        let bytes = unsafe { out(p) };
        // SAFETY: a copy of the bytes of a `str` is valid UTF-8.
        unsafe { core::str::from_utf8_unchecked_mut(bytes) }
    }

    /// Like [`alloc_str`](BumpAlloc::alloc_str), returning `Err` instead of panicking.
    #[inline]
    fn try_alloc_str<'s, 'r>(&'s self, s: &str) -> Result<&'r mut str, AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a fresh initialised block; see `out`.
        let bytes = unsafe { fallible(typed::slice_copy(self, s.as_bytes())) }?;
        // SAFETY: a copy of the bytes of a `str` is valid UTF-8.
        Ok(unsafe { core::str::from_utf8_unchecked_mut(bytes) })
    }

    /// Formats `args` straight into the arena (the text grows in place, no temporary `String`).
    ///
    /// # Panics
    /// As [`alloc`](BumpAlloc::alloc), and when a formatting trait implementation returns an
    /// error.
    ///
    /// ```
    /// use arena_pool::Arena;
    ///
    /// let arena = Arena::new();
    /// let s = arena.alloc_fmt(format_args!("{}-{}", 1, "two"));
    /// assert_eq!(s, "1-two");
    /// ```
    #[track_caller]
    fn alloc_fmt<'s, 'r>(&'s self, args: fmt::Arguments<'_>) -> &'r mut str
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a finished block of UTF-8 text; see `out`.
        unsafe { raised(typed::format(self, args)) }
    }

    /// Like [`alloc_fmt`](BumpAlloc::alloc_fmt), returning `Err` instead of panicking when the
    /// arena cannot allocate or a formatting trait implementation returns an error.
    fn try_alloc_fmt<'s, 'r>(&'s self, args: fmt::Arguments<'_>) -> Result<&'r mut str, AllocError>
    where
        Self::Blocks<'s>: 'r,
    {
        // SAFETY: a finished block of UTF-8 text; see `out`.
        unsafe { fallible(typed::format(self, args)) }
    }

    /// Turns a `Vec` built in this arena into a slice that lives as long as the arena's blocks
    /// (see [`Blocks`](BumpAlloc::Blocks)), not just as long as the `Vec`'s borrow of the arena:
    /// the elements are **never dropped** (see [`alloc`](BumpAlloc::alloc)). The unused capacity
    /// is given back when the buffer is the arena's last block, or a large block (of 64 KiB or
    /// more, shrunk by the backing allocator). The buffer never moves to a new block of the
    /// arena, so the slice lives as long as the `Vec`'s buffer would have: a checkpoint taken
    /// after the `Vec` was made ([`ArenaRef::reset_to`](crate::ArenaRef::reset_to)) does not
    /// free it.
    ///
    /// For `Arena` and `SyncArena` this is `Vec::leak`; for a [`LocalArena`](crate::LocalArena)
    /// the slice outlives the handle (its blocks belong to the `SyncArena`), for an
    /// [`ArenaRef`](crate::ArenaRef) it lives as long as the scope.
    ///
    /// ```
    /// use arena_pool::{LocalArena, SyncArena};
    /// use arena_pool::allocator_api2::vec::Vec;
    ///
    /// let shared = SyncArena::new();
    /// let evens: &mut [u32] = {
    ///     let local = shared.local();
    ///     let mut v = Vec::new_in(&local);
    ///     v.extend((0..10).filter(|n| n % 2 == 0));
    ///     LocalArena::into_slice(v)
    /// }; // the handle is gone; the slice lives until `shared` is reset or dropped
    /// assert_eq!(evens, &[0, 2, 4, 6, 8]);
    /// ```
    fn into_slice<'s, 'r, T>(vec: Vec<T, &'s Self>) -> &'r mut [T]
    where
        &'s Self: Allocator,
        Self::Blocks<'s>: 'r,
    {
        let mut vec = ManuallyDrop::new(vec);
        let (len, cap) = (vec.len(), vec.capacity());
        // The buffer's own pointer (dangling when nothing was allocated), with its provenance.
        let ptr = NonNull::new(vec.as_mut_ptr()).unwrap_or(NonNull::dangling());
        let arena: &'s Self = vec.allocator();
        // SAFETY: the buffer is a block of `arena` for `[T; cap]` (or dangling) with `len`
        // initialised elements; the `Vec` is consumed, so nothing else uses, resizes or frees it.
        let ptr = unsafe { typed::shrink_to_len(arena, ptr, len, cap) };
        // SAFETY: `len` initialised elements that no one else references; the block stays valid
        // for `Blocks<'s>`, since only the `Vec` (consumed) could have freed it and reset, scope
        // exit and drop end that lifetime first. See `out`.
        unsafe { out(NonNull::slice_from_raw_parts(ptr, len)) }
    }

    /// Turns a [`String`](crate::collections::String) built in this arena into a `str` that
    /// lives as long as the arena's blocks, as [`into_slice`](BumpAlloc::into_slice) does for a
    /// `Vec` (the unused capacity is given back as it says). For a
    /// [`LocalArena`](crate::LocalArena) the text outlives the handle.
    ///
    /// ```
    /// use arena_pool::{LocalArena, SyncArena, format_in};
    ///
    /// let shared = SyncArena::new();
    /// let greeting: &str = {
    ///     let local = shared.local();
    ///     let mut s = format_in!(&local, "hello");
    ///     s.push_str(", world");
    ///     LocalArena::into_str(s)
    /// }; // the handle is gone; the text lives until `shared` is reset or dropped
    /// assert_eq!(greeting, "hello, world");
    /// ```
    fn into_str<'s, 'r>(s: crate::collections::String<&'s Self>) -> &'r mut str
    where
        &'s Self: Allocator,
        Self::Blocks<'s>: 'r,
    {
        let bytes = Self::into_slice(s.into_bytes());
        // SAFETY: the bytes of a `String`, which are valid UTF-8 (its invariant), unchanged.
        unsafe { core::str::from_utf8_unchecked_mut(bytes) }
    }
}

/// The panicking API's answer to an internal result: the reference, or a panic naming the cause.
///
/// # Safety
/// As for [`out`] on the `Ok` pointer.
#[inline(always)]
#[track_caller]
unsafe fn raised<'r, T: ?Sized>(r: Result<NonNull<T>, Failure>) -> &'r mut T {
    match r {
        // SAFETY: forwarded from the caller.
        Ok(p) => unsafe { out(p) },
        Err(e) => e.raise(),
    }
}

/// The fallible API's answer to an internal result: the reference, or `AllocError`.
///
/// # Safety
/// As for [`out`] on the `Ok` pointer.
#[inline(always)]
unsafe fn fallible<'r, T: ?Sized>(r: Result<NonNull<T>, Failure>) -> Result<&'r mut T, AllocError> {
    match r {
        // SAFETY: forwarded from the caller.
        Ok(p) => Ok(unsafe { out(p) }),
        Err(_) => Err(AllocError),
    }
}

// The implementations: each type says how long its blocks live (the table in the trait's docs).

impl<A: Allocator, const MIN_ALIGN: usize> BumpAlloc for crate::Arena<A, MIN_ALIGN> {
    type Blocks<'s>
        = &'s ()
    where
        Self: 's;
}

impl<'a, const MIN_ALIGN: usize> BumpAlloc for crate::ArenaRef<'a, MIN_ALIGN> {
    type Blocks<'s>
        = &'a ()
    where
        Self: 's;
}

impl<const MIN_ALIGN: usize> BumpAlloc for crate::ScopeGuard<'_, MIN_ALIGN> {
    type Blocks<'s>
        = &'s ()
    where
        Self: 's;
}

#[cfg(feature = "std")]
impl<'a, A: Allocator> BumpAlloc for crate::LocalArena<'a, A> {
    type Blocks<'s>
        = &'a ()
    where
        Self: 's;
}

#[cfg(feature = "std")]
impl<A: Allocator> BumpAlloc for crate::SyncArena<A> {
    type Blocks<'s>
        = &'s ()
    where
        Self: 's;
}
