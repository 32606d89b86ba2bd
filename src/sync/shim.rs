//! The atomics, the lock and the per-thread shard hint used by the thread-safe types: the
//! standard library's in a normal build, loom's when the crate is built with `--cfg loom` (the
//! model-checking tests in `tests/loom.rs`), so that loom explores every interleaving of the real
//! code.

use crate::reentry::OnUnwind;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use std::sync::TryLockError;

#[cfg(not(loom))]
use std::sync::Mutex as Inner;
#[cfg(not(loom))]
pub(crate) use std::sync::MutexGuard;

#[cfg(loom)]
use loom::sync::Mutex as Inner;
#[cfg(loom)]
pub(crate) use loom::sync::MutexGuard;

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

    /// The lock if it is free now, `None` if another holder has it.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match self.0.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        match self.0.get_mut() {
            Ok(value) => value,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// A lock that the thread holding it may take again while it calls out from under it: a
/// `SyncPool` shard, whose pool calls the backing allocator with the lock held (for a slab), and
/// whose backing allocator may use the same `SyncPool` meanwhile. Such a nested call gets the
/// data without locking (the pool's methods take `&self` and stay consistent when re-entered),
/// not a deadlock. The holder says when it calls out ([`holding`](Self::holding)); taking the
/// lock costs nothing more than a `Mutex`'s unless it is contended.
pub(crate) struct ReentrantLock<T> {
    lock: Mutex<()>,
    /// [`Me::owner`] of the thread holding `lock` while it is inside [`holding`](Self::holding),
    /// 0 otherwise. Only that thread stores its own id, so a thread reads its own id exactly while
    /// it is inside `holding` (a thread's later reads never see an older value of its writes).
    owner: AtomicUsize,
    data: core::cell::UnsafeCell<T>,
}

// SAFETY: the data is reached through `&self` only by the thread holding the lock (a nested call
// of that thread, from inside `holding`, adds shared access on the same thread), so `T: Send`
// suffices, as for `Mutex`.
unsafe impl<T: Send> Sync for ReentrantLock<T> {}

impl<T> ReentrantLock<T> {
    pub(crate) fn new(value: T) -> ReentrantLock<T> {
        ReentrantLock {
            lock: Mutex::new(()),
            owner: AtomicUsize::new(0),
            data: core::cell::UnsafeCell::new(value),
        }
    }

    /// Shared access to the data for the calling thread `me`: under the lock, or, for a thread
    /// that holds it and is inside [`holding`](Self::holding), without locking again.
    #[inline]
    pub(crate) fn lock(&self, me: Me) -> Held<'_, T> {
        let guard = match self.lock.try_lock() {
            Some(guard) => Some(guard),
            // Taken: by another thread, or by this one calling out from under it.
            None => {
                let me = me.owner();
                // Relaxed: only this thread ever stores `me` (see `owner`).
                if me != 0 && self.owner.load(Ordering::Relaxed) == me {
                    None
                } else {
                    Some(self.lock.lock())
                }
            }
        };
        Held {
            _guard: guard,
            data: &self.data,
        }
    }

    /// Runs `call`, a call out from under the lock by the thread `me` that holds it (inside
    /// [`lock`](Self::lock)), with that thread recorded, so that `lock` from inside `call` on
    /// this thread does not lock again; the record is put back when `call` returns or unwinds.
    pub(crate) fn holding<R>(&self, me: Me, call: impl FnOnce() -> R) -> R {
        let before = self.owner.swap(me.owner(), Ordering::Relaxed);
        let _restore = OnUnwind::new(|| self.owner.store(before, Ordering::Relaxed));
        let result = call();
        _restore.disarm();
        self.owner.store(before, Ordering::Relaxed);
        result
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

/// Shared access to a [`ReentrantLock`]'s data, for as long as the thread holds the lock (the
/// guard, `None` for a nested call whose outer call holds it).
pub(crate) struct Held<'a, T> {
    _guard: Option<MutexGuard<'a, ()>>,
    data: &'a core::cell::UnsafeCell<T>,
}

impl<T> core::ops::Deref for Held<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this thread holds the lock (taken by `ReentrantLock::lock`, or by an outer call
        // of the same thread that is inside `holding`, below on the stack, and outlives this
        // one), so no other thread reaches the data, and every access is shared.
        unsafe { &*self.data.get() }
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

/// Under loom: the thread's index within the execution (0 for the model's main thread, then 1, 2,
/// .. in spawn order), so that every replay of an execution gives each thread the same shard.
/// loom's `ThreadId` also carries a process-wide execution counter, which its `Hash` includes and
/// its `Debug` leaves out: hashing it made a thread's shard differ between replays, and loom then
/// explored without end.
#[cfg(loom)]
fn thread_number() -> Option<usize> {
    use core::fmt::Write;

    /// Reads the number out of `ThreadId(N)` as it is formatted.
    struct Digits(usize);
    impl Write for Digits {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            for digit in s.chars().filter_map(|c| c.to_digit(10)) {
                self.0 = self.0.wrapping_mul(10).wrapping_add(digit as usize);
            }
            Ok(())
        }
    }
    let mut digits = Digits(0);
    write!(digits, "{:?}", loom::thread::current().id()).ok()?;
    Some(digits.0)
}
