//! The allocation limit of the single-threaded pools ([`Limited`]): the backing allocator as a
//! pool sees it, counting the bytes the pool holds from it and refusing a request that would take
//! it past the limit, by the arenas' rule (`Budget`, docs/DESIGN.md §4 and §5).
//!
//! Every call a pool makes into its backing allocator goes through it: slabs and pages, the
//! address map's table, and the blocks of layouts the pool does not serve itself. So the count is
//! exact by construction, and the limit costs the fast paths nothing: a pool calls its backing
//! allocator only to refill, or for a layout it hands on.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};

use crate::arena::Budget;
use crate::error::Failure;
use crate::reentry::OnUnwind;

/// A pool's backing allocator with the pool's allocation limit.
pub(crate) struct Limited<A> {
    alloc: A,
    /// The limit, and the bytes held from `alloc` (or being taken from it: a request is counted
    /// before the call, so that what the backing allocator takes from this pool meanwhile is
    /// measured against the rest).
    budget: Cell<Budget>,
    /// Whether the pool's `Allocator` methods panic at the limit (`set_panic_on_limit`).
    panic_on_limit: Cell<bool>,
    /// Whether the last request the pool refused, or passed on here, was refused by the limit:
    /// set by every request admitted or refused here, cleared by the pool's other refusals (a
    /// strict pool's, a nested refill's), read by the pool's failure paths only.
    refused: Cell<bool>,
}

impl<A> Limited<A> {
    pub(crate) const fn new(alloc: A) -> Limited<A> {
        Limited {
            alloc,
            budget: Cell::new(Budget {
                limit: None,
                held: 0,
            }),
            panic_on_limit: Cell::new(false),
            refused: Cell::new(false),
        }
    }

    /// The backing allocator itself.
    pub(crate) fn inner(&self) -> &A {
        &self.alloc
    }

    pub(crate) fn limit(&self) -> Option<usize> {
        self.budget.get().limit
    }

    pub(crate) fn set_limit(&self, limit: Option<usize>) {
        let b = self.budget.get();
        self.budget.set(Budget { limit, ..b });
    }

    /// Bytes held from the backing allocator.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn held(&self) -> usize {
        self.budget.get().held
    }

    pub(crate) fn panics_on_limit(&self) -> bool {
        self.panic_on_limit.get()
    }

    pub(crate) fn set_panic_on_limit(&self, panic: bool) {
        self.panic_on_limit.set(panic);
    }

    /// The limit's failure, when the last request refused was refused by the limit.
    pub(crate) fn limit_failure(&self) -> Option<Failure> {
        match self.budget.get().limit {
            Some(limit) if self.refused.get() => Some(Failure::PoolLimitReached { limit }),
            _ => None,
        }
    }

    /// A request was refused for another reason than the limit (strict mode, a nested refill).
    pub(crate) fn refused_otherwise(&self) {
        self.refused.set(false);
    }

    /// The error of a failed `Allocator` call of the pool: the limit's panic when the limit
    /// refused it and the pool asks for that panic, `AllocError` otherwise. Called once the
    /// failed request has undone what it did, so the pool is consistent when the panic unwinds.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn refuse(&self) -> AllocError {
        if self.panic_on_limit.get() {
            if let Some(f) = self.limit_failure() {
                f.raise()
            }
        }
        AllocError
    }

    /// Whether the limit admits `more` bytes now, recorded as a request's answer would be: a
    /// refill asks it for its main block before it makes room for that block elsewhere (in the
    /// address map), so that a refill the limit refuses calls the backing allocator for nothing.
    pub(crate) fn admits(&self, more: usize) -> bool {
        let admitted = self.budget.get().admit(more).is_ok();
        self.refused.set(!admitted);
        admitted
    }

    /// Counts `more` bytes as held if the limit admits them.
    fn take(&self, more: usize) -> Result<(), AllocError> {
        let b = self.budget.get();
        let admitted = b.admit(more).is_ok();
        self.refused.set(!admitted);
        // A sum past `usize::MAX` is more than any allocator can hold: the request fails.
        let held = b
            .held
            .checked_add(more)
            .filter(|_| admitted)
            .ok_or(AllocError)?;
        self.budget.set(Budget { held, ..b });
        Ok(())
    }

    /// Counts `bytes` as no longer held.
    fn give(&self, bytes: usize) {
        let b = self.budget.get();
        self.budget.set(Budget {
            held: b.held - bytes,
            ..b
        });
    }

    /// Runs `call`, a request to the backing allocator for `more` bytes counted as held
    /// meanwhile: they stay counted when it succeeds, and are given back when it fails or
    /// unwinds. What nested requests in `call` did to `refused` is cleared: this request was
    /// admitted.
    ///
    /// The block returned may be longer than asked for (`base + more` bytes, `base` being the
    /// size of the block it replaces): the pool may use, and later give back, its whole length,
    /// so that length is what stays counted.
    fn taking(
        &self,
        base: usize,
        more: usize,
        call: impl FnOnce() -> Result<NonNull<[u8]>, AllocError>,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.take(more)?;
        let undo = OnUnwind::new(|| self.give(more));
        let r = call();
        undo.disarm();
        self.refused.set(false);
        match r {
            Ok(block) => {
                let extra = block.len().saturating_sub(base + more);
                let b = self.budget.get();
                self.budget.set(Budget {
                    held: b.held.saturating_add(extra),
                    ..b
                });
            }
            Err(AllocError) => self.give(more),
        }
        r
    }
}

