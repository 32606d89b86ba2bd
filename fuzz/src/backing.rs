//! [`Backing`], the backing allocator the targets give the allocator under test: it records and
//! checks every block it hands out and gets back, and fails, panics (in `allocate` or in
//! `deallocate`) or calls back into the allocator it backs on request.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ptr::NonNull;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

use crate::{Injected, InjectedPanic};

/// The largest request [`Backing`] serves; larger ones fail as if memory ran out. It keeps
/// huge requests away from the real allocator (and from libFuzzer's malloc limit).
pub const BACKING_CAP: usize = 32 << 20;

/// The byte [`Backing`] fills fresh blocks with, so that nothing can rely on fresh memory being
/// zero (odd, so it never equals a block pattern).
const FRESH: u8 = 0xA5;
/// The byte [`Backing`] fills blocks with before freeing them, so that a use after free reads
/// garbage even without a sanitizer.
const FREED: u8 = 0xDD;

/// What [`Backing`] runs inside its next `allocate` call (see [`nested`](crate::nested)).
pub type NestedAction = Box<dyn FnOnce(&Backing)>;

#[derive(Clone, Copy, Debug)]
struct Held {
    size: usize,
    len: usize,
    align: usize,
}

/// A backing allocator on `Global` that records every block it hands out and checks every
/// block given back: the pointer is one of its live blocks, the alignment is the one it was
/// allocated with, and the size lies between the requested size and the returned length (which
/// is the size rounded up to 16, so callers see lengths larger than they asked for). It fills
/// fresh and freed blocks with garbage, refuses requests above [`BACKING_CAP`], and refuses the
/// next `n` requests after [`fail_next`](Backing::fail_next).
///
/// It can also panic in its next `allocate` call ([`panic_next`](Backing::panic_next)), or run
/// an action there before it allocates ([`run_inside_next`](Backing::run_inside_next)); the
/// action is taken out before it runs, so it may call this allocator again.
///
/// And it can panic in a `deallocate` call ([`panic_in_free`](Backing::panic_in_free)), once it
/// has checked the block and before freeing it. The caller gave the block up with that call, so
/// the block is *given up*: it no longer counts among the blocks held
/// ([`live_blocks`](Backing::live_blocks)), its bytes are overwritten with the freed fill and poisoned for
/// AddressSanitizer (any later access by the allocator is reported as a use after poison), a
/// second `deallocate` of it is reported as a double free, and `Backing` frees it itself when it
/// is dropped, at the end of the input. So the final "holds nothing" check still covers every
/// block that was not involved. `grow`, `grow_zeroed` and `shrink` (a new block, a copy, the
/// old block freed) never raise this panic: only a `deallocate` call from the allocator does.
///
/// Blocks an allocator may leak when a `deallocate` unwinds (in a drop, or a reset that renews its
/// chunk) are *written off* by the target ([`write_off`](Backing::write_off)): no longer counted
/// by [`live_blocks`](Backing::live_blocks) and [`live_bytes`](Backing::live_bytes), and freed
/// when `Backing` is dropped.
#[derive(Default)]
pub struct Backing {
    blocks: RefCell<HashMap<usize, Held>>,
    /// The blocks whose `deallocate` unwound.
    given_up: RefCell<HashMap<usize, Held>>,
    /// Blocks and bytes of `blocks` the target wrote off.
    written_off: Cell<(usize, usize)>,
    fail: Cell<u32>,
    panic: Cell<bool>,
    /// `Some(n)`: the `deallocate` call after the next `n` panics.
    panic_free: Cell<Option<u32>>,
    /// The injected panic that unwound last, until taken.
    unwound: Cell<Option<Injected>>,
    /// `allocate` calls so far (those that panicked or failed included).
    allocs: Cell<u64>,
    nested: RefCell<Option<NestedAction>>,
}

impl Backing {
    /// A backing allocator with nothing handed out.
    pub fn new() -> Backing {
        Backing::default()
    }

