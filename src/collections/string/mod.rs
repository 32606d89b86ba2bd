//! [`String`]: a growable UTF-8 string in any allocator, a `Vec<u8, A>` that always holds UTF-8,
//! and the [`format_in!`](crate::format_in) / [`try_format_in!`](crate::try_format_in) macros.
//!
//! The only `unsafe` here reads the bytes as `str` (`from_utf8_unchecked`) and turns the boxed
//! bytes into a boxed `str`: every method that changes the bytes keeps them valid UTF-8 (it
//! appends whole strings or characters, or cuts at a character boundary it checked).

use core::fmt;
use core::str::Utf8Error;

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::boxed::Box;
use allocator_api2::collections::TryReserveError;
use allocator_api2::vec::Vec;

mod edit;

pub use edit::StringDrain;
mod traits;

/// A growable UTF-8 string whose bytes live in the allocator `A`: `String<&Arena>` keeps its text
/// in an arena, `String<&Pool>` in a pool, `String` (that is, `String<Global>`) on the heap.
///
/// It is allocator-api2's [`Vec<u8, A>`](Vec) that always holds valid UTF-8, with the methods
/// of std's `String`: [`push`](String::push), [`push_str`](String::push_str),
/// [`core::fmt::Write`] (so `write!` works), [`truncate`](String::truncate),
/// [`pop`](String::pop), [`insert`](String::insert), [`remove`](String::remove),
/// [`retain`](String::retain), [`drain`](String::drain),
/// [`replace_range`](String::replace_range), [`split_off`](String::split_off),
/// [`reserve`](String::reserve) and [`try_reserve`](String::try_reserve),
/// [`leak`](String::leak), [`into_boxed_str`](String::into_boxed_str)… It dereferences to `str`,
/// so every `str` method (`len`, `chars`, `split`, `parse`, slicing with `&s[1..]`) works on it.
/// It compares, orders and hashes like `str`, and implements `Borrow<str>`, so it can key a
/// `HashMap` that is searched with a `&str`.
///
/// Growth is the `Vec`'s: amortised doubling, and in an arena, a string that is the arena's last
/// block grows in place while it fits the current chunk.
///
/// **Allocation failure.** The methods that grow the string (`push`, `push_str`, `reserve`,
/// `write!`, `extend`, `clone`, …) panic with a message naming the cause when the capacity
/// overflows or the allocator refuses (an arena's allocation limit, out of memory); the string is
/// unchanged. [`try_reserve`](String::try_reserve), [`try_push_str`](String::try_push_str) and
/// [`try_format_in!`](crate::try_format_in) return the error instead.
///
/// ```
/// use core::fmt::Write;
/// use arena_pool::Arena;
/// use arena_pool::collections::String;
///
/// let arena = Arena::new();
/// let mut s = String::new_in(&arena);
/// s.push_str("Grüße");
/// s.push(',');
/// write!(s, " {} + {} = {}", 1, 2, 1 + 2).unwrap();
/// assert_eq!(s, "Grüße, 1 + 2 = 3");
/// assert_eq!(s.len(), 18); // bytes: 'ü' and 'ß' take two each
/// assert_eq!(s.pop(), Some('3'));
/// assert!(s.starts_with("Grü"));
/// ```
pub struct String<A: Allocator = Global> {
    /// Always valid UTF-8.
    vec: Vec<u8, A>,
}

impl<A: Allocator> String<A> {
    /// An empty string in `alloc`. Allocates nothing until text is added.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::new_in(&arena);
    /// assert!(s.is_empty());
    /// assert_eq!(arena.used_bytes(), 0);
    /// ```
    #[must_use]
    pub fn new_in(alloc: A) -> String<A> {
        String {
            vec: Vec::new_in(alloc),
        }
    }