// SAFETY: every method forwards to `alloc` with the caller's arguments, and only counts bytes:
// blocks are `alloc`'s, as valid as it makes them.
unsafe impl<A: Allocator> Allocator for Limited<A> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(0, layout.size(), || self.alloc.allocate(layout))
    }

    fn allocate_zeroed(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(0, layout.size(), || self.alloc.allocate_zeroed(layout))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // Out of the count first: a `deallocate` that unwinds leaves its block to the backing
        // allocator, and the pool no longer refers to it.
        self.give(layout.size());
        // SAFETY: forwarded from the caller.
        unsafe { self.alloc.deallocate(ptr, layout) }
    }

    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(old.size(), new.size() - old.size(), || {
            // SAFETY: forwarded from the caller (`new.size() >= old.size()`).
            unsafe { self.alloc.grow(ptr, old, new) }
        })
    }

    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        self.taking(old.size(), new.size() - old.size(), || {
            // SAFETY: forwarded from the caller (`new.size() >= old.size()`).
            unsafe { self.alloc.grow_zeroed(ptr, old, new) }
        })
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller (`new.size() <= old.size()`).
        let block = unsafe { self.alloc.shrink(ptr, old, new) }?;
        // The whole length returned stays counted (see `taking`).
        self.give(old.size().saturating_sub(block.len()));
        Ok(block)
    }
}

#[cfg(test)]
mod tests {
    use super::Limited;
    use crate::error::Failure;
    use allocator_api2::alloc::{Allocator, Global, Layout};

    #[test]
    fn counts_every_byte_and_refuses_past_the_limit() {
        let l = Limited::new(Global);
        l.set_limit(Some(100));
        let a = l.allocate(Layout::from_size_align(60, 8).unwrap()).unwrap();
        assert_eq!(l.held(), 60);
        assert!(l.allocate(Layout::from_size_align(41, 1).unwrap()).is_err());
        assert_eq!(
            l.limit_failure(),
            Some(Failure::PoolLimitReached { limit: 100 })
        );
        assert_eq!(l.held(), 60);
        // SAFETY: `a` is a live block of 60 bytes from `l`.
        let a = unsafe {
            l.grow(
                a.cast(),
                Layout::from_size_align(60, 8).unwrap(),
                Layout::from_size_align(100, 8).unwrap(),
            )
        }
        .unwrap();
        assert_eq!((l.held(), l.limit_failure()), (100, None));
        // SAFETY: `a` is a live block of 100 bytes from `l`.
        let a = unsafe {
            l.shrink(
                a.cast(),
                Layout::from_size_align(100, 8).unwrap(),
                Layout::from_size_align(10, 8).unwrap(),
            )
        }
        .unwrap();
        assert_eq!(l.held(), 10);
        // SAFETY: as above, now 10 bytes.
        unsafe { l.deallocate(a.cast(), Layout::from_size_align(10, 8).unwrap()) };
        assert_eq!(l.held(), 0);
        l.refused_otherwise();
        assert_eq!(l.limit_failure(), None);
    }
}
