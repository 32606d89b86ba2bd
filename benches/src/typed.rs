//! [`TypedAlloc`]: each crate's own typed API (values, slices, strings, formatted text) behind one
//! set of method names, so that a typed case runs the same code for every crate.

use core::fmt;
use core::ptr::NonNull;

use allocator_api2::alloc::Global;
use allocator_api2::vec::Vec;

use crate::{Api02, BenchAlloc, Layout, SystemAlloc};

/// The typed helpers the `typed` and `collections` suites call. Every method places its result
/// in the allocator, where it stays until the allocator's `reset` (nothing is dropped).
///
/// The provided methods build each operation from [`BenchAlloc::allocate`] and plain writes:
/// that is what [`SystemAlloc`] uses (malloc has no typed API). Each arena overrides every
/// method with its crate's own call; where a crate has no call for an operation, its impl says
/// what it uses instead.
#[allow(clippy::mut_from_ref)] // arenas hand out `&mut` blocks from `&self` by design
pub trait TypedAlloc: BenchAlloc {
    /// `alloc(value)`.
    fn alloc<T>(&self, value: T) -> &mut T {
        let p = self.allocate(Layout::new::<T>()).expect("out of memory");
        let p = p.cast::<T>();
        // SAFETY: `p` is a fresh block for one `T`, valid until the allocator's reset, which
        // needs `&mut self` and so ends this borrow first.
        unsafe {
            p.write(value);
            &mut *p.as_ptr()
        }
    }

    /// `alloc_slice_copy(items)`.
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        let p = raw_array::<T, _>(self, items.len());
        // SAFETY: `p` is a fresh block for `items.len()` values (see `raw_array`), so it does
        // not overlap `items`; the slice is fully initialised by the copy.
        unsafe {
            core::ptr::copy_nonoverlapping(items.as_ptr(), p.as_ptr(), items.len());
            core::slice::from_raw_parts_mut(p.as_ptr(), items.len())
        }
    }

    /// `alloc_str(s)`.
    fn alloc_str(&self, s: &str) -> &mut str {
        let bytes = self.alloc_slice_copy(s.as_bytes());
        // SAFETY: a copy of the bytes of a `str` is valid UTF-8.
        unsafe { core::str::from_utf8_unchecked_mut(bytes) }
    }

    /// `alloc_slice_fill_with(len, f)`, `f(i)` at index `i`.
    fn alloc_slice_fill_with<T>(&self, len: usize, mut f: impl FnMut(usize) -> T) -> &mut [T] {
        let p = raw_array::<T, _>(self, len);
        for i in 0..len {
            // SAFETY: `i < len`: inside the fresh block (see `raw_array`).
            unsafe { p.add(i).write(f(i)) };
        }
        // SAFETY: all `len` values were written just above.
        unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), len) }
    }

    /// `alloc_slice_fill_default(len)`.
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        self.alloc_slice_fill_with(len, |_| T::default())
    }

    /// `alloc_sized_slice_fill_default::<T, K>()` (a `[T; K]`); crates without it use their
    /// `alloc_slice_fill_default(K)`, the nearest call they have.
    fn alloc_sized_slice_fill_default<T: Default, const K: usize>(&self) -> &mut [T] {
        self.alloc_slice_fill_default(K)
    }

    /// `alloc_fmt(args)`. Crates without one (see each impl) use `fmt_in_vec`: a `Vec<u8>` in
    /// the allocator written through `core::fmt::Write`, then left in place.
    fn alloc_fmt(&self, args: fmt::Arguments<'_>) -> &str {
        fmt_in_vec(self, args)
    }
}

/// A fresh block for `[T; len]` from `a` (dangling for an empty one).
fn raw_array<T, A: BenchAlloc>(a: &A, len: usize) -> NonNull<T> {
    let layout = Layout::array::<T>(len).expect("array too large");
    a.allocate(layout).expect("out of memory").cast()
}

/// Formats `args` into an `allocator_api2::vec::Vec<u8>` in `a` through `core::fmt::Write`, and
/// leaves the text in place until `a`'s reset: the stand-in for crates with no `alloc_fmt`.
pub fn fmt_in_vec<'a, A: BenchAlloc>(a: &'a A, args: fmt::Arguments<'_>) -> &'a str {
    struct Sink<'a, A: BenchAlloc>(Vec<u8, Api02<'a, A>>);
    impl<A: BenchAlloc> fmt::Write for Sink<'_, A> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    let mut sink = Sink(Vec::new_in(Api02(a)));
    fmt::Write::write_fmt(&mut sink, args).expect("a formatting trait failed");
    let bytes: &[u8] = sink.0.leak();
    // SAFETY: the buffer holds only whole `str` pieces written by the formatter.
    unsafe { core::str::from_utf8_unchecked(bytes) }
}

impl TypedAlloc for SystemAlloc {}