    /// The next `n` allocation requests fail (on top of those already pending).
    pub fn fail_next(&self, n: u32) {
        self.fail.set(self.fail.get().saturating_add(n));
    }

    /// Whether a requested failure is still pending.
    pub fn failing(&self) -> bool {
        self.fail.get() > 0
    }

    /// Stops failing.
    pub fn stop_failing(&self) {
        self.fail.set(0);
    }

    /// The next `allocate` call panics with [`InjectedPanic`] (before anything else it does).
    pub fn panic_next(&self) {
        self.panic.set(true);
    }

    /// Whether an injected panic in `allocate` is pending.
    pub fn panic_armed(&self) -> bool {
        self.panic.get()
    }

    /// The `deallocate` call after the next `skip` ones panics with [`InjectedPanic`] (0: the
    /// next one), before it frees the block, which is then given up (see [`Backing`]).
    pub fn panic_in_free(&self, skip: u32) {
        self.panic_free.set(Some(skip));
    }

    /// Whether an injected panic in `deallocate` is pending.
    pub fn free_panic_armed(&self) -> bool {
        self.panic_free.get().is_some()
    }

    /// The pending injected panic in `deallocate`, if one is: how many calls it lets through.
    pub fn pending_free_panic(&self) -> Option<u32> {
        self.panic_free.get()
    }

    /// Forgets a pending injected panic in `deallocate`.
    pub fn disarm_free(&self) {
        self.panic_free.set(None);
    }

    /// Which call raised the injected panic that unwound last, if one did since the last call;
    /// forgets it.
    pub fn take_unwound(&self) -> Option<Injected> {
        self.unwound.take()
    }

    /// Which call raised the injected panic that unwound last, if one did since the last
    /// [`take_unwound`](Backing::take_unwound).
    pub fn unwound(&self) -> Option<Injected> {
        self.unwound.get()
    }

    /// `allocate` calls so far.
    pub fn allocs(&self) -> u64 {
        self.allocs.get()
    }

    /// The next `allocate` call runs `f` (after an injected panic, if one is pending; before an
    /// injected failure and before allocating), replacing an action still pending.
    pub fn run_inside_next(&self, f: NestedAction) {
        *self.nested.borrow_mut() = Some(f);
    }

    /// Whether an action set by [`run_inside_next`](Backing::run_inside_next) is pending.
    pub fn nested_armed(&self) -> bool {
        self.nested.borrow().is_some()
    }

    /// Forgets a pending injected panic in `allocate` and a pending action (which then never
    /// runs); a pending panic in `deallocate` stays (see [`disarm_free`](Backing::disarm_free)).
    pub fn disarm(&self) {
        self.panic.set(false);
        self.disarm_nested();
    }

    /// Forgets a pending action (which then never runs).
    pub fn disarm_nested(&self) {
        let pending = self.nested.borrow_mut().take();
        drop(pending);
    }

    /// Blocks handed out and not given back, but those written off.
    pub fn live_blocks(&self) -> usize {
        self.blocks
            .borrow()
            .len()
            .checked_sub(self.written_off.get().0)
            .expect("backing: a block written off as leaked was given back")
    }

    /// Bytes (returned lengths) of the blocks handed out and not given back, but those written
    /// off.
    pub fn live_bytes(&self) -> usize {
        self.blocks
            .borrow()
            .values()
            .map(|h| h.len)
            .sum::<usize>()
            .checked_sub(self.written_off.get().1)
            .expect("backing: a block written off as leaked was given back")
    }

    /// Blocks whose `deallocate` unwound (given up; see [`Backing`]).
    pub fn given_up_blocks(&self) -> usize {
        self.given_up.borrow().len()
    }

    /// Stops counting `blocks` blocks of `bytes` bytes among those held: blocks the allocator
    /// leaked when a `deallocate` unwound (see [`Backing`]); they are freed when `Backing` is
    /// dropped.
    pub fn write_off(&self, blocks: usize, bytes: usize) {
        let (b, n) = self.written_off.get();
        self.written_off.set((b + blocks, n + bytes));
        // Checks that they were held.
        let _ = (self.live_blocks(), self.live_bytes());
    }

