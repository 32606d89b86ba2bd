//! The atomics, the lock and the per-thread shard hint used by the thread-safe types: the
//! standard library's in a normal build, loom's when the crate is built with `--cfg loom` (the
//! model-checking tests in `tests/loom.rs`), so that loom explores every interleaving of the real
//! code.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

#[cfg(not(loom))]
use std::sync::{Mutex as Inner, MutexGuard};

#[cfg(loom)]
use loom::sync::{Mutex as Inner, MutexGuard};

/// A mutual-exclusion lock that ignores poisoning: every critical section of this crate leaves
/// its data consistent before anything in it can panic (the only panics are the debug checks,
/// which run before any change), so a panic on another thread does not make the data unusable.
pub(crate) struct Mutex<T>(Inner<T>);

impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Mutex<T> {
        Mutex(Inner::new(value))
    }

    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        match self.0.get_mut() {
            Ok(value) => value,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// A number that differs between threads (as far as possible), stable for each thread: which
/// shard of a `SyncPool` a thread uses. Threads are numbered in the order they first ask.
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_hint() -> usize {
    use core::cell::Cell;

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static HINT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    HINT.try_with(|hint| {
        let mut h = hint.get();
        if h == usize::MAX {
            // Relaxed: the counter only spreads threads over shards; no memory depends on it.
            h = NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
            hint.set(h);
        }
        h
    })
    // During thread-local destruction: any shard is correct.
    .unwrap_or(0)
}

/// Under loom: a deterministic function of loom's thread id (loom replays each execution, so the
/// hint must not depend on a counter that lives across executions).
#[cfg(loom)]
pub(crate) fn thread_hint() -> usize {
    use std::hash::{DefaultHasher, Hash, Hasher};

    let mut hasher = DefaultHasher::new();
    loom::thread::current().id().hash(&mut hasher);
    hasher.finish() as usize
}
