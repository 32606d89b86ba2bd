//! Typed helpers: placing values, slices and strings in an arena, panic-safely.
//!
//! The internals are methods of [`RawArena`] returning the crate's [`Failure`]; the public
//! methods, identical for [`Arena`](crate::Arena) and [`ArenaRef`](crate::ArenaRef), are written
//! once in [`typed_api!`] and either panic with the failure's message or return `AllocError`.

use core::alloc::Layout;
use core::fmt;
use core::mem;
use core::ptr::{self, NonNull};

use super::bump::{RawArena, dangling};
use super::chunk::ChunkSource;
use crate::error::Failure;

/// Deallocates a block on drop: releases a block whose initialiser panicked or failed.
struct Release<'r, S: ChunkSource + ?Sized> {
    raw: &'r RawArena,
    src: &'r S,
    ptr: NonNull<u8>,
    layout: Layout,
}

impl<S: ChunkSource + ?Sized> Drop for Release<'_, S> {
    fn drop(&mut self) {
        // SAFETY: the block was allocated from `raw` (whose source is `src`) with `layout` and
        // holds no value that is used again (its initialiser did not complete).
        unsafe { self.raw.deallocate(self.ptr, self.layout, self.src) }
    }
}

/// [`Release`] for a block bumped in the current chunk (never a large block): rolls it back,
/// with no source to carry on the fast path.
struct ReleaseBump<'r> {
    raw: &'r RawArena,
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Drop for ReleaseBump<'_> {
    fn drop(&mut self) {
        // SAFETY: the block was bumped in this arena's current chunk with `layout` and holds no
        // value that is used again.
        unsafe { self.raw.release_bump(self.ptr, self.layout) }
    }
}

/// The layout of `[T; len]`, known to be valid because a block of it was allocated.
///
/// # Safety
/// `Layout::array::<T>(len)` succeeded before.
unsafe fn array_layout<T>(len: usize) -> Layout {
    // SAFETY: the caller saw `Layout::array::<T>(len)` succeed, so the product does not overflow
    // and rounds to at most isize::MAX.
    unsafe { Layout::from_size_align_unchecked(size_of::<T>() * len, align_of::<T>()) }
}

/// A growable buffer in the arena for collecting an iterator or formatted text: grows in place
/// while it is the last block, drops its elements and gives its block back if dropped unfinished.
pub(crate) struct Building<'r, T, S: ChunkSource + ?Sized> {
    raw: &'r RawArena,
    src: &'r S,
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

impl<'r, T, S: ChunkSource + ?Sized> Building<'r, T, S> {
    pub(crate) fn new(raw: &'r RawArena, src: &'r S) -> Self {
        let cap = if size_of::<T>() == 0 { usize::MAX } else { 0 };
        Building {
            raw,
            src,
            ptr: NonNull::dangling(),
            len: 0,
            cap,
        }
    }

    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), Failure> {
        if self.cap - self.len >= additional {
            return Ok(());
        }
        let needed = self
            .len
            .checked_add(additional)
            .ok_or(Failure::CapacityOverflow)?;
        let new_cap = needed.max(self.cap.saturating_mul(2)).max(4);
        let new_layout = Layout::array::<T>(new_cap).map_err(|_| Failure::CapacityOverflow)?;
        let p = if self.cap == 0 {
            self.raw.alloc(new_layout, self.src)?
        } else {
            // SAFETY: `ptr` is our live block of `cap` elements, allocated from this arena with
            // that array layout (valid, as it was allocated), and the new layout is larger.
            unsafe {
                self.raw.grow(
                    self.ptr.cast(),
                    array_layout::<T>(self.cap),
                    new_layout,
                    false,
                    self.src,
                )?
            }
        };
        self.ptr = p.cast();
        self.cap = new_cap;
        Ok(())
    }

    pub(crate) fn push(&mut self, value: T) -> Result<(), Failure> {
        self.reserve(1)?;
        // SAFETY: `len < cap` after the reserve, so the slot is inside our block.
        unsafe { self.ptr.add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Gives the unused tail back (in place when the block is last) and returns the elements.
    pub(crate) fn finish(self) -> NonNull<[T]> {
        let this = mem::ManuallyDrop::new(self);
        let mut ptr = this.ptr;
        if size_of::<T>() != 0 && this.cap > this.len {
            // SAFETY: the block is ours with `cap` elements; a shrink with the same alignment
            // never moves it and never fails.
            if let Ok(p) = unsafe {
                this.raw.shrink(
                    ptr.cast(),
                    array_layout::<T>(this.cap),
                    array_layout::<T>(this.len),
                    this.src,
                )
            } {
                ptr = p.cast();
            }
        }
        NonNull::slice_from_raw_parts(ptr, this.len)
    }
}

impl<T: Copy, S: ChunkSource + ?Sized> Building<'_, T, S> {
    pub(crate) fn extend_from_slice(&mut self, items: &[T]) -> Result<(), Failure> {
        self.reserve(items.len())?;
        // SAFETY: `len + items.len() <= cap` after the reserve; `items` is borrowed from outside
        // our block (a fresh one, or ours, which nobody else can see).
        unsafe {
            ptr::copy_nonoverlapping(items.as_ptr(), self.ptr.add(self.len).as_ptr(), items.len())
        };
        self.len += items.len();
        Ok(())
    }
}