    /// Writes off every block held (after a drop that unwound).
    pub fn write_off_all(&self) {
        self.write_off(self.live_blocks(), self.live_bytes());
    }

    /// Checks that `ptr` / `layout` is a block held and takes it out of the record.
    fn take(&self, ptr: NonNull<u8>, layout: Layout) -> Held {
        let held = self.blocks.borrow_mut().remove(&ptr.addr().get());
        let Some(held) = held else {
            if self.given_up.borrow().contains_key(&ptr.addr().get()) {
                panic!(
                    "backing: deallocate({ptr:p}, {layout:?}) of a block whose deallocate unwound before: the allocator had given it up"
                );
            }
            panic!("backing: deallocate({ptr:p}, {layout:?}) of a block it does not hold");
        };
        assert_eq!(
            layout.align(),
            held.align,
            "backing: {ptr:p} freed with another alignment"
        );
        assert!(
            held.size <= layout.size() && layout.size() <= held.len,
            "backing: {ptr:p} ({held:?}) freed with size {}",
            layout.size()
        );
        held
    }

    /// Frees a block taken out of the record.
    ///
    /// # Safety
    /// `held` describes the block at `ptr`, which came from `Global` and is not used again.
    unsafe fn free(ptr: NonNull<u8>, held: Held) {
        // SAFETY: the block is live and `held.len` bytes long; it came from `Global` with this
        // layout, which was valid then.
        unsafe {
            ptr.as_ptr().write_bytes(FREED, held.len);
            Global.deallocate(ptr, Layout::from_size_align_unchecked(held.len, held.align));
        }
    }
}

impl Drop for Backing {
    /// Frees the blocks given up by a `deallocate` that unwound and those written off (the
    /// targets check, before, that nothing else is held).
    fn drop(&mut self) {
        for (addr, held) in self.given_up.get_mut().drain() {
            let p = NonNull::new(addr as *mut u8).expect("a block's address");
            // SAFETY: poisoned when it was given up, and ours alone since.
            unsafe {
                asan::unpoison(p, held.len);
                Backing::free(p, held);
            }
        }
        for (addr, held) in self.blocks.get_mut().drain() {
            let p = NonNull::new(addr as *mut u8).expect("a block's address");
            // SAFETY: a block of `Global` that the allocator it backed no longer uses (it is
            // gone: it borrowed this allocator).
            unsafe { Backing::free(p, held) };
        }
    }
}

/// Poisoning for AddressSanitizer, where the build has it.
mod asan {
    use std::ptr::NonNull;

    #[cfg(sanitize = "address")]
    unsafe extern "C" {
        fn __asan_poison_memory_region(addr: *const u8, size: usize);
        fn __asan_unpoison_memory_region(addr: *const u8, size: usize);
    }

    /// Marks `len` bytes at `p` as not to be accessed.
    ///
    /// # Safety
    /// `p` is a block of at least `len` bytes that no one may access until it is unpoisoned.
    #[allow(unused_variables)]
    pub unsafe fn poison(p: NonNull<u8>, len: usize) {
        #[cfg(sanitize = "address")]
        // SAFETY: forwarded from the caller.
        unsafe {
            __asan_poison_memory_region(p.as_ptr(), len)
        };
    }

    /// Undoes [`poison`].
    ///
    /// # Safety
    /// `p` is a block of at least `len` bytes.
    #[allow(unused_variables)]
    pub unsafe fn unpoison(p: NonNull<u8>, len: usize) {
        #[cfg(sanitize = "address")]
        // SAFETY: forwarded from the caller.
        unsafe {
            __asan_unpoison_memory_region(p.as_ptr(), len)
        };
    }
}

