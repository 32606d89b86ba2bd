//! [`BackingCall`]: how the single-threaded allocators notice that their backing allocator has
//! called back into them.
//!
//! A backing allocator may allocate in the arena or pool it backs (nothing in the `Allocator`
//! contract forbids it, and `new_in` is safe). While the outer call waits for the backing
//! allocator it holds state it read before the call (the current chunk, the slab being carved),
//! so a nested request that would change that state is refused with `AllocError`. Nested requests
//! that the fast paths serve (a bump with room left, a free-list pop or push) change only what the
//! outer call reads again afterwards, and are served. The flag is checked on the refill paths
//! only, never on a fast path.

use core::cell::Cell;

/// Set while an allocator waits for its backing allocator.
pub(crate) struct BackingCall(Cell<bool>);

impl BackingCall {
    pub(crate) const fn new() -> BackingCall {
        BackingCall(Cell::new(false))
    }

    /// Whether a call into the backing allocator is in progress (so a refill now is nested).
    #[inline]
    pub(crate) fn in_progress(&self) -> bool {
        self.0.get()
    }

    /// Runs `call`, a call into the backing allocator, with the flag set; it is put back as it
    /// was (a nested call that is allowed may run a backing call of its own) when `call`
    /// returns or unwinds.
    pub(crate) fn run<R>(&self, call: impl FnOnce() -> R) -> R {
        /// Puts the flag back, also when the backing allocator panics.
        struct Restore<'a>(&'a Cell<bool>, bool);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                self.0.set(self.1);
            }
        }
        let _restore = Restore(&self.0, self.0.replace(true));
        call()
    }
}

/// Runs its closure when dropped while armed: undoes a change when the backing allocator
/// unwinds (e.g. links back a large block taken out of its list for a resize).
pub(crate) struct OnUnwind<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnUnwind<F> {
    pub(crate) fn new(undo: F) -> OnUnwind<F> {
        OnUnwind(Some(undo))
    }

    /// The change stands: nothing to undo.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnUnwind<F> {
    fn drop(&mut self) {
        if let Some(undo) = self.0.take() {
            undo();
        }
    }
}
