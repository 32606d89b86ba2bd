//! Editing a [`String`] in the middle, as std's `String` does: `insert`, `insert_str`, `remove`,
//! `retain`, `split_off`, `drain`, `replace_range`, `extend_from_within`, and
//! `from_utf8_lossy_in`. Safe code over the byte `Vec`: every change keeps the bytes valid UTF-8
//! (it cuts only at character boundaries it checked, and inserts whole strings).

use core::iter::FusedIterator;
use core::ops::{Bound, Range, RangeBounds};

use allocator_api2::alloc::Allocator;
use allocator_api2::collections::TryReserveError;

use super::{String, not_a_char_boundary};

/// The byte range `range` of `text`, checked for `String::<method>`: in bounds and on character
/// boundaries.
#[track_caller]
fn char_range(method: &str, text: &str, range: impl RangeBounds<usize>) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).unwrap_or_else(|| out_of_range(text)),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).unwrap_or_else(|| out_of_range(text)),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => text.len(),
    };
    if start > end || end > text.len() {
        out_of_range(text);
    }
    for at in [start, end] {
        if !text.is_char_boundary(at) {
            not_a_char_boundary(method, at, text);
        }
    }
    start..end
}

/// The panic of a range past the end of the string, or reversed.
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(text: &str) -> ! {
    panic!(
        "arena-pool: String: range out of bounds or reversed (the string holds {} bytes)",
        text.len()
    )
}

impl<A: Allocator> String<A> {
    /// Inserts `c` at byte `idx`.
    ///
    /// # Panics
    /// When `idx` is past the end or not on a character boundary, or when the allocator refuses
    /// to grow the string (it is then unchanged).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("ac", &arena);
    /// s.insert(1, 'ß');
    /// assert_eq!(s, "aßc");
    /// ```
    #[track_caller]
    pub fn insert(&mut self, idx: usize, c: char) {
        self.insert_str(idx, c.encode_utf8(&mut [0; 4]));
    }

    /// Inserts `text` at byte `idx`.
    ///
    /// # Panics
    /// As [`insert`](String::insert).
    #[track_caller]
    pub fn insert_str(&mut self, idx: usize, text: &str) {
        let at = char_range("insert_str", self.as_str(), idx..idx).start;
        self.reserve(text.len());
        self.splice_bytes(at, text);
    }

    /// Like [`insert_str`](String::insert_str), returning the allocator's refusal instead of
    /// panicking (the string is then unchanged); it still panics on a bad index.
    #[track_caller]
    pub fn try_insert_str(&mut self, idx: usize, text: &str) -> Result<(), TryReserveError> {
        let at = char_range("try_insert_str", self.as_str(), idx..idx).start;
        self.try_reserve(text.len())?;
        self.splice_bytes(at, text);
        Ok(())
    }

    /// Puts `text` at byte `at` (a checked boundary), the room already reserved.
    fn splice_bytes(&mut self, at: usize, text: &str) {
        self.vec.extend_from_slice(text.as_bytes());
        self.vec[at..].rotate_right(text.len());
    }

    /// Removes the character at byte `idx` and returns it.
    ///
    /// # Panics
    /// When `idx` is not the start of a character of the string.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("añb", &arena);
    /// assert_eq!(s.remove(1), 'ñ');
    /// assert_eq!(s, "ab");
    /// ```
    #[track_caller]
    pub fn remove(&mut self, idx: usize) -> char {
        let at = char_range("remove", self.as_str(), idx..idx).start;
        let Some(c) = self.as_str()[at..].chars().next() else {
            out_of_range(self.as_str())
        };
        self.vec.drain(at..at + c.len_utf8());
        c
    }