impl<T, S: ChunkSource + ?Sized> Drop for Building<'_, T, S> {
    fn drop(&mut self) {
        // SAFETY: the first `len` elements are initialised and owned by us.
        unsafe { ptr::drop_in_place(NonNull::slice_from_raw_parts(self.ptr, self.len).as_ptr()) };
        if size_of::<T>() != 0 && self.cap != 0 {
            // SAFETY: our block of `cap` elements, not used again.
            unsafe {
                self.raw
                    .deallocate(self.ptr.cast(), array_layout::<T>(self.cap), self.src)
            };
        }
    }
}

/// Collects formatted text into a [`Building`] buffer.
struct FmtSink<'r, S: ChunkSource + ?Sized> {
    buf: Building<'r, u8, S>,
    failure: Option<Failure>,
}

impl<S: ChunkSource + ?Sized> fmt::Write for FmtSink<'_, S> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.extend_from_slice(s.as_bytes()).map_err(|e| {
            self.failure = Some(e);
            fmt::Error
        })
    }
}

impl RawArena {
    /// Room for one `T` (a dangling pointer for a zero-sized `T`).
    #[inline(always)]
    pub(crate) fn place<T, S: ChunkSource + ?Sized>(&self, src: &S) -> Result<NonNull<T>, Failure> {
        if size_of::<T>() == 0 {
            return Ok(NonNull::dangling());
        }
        self.alloc(Layout::new::<T>(), src).map(NonNull::cast)
    }

    /// Room for `len` values of `T`.
    #[inline]
    pub(crate) fn place_array<T, S: ChunkSource + ?Sized>(
        &self,
        len: usize,
        src: &S,
    ) -> Result<NonNull<T>, Failure> {
        if size_of::<T>() == 0 {
            return Ok(NonNull::dangling());
        }
        let layout = Layout::array::<T>(len).map_err(|_| Failure::CapacityOverflow)?;
        self.alloc(layout, src).map(NonNull::cast)
    }

