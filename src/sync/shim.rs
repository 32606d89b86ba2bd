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

/// A lock that the thread holding it may take again, for data whose methods take `&self` and
/// stay consistent when re-entered (a `SyncPool` shard's `Pool`): the backing allocator a shard
/// calls with its lock held may use the same pool, and must find it neither deadlocked nor
/// panicking. A nested lock of the same thread gives the same shared access without locking.
pub(crate) struct ReentrantLock<T> {
    lock: Mutex<()>,
    /// [`Me::owner`] of the thread holding `lock`, 0 when none does (or it has no id). Only the holder stores its
    /// own id, so a thread reads its own id exactly while it holds the lock (a thread's later
    /// reads never see an older value of its own writes).
    owner: AtomicUsize,
    data: core::cell::UnsafeCell<T>,
}

// SAFETY: the data is reached through `&self` only by the thread holding the lock (a nested lock
// of that thread adds shared access on the same thread), so `T: Send` suffices, as for `Mutex`.
unsafe impl<T: Send> Sync for ReentrantLock<T> {}

impl<T> ReentrantLock<T> {
    pub(crate) fn new(value: T) -> ReentrantLock<T> {
        ReentrantLock {
            lock: Mutex::new(()),
            owner: AtomicUsize::new(0),
            data: core::cell::UnsafeCell::new(value),
        }
    }

    /// Shared access to the data for the calling thread `me`, locking unless it holds the lock
    /// already.
    #[inline]
    pub(crate) fn lock(&self, me: Me) -> ReentrantGuard<'_, T> {
        let me = me.owner();
        // Relaxed: only this thread ever stores `me` (see `owner`).
        if me != 0 && self.owner.load(Ordering::Relaxed) == me {
            return ReentrantGuard {
                lock: self,
                outer: None,
            };
        }
        let outer = self.lock.lock();
        self.owner.store(me, Ordering::Relaxed);
        ReentrantGuard {
            lock: self,
            outer: Some(outer),
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

/// Shared access to a [`ReentrantLock`]'s data; the outermost guard of a thread unlocks.
pub(crate) struct ReentrantGuard<'a, T> {
    lock: &'a ReentrantLock<T>,
    outer: Option<MutexGuard<'a, ()>>,
}

impl<T> core::ops::Deref for ReentrantGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this thread holds the lock (taken by this guard or by an outer one of the same
        // thread, which outlives it), so no other thread reaches the data, and every access
        // through guards is shared.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> Drop for ReentrantGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.outer.is_some() {
            // Before unlocking: the next holder stores its own id.
            self.lock.owner.store(0, Ordering::Relaxed);
        }
    }
}

/// The calling thread, as the thread-safe types need it: which shard of a `SyncPool` it uses,
/// and who holds a [`ReentrantLock`]. Read once per operation (a thread-local lookup).
#[derive(Clone, Copy)]
pub(crate) struct Me(Option<usize>);

impl Me {
    #[inline]
    pub(crate) fn get() -> Me {
        Me(thread_number())
    }

    /// A number that differs between threads, stable for each thread: a shard hint (any shard
    /// is correct for a thread that cannot be told apart).
    #[inline]
    pub(crate) fn hint(self) -> usize {
        self.0.unwrap_or(0)
    }

    /// The thread's id as a lock owner, unique among threads and never 0; 0 when the thread
    /// cannot be told apart, which then locks without a record, so re-entering would block
    /// (`thread_number` has no destructor, so this does not happen). Under loom the record is
    /// left out: loom 0.7 trips an internal assertion on the owner field's loads
    /// (tokio-rs/loom#252); the models do not re-enter, and the re-entrance tests and
    /// ThreadSanitizer cover the record in the normal build.
    #[inline]
    fn owner(self) -> usize {
        if cfg!(loom) {
            0
        } else {
            self.0.map_or(0, |n| n + 1)
        }
    }
}

/// The calling thread's number, unique among all threads (numbered in the order they first ask,
/// below `usize::MAX >> 1`); `None` only if the thread-local is gone (it has no destructor, so in
/// practice never).
#[cfg(not(loom))]
#[inline]
fn thread_number() -> Option<usize> {
    use core::cell::Cell;

    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::thread_local! {
        static NUMBER: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    NUMBER
        .try_with(|number| {
            let mut n = number.get();
            if n == usize::MAX {
                // Relaxed: each value is handed out once, and no memory depends on it.
                n = NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
                number.set(n);
            }
            n
        })
        .ok()
}

/// Under loom: a deterministic function of loom's thread id (loom replays each execution, so the
/// number must not depend on a counter that lives across executions).
#[cfg(loom)]
fn thread_number() -> Option<usize> {
    use std::hash::{DefaultHasher, Hash, Hasher};

    let mut hasher = DefaultHasher::new();
    loom::thread::current().id().hash(&mut hasher);
    Some(hasher.finish() as usize & (usize::MAX >> 1))
}