    /// An empty string in `alloc` with room for at least `capacity` bytes.
    ///
    /// # Panics
    /// When the capacity overflows or `alloc` refuses the block.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::with_capacity_in(100, &arena);
    /// assert!(s.capacity() >= 100);
    /// assert_eq!(s.len(), 0);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn with_capacity_in(capacity: usize, alloc: A) -> String<A> {
        let mut s = String::new_in(alloc);
        s.reserve_exact(capacity);
        s
    }

    /// Like [`with_capacity_in`](String::with_capacity_in), returning the error instead of
    /// panicking.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(4096));
    /// assert!(String::try_with_capacity_in(100, &arena).is_ok());
    /// assert!(String::try_with_capacity_in(1 << 20, &arena).is_err());
    /// ```
    pub fn try_with_capacity_in(capacity: usize, alloc: A) -> Result<String<A>, TryReserveError> {
        let mut s = String::new_in(alloc);
        s.try_reserve_exact(capacity)?;
        Ok(s)
    }

    /// A copy of `text` in `alloc`, with no spare capacity.
    ///
    /// # Panics
    /// When `alloc` refuses the block.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::from_str_in("héllo", &arena);
    /// assert_eq!(s, "héllo");
    /// assert_eq!(arena.used_bytes(), 6);
    /// ```
    #[must_use]
    #[track_caller]
    pub fn from_str_in(text: &str, alloc: A) -> String<A> {
        let mut s = String::with_capacity_in(text.len(), alloc);
        s.push_str(text);
        s
    }

    /// Like [`from_str_in`](String::from_str_in), returning the error instead of panicking.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(0));
    /// assert!(String::try_from_str_in("no room", &arena).is_err());
    /// assert_eq!(String::try_from_str_in("", &arena).unwrap(), ""); // nothing to allocate
    /// ```
    pub fn try_from_str_in(text: &str, alloc: A) -> Result<String<A>, TryReserveError> {
        let mut s = String::try_with_capacity_in(text.len(), alloc)?;
        s.push_str(text);
        Ok(s)
    }

    /// The text `args` formats to, in `alloc`: what [`format_in!`](crate::format_in) calls.
    ///
    /// # Panics
    /// When a formatting trait implementation (`Display`, `Debug`, …) returns an error, as
    /// std's `format!` does, or when `alloc` refuses a block.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::from_fmt_in(format_args!("{:>5}|{:.2}", "ab", 1.0 / 3.0), &arena);
    /// assert_eq!(s, "   ab|0.33");
    /// ```
    #[must_use]
    #[track_caller]
    pub fn from_fmt_in(args: fmt::Arguments<'_>, alloc: A) -> String<A> {
        // Through the fallible path, so that a refusal panics here, at the caller's line (a
        // panic inside `fmt::Write::write_str` would report the formatting machinery's).
        match String::try_from_fmt_in(args, alloc) {
            Ok(s) => s,
            Err(e) => no_room_to_format(e),
        }
    }

    /// Like [`from_fmt_in`](String::from_fmt_in), returning the error instead of panicking when
    /// the allocator refuses a block or the capacity overflows (what
    /// [`try_format_in!`](crate::try_format_in) calls). Whatever was formatted so far is freed.
    ///
    /// # Panics
    /// When a formatting trait implementation returns an error (a bug in that implementation,
    /// not a lack of memory), as [`from_fmt_in`](String::from_fmt_in) does.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(1024));
    /// let small = String::try_from_fmt_in(format_args!("{}", 12), &arena);
    /// assert_eq!(small.unwrap(), "12");
    /// let big = String::try_from_fmt_in(format_args!("{:2000}", 12), &arena);
    /// assert!(big.is_err());
    /// ```
    #[track_caller]
    pub fn try_from_fmt_in(
        args: fmt::Arguments<'_>,
        alloc: A,
    ) -> Result<String<A>, TryReserveError> {
        if let Some(text) = args.as_str() {
            return String::try_from_str_in(text, alloc);
        }
        let mut out = TryWriter {
            s: String::new_in(alloc),
            failed: None,
        };
        match fmt::Write::write_fmt(&mut out, args) {
            Ok(()) => Ok(out.s),
            Err(fmt::Error) => match out.failed {
                Some(e) => Err(e),
                None => format_error(),
            },
        }
    }

    /// Turns bytes into a string if they are valid UTF-8, without copying; the error gives the
    /// bytes back.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut bytes = Vec::new_in(&arena);
    /// bytes.extend_from_slice("ça va".as_bytes());
    /// let s = String::from_utf8(bytes).unwrap();
    /// assert_eq!(s, "ça va");
    ///
    /// let mut bad = Vec::new_in(&arena);
    /// bad.extend_from_slice(&[b'a', 0xff]);
    /// let err = String::from_utf8(bad).unwrap_err();
    /// assert_eq!(err.utf8_error().valid_up_to(), 1);
    /// assert_eq!(err.into_bytes(), [b'a', 0xff]);
    /// ```
    pub fn from_utf8(vec: Vec<u8, A>) -> Result<String<A>, FromUtf8Error<A>> {
        match core::str::from_utf8(&vec) {
            Ok(_) => Ok(String { vec }),
            Err(error) => Err(FromUtf8Error { bytes: vec, error }),
        }
    }

    /// Turns bytes into a string without checking that they are UTF-8.
    ///
    /// # Safety
    /// `vec` holds valid UTF-8. Every `str` method relies on it.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::vec::Vec;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut bytes = Vec::new_in(&arena);
    /// bytes.extend_from_slice(b"plain ASCII");
    /// // SAFETY: ASCII is UTF-8.
    /// let s = unsafe { String::from_utf8_unchecked(bytes) };
    /// assert_eq!(s, "plain ASCII");
    /// ```
    #[must_use]
    pub unsafe fn from_utf8_unchecked(vec: Vec<u8, A>) -> String<A> {
        String { vec }
    }

    /// The bytes, as the `Vec` they are kept in (no copy).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let bytes = String::from_str_in("é", &arena).into_bytes();
    /// assert_eq!(bytes, [0xc3, 0xa9]);
    /// ```
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8, A> {
        self.vec
    }

    /// The text as a `&str` (also what `&*s` and deref coercion give).
    #[must_use]
    pub fn as_str(&self) -> &str {
        // SAFETY: the bytes are valid UTF-8 (the type's invariant).
        unsafe { core::str::from_utf8_unchecked(&self.vec) }
    }

    /// The text as a `&mut str`: it can be changed in place (`make_ascii_uppercase`), never made
    /// invalid UTF-8.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("shout", &arena);
    /// s.as_mut_str().make_ascii_uppercase();
    /// assert_eq!(s, "SHOUT");
    /// ```
    #[must_use]
    pub fn as_mut_str(&mut self) -> &mut str {
        // SAFETY: the bytes are valid UTF-8, and `&mut str` lets safe code keep them so.
        unsafe { core::str::from_utf8_unchecked_mut(&mut self.vec) }
    }

    /// The bytes of the text.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.vec
    }

    /// Bytes the string can hold without growing.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.vec.capacity()
    }

    /// The allocator the string lives in.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::from_str_in("x", &arena);
    /// assert!(core::ptr::eq(*s.allocator(), &arena));
    /// ```
    #[must_use]
    pub fn allocator(&self) -> &A {
        self.vec.allocator()
    }

    /// Makes room for at least `additional` more bytes, growing as a `Vec` does (to at least
    /// twice the capacity), so that repeated pushes stay amortised O(1).
    ///
    /// # Panics
    /// When the capacity overflows or the allocator refuses; the string is unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::new_in(&arena);
    /// s.reserve(10);
    /// assert!(s.capacity() >= 10);
    /// ```
    #[inline]
    #[track_caller]
    pub fn reserve(&mut self, additional: usize) {
        if additional > self.vec.capacity() - self.vec.len() {
            self.grow(additional, false);
        }
    }

    /// Makes room for exactly `additional` more bytes (the allocator may give more).
    ///
    /// # Panics
    /// When the capacity overflows or the allocator refuses; the string is unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("abc", &arena);
    /// s.reserve_exact(5);
    /// assert_eq!(s.capacity(), 8); // an arena gives what was asked
    /// ```
    #[track_caller]
    pub fn reserve_exact(&mut self, additional: usize) {
        if additional > self.vec.capacity() - self.vec.len() {
            self.grow(additional, true);
        }
    }

    /// Like [`reserve`](String::reserve), returning the error instead of panicking; on error
    /// the string is unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(4096));
    /// let mut s = String::from_str_in("kept", &arena);
    /// assert!(s.try_reserve(1 << 20).is_err()); // past the arena's limit
    /// assert_eq!(s, "kept");
    /// assert!(s.try_reserve(100).is_ok());
    /// ```
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.vec.try_reserve(additional)
    }

    /// Like [`reserve_exact`](String::reserve_exact), returning the error instead of panicking;
    /// on error the string is unchanged.
    pub fn try_reserve_exact(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.vec.try_reserve_exact(additional)
    }

    /// Gives back the spare capacity (in an arena, in place when the string is the last block).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::with_capacity_in(100, &arena);
    /// s.push_str("short");
    /// s.shrink_to_fit();
    /// assert_eq!(s.capacity(), 5);
    /// assert_eq!(arena.used_bytes(), 5);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.vec.shrink_to_fit();
    }

    /// Appends a character (one to four bytes of UTF-8).
    ///
    /// # Panics
    /// When the allocator refuses to grow the string; it is then unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::new_in(&arena);
    /// for c in ['a', 'é', '€', '🦀'] {
    ///     s.push(c);
    /// }
    /// assert_eq!(s, "aé€🦀");
    /// assert_eq!(s.len(), 1 + 2 + 3 + 4);
    /// ```
    #[inline]
    #[track_caller]
    pub fn push(&mut self, c: char) {
        if c.is_ascii() {
            self.reserve(1);
            self.vec.push(c as u8);
        } else {
            self.push_str(c.encode_utf8(&mut [0; 4]));
        }
    }

    /// Appends a string slice.
    ///
    /// # Panics
    /// When the allocator refuses to grow the string; it is then unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("key", &arena);
    /// s.push_str("=välue");
    /// assert_eq!(s, "key=välue");
    /// ```
    #[inline]
    #[track_caller]
    pub fn push_str(&mut self, text: &str) {
        self.reserve(text.len());
        self.vec.extend_from_slice(text.as_bytes());
    }

    /// Like [`push`](String::push), returning the error instead of panicking; on error the
    /// string is unchanged.
    pub fn try_push(&mut self, c: char) -> Result<(), TryReserveError> {
        self.try_push_str(c.encode_utf8(&mut [0; 4]))
    }

    /// Like [`push_str`](String::push_str), returning the error instead of panicking; on error
    /// the string is unchanged.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// arena.set_allocation_limit(Some(1024));
    /// let mut s = String::new_in(&arena);
    /// while s.try_push_str("0123456789").is_ok() {}
    /// assert!(s.len() >= 100 && s.len() < 1024);
    /// assert!(s.bytes().all(|b| b.is_ascii_digit()));
    /// ```
    pub fn try_push_str(&mut self, text: &str) -> Result<(), TryReserveError> {
        self.vec.try_reserve(text.len())?;
        self.vec.extend_from_slice(text.as_bytes());
        Ok(())
    }

    /// Shortens the string to `new_len` bytes; does nothing when it is not longer. The capacity
    /// stays.
    ///
    /// # Panics
    /// When `new_len` is not on a character boundary (inside a multi-byte character).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("naïve", &arena);
    /// s.truncate(4); // "na" + 'ï' (2 bytes)
    /// assert_eq!(s, "naï");
    /// ```
    ///
    /// ```should_panic
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("naïve", &arena);
    /// s.truncate(3); // inside 'ï': panics
    /// ```
    #[track_caller]
    pub fn truncate(&mut self, new_len: usize) {
        if new_len < self.vec.len() {
            if !self.as_str().is_char_boundary(new_len) {
                not_a_boundary(new_len, self.as_str());
            }
            self.vec.truncate(new_len);
        }
    }

    /// Removes the last character and returns it, or `None` when the string is empty.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("añ", &arena);
    /// assert_eq!(s.pop(), Some('ñ'));
    /// assert_eq!(s.pop(), Some('a'));
    /// assert_eq!(s.pop(), None);
    /// ```
    pub fn pop(&mut self) -> Option<char> {
        let c = self.as_str().chars().next_back()?;
        self.vec.truncate(self.vec.len() - c.len_utf8());
        Some(c)
    }

    /// Empties the string; the capacity stays.
    pub fn clear(&mut self) {
        self.vec.clear();
    }

    /// Gives the string up and returns its text, valid as long as the allocator is: for a
    /// `String<&'a Arena>`, as long as the arena's borrow `'a` (it cannot survive a
    /// `reset`, which needs `&mut`); for `String<Global>`, for ever. The bytes are never freed
    /// through the string again (an arena frees them at reset, `Global` never). Like
    /// `Vec::leak`, it keeps the spare capacity: call
    /// [`shrink_to_fit`](String::shrink_to_fit) first to give it back.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let names: [&str; 2] = ["ada", "grace"].map(|name| {
    ///     let mut s = String::from_str_in(name, &arena);
    ///     s.as_mut_str().make_ascii_uppercase();
    ///     &*s.leak() // lives as long as `&arena`
    /// });
    /// assert_eq!(names, ["ADA", "GRACE"]);
    /// ```
    #[must_use = "the text is the only way left to reach the memory"]
    pub fn leak<'a>(self) -> &'a mut str
    where
        A: 'a,
    {
        let bytes = self.vec.leak();
        // SAFETY: the bytes are valid UTF-8 (the type's invariant).
        unsafe { core::str::from_utf8_unchecked_mut(bytes) }
    }

    /// The text as a `Box<str, A>`, giving the spare capacity back first.
    ///
    /// # Panics
    /// When the allocator fails to shrink the block (an arena never does for text, whose
    /// alignment is 1).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::allocator_api2::boxed::Box;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::with_capacity_in(64, &arena);
    /// s.push_str("boxed");
    /// let b: Box<str, &Arena> = s.into_boxed_str();
    /// assert_eq!(&*b, "boxed");
    /// assert_eq!(arena.used_bytes(), 5);
    /// ```
    #[must_use]
    pub fn into_boxed_str(self) -> Box<str, A> {
        let (bytes, alloc) = Box::into_raw_with_allocator(self.vec.into_boxed_slice());
        // SAFETY: `bytes` is the block of a `Box<[u8], A>` from `alloc`, holding valid UTF-8;
        // `str` and `[u8]` have the same layout, so the `Box<str, A>` owns the same block with
        // the same layout.
        unsafe { Box::from_raw_in(bytes as *mut str, alloc) }
    }

    /// Grows the buffer for `additional` more bytes, or panics naming the cause.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn grow(&mut self, additional: usize, exact: bool) {
        let result = if exact {
            self.vec.try_reserve_exact(additional)
        } else {
            self.vec.try_reserve(additional)
        };
        if let Err(e) = result {
            panic!(
                "arena-pool: String: cannot make room for {additional} more bytes (it holds {}): \
                 {e}",
                self.vec.len()
            );
        }
    }
}

