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

// ----- a backing allocator that unwinds -----

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// What [`Tracked`] panics with.
pub const PANIC: &str = "the backing allocator panics (test)";

/// No call is set to panic.
const NEVER: usize = usize::MAX;

/// A thread-safe backing allocator over `Global` that records the blocks it holds, can panic in
/// a chosen `deallocate` call (after freeing the block, so that an allocator under test that
/// still points into it is caught: natively by [`holds`](Self::holds), under Miri as a use after
/// free) or `allocate` call (before taking a block), and can run one action (a use of the
/// allocator it backs) inside the next `allocate` call. What the allocator under test leaves
/// behind when an unwind makes it leak goes back to `Global` when this is dropped (see
/// [`free_leftovers`](Self::free_leftovers)).
pub struct Tracked {
    /// Live blocks: address to (pointer, layout).
    blocks: Mutex<BTreeMap<usize, (SendPtr, Layout)>>,
    allocs: AtomicUsize,
    deallocs: AtomicUsize,
    /// Panic in the `allocate` call with this number.
    panic_alloc_at: AtomicUsize,
    /// Panic in the `deallocate` call with this number, once the block is freed.
    panic_dealloc_at: AtomicUsize,
    /// Run inside the next `allocate` call.
    nested: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// A block's pointer, kept in the record of a thread-safe allocator.
#[derive(Clone, Copy)]
struct SendPtr(NonNull<u8>);

// SAFETY: only an address with its provenance, dereferenced by nobody but `Global` when the block
// goes back.
unsafe impl Send for SendPtr {}

impl Default for Tracked {
    fn default() -> Tracked {
        Tracked {
            blocks: Mutex::default(),
            allocs: AtomicUsize::new(0),
            deallocs: AtomicUsize::new(0),
            panic_alloc_at: AtomicUsize::new(NEVER),
            panic_dealloc_at: AtomicUsize::new(NEVER),
            nested: Mutex::new(None),
        }
    }
}

impl Tracked {
    /// The `deallocate` call `n` calls from now (0: the next one) panics.
    pub fn panic_in_dealloc(&self, n: usize) {
        let now = self.deallocs.load(Ordering::Relaxed);
        self.panic_dealloc_at.store(now + n, Ordering::Relaxed);
    }

    /// The next `allocate` call panics.
    pub fn panic_in_next_alloc(&self) {
        let now = self.allocs.load(Ordering::Relaxed);
        self.panic_alloc_at.store(now, Ordering::Relaxed);
    }

    /// No call panics.
    pub fn disarm(&self) {
        self.panic_alloc_at.store(NEVER, Ordering::Relaxed);
        self.panic_dealloc_at.store(NEVER, Ordering::Relaxed);
    }

    /// Runs `f` inside the next `allocate` call.
    pub fn run_inside_next(&self, f: impl FnOnce() + Send + 'static) {
        *self.nested.lock().unwrap() = Some(Box::new(f));
    }

    /// `deallocate` calls so far.
    pub fn deallocs(&self) -> usize {
        self.deallocs.load(Ordering::Relaxed)
    }

    pub fn held_blocks(&self) -> usize {
        self.blocks.lock().unwrap().len()
    }

    pub fn held_bytes(&self) -> usize {
        self.blocks
            .lock()
            .unwrap()
            .values()
            .map(|(_, l)| l.size())
            .sum()
    }

    /// Whether `[p, p + len)` lies inside one block this allocator holds.
    pub fn holds(&self, p: NonNull<u8>, len: usize) -> bool {
        let p = p.addr().get();
        self.blocks
            .lock()
            .unwrap()
            .range(..=p)
            .next_back()
            .is_some_and(|(&start, &(_, layout))| p + len <= start + layout.size())
    }

    /// Frees the blocks still held (what an allocator under test leaked when a deallocation
    /// unwound, or leaked otherwise) and returns how many there were.
    pub fn free_leftovers(&self) -> usize {
        let blocks = std::mem::take(&mut *self.blocks.lock().unwrap());
        for &(p, layout) in blocks.values() {
            // SAFETY: a block taken from `Global` with `layout` and not given back; the
            // allocator under test no longer uses it (it is gone, or leaked it).
            unsafe { Global.deallocate(p.0, layout) };
        }
        blocks.len()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.free_leftovers();
    }
}

// SAFETY: every block comes from `Global` and goes back to it with the layout it was taken with,
// once; the hooks touch no block the allocator under test holds.
unsafe impl Allocator for Tracked {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let n = self.allocs.fetch_add(1, Ordering::Relaxed);
        if self.panic_alloc_at.load(Ordering::Relaxed) == n {
            self.panic_alloc_at.store(NEVER, Ordering::Relaxed);
            panic!("{PANIC}");
        }
        // Taken out first, so that the action may use this allocator again.
        let nested = self.nested.lock().unwrap().take();
        if let Some(f) = nested {
            f();
        }
        let p = Global.allocate(layout)?;
        let at = p.cast::<u8>();
        let old = self
            .blocks
            .lock()
            .unwrap()
            .insert(at.addr().get(), (SendPtr(at), layout));
        assert!(old.is_none(), "block handed out twice");
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let held = self.blocks.lock().unwrap().remove(&ptr.addr().get());
        assert_eq!(
            held.map(|(_, l)| l),
            Some(layout),
            "freed twice, with another layout, or not ours"
        );
        // SAFETY: the block came from `Global` with `layout`.
        unsafe { Global.deallocate(ptr, layout) };
        let n = self.deallocs.fetch_add(1, Ordering::Relaxed);
        if self.panic_dealloc_at.load(Ordering::Relaxed) == n {
            self.panic_dealloc_at.store(NEVER, Ordering::Relaxed);
            panic!("{PANIC}");
        }
    }
}

/// Silences [`Tracked`]'s panics (others still print), once for the whole test binary.
pub fn quiet() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<String>().map(String::as_str) != Some(PANIC) {
                default(info);
            }
        }));
    });
}

/// Runs `f`, expecting it to unwind with [`Tracked`]'s panic.
pub fn expect_backing_panic(f: impl FnOnce()) {
    quiet();
    let payload =
        catch_unwind(AssertUnwindSafe(f)).expect_err("the backing allocator did not panic");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some(PANIC),
        "another panic"
    );
}

/// Whether every byte of `s` is `byte`. Compared as whole slices (one step under Miri, where a
/// loop over a block of 64 KiB, a byte at a time, takes seconds).
pub fn all_bytes(s: &[u8], byte: u8) -> bool {
    s == vec![byte; s.len()].as_slice()
}

/// The model tests' proptest configuration: `native` cases natively, `miri` under Miri, where
/// proptest must not touch the file system and its default ChaCha generator costs a large share
/// of each interpreted case (XorShift: a fraction).
pub fn proptest_config(native: u32, miri: u32) -> proptest::test_runner::Config {
    let default = proptest::test_runner::Config::default();
    proptest::test_runner::Config {
        cases: if cfg!(miri) { miri } else { native },
        rng_algorithm: if cfg!(miri) {
            proptest::test_runner::RngAlgorithm::XorShift
        } else {
            default.rng_algorithm
        },
        failure_persistence: None,
        ..default
    }
}