    /// [`place_array`](Self::place_array) for the panicking API: a failure is raised in a cold
    /// path, so the fast path returns a bare pointer (no `Result` through memory, no stack
    /// frame).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn place_array_or_raise<T, S: ChunkSource + ?Sized>(
        &self,
        len: usize,
        src: &S,
    ) -> NonNull<T> {
        if size_of::<T>() == 0 {
            return NonNull::dangling();
        }
        let Ok(layout) = Layout::array::<T>(len) else {
            Failure::CapacityOverflow.raise()
        };
        // An empty array takes no room (DESIGN §3). With alignment 1 the bump itself moves
        // nothing for it and never fails (no padding, no size, and `ptr <= end`), so the test is
        // left out.
        if align_of::<T>() > 1 && layout.size() == 0 {
            return dangling(layout.align()).cast();
        }
        match self.bump(layout) {
            Some(p) => p.cast(),
            None => self.alloc_or_raise_slow(layout, src).cast(),
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn alloc_or_raise_slow<S: ChunkSource + ?Sized>(&self, layout: Layout, src: &S) -> NonNull<u8> {
        // Never empty: `place_array_or_raise` answers the empty arrays the bump could fail.
        match self.alloc_slow(layout, false, src) {
            Ok(p) => p,
            Err(e) => e.raise(),
        }
    }

    /// [`slice_copy`](Self::slice_copy) for the panicking API (see
    /// [`place_array_or_raise`](Self::place_array_or_raise)).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn slice_copy_or_raise<T: Copy, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        items: &[T],
    ) -> NonNull<[T]> {
        let dst = self.place_array_or_raise::<T, _>(items.len(), src);
        // SAFETY: `dst` is a fresh block for `items.len()` values.
        unsafe { copy_into(dst, items) }
    }

    /// Allocates room for a `T`, then writes `f()` there; the room is released if `f` panics.
    ///
    /// The fast path is a bump and a write; everything else (a new chunk, a failure) is in a
    /// cold function, so the fast path needs no stack frame.
    #[inline(always)]
    pub(crate) fn alloc_with<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnOnce() -> T,
    ) -> Result<NonNull<T>, Failure> {
        if size_of::<T>() != 0 {
            if let Some(p) = self.bump(Layout::new::<T>()) {
                // SAFETY: `p` is fresh room for a `T` in the current chunk.
                return Ok(unsafe { self.init_with(p.cast(), f) });
            }
        }
        self.alloc_with_slow(src, f)
    }

    #[cold]
    #[inline(never)]
    fn alloc_with_slow<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnOnce() -> T,
    ) -> Result<NonNull<T>, Failure> {
        let p = self.place::<T, _>(src)?;
        // SAFETY: `p` is fresh room for a `T` (dangling, for a zero-sized `T`).
        Ok(unsafe { self.init_placed_with(p, src, f) })
    }

    /// [`alloc_with`](Self::alloc_with) for the panicking API: a failure is raised in the cold
    /// path, so the fast path returns a bare pointer and tail-calls the cold one.
    #[inline(always)]
    pub(crate) fn alloc_with_or_raise<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnOnce() -> T,
    ) -> NonNull<T> {
        if size_of::<T>() != 0 {
            if let Some(p) = self.bump(Layout::new::<T>()) {
                // SAFETY: `p` is fresh room for a `T` in the current chunk.
                return unsafe { self.init_with(p.cast(), f) };
            }
        }
        self.alloc_with_or_raise_slow(src, f)
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn alloc_with_or_raise_slow<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnOnce() -> T,
    ) -> NonNull<T> {
        match self.alloc_with_slow(src, f) {
            Ok(p) => p,
            Err(e) => e.raise(),
        }
    }

    /// Writes `f()` to `p`; the room is released if `f` panics.
    ///
    /// # Safety
    /// `p` is fresh room for a `T` bumped in this arena's current chunk.
    #[inline(always)]
    unsafe fn init_with<T>(&self, p: NonNull<T>, f: impl FnOnce() -> T) -> NonNull<T> {
        let release = ReleaseBump {
            raw: self,
            ptr: p.cast(),
            layout: Layout::new::<T>(),
        };
        // SAFETY: forwarded from the caller.
        unsafe { p.write(f()) };
        mem::forget(release);
        p
    }

    /// [`init_with`](Self::init_with) for room placed by any path (a large block among them).
    ///
    /// # Safety
    /// `p` is fresh room for a `T` allocated from this arena, whose source is `src` (or dangling
    /// for a zero-sized `T`).
    unsafe fn init_placed_with<T, S: ChunkSource + ?Sized>(
        &self,
        p: NonNull<T>,
        src: &S,
        f: impl FnOnce() -> T,
    ) -> NonNull<T> {
        let release = Release {
            raw: self,
            src,
            ptr: p.cast(),
            layout: Layout::new::<T>(),
        };
        // SAFETY: forwarded from the caller.
        unsafe { p.write(f()) };
        mem::forget(release);
        p
    }

    /// Like `alloc_with` for a fallible initialiser: on `Err` the room is released (rolled back
    /// when it is still the last block) and the error returned.
    #[inline]
    pub(crate) fn alloc_try_with<T, E, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<Result<NonNull<T>, E>, Failure> {
        let p = self.place::<T, _>(src)?;
        let release = Release {
            raw: self,
            src,
            ptr: p.cast(),
            layout: Layout::new::<T>(),
        };
        match f() {
            Ok(value) => {
                // SAFETY: `p` is fresh room for a `T`.
                unsafe { p.write(value) };
                mem::forget(release);
                Ok(Ok(p))
            }
            Err(e) => {
                drop(release);
                Ok(Err(e))
            }
        }
    }

    /// Writes `f(i)` to slot `i` of `dst` for every `i < len`. If `f` panics, the values written
    /// so far are dropped and the block is released.
    ///
    /// # Safety
    /// `dst` is a fresh block of this arena allocated for `[T; len]` (a valid array layout).
    #[inline]
    pub(crate) unsafe fn fill_with<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        dst: NonNull<T>,
        len: usize,
        mut f: impl FnMut(usize) -> T,
    ) {
        struct Partial<'r, T, S: ChunkSource + ?Sized> {
            raw: &'r RawArena,
            src: &'r S,
            dst: NonNull<T>,
            done: usize,
            len: usize,
        }
        impl<T, S: ChunkSource + ?Sized> Drop for Partial<'_, T, S> {
            fn drop(&mut self) {
                // SAFETY: the first `done` slots were written and are owned by this guard; the
                // block was allocated for `[T; len]` and is not used again.
                unsafe {
                    ptr::drop_in_place(NonNull::slice_from_raw_parts(self.dst, self.done).as_ptr());
                    self.raw
                        .deallocate(self.dst.cast(), array_layout::<T>(self.len), self.src);
                }
            }
        }
        let mut partial = Partial {
            raw: self,
            src,
            dst,
            done: 0,
            len,
        };
        while partial.done < len {
            let i = partial.done;
            // SAFETY: `i < len`, so the slot is inside the block.
            unsafe { dst.add(i).write(f(i)) };
            partial.done = i + 1;
        }
        mem::forget(partial);
    }

    /// A slice of `len` values made by `f`.
    #[inline]
    pub(crate) fn slice_fill_with<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        len: usize,
        f: impl FnMut(usize) -> T,
    ) -> Result<NonNull<[T]>, Failure> {
        let dst = self.place_array::<T, _>(len, src)?;
        // SAFETY: `dst` is a fresh block for `[T; len]`.
        unsafe { self.fill_with(src, dst, len, f) };
        Ok(NonNull::slice_from_raw_parts(dst, len))
    }

    /// A copy of `items`.
    #[inline]
    pub(crate) fn slice_copy<T: Copy, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        items: &[T],
    ) -> Result<NonNull<[T]>, Failure> {
        let dst = self.place_array::<T, _>(items.len(), src)?;
        // SAFETY: `dst` is a fresh block for `items.len()` values.
        Ok(unsafe { copy_into(dst, items) })
    }

    /// An array of `N` values made by `f`.
    #[inline]
    pub(crate) fn array_fill_with<T, const N: usize, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        f: impl FnMut(usize) -> T,
    ) -> Result<NonNull<[T; N]>, Failure> {
        let dst = self.place::<[T; N], _>(src)?;
        // SAFETY: `[T; N]` has the layout of `Layout::array::<T>(N)`, and `dst` is fresh.
        unsafe { self.fill_with(src, dst.cast::<T>(), N, f) };
        Ok(dst)
    }

    /// The items of `iter`, however many it yields (its `size_hint` is only a first guess, even
    /// an impossible one, and it may allocate in this arena while it runs).
    pub(crate) fn slice_from_iter<T, S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        iter: impl IntoIterator<Item = T>,
    ) -> Result<NonNull<[T]>, Failure> {
        let iter = iter.into_iter();
        let mut buf = Building::new(self, src);
        // The lower bound is only a hint: one too large to reserve may be a lie, so grow as the
        // items come instead (a failed reservation changes nothing).
        let _ = buf.reserve(iter.size_hint().0);
        for item in iter {
            buf.push(item)?;
        }
        Ok(buf.finish())
    }

    /// Formatted text.
    pub(crate) fn format<S: ChunkSource + ?Sized>(
        &self,
        src: &S,
        args: fmt::Arguments<'_>,
    ) -> Result<NonNull<str>, Failure> {
        if let Some(s) = args.as_str() {
            return self.slice_copy(src, s.as_bytes()).map(str_ptr);
        }
        let mut sink = FmtSink {
            buf: Building::new(self, src),
            failure: None,
        };
        if fmt::Write::write_fmt(&mut sink, args).is_err() {
            return Err(sink.failure.unwrap_or(Failure::Format));
        }
        Ok(str_ptr(sink.buf.finish()))
    }
}