/// The panic of `format_in!` when a formatting trait implementation fails.
#[cold]
#[inline(never)]
#[track_caller]
fn format_error() -> ! {
    panic!(
        "arena-pool: format_in!: a formatting trait implementation (Display, Debug, ...) \
         returned an error"
    )
}

/// The panic of `format_in!` when the allocator refuses the text's buffer.
#[cold]
#[inline(never)]
#[track_caller]
fn no_room_to_format(e: TryReserveError) -> ! {
    panic!(
        "arena-pool: format_in!: cannot make room for the formatted text: {e} (an arena's \
         allocation limit, or out of memory)"
    )
}

/// The panic of `truncate` at a byte inside a character.
#[cold]
#[inline(never)]
#[track_caller]
fn not_a_boundary(new_len: usize, text: &str) -> ! {
    not_a_char_boundary("truncate", new_len, text)
}

/// The panic of `String::<method>` at byte `at`, inside a character of `text`.
#[cold]
#[inline(never)]
#[track_caller]
fn not_a_char_boundary(method: &str, at: usize, text: &str) -> ! {
    let start = (0..at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let c = text[start..].chars().next().unwrap_or_default();
    panic!(
        "arena-pool: String::{method}: byte {at} is inside the character {c:?} (bytes \
         {start}..{}), not on a character boundary",
        start + c.len_utf8()
    )
}

/// `fmt::Write` through `try_push_str`, remembering the error that stopped it.
struct TryWriter<A: Allocator> {
    s: String<A>,
    failed: Option<TryReserveError>,
}

impl<A: Allocator> fmt::Write for TryWriter<A> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.s.try_push_str(text).map_err(|e| {
            self.failed = Some(e);
            fmt::Error
        })
    }
}