// SAFETY: every block comes from `Global` with a layout of at least the requested size and the
// requested alignment, and goes back to it with that same layout; the record of live blocks
// only adds checks.
unsafe impl Allocator for Backing {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        self.allocs.set(self.allocs.get() + 1);
        if self.panic.replace(false) {
            self.unwound.set(Some(Injected::Allocate));
            std::panic::panic_any(InjectedPanic);
        }
        // Taken out before it runs (and the borrow released), so that it may call us again.
        let nested = self.nested.borrow_mut().take();
        if let Some(f) = nested {
            f(self);
        }
        if self.fail.get() > 0 {
            self.fail.set(self.fail.get() - 1);
            return Err(AllocError);
        }
        if layout.size() > BACKING_CAP {
            return Err(AllocError);
        }
        if layout.size() == 0 {
            let p = NonNull::<u8>::dangling().with_addr(
                std::num::NonZeroUsize::new(layout.align()).expect("alignments are non-zero"),
            );
            return Ok(NonNull::slice_from_raw_parts(p, 0));
        }
        let len = layout.size().next_multiple_of(16);
        let real = Layout::from_size_align(len, layout.align()).map_err(|_| AllocError)?;
        let p = Global.allocate(real)?.cast::<u8>();
        // SAFETY: a fresh block of `len` writable bytes.
        unsafe { p.as_ptr().write_bytes(FRESH, len) };
        let held = Held {
            size: layout.size(),
            len,
            align: layout.align(),
        };
        let old = self.blocks.borrow_mut().insert(p.addr().get(), held);
        assert!(old.is_none(), "backing: {p:p} handed out twice");
        Ok(NonNull::slice_from_raw_parts(p, len))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() == 0 {
            return;
        }
        let held = self.take(ptr, layout);
        if let Some(skip) = self.panic_free.get() {
            if skip > 0 {
                self.panic_free.set(Some(skip - 1));
            } else {
                self.panic_free.set(None);
                // Given up: garbage, poisoned, and freed at the end.
                // SAFETY: the block is live and `held.len` bytes long; the caller gave it up.
                unsafe {
                    ptr.as_ptr().write_bytes(FREED, held.len);
                    asan::poison(ptr, held.len);
                }
                self.given_up.borrow_mut().insert(ptr.addr().get(), held);
                self.unwound.set(Some(Injected::Deallocate));
                std::panic::panic_any(InjectedPanic);
            }
        }
        // SAFETY: taken out of the record just now; the caller gives it up.
        unsafe { Backing::free(ptr, held) };
    }

    // A resize is a new block, a copy and the old block freed, as the trait's default methods
    // do, but the old block is freed without the injected `deallocate` panic: only a
    // `deallocate` call of the allocator raises that.

    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new, false) }
    }

    unsafe fn grow_zeroed(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new, true) }
    }

    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new, false) }
    }
}

impl Backing {
    /// `grow`, `grow_zeroed` (with `zeroed`) and `shrink`: a new block through `allocate` (so
    /// an injected failure, panic or action applies), the bytes kept copied, the old block freed.
    ///
    /// # Safety
    /// The `Allocator::grow`/`shrink` contract.
    unsafe fn resize(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
        zeroed: bool,
    ) -> Result<NonNull<[u8]>, AllocError> {
        let q = self.allocate(new)?;
        let p = q.cast::<u8>();
        let keep = old.size().min(new.size());
        // SAFETY: both blocks hold at least `keep` bytes and are distinct (the old one is still
        // held); the new one is `q.len()` bytes long.
        unsafe {
            std::ptr::copy_nonoverlapping(ptr.as_ptr(), p.as_ptr(), keep);
            if zeroed {
                p.as_ptr().add(keep).write_bytes(0, q.len() - keep);
            }
        }
        if old.size() != 0 {
            let held = self.take(ptr, old);
            // SAFETY: the caller gives the old block up.
            unsafe { Backing::free(ptr, held) };
        }
        Ok(q)
    }
}