/// Reinterprets a byte slice pointer as a `str` pointer (the caller knows it is UTF-8).
fn str_ptr(p: NonNull<[u8]>) -> NonNull<str> {
    // `str` and `[u8]` have the same layout and metadata.
    NonNull::new(p.as_ptr() as *mut str).unwrap_or_else(|| unreachable!())
}

/// Copies `items` to `dst` and returns the slice there.
///
/// # Safety
/// `dst` is a fresh block of the arena with room for `items.len()` values of `T` (so it cannot
/// overlap `items`, which the caller borrows).
#[inline(always)]
unsafe fn copy_into<T: Copy>(dst: NonNull<T>, items: &[T]) -> NonNull<[T]> {
    // SAFETY: `dst` is writable for `items.len()` values and does not overlap `items` (above).
    unsafe { ptr::copy_nonoverlapping(items.as_ptr(), dst.as_ptr(), items.len()) };
    NonNull::slice_from_raw_parts(dst, items.len())
}

/// Hands out a reference to an arena block for the arena's lifetime.
///
/// # Safety
/// `p` is an initialised block of the arena that no one else references, and `'x` is no longer
/// than the arena's borrow the caller holds: blocks stay valid until reset, scope exit or drop,
/// all of which end that borrow first.
#[inline(always)]
pub(crate) unsafe fn out<'x, T: ?Sized>(p: NonNull<T>) -> &'x mut T {
    // SAFETY: forwarded from the caller.
    unsafe { &mut *p.as_ptr() }
}