/// The error of [`String::from_utf8`]: the bytes were not valid UTF-8. It gives them back.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::allocator_api2::vec::Vec;
/// use arena_pool::collections::String;
///
/// let arena = Arena::new();
/// let mut bytes = Vec::new_in(&arena);
/// bytes.extend_from_slice(&[b'o', b'k', 0xff]);
/// let err = String::from_utf8(bytes).unwrap_err();
/// assert_eq!(err.utf8_error().valid_up_to(), 2);
/// assert_eq!(err.into_bytes().len(), 3); // the bytes come back
/// ```
pub struct FromUtf8Error<A: Allocator = Global> {
    bytes: Vec<u8, A>,
    error: Utf8Error,
}

impl<A: Allocator> FromUtf8Error<A> {
    /// The bytes that were not valid UTF-8, in their `Vec`.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8, A> {
        self.bytes
    }

    /// The bytes that were not valid UTF-8.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where the bytes stopped being UTF-8, and why.
    #[must_use]
    pub fn utf8_error(&self) -> Utf8Error {
        self.error
    }
}

impl<A: Allocator> fmt::Debug for FromUtf8Error<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FromUtf8Error")
            .field("bytes", &self.as_bytes())
            .field("error", &self.error)
            .finish()
    }
}

impl<A: Allocator> fmt::Display for FromUtf8Error<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<A: Allocator> core::error::Error for FromUtf8Error<A> {}