    /// Keeps the characters for which `keep` returns `true`, in order, and removes the others.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("a1b2ç3", &arena);
    /// s.retain(|c| !c.is_ascii_digit());
    /// assert_eq!(s, "abç");
    /// ```
    pub fn retain(&mut self, mut keep: impl FnMut(char) -> bool) {
        /// The bytes `[0, kept)` are the characters kept so far and `[read, len)` the ones not
        /// looked at yet (the text between is not looked at as text): on drop, also when `keep`
        /// panics, the rest moves down after the kept ones.
        struct Gap<'s, A: Allocator> {
            vec: &'s mut allocator_api2::vec::Vec<u8, A>,
            kept: usize,
            read: usize,
        }
        impl<A: Allocator> Drop for Gap<'_, A> {
            fn drop(&mut self) {
                let len = self.vec.len();
                self.vec.copy_within(self.read..len, self.kept);
                self.vec.truncate(self.kept + len - self.read);
            }
        }
        let mut gap = Gap {
            vec: &mut self.vec,
            kept: 0,
            read: 0,
        };
        while let Some(&lead) = gap.vec.get(gap.read) {
            // `[read, len)` is the untouched rest of the text: a character starts at `read`.
            let n = match lead {
                0..0x80 => 1,
                0xF0.. => 4,
                0xE0.. => 3,
                _ => 2,
            };
            let Some(c) = core::str::from_utf8(&gap.vec[gap.read..gap.read + n])
                .ok()
                .and_then(|text| text.chars().next())
            else {
                break;
            };
            // Asked before the character counts as read: should `keep` panic, it stays in the
            // rest.
            if keep(c) {
                gap.vec.copy_within(gap.read..gap.read + n, gap.kept);
                gap.kept += n;
            }
            gap.read += n;
        }
    }

    /// Splits the string at byte `at`: `self` keeps `[0, at)`, the returned string (in a clone
    /// of the allocator) holds the rest.
    ///
    /// # Panics
    /// When `at` is past the end or not on a character boundary, or when the allocator refuses
    /// the new string's block (the string is then unchanged).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("key=value", &arena);
    /// let value = s.split_off(4);
    /// assert_eq!((s.as_str(), value.as_str()), ("key=", "value"));
    /// ```
    #[track_caller]
    #[must_use = "use `truncate` to drop the rest"]
    pub fn split_off(&mut self, at: usize) -> String<A>
    where
        A: Clone,
    {
        let at = char_range("split_off", self.as_str(), at..).start;
        let rest = String::from_str_in(&self.as_str()[at..], self.vec.allocator().clone());
        self.vec.truncate(at);
        rest
    }

    /// Removes the byte range `range` and returns its characters as an iterator. The range is
    /// removed when the iterator is dropped, whether or not it was used up.
    ///
    /// # Panics
    /// When the range is out of bounds, reversed, or does not lie on character boundaries.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("α, β, γ", &arena);
    /// let taken: std::string::String = s.drain(..4).collect();
    /// assert_eq!((taken.as_str(), s.as_str()), ("α, ", "β, γ"));
    /// ```
    #[track_caller]
    pub fn drain(&mut self, range: impl RangeBounds<usize>) -> StringDrain<'_, A> {
        let Range { start, end } = char_range("drain", self.as_str(), range);
        StringDrain {
            string: self,
            start,
            end,
            front: start,
            back: end,
        }
    }

    /// Replaces the byte range `range` with `with`.
    ///
    /// # Panics
    /// As [`drain`](String::drain), and when the allocator refuses to grow the string (it is
    /// then unchanged).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("Hello, world", &arena);
    /// s.replace_range(7.., "arena");
    /// assert_eq!(s, "Hello, arena");
    /// ```
    #[track_caller]
    pub fn replace_range(&mut self, range: impl RangeBounds<usize>, with: &str) {
        let Range { start, end } = char_range("replace_range", self.as_str(), range);
        self.reserve(with.len().saturating_sub(end - start));
        self.vec.drain(start..end);
        self.splice_bytes(start, with);
    }

    /// Appends a copy of the byte range `src` of the string itself.
    ///
    /// # Panics
    /// As [`drain`](String::drain), and when the allocator refuses to grow the string (it is
    /// then unchanged).
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let mut s = String::from_str_in("ab-", &arena);
    /// s.extend_from_within(..2);
    /// assert_eq!(s, "ab-ab");
    /// ```
    #[track_caller]
    pub fn extend_from_within(&mut self, src: impl RangeBounds<usize>) {
        let range = char_range("extend_from_within", self.as_str(), src);
        self.reserve(range.len());
        self.vec.extend_from_within(range);
    }

    /// The text of `bytes` in `alloc`, each invalid UTF-8 sequence replaced by U+FFFD (`�`), as
    /// std's `String::from_utf8_lossy`.
    ///
    /// # Panics
    /// When the allocator refuses the block.
    ///
    /// ```
    /// use arena_pool::Arena;
    /// use arena_pool::collections::String;
    ///
    /// let arena = Arena::new();
    /// let s = String::from_utf8_lossy_in(b"caf\xC3\xA9 \xFF!", &arena);
    /// assert_eq!(s, "café \u{FFFD}!");
    /// ```
    #[track_caller]
    pub fn from_utf8_lossy_in(bytes: &[u8], alloc: A) -> String<A> {
        let mut s = String::with_capacity_in(bytes.len(), alloc);
        for chunk in bytes.utf8_chunks() {
            s.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                s.push(char::REPLACEMENT_CHARACTER);
            }
        }
        s
    }
}

/// The characters of a range being removed from a [`String`], from
/// [`String::drain`]; the range is removed when it is dropped.
///
/// ```
/// use arena_pool::Arena;
/// use arena_pool::collections::String;
///
/// let arena = Arena::new();
/// let mut s = String::from_str_in("hello, world", &arena);
/// let hello: std::string::String = s.drain(..5).collect();
/// assert_eq!((hello.as_str(), s.as_str()), ("hello", ", world"));
/// ```
pub struct StringDrain<'a, A: Allocator> {
    string: &'a mut String<A>,
    /// The range removed on drop.
    start: usize,
    end: usize,
    /// The characters not yielded yet: `[front, back)`, on character boundaries.
    front: usize,
    back: usize,
}

impl<A: Allocator> StringDrain<'_, A> {
    /// The characters not yielded yet, as a string slice.
    pub fn as_str(&self) -> &str {
        &self.string.as_str()[self.front..self.back]
    }
}

impl<A: Allocator> Iterator for StringDrain<'_, A> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let c = self.as_str().chars().next()?;
        self.front += c.len_utf8();
        Some(c)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n.div_ceil(4), Some(n))
    }
}

impl<A: Allocator> DoubleEndedIterator for StringDrain<'_, A> {
    fn next_back(&mut self) -> Option<char> {
        let c = self.as_str().chars().next_back()?;
        self.back -= c.len_utf8();
        Some(c)
    }
}

impl<A: Allocator> FusedIterator for StringDrain<'_, A> {}

impl<A: Allocator> Drop for StringDrain<'_, A> {
    fn drop(&mut self) {
        self.string.vec.drain(self.start..self.end);
    }
}

impl<A: Allocator> core::fmt::Debug for StringDrain<'_, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("StringDrain").field(&self.as_str()).finish()
    }
}