/// Picks a doc example for the `Arena` copy of a method, nothing for the `ArenaRef` copy.
macro_rules! doc_example {
    (examples, $text:literal) => {
        $text
    };
    (no_examples, $text:literal) => {
        ""
    };
}
pub(crate) use doc_example;

/// The typed allocation API, for `Arena` and `ArenaRef` alike. The type must have private
/// `raw(&self) -> &RawArena` and `src(&self) -> &impl ChunkSource`; `$lt` is the lifetime of
/// the references handed out.
macro_rules! typed_api {
    (impl[$($generics:tt)*] $ty:ty, $lt:lifetime, $ex:ident) => {
        #[allow(clippy::mut_from_ref)]
        impl<$($generics)*> $ty {
            /// Places `value` in the arena and returns a reference to it. The value is **never
            /// dropped** (see the type's docs).
            ///
            /// # Panics
            /// When the arena cannot allocate, with a message naming the cause (size overflow,
            /// allocation limit); calls `handle_alloc_error` when the backing allocator is out of
            /// memory.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let x = arena.alloc(42u32);
*x += 1;
assert_eq!(*x, 43);
```")]
            #[inline(always)]
            pub fn alloc<T>(&self, value: T) -> &$lt mut T {
                let p = self.raw().alloc_with_or_raise(self.src(), || value);
                // SAFETY: a fresh initialised block; see `out`.
                unsafe { $crate::arena::typed::out(p) }
            }

            /// Like [`alloc`](Self::alloc), returning `Err` instead of panicking (the value is
            /// dropped then).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
assert_eq!(arena.try_alloc(7u64).map(|x| *x), Ok(7));
```")]
            #[inline(always)]
            pub fn try_alloc<T>(&self, value: T) -> Result<&$lt mut T, $crate::AllocError> {
                match self.raw().alloc_with(self.src(), || value) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// Allocates room for a `T`, then places `f()` there (which lets the compiler build
            /// the value in place). If `f` panics, the room is given back. Never dropped.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `f` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
assert_eq!(*arena.alloc_with(|| 2 + 12), 14);
```")]
            #[inline(always)]
            pub fn alloc_with<T, F: FnOnce() -> T>(&self, f: F) -> &$lt mut T {
                let p = self.raw().alloc_with_or_raise(self.src(), f);
                // SAFETY: a fresh initialised block; see `out`.
                unsafe { $crate::arena::typed::out(p) }
            }

            /// Like [`alloc_with`](Self::alloc_with), returning `Err` instead of panicking when
            /// the arena cannot allocate (`f` is not called then).
            #[inline(always)]
            pub fn try_alloc_with<T, F: FnOnce() -> T>(
                &self,
                f: F,
            ) -> Result<&$lt mut T, $crate::AllocError> {
                match self.raw().alloc_with(self.src(), f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// Places the `Ok` value of `f()`; on `Err` the room is given back (the position
            /// rewinds when nothing was allocated after it) and the error returned.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let used = arena.used_bytes();
let r: Result<&mut u64, &str> = arena.alloc_try_with(|| Err(\"no\"));
assert_eq!(r, Err(\"no\"));
assert_eq!(arena.used_bytes(), used);
```")]
            #[inline]
            pub fn alloc_try_with<T, E, F: FnOnce() -> Result<T, E>>(
                &self,
                f: F,
            ) -> Result<&$lt mut T, E> {
                match self.raw().alloc_try_with(self.src(), f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(r) => r.map(|p| unsafe { $crate::arena::typed::out(p) }),
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_try_with`](Self::alloc_try_with), returning
            /// [`AllocOrInitError::Alloc`]($crate::AllocOrInitError::Alloc) instead of panicking.
            #[inline]
            pub fn try_alloc_try_with<T, E, F: FnOnce() -> Result<T, E>>(
                &self,
                f: F,
            ) -> Result<&$lt mut T, $crate::AllocOrInitError<E>> {
                match self.raw().alloc_try_with(self.src(), f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(Ok(p)) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Ok(Err(e)) => Err($crate::AllocOrInitError::Init(e)),
                    Err(_) => Err($crate::AllocOrInitError::Alloc($crate::AllocError)),
                }
            }

            /// Allocates an uninitialised block of `layout`, aligned to `layout.align()`.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
use core::alloc::Layout;
let arena = arena_pool::Arena::new();
let p = arena.alloc_layout(Layout::from_size_align(64, 32).unwrap());
assert_eq!(p.as_ptr() as usize % 32, 0);
```")]
            #[inline]
            pub fn alloc_layout(&self, layout: core::alloc::Layout) -> core::ptr::NonNull<u8> {
                match self.raw().alloc(layout, self.src()) {
                    Ok(p) => p,
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_layout`](Self::alloc_layout), returning `Err` instead of panicking.
            #[inline]
            pub fn try_alloc_layout(
                &self,
                layout: core::alloc::Layout,
            ) -> Result<core::ptr::NonNull<u8>, $crate::AllocError> {
                self.raw()
                    .alloc(layout, self.src())
                    .map_err(|_| $crate::AllocError)
            }

            /// Copies `items` into the arena.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let s = arena.alloc_slice_copy(&[1, 2, 3, 4, 5]);
s[0] = 9;
assert_eq!(s, &[9, 2, 3, 4, 5]);
```")]
            #[inline]
            pub fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &$lt mut [T] {
                let p = self.raw().slice_copy_or_raise(self.src(), items);
                // SAFETY: a fresh initialised block; see `out`.
                unsafe { $crate::arena::typed::out(p) }
            }

            /// Like [`alloc_slice_copy`](Self::alloc_slice_copy), returning `Err` instead of
            /// panicking.
            #[inline]
            pub fn try_alloc_slice_copy<T: Copy>(
                &self,
                items: &[T],
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                match self.raw().slice_copy(self.src(), items) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// Clones `items` into the arena. If a `clone` panics, the clones made so far are
            /// dropped and the room is given back. The clones are never dropped otherwise.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `T::clone` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
use std::cell::Cell; // `Clone` but not `Copy`, and owns no heap memory (nothing to leak)
let arena = arena_pool::Arena::new();
let cells = arena.alloc_slice_clone(&[Cell::new(1), Cell::new(2)]);
cells[0].set(5);
assert_eq!((cells[0].get(), cells[1].get()), (5, 2));
```")]
            #[inline]
            pub fn alloc_slice_clone<T: Clone>(&self, items: &[T]) -> &$lt mut [T] {
                self.alloc_slice_fill_with(items.len(), |i| {
                    // SAFETY: the fill calls its closure only with `i < items.len()`.
                    unsafe { items.get_unchecked(i) }.clone()
                })
            }

            /// Like [`alloc_slice_clone`](Self::alloc_slice_clone), returning `Err` instead of
            /// panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_slice_clone<T: Clone>(
                &self,
                items: &[T],
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                self.try_alloc_slice_fill_with(items.len(), |i| {
                    // SAFETY: the fill calls its closure only with `i < items.len()`.
                    unsafe { items.get_unchecked(i) }.clone()
                })
            }

            /// A slice of `len` values, `f(i)` at index `i`. If `f` panics, the values made so
            /// far are dropped and the room is given back.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `f` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let arr = arena.alloc_slice_fill_with(12, |n| n as u8 + 1);
assert_eq!(arr[2], 3);
```")]
            #[inline]
            pub fn alloc_slice_fill_with<T, F: FnMut(usize) -> T>(
                &self,
                len: usize,
                f: F,
            ) -> &$lt mut [T] {
                match self.raw().slice_fill_with(self.src(), len, f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => unsafe { $crate::arena::typed::out(p) },
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_slice_fill_with`](Self::alloc_slice_fill_with), returning `Err`
            /// instead of panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_slice_fill_with<T, F: FnMut(usize) -> T>(
                &self,
                len: usize,
                f: F,
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                match self.raw().slice_fill_with(self.src(), len, f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// A slice of `len` copies of `value`.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
assert_eq!(arena.alloc_slice_fill_copy(3, 7u8), &[7, 7, 7]);
```")]
            #[inline]
            pub fn alloc_slice_fill_copy<T: Copy>(&self, len: usize, value: T) -> &$lt mut [T] {
                self.alloc_slice_fill_with(len, |_| value)
            }

            /// Like [`alloc_slice_fill_copy`](Self::alloc_slice_fill_copy), returning `Err`
            /// instead of panicking.
            #[inline]
            pub fn try_alloc_slice_fill_copy<T: Copy>(
                &self,
                len: usize,
                value: T,
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                self.try_alloc_slice_fill_with(len, |_| value)
            }

            /// A slice of `len` clones of `value`. Panic-safe like
            /// [`alloc_slice_clone`](Self::alloc_slice_clone).
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `T::clone` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
use std::cell::Cell;
let arena = arena_pool::Arena::new();
let cells = arena.alloc_slice_fill_clone(3, &Cell::new(7u8));
cells[0].set(1);
assert_eq!(cells.iter().map(Cell::get).sum::<u8>(), 15);
```")]
            #[inline]
            pub fn alloc_slice_fill_clone<T: Clone>(&self, len: usize, value: &T) -> &$lt mut [T] {
                self.alloc_slice_fill_with(len, |_| value.clone())
            }

            /// Like [`alloc_slice_fill_clone`](Self::alloc_slice_fill_clone), returning `Err`
            /// instead of panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_slice_fill_clone<T: Clone>(
                &self,
                len: usize,
                value: &T,
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                self.try_alloc_slice_fill_with(len, |_| value.clone())
            }

            /// A slice of `len` default values.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `T::default` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
assert_eq!(arena.alloc_slice_fill_default::<u16>(4), &[0; 4]);
```")]
            #[inline]
            pub fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &$lt mut [T] {
                self.alloc_slice_fill_with(len, |_| T::default())
            }

            /// Like [`alloc_slice_fill_default`](Self::alloc_slice_fill_default), returning
            /// `Err` instead of panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_slice_fill_default<T: Default>(
                &self,
                len: usize,
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                self.try_alloc_slice_fill_with(len, |_| T::default())
            }

            /// A slice of every item of `iter`. Its `size_hint` is only a first guess (a wrong
            /// one costs a copy, never correctness), and it may itself allocate in this arena
            /// while it runs. If it panics, the items taken so far are dropped.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when the iterator panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let squares = arena.alloc_slice_fill_iter((1..=4).map(|i| i * i));
assert_eq!(squares, &[1, 4, 9, 16]);
```")]
            pub fn alloc_slice_fill_iter<T, I: IntoIterator<Item = T>>(
                &self,
                iter: I,
            ) -> &$lt mut [T] {
                match self.raw().slice_from_iter(self.src(), iter) {
                    // SAFETY: a finished block of initialised items; see `out`.
                    Ok(p) => unsafe { $crate::arena::typed::out(p) },
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_slice_fill_iter`](Self::alloc_slice_fill_iter), returning `Err`
            /// instead of panicking when the arena cannot allocate.
            pub fn try_alloc_slice_fill_iter<T, I: IntoIterator<Item = T>>(
                &self,
                iter: I,
            ) -> Result<&$lt mut [T], $crate::AllocError> {
                match self.raw().slice_from_iter(self.src(), iter) {
                    // SAFETY: a finished block of initialised items; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// An array of `N` default values.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `T::default` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let arr: &mut [u8; 128] = arena.alloc_sized_slice_fill_default();
assert!(arr.iter().all(|&b| b == 0));
```")]
            #[inline]
            pub fn alloc_sized_slice_fill_default<T: Default, const N: usize>(
                &self,
            ) -> &$lt mut [T; N] {
                self.alloc_sized_slice_fill_with(|_| T::default())
            }

            /// Like [`alloc_sized_slice_fill_default`](Self::alloc_sized_slice_fill_default),
            /// returning `Err` instead of panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_sized_slice_fill_default<T: Default, const N: usize>(
                &self,
            ) -> Result<&$lt mut [T; N], $crate::AllocError> {
                self.try_alloc_sized_slice_fill_with(|_| T::default())
            }

            /// An array of `N` values, `f(i)` at index `i`; panic-safe like
            /// [`alloc_slice_fill_with`](Self::alloc_slice_fill_with).
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when `f` panics.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let arr: &mut [usize; 4] = arena.alloc_sized_slice_fill_with(|i| i * 10);
assert_eq!(arr, &[0, 10, 20, 30]);
```")]
            #[inline]
            pub fn alloc_sized_slice_fill_with<T, const N: usize, F: FnMut(usize) -> T>(
                &self,
                f: F,
            ) -> &$lt mut [T; N] {
                match self.raw().array_fill_with::<T, N, _>(self.src(), f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => unsafe { $crate::arena::typed::out(p) },
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_sized_slice_fill_with`](Self::alloc_sized_slice_fill_with),
            /// returning `Err` instead of panicking when the arena cannot allocate.
            #[inline]
            pub fn try_alloc_sized_slice_fill_with<T, const N: usize, F: FnMut(usize) -> T>(
                &self,
                f: F,
            ) -> Result<&$lt mut [T; N], $crate::AllocError> {
                match self.raw().array_fill_with::<T, N, _>(self.src(), f) {
                    // SAFETY: a fresh initialised block; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }

            /// A copy of the array `items`.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let a: &mut [i32; 3] = arena.alloc_sized_slice_copy(&[1, 2, 3]);
a[1] = 0;
assert_eq!(a, &[1, 0, 3]);
```")]
            #[inline]
            pub fn alloc_sized_slice_copy<T: Copy, const N: usize>(
                &self,
                items: &[T; N],
            ) -> &$lt mut [T; N] {
                self.alloc(*items)
            }

            /// Like [`alloc_sized_slice_copy`](Self::alloc_sized_slice_copy), returning `Err`
            /// instead of panicking.
            #[inline]
            pub fn try_alloc_sized_slice_copy<T: Copy, const N: usize>(
                &self,
                items: &[T; N],
            ) -> Result<&$lt mut [T; N], $crate::AllocError> {
                self.try_alloc(*items)
            }

            /// A copy of the string `s`.
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc).
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let s = arena.alloc_str(\"hello world\");
s.make_ascii_uppercase();
assert_eq!(s, \"HELLO WORLD\");
```")]
            #[inline]
            pub fn alloc_str(&self, s: &str) -> &$lt mut str {
                let bytes = self.alloc_slice_copy(s.as_bytes());
                // SAFETY: a copy of the bytes of a `str` is valid UTF-8.
                unsafe { core::str::from_utf8_unchecked_mut(bytes) }
            }

            /// Like [`alloc_str`](Self::alloc_str), returning `Err` instead of panicking.
            #[inline]
            pub fn try_alloc_str(&self, s: &str) -> Result<&$lt mut str, $crate::AllocError> {
                let bytes = self.try_alloc_slice_copy(s.as_bytes())?;
                // SAFETY: a copy of the bytes of a `str` is valid UTF-8.
                Ok(unsafe { core::str::from_utf8_unchecked_mut(bytes) })
            }

            /// Formats `args` straight into the arena (the text grows in place, no temporary
            /// `String`).
            ///
            /// # Panics
            /// As [`alloc`](Self::alloc), and when a formatting trait implementation returns an
            /// error.
            #[doc = $crate::arena::typed::doc_example!($ex, "```
let arena = arena_pool::Arena::new();
let s = arena.alloc_fmt(format_args!(\"{}-{}\", 1, \"two\"));
assert_eq!(s, \"1-two\");
```")]
            pub fn alloc_fmt(&self, args: core::fmt::Arguments<'_>) -> &$lt mut str {
                match self.raw().format(self.src(), args) {
                    // SAFETY: a finished block of UTF-8 text; see `out`.
                    Ok(p) => unsafe { $crate::arena::typed::out(p) },
                    Err(e) => e.raise(),
                }
            }

            /// Like [`alloc_fmt`](Self::alloc_fmt), returning `Err` instead of panicking when the
            /// arena cannot allocate or a formatting trait implementation returns an error.
            pub fn try_alloc_fmt(
                &self,
                args: core::fmt::Arguments<'_>,
            ) -> Result<&$lt mut str, $crate::AllocError> {
                match self.raw().format(self.src(), args) {
                    // SAFETY: a finished block of UTF-8 text; see `out`.
                    Ok(p) => Ok(unsafe { $crate::arena::typed::out(p) }),
                    Err(_) => Err($crate::AllocError),
                }
            }
        }
    };
}
pub(crate) use typed_api;
