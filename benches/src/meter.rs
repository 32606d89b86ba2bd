//! The memory meter: with the `meter` feature, a `#[global_allocator]` that forwards every call to
//! `std::alloc::System` and counts it. Every crate measured takes its memory from the global
//! allocator (arena-pool's default backing allocator is `Global`; bumpalo, bump-scope,
//! blink-alloc and stumpalo allocate their chunks from it; the pools and `System` call it
//! directly), so the counts are what each crate holds from the allocator below it.
//!
//! The counts are of the sizes *requested* (the `Layout`s), not of what malloc rounds them up to
//! or keeps around them:
//! - `held`: the bytes of the blocks currently allocated (a `realloc` changes it by the
//!   difference of the sizes; one that moves the block counts both blocks at its peak, as they
//!   are both held while it copies);
//! - `requested`: the sum of the sizes asked for by `alloc`, `alloc_zeroed` and `realloc` (a
//!   `realloc` counts its whole new size);
//! - `allocs` (`alloc` and `alloc_zeroed`), `deallocs` and `reallocs`: the calls, one each.
//!
//! The peak of `held` is tracked at every call that raises it; [`reset_peak`] starts a new one,
//! and [`peak_within`] reads the peak of one stretch of code without disturbing it.
//!
//! [`unmetered`] runs a closure whose calls (on its thread) are not counted: for the benchmarks'
//! own data (an order of indices, a list of handles, `SystemAlloc`'s list of live blocks), which
//! is not the crate's memory. A block allocated there must also be freed there.
//!
//! Without the feature nothing is installed: [`INSTALLED`] is false, the counts stay zero and
//! [`unmetered`] is a plain call, so the timed and the counted builds are unchanged.

/// Whether the counting global allocator is in this build (the `meter` feature).
pub const INSTALLED: bool = cfg!(feature = "meter");

/// The meter's counts at one moment (all zero without the `meter` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Bytes of the blocks allocated now.
    pub held: i64,
    /// Bytes requested so far.
    pub requested: u64,
    /// `alloc` and `alloc_zeroed` calls so far.
    pub allocs: u64,
    /// `dealloc` calls so far.
    pub deallocs: u64,
    /// `realloc` calls so far.
    pub reallocs: u64,
}

impl Counts {
    /// All calls: `allocs + deallocs + reallocs`.
    pub fn calls(&self) -> u64 {
        self.allocs + self.deallocs + self.reallocs
    }
}

#[cfg(feature = "meter")]
mod imp {
    use core::cell::Cell;
    use core::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
    use std::alloc::{GlobalAlloc, Layout, System};

    use super::Counts;

    static HELD: AtomicI64 = AtomicI64::new(0);
    static PEAK: AtomicI64 = AtomicI64::new(0);
    static REQUESTED: AtomicU64 = AtomicU64::new(0);
    static ALLOCS: AtomicU64 = AtomicU64::new(0);
    static DEALLOCS: AtomicU64 = AtomicU64::new(0);
    static REALLOCS: AtomicU64 = AtomicU64::new(0);

    std::thread_local! {
        /// Depth of `unmetered` calls on this thread (a `const` cell with no destructor: safe to
        /// read from the allocator at any time, thread exit included).
        static PAUSED: Cell<u32> = const { Cell::new(0) };
    }

    fn counted() -> bool {
        PAUSED.try_with(|p| p.get() == 0).unwrap_or(true)
    }

    fn add_held(bytes: i64) {
        let now = HELD.fetch_add(bytes, Relaxed) + bytes;
        PEAK.fetch_max(now, Relaxed);
    }

    /// `System`, counted.
    pub struct Meter;