impl<A: Allocator + Clone> Clone for FromUtf8Error<A> {
    fn clone(&self) -> Self {
        FromUtf8Error {
            bytes: self.bytes.clone(),
            error: self.error,
        }
    }
}

impl<A: Allocator> PartialEq for FromUtf8Error<A> {
    fn eq(&self, other: &Self) -> bool {
        self.error == other.error && self.as_bytes() == other.as_bytes()
    }
}

impl<A: Allocator> Eq for FromUtf8Error<A> {}
// ----- macros -----

/// Formats into a new [`String`](crate::collections::String) in the given allocator:
/// `format_in!(alloc, "format string", args…)`, like `format!` with the allocator first.
///
/// The allocator is any expression whose type implements allocator-api2's `Allocator`: `&arena`,
/// `&*scope`, `&pool`, `Global`… The result keeps the allocator, so for `&arena` it borrows the
/// arena; turn it into a `&str` that lives as long as that borrow with
/// [`leak`](crate::collections::String::leak). For a one-shot `&mut str` in an arena there is
/// also [`Arena::alloc_fmt`](crate::Arena::alloc_fmt), which leaves no spare capacity.
///
/// # Panics
/// When a formatting trait implementation returns an error (as `format!` does), or when the
/// allocator refuses a block (see [`try_format_in!`](crate::try_format_in) for the fallible
/// form).
///
/// ```
/// use arena_pool::{Arena, format_in};
///
/// let arena = Arena::new();
/// let (user, id) = ("zoë", 7);
/// let line = format_in!(&arena, "{user}#{id:03} {:?}", [1, 2]);
/// assert_eq!(line, "zoë#007 [1, 2]");
/// ```
#[macro_export]
macro_rules! format_in {
    ($alloc:expr, $($arg:tt)+) => {{
        let alloc = $alloc;
        $crate::collections::String::from_fmt_in(::core::format_args!($($arg)+), alloc)
    }};
}

/// Like [`format_in!`](crate::format_in), but returns
/// `Result<String<A>, TryReserveError>`: `Err` when the allocator refuses a block (an arena's
/// allocation limit, out of memory) or the capacity overflows, instead of a panic. Every
/// reservation goes through `try_reserve`, so a refusal never aborts.
///
/// # Panics
/// When a formatting trait implementation returns an error (a bug in that implementation, not a
/// lack of memory), as `format!` does.
///
/// ```
/// use arena_pool::{Arena, try_format_in};
///
/// let arena = Arena::new();
/// arena.set_allocation_limit(Some(4096));
/// let ok = try_format_in!(&arena, "{}-{}", "a", 1).unwrap();
/// assert_eq!(ok, "a-1");
/// let too_big = try_format_in!(&arena, "{:>10000}", "right-aligned");
/// assert!(too_big.is_err());
/// ```
#[macro_export]
macro_rules! try_format_in {
    ($alloc:expr, $($arg:tt)+) => {{
        let alloc = $alloc;
        $crate::collections::String::try_from_fmt_in(::core::format_args!($($arg)+), alloc)
    }};
}
