//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test file uses a different part

use core::cell::Cell;
use core::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

/// A backing allocator over `Global` that counts calls and live bytes, and can be told to fail.
#[derive(Default)]
pub struct Counting {
    /// Successful `allocate` calls.
    pub allocs: Cell<usize>,
    /// `deallocate` calls.
    pub frees: Cell<usize>,
    /// Bytes currently allocated.
    pub live: Cell<usize>,
    /// The most bytes allocated at once since the last [`restart_peak`](Self::restart_peak).
    pub peak: Cell<usize>,
    /// When set, `allocate` fails.
    pub fail: Cell<bool>,
}

impl Counting {
    /// Backing calls made so far (allocations and deallocations).
    pub fn calls(&self) -> usize {
        self.allocs.get() + self.frees.get()
    }

    /// Starts a new peak from the bytes allocated now.
    pub fn restart_peak(&self) {
        self.peak.set(self.live.get());
    }
}

// SAFETY: every block comes from `Global` with the same layout and goes back to it unchanged;
// the counters do not affect the memory.
unsafe impl Allocator for Counting {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if self.fail.get() {
            return Err(AllocError);
        }
        let block = Global.allocate(layout)?;
        self.allocs.set(self.allocs.get() + 1);
        self.live.set(self.live.get() + layout.size());
        self.peak.set(self.peak.get().max(self.live.get()));
        Ok(block)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.frees.set(self.frees.get() + 1);
        self.live.set(self.live.get() - layout.size());
        // SAFETY: `ptr` came from `Global` with `layout` (forwarded from the caller's contract).
        unsafe { Global.deallocate(ptr, layout) }
    }
}
