//! [`String`]'s trait implementations: it dereferences to `str`, writes with `write!`, and
//! compares, orders, hashes and borrows as the `str` it holds.

use core::borrow::{Borrow, BorrowMut};
use core::fmt;
use core::hash::{Hash, Hasher};
use core::ops::{Add, AddAssign, Deref, DerefMut};

use allocator_api2::alloc::Allocator;
use allocator_api2::vec::Vec;

use super::String;

impl<A: Allocator> Deref for String<A> {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<A: Allocator> DerefMut for String<A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut str {
        self.as_mut_str()
    }
}

impl<A: Allocator> fmt::Write for String<A> {
    /// Appends the text; growth failure panics (see the type's documentation), so it never
    /// returns `Err`.
    #[inline]
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.push_str(text);
        Ok(())
    }

    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        self.push(c);
        Ok(())
    }
}

impl<A: Allocator> fmt::Debug for String<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<A: Allocator> fmt::Display for String<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

/// A copy in a clone of the allocator (for `&Arena`, the same arena).
impl<A: Allocator + Clone> Clone for String<A> {
    #[track_caller]
    fn clone(&self) -> Self {
        String::from_str_in(self, self.allocator().clone())
    }
}

/// An empty string in the allocator's default value.
impl<A: Allocator + Default> Default for String<A> {
    fn default() -> Self {
        String::new_in(A::default())
    }
}

impl<A: Allocator, B: Allocator> PartialEq<String<B>> for String<A> {
    #[inline]
    fn eq(&self, other: &String<B>) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<A: Allocator> Eq for String<A> {}

/// Implements the comparisons between `String<A>` and another string type, both ways.
macro_rules! eq_str {
    ([$($lt:lifetime)?] $other:ty) => {
        impl<$($lt,)? A: Allocator> PartialEq<$other> for String<A> {
            #[inline]
            fn eq(&self, other: &$other) -> bool {
                self.as_str() == &other[..]
            }
        }

        impl<$($lt,)? A: Allocator> PartialEq<String<A>> for $other {
            #[inline]
            fn eq(&self, other: &String<A>) -> bool {
                &self[..] == other.as_str()
            }
        }
    };
}

eq_str!([] str);
eq_str!(['a] &'a str);
eq_str!([] alloc::string::String);

impl<A: Allocator> PartialOrd for String<A> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<A: Allocator> Ord for String<A> {
    #[inline]
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// Hashes exactly as the `str` it holds, so that `Borrow<str>` lookups find it.
impl<A: Allocator> Hash for String<A> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl<A: Allocator> Borrow<str> for String<A> {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl<A: Allocator> BorrowMut<str> for String<A> {
    #[inline]
    fn borrow_mut(&mut self) -> &mut str {
        self.as_mut_str()
    }
}

impl<A: Allocator> AsRef<str> for String<A> {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl<A: Allocator> AsMut<str> for String<A> {
    #[inline]
    fn as_mut(&mut self) -> &mut str {
        self.as_mut_str()
    }
}

impl<A: Allocator> AsRef<[u8]> for String<A> {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<A: Allocator> From<String<A>> for Vec<u8, A> {
    /// The bytes, as [`String::into_bytes`] gives them.
    fn from(s: String<A>) -> Vec<u8, A> {
        s.into_bytes()
    }
}

/// Appends each character; reserves for the iterator's lower size bound first (a hint only: a
/// bound the allocator refuses reserves nothing).
impl<A: Allocator> Extend<char> for String<A> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = char>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        let _ = self.vec.try_reserve(iter.size_hint().0);
        iter.for_each(|c| self.push(c));
    }
}

impl<'c, A: Allocator> Extend<&'c char> for String<A> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = &'c char>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

impl<'s, A: Allocator> Extend<&'s str> for String<A> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = &'s str>>(&mut self, iter: I) {
        iter.into_iter().for_each(|s| self.push_str(s));
    }
}

impl<A: Allocator, B: Allocator> Extend<String<B>> for String<A> {
    #[track_caller]
    fn extend<I: IntoIterator<Item = String<B>>>(&mut self, iter: I) {
        iter.into_iter().for_each(|s| self.push_str(&s));
    }
}

/// `s + "text"`: appends to `s` (no new string) and returns it.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::collections::String;
///
/// let arena = Arena::new();
/// let s = String::from_str_in("con", &arena) + "cat" + "enated";
/// assert_eq!(s, "concatenated");
/// ```
impl<A: Allocator> Add<&str> for String<A> {
    type Output = String<A>;

    #[track_caller]
    fn add(mut self, text: &str) -> String<A> {
        self.push_str(text);
        self
    }
}

impl<A: Allocator> AddAssign<&str> for String<A> {
    #[track_caller]
    fn add_assign(&mut self, text: &str) {
        self.push_str(text);
    }
}