impl<const MIN_ALIGN: usize> TypedAlloc for arena_pool::Arena<Global, MIN_ALIGN>
where
    arena_pool::Arena<Global, MIN_ALIGN>: BenchAlloc,
{
    fn alloc<T>(&self, value: T) -> &mut T {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc(self, value)
    }
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_slice_copy(self, items)
    }
    fn alloc_str(&self, s: &str) -> &mut str {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_str(self, s)
    }
    fn alloc_slice_fill_with<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> &mut [T] {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_slice_fill_with(self, len, f)
    }
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_slice_fill_default(self, len)
    }
    fn alloc_sized_slice_fill_default<T: Default, const K: usize>(&self) -> &mut [T] {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_sized_slice_fill_default::<T, K>(self)
    }
    fn alloc_fmt(&self, args: fmt::Arguments<'_>) -> &str {
        arena_pool::Arena::<Global, MIN_ALIGN>::alloc_fmt(self, args)
    }
}

/// bumpalo: no sized variant of `alloc_slice_fill_default`; formatted text is its
/// `bumpalo::format!`, spelled out for a ready `fmt::Arguments` (a `collections::String` in the
/// arena written through `core::fmt::Write`, then `into_bump_str`).
impl TypedAlloc for bumpalo::Bump {
    fn alloc<T>(&self, value: T) -> &mut T {
        bumpalo::Bump::alloc(self, value)
    }
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        bumpalo::Bump::alloc_slice_copy(self, items)
    }
    fn alloc_str(&self, s: &str) -> &mut str {
        bumpalo::Bump::alloc_str(self, s)
    }
    fn alloc_slice_fill_with<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> &mut [T] {
        bumpalo::Bump::alloc_slice_fill_with(self, len, f)
    }
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        bumpalo::Bump::alloc_slice_fill_default(self, len)
    }
    fn alloc_fmt(&self, args: fmt::Arguments<'_>) -> &str {
        let mut s = bumpalo::collections::String::new_in(self);
        fmt::Write::write_fmt(&mut s, args).expect("a formatting trait failed");
        s.into_bump_str()
    }
}

/// bump-scope: its calls return a `BumpBox`, leaked here (the memory stays until reset, as with
/// the others); `alloc_slice_fill_with` passes no index, so a counter supplies it; there is no
/// `alloc_slice_fill_default`, so that is `alloc_slice_fill_with(len, T::default)`.
impl TypedAlloc for bump_scope::Bump {
    fn alloc<T>(&self, value: T) -> &mut T {
        bump_scope::BumpBox::leak(bump_scope::Bump::alloc(self, value))
    }
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        bump_scope::BumpBox::leak(bump_scope::Bump::alloc_slice_copy(self, items))
    }
    fn alloc_str(&self, s: &str) -> &mut str {
        bump_scope::BumpBox::leak(bump_scope::Bump::alloc_str(self, s))
    }
    fn alloc_slice_fill_with<T>(&self, len: usize, mut f: impl FnMut(usize) -> T) -> &mut [T] {
        let mut i = 0;
        let slice = bump_scope::Bump::alloc_slice_fill_with(self, len, || {
            let value = f(i);
            i += 1;
            value
        });
        bump_scope::BumpBox::leak(slice)
    }
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        bump_scope::BumpBox::leak(bump_scope::Bump::alloc_slice_fill_with(
            self,
            len,
            T::default,
        ))
    }
    fn alloc_fmt(&self, args: fmt::Arguments<'_>) -> &str {
        bump_scope::BumpBox::leak(bump_scope::Bump::alloc_fmt(self, args))
    }
}

/// blink-alloc: the typed calls of its `Blink` front end, the `_no_drop` ones (the values are
/// never dropped, as with the other arenas). Slices to fill are `emplace_no_drop().from_iter`;
/// it has no formatting call, so `alloc_fmt` is `fmt_in_vec`.
impl TypedAlloc for blink_alloc::Blink {
    fn alloc<T>(&self, value: T) -> &mut T {
        blink_alloc::Blink::put_no_drop(self, value)
    }
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        blink_alloc::Blink::copy_slice(self, items)
    }
    fn alloc_str(&self, s: &str) -> &mut str {
        blink_alloc::Blink::copy_str(self, s)
    }
    fn alloc_slice_fill_with<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> &mut [T] {
        self.emplace_no_drop().from_iter((0..len).map(f))
    }
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        self.emplace_no_drop()
            .from_iter((0..len).map(|_| T::default()))
    }
}

/// stumpalo: its own calls, the sized fill included; it has no formatting call, so `alloc_fmt`
/// is `fmt_in_vec`.
impl TypedAlloc for stumpalo::Arena {
    fn alloc<T>(&self, value: T) -> &mut T {
        stumpalo::Arena::alloc(self, value)
    }
    fn alloc_slice_copy<T: Copy>(&self, items: &[T]) -> &mut [T] {
        stumpalo::Arena::alloc_slice_copy(self, items)
    }
    fn alloc_str(&self, s: &str) -> &mut str {
        stumpalo::Arena::alloc_str(self, s)
    }
    fn alloc_slice_fill_with<T>(&self, len: usize, f: impl FnMut(usize) -> T) -> &mut [T] {
        stumpalo::Arena::alloc_slice_fill_with(self, len, f)
    }
    fn alloc_slice_fill_default<T: Default>(&self, len: usize) -> &mut [T] {
        stumpalo::Arena::alloc_slice_fill_default(self, len)
    }
    fn alloc_sized_slice_fill_default<T: Default, const K: usize>(&self) -> &mut [T] {
        stumpalo::Arena::alloc_sized_slice_fill_default::<T, K>(self)
    }
}
