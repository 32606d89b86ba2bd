//! The typed helpers of `Arena` / `ArenaRef`: contents, zero-sized types, drop behaviour, panic
//! safety of the initialisers, lying and re-entrant iterators, formatting, the README examples,
//! scopes, and the `Send` bound; one module a topic, over the helpers here.
//!
//! Every test runs under Miri (`MIRIFLAGS=-Zmiri-strict-provenance cargo +nightly miri test
//! --test typed`): the sizes shrink with `cfg!(miri)`, and no heap-owning value is ever left in
//! an arena undropped (Miri would report it as a leak).
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;

// ----- helpers -----

thread_local! {
    /// Drops of `CountDrop` / `ZstDrop` on this thread.
    static DROPS: Cell<usize> = const { Cell::new(0) };
    /// Ids of the `Tracked` values dropped on this thread, in drop order.
    static DROPPED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// How many more `Tracked::clone` calls may succeed before one panics.
    static CLONE_BUDGET: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn drops() -> usize {
    DROPS.with(Cell::get)
}

/// Takes (and clears) the ids of the `Tracked` values dropped so far.
fn take_dropped() -> Vec<usize> {
    DROPPED.with(|d| std::mem::take(&mut *d.borrow_mut()))
}

/// Counts its drops in `DROPS`.
#[derive(Debug, PartialEq)]
struct CountDrop(usize);

impl Drop for CountDrop {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// A zero-sized type that counts its drops in `DROPS`.
#[derive(Debug)]
struct ZstDrop;

impl Drop for ZstDrop {
    fn drop(&mut self) {
        DROPS.with(|d| d.set(d.get() + 1));
    }
}

/// Records its id in `DROPPED` when dropped; its clone gets `id + 1000` and panics once
/// `CLONE_BUDGET` is exhausted.
#[derive(Debug, PartialEq)]
struct Tracked(usize);

impl Drop for Tracked {
    fn drop(&mut self) {
        DROPPED.with(|d| d.borrow_mut().push(self.0));
    }
}

impl Clone for Tracked {
    fn clone(&self) -> Tracked {
        let left = CLONE_BUDGET.with(Cell::get);
        if left == 0 {
            panic!("test: clone of Tracked({}) panics", self.0);
        }
        CLONE_BUDGET.with(|b| b.set(left - 1));
        Tracked(self.0 + 1000)
    }
}

/// Restores `CLONE_BUDGET` to "unlimited" when dropped (also while unwinding).
struct CloneBudget;

impl CloneBudget {
    fn set(n: usize) -> CloneBudget {
        CLONE_BUDGET.with(|b| b.set(n));
        CloneBudget
    }
}

impl Drop for CloneBudget {
    fn drop(&mut self) {
        CLONE_BUDGET.with(|b| b.set(usize::MAX));
    }
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("<non-string panic payload>")
    }
}

fn addr<T: ?Sized>(r: &T) -> usize {
    (r as *const T).cast::<u8>().addr()
}

/// `[addr, addr + size)` of a slice.
fn range<T>(s: &[T]) -> std::ops::Range<usize> {
    let a = s.as_ptr().addr();
    a..a + size_of_val(s)
}

fn disjoint(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
    a.is_empty() || b.is_empty() || a.end <= b.start || b.end <= a.start
}

/// An iterator yielding `0..len` whose `size_hint` is `claim`, whatever it really yields.
struct Liar {
    next: u32,
    len: u32,
    claim: (usize, Option<usize>),
}

impl Iterator for Liar {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.next == self.len {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.claim
    }
}

/// Writes `0,1,2,…,n-1,` piece by piece.
struct Many(usize);

impl fmt::Display for Many {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.0 {
            write!(f, "{i},")?;
        }
        Ok(())
    }
}

/// Writes a little, then fails.
struct FailingDisplay;

impl fmt::Display for FailingDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("partial output")?;
        Err(fmt::Error)
    }
}

/// Panics (a plain function, so that closures calling it last still return `()`).
fn boom(what: &str) {
    panic!("test: {what}");
}

/// Runs the body once with `$a: &Arena` and once with `$a: &ArenaRef` (the typed API is the
/// same on both).
macro_rules! on_arena_and_ref {
    ($name:ident, |$a:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn on_arena() {
                let arena = Arena::new();
                let $a: &Arena = &arena;
                $body
            }

            #[test]
            fn on_arena_ref() {
                let arena = Arena::new();
                let $a: &ArenaRef<'_> = arena.as_arena_ref();
                $body
            }
        }
    };
}

// After the helpers: the modules use `on_arena_and_ref!`, which is in scope from its definition
// on.
mod contents;
mod drops_and_panics;
mod iterators_and_fmt;
mod scopes_and_send;