    // SAFETY: every method forwards to `System` with the caller's arguments and returns its
    // result unchanged; the counting touches only atomics and a `const` thread-local (no
    // allocation, no re-entry).
    unsafe impl GlobalAlloc for Meter {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded from the caller's `GlobalAlloc::alloc` contract.
            let p = unsafe { System.alloc(layout) };
            if counted() {
                ALLOCS.fetch_add(1, Relaxed);
                REQUESTED.fetch_add(layout.size() as u64, Relaxed);
                if !p.is_null() {
                    add_held(layout.size() as i64);
                }
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded from the caller's `GlobalAlloc::alloc_zeroed` contract.
            let p = unsafe { System.alloc_zeroed(layout) };
            if counted() {
                ALLOCS.fetch_add(1, Relaxed);
                REQUESTED.fetch_add(layout.size() as u64, Relaxed);
                if !p.is_null() {
                    add_held(layout.size() as i64);
                }
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded from the caller's `GlobalAlloc::dealloc` contract.
            unsafe { System.dealloc(ptr, layout) };
            if counted() {
                DEALLOCS.fetch_add(1, Relaxed);
                HELD.fetch_sub(layout.size() as i64, Relaxed);
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: forwarded from the caller's `GlobalAlloc::realloc` contract.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if counted() {
                REALLOCS.fetch_add(1, Relaxed);
                REQUESTED.fetch_add(new_size as u64, Relaxed);
                if p == ptr {
                    add_held(new_size as i64 - layout.size() as i64);
                } else if !p.is_null() {
                    // Moved: the old block and the new one were both held while it copied.
                    add_held(new_size as i64);
                    HELD.fetch_sub(layout.size() as i64, Relaxed);
                }
            }
            p
        }
    }

    #[global_allocator]
    static METER: Meter = Meter;

    pub fn counts() -> Counts {
        Counts {
            held: HELD.load(Relaxed),
            requested: REQUESTED.load(Relaxed),
            allocs: ALLOCS.load(Relaxed),
            deallocs: DEALLOCS.load(Relaxed),
            reallocs: REALLOCS.load(Relaxed),
        }
    }

    pub fn peak() -> i64 {
        PEAK.load(Relaxed)
    }

    pub fn reset_peak() {
        PEAK.store(HELD.load(Relaxed), Relaxed);
    }

    pub fn peak_within<R>(f: impl FnOnce() -> R) -> (R, i64) {
        let outer = PEAK.load(Relaxed);
        PEAK.store(HELD.load(Relaxed), Relaxed);
        let r = f();
        let inner = PEAK.load(Relaxed);
        // The running peak is the higher of the one before and the one inside.
        PEAK.fetch_max(outer, Relaxed);
        (r, inner)
    }

    pub fn unmetered<R>(f: impl FnOnce() -> R) -> R {
        /// Resumes counting on return and on unwind.
        struct Resume;
        impl Drop for Resume {
            fn drop(&mut self) {
                PAUSED.with(|p| p.set(p.get() - 1));
            }
        }
        PAUSED.with(|p| p.set(p.get() + 1));
        let _resume = Resume;
        f()
    }
}

/// The counts now.
#[cfg(feature = "meter")]
pub fn counts() -> Counts {
    imp::counts()
}

/// The counts now (all zero: the `meter` feature is off).
#[cfg(not(feature = "meter"))]
pub fn counts() -> Counts {
    Counts::default()
}

/// The highest `held` since the last [`reset_peak`] (zero without the `meter` feature).
pub fn peak() -> i64 {
    #[cfg(feature = "meter")]
    return imp::peak();
    #[cfg(not(feature = "meter"))]
    0
}

/// Starts a new peak from the bytes held now.
pub fn reset_peak() {
    #[cfg(feature = "meter")]
    imp::reset_peak();
}

/// Runs `f` and returns, beside its result, the highest `held` while it ran (at least the `held`
/// of its start: the bytes already held count). The running peak ([`peak`]) is left as if this
/// had been a plain call. Without the `meter` feature, the peak is 0.
pub fn peak_within<R>(f: impl FnOnce() -> R) -> (R, i64) {
    #[cfg(feature = "meter")]
    return imp::peak_within(f);
    #[cfg(not(feature = "meter"))]
    (f(), 0)
}

/// Runs `f` with the meter not counting the calls made on this thread (see the module docs): for
/// the benchmarks' own data. A block allocated inside must be freed inside too. Without the
/// `meter` feature, this is `f()`.
#[inline(always)]
pub fn unmetered<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "meter")]
    return imp::unmetered(f);
    #[cfg(not(feature = "meter"))]
    f()
}
