//! What the allocator fuzz targets share: [`Backing`], a backing allocator that checks how it is
//! used and fails, panics (in `allocate` or in `deallocate`) or calls back into the allocator it
//! backs on request, [`Model`], the live blocks with their byte patterns, [`nested`], the action a
//! re-entrant `Backing` runs, [`fills`], the typed-API fills whose callbacks place blocks in the
//! arena they fill, and [`pool_checker`], the slot-pool operations and checks of `pool_ops` and
//! `sync_ops`.

// `cfg(sanitize = "address")`: the blocks whose `deallocate` unwound are poisoned for
// AddressSanitizer (which `cargo fuzz` builds with by default). The targets build on nightly only.
#![feature(cfg_sanitize)]

pub mod fills;
pub mod nested;
pub mod pool_checker;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;
use std::sync::Once;

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global, Layout};

/// The largest request [`Backing`] serves; larger ones fail as if memory ran out. It keeps
/// huge requests away from the real allocator (and from libFuzzer's malloc limit).
pub const BACKING_CAP: usize = 32 << 20;

/// The byte [`Backing`] fills fresh blocks with, so that nothing can rely on fresh memory being
/// zero (odd, so it never equals a block pattern).
const FRESH: u8 = 0xA5;
/// The byte [`Backing`] fills blocks with before freeing them, so that a use after free reads
/// garbage even without a sanitizer.
const FREED: u8 = 0xDD;

/// The payload of the panic [`Backing`] injects after [`panic_next`](Backing::panic_next) or
/// [`panic_in_free`](Backing::panic_in_free), and of the panics the fills' callbacks raise (see
/// [`fills`]): a type of its own, so that no other panic can be mistaken for it.
#[derive(Debug)]
pub struct InjectedPanic;

/// Which call of [`Backing`] raised the injected panic that unwound last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// `allocate` (after [`panic_next`](Backing::panic_next)).
    Allocate,
    /// `deallocate` (after [`panic_in_free`](Backing::panic_in_free)).
    Deallocate,
}

/// Makes the panic hook ignore [`InjectedPanic`], once per process: libfuzzer-sys's hook aborts
/// on every panic (so that a crash is reported before unwinding), and stays in charge of every
/// other panic. Call it at the start of every input.
pub fn ignore_injected_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let next = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<InjectedPanic>() {
                next(info);
            }
        }));
    });
}

/// Runs `f`, under `catch_unwind` when `backing` has a panic armed (in `allocate` or in
/// `deallocate`): `None` when `f` unwound with [`InjectedPanic`] ([`Backing::take_unwound`] says
/// which call raised it). Any other panic goes on unwinding (the hook has aborted already).
pub fn run_catching<R>(backing: &Backing, f: impl FnOnce() -> R) -> Option<R> {
    if !backing.panic_armed() && !backing.free_panic_armed() {
        return Some(f());
    }
    catch_injected(f)
}

/// Runs `f` under `catch_unwind`: `None` when it unwound with [`InjectedPanic`]. Any other panic
/// goes on unwinding.
pub fn catch_injected<R>(f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) if payload.is::<InjectedPanic>() => None,
        Err(payload) => resume_unwind(payload),
    }
}

/// What [`Backing`] runs inside its next `allocate` call (see [`nested`]).
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
/// the block is *given up*: it no longer counts among the blocks held ([`live_blocks`]
/// (Backing::live_blocks)), its bytes are overwritten with the freed fill and poisoned for
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

/// Checks that an arena's statistics after an operation that a backing allocator's panic in
/// `allocate` unwound are those before it: all of them, or, for a typed fill (`fill`), all but
/// `used_bytes` (and `chunk_capacity`, which follows it), which may keep less than the largest
/// alignment of a fill's element (64) of padding: the fills that do not rewind their padding keep
/// it, and so does a `SyncArena`'s shared path.
pub fn assert_unwound_unchanged(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    fill: bool,
    what: &dyn std::fmt::Debug,
) {
    let mut after = *after;
    if fill && after.used_bytes >= before.used_bytes && after.used_bytes < before.used_bytes + 64 {
        after.chunk_capacity += after.used_bytes - before.used_bytes;
        after.used_bytes = before.used_bytes;
    }
    assert_eq!(
        &after, before,
        "{what:?}, unwound by the backing allocator, changed the arena"
    );
}

/// [`assert_unwound_unchanged`] for a `SyncArena` after a typed fill through one of its
/// `LocalArena` handles: the fill's first block may have taken the rest of the shared chunk as
/// the handle's new piece (no backing call) before a later request of the fill unwound, and the
/// handle keeps that piece. So bytes may move from the chunk's room to `used_bytes`, and nothing
/// else may change: no chunk, no large block, no byte held more.
pub fn assert_unwound_within_chunk(
    before: &arena_pool::ArenaStats,
    after: &arena_pool::ArenaStats,
    what: &dyn std::fmt::Debug,
) {
    assert!(
        after.used_bytes >= before.used_bytes
            && after.used_bytes + after.chunk_capacity == before.used_bytes + before.chunk_capacity,
        "{what:?}, unwound by the backing allocator, took more than the shared chunk's room: \
         {before:?} -> {after:?}"
    );
    let mut after = *after;
    after.used_bytes = before.used_bytes;
    after.chunk_capacity = before.chunk_capacity;
    assert_eq!(
        &after, before,
        "{what:?}, unwound by the backing allocator, changed the arena"
    );
}

/// A requested size, as the fuzzer picks it.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Size {
    /// 0 ..= 255 bytes.
    Small(u8),
    /// 0 ..= the target's largest ordinary size.
    Any(u16),
    /// One of [`HUGE`]: beyond what any allocator here can serve.
    Huge(u8),
    /// 60 KiB + `n` KiB: around and above the arenas' large-block threshold (64 KiB), up to
    /// 315 KiB, whatever the target's largest ordinary size (kept small: the model writes every
    /// byte of every block).
    Large(u8),
}

/// The smallest size [`Size::Large`] gives.
pub const LARGE_BASE: usize = 60 * 1024;

/// The most a grow may make a block (large blocks grow past the ordinary sizes).
pub const GROW_MAX: usize = 512 << 10;

/// Sizes no allocator here can serve: near `isize::MAX`, around 2^32 and 2^40, and just above
/// [`BACKING_CAP`]. Clamped to the largest valid size for the alignment in use.
pub const HUGE: [usize; 8] = [
    isize::MAX as usize,
    isize::MAX as usize - 4096,
    isize::MAX as usize / 2 + 1,
    usize::MAX / 4,
    1 << 40,
    (1 << 32) + 1,
    1 << 31,
    BACKING_CAP + 1,
];

impl Size {
    /// The size in bytes, with `Any` reduced modulo `max + 1`.
    pub fn bytes(self, max: usize) -> usize {
        match self {
            Size::Small(n) => n as usize,
            Size::Any(n) => n as usize % (max + 1),
            Size::Huge(i) => HUGE[i as usize % HUGE.len()],
            Size::Large(n) => LARGE_BASE + n as usize * 1024,
        }
    }

    /// Whether this is a size no allocator here can serve.
    pub fn is_huge(self) -> bool {
        matches!(self, Size::Huge(_))
    }
}

/// An alignment 1 ..= 4096 from a fuzzer byte.
pub fn align_from(log: u8) -> usize {
    1 << (log % 13)
}

/// A layout of `size` (clamped to the largest valid size) and `align`.
pub fn layout(size: usize, align: usize) -> Layout {
    let size = size.min(isize::MAX as usize - (align - 1));
    Layout::from_size_align(size, align).expect("a clamped size makes a valid layout")
}

/// A live block in the model.
#[derive(Clone, Copy, Debug)]
pub struct Block {
    /// Where it starts.
    pub ptr: NonNull<u8>,
    /// The size it was requested with.
    pub size: usize,
    /// The length the allocator reported (at least `size`).
    pub len: usize,
    /// The alignment it was requested with.
    pub align: usize,
    /// The byte its `len` bytes hold.
    pub pat: u8,
    /// When it was (re)allocated: a strictly increasing number.
    pub seq: u64,
    /// When it was made: its `seq`, unless the target says a resize kept it in its place (a
    /// large block of an arena), or it was made before it entered the model (`into_slice`).
    /// A scope's exit frees the blocks made since it began.
    pub born: u64,
    /// When it was made or last resized through the `Allocator` methods: its `seq` unless it was
    /// made before it entered the model. A restored checkpoint frees the blocks touched since it
    /// was taken.
    pub touched: u64,
    /// What the target wants to remember about it (e.g. which path served it).
    pub tag: u8,
    /// Placed through the typed API (`BumpAlloc`): never resized or freed on its own, only with
    /// everything else (reset, scope exit, restore).
    pub typed: bool,
}

impl Block {
    /// A size the block may be described with: between its requested size and its length.
    pub fn fit(&self, sel: u8) -> usize {
        self.size + sel as usize % (self.len - self.size + 1)
    }

    /// The layout of the block described with `size` (from [`fit`](Block::fit)).
    pub fn layout(&self, size: usize) -> Layout {
        Layout::from_size_align(size, self.align).expect("a block's fitting size is valid")
    }

    /// The bytes `[from, to)` of the block.
    ///
    /// # Safety
    /// The block is live and `to <= len`, and its bytes are initialised.
    unsafe fn bytes(&self, from: usize, to: usize) -> &[u8] {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(from), to - from) }
    }

    /// Checks that the bytes `[0, upto)` still hold the pattern.
    pub fn verify(&self, upto: usize) {
        assert!(upto <= self.len);
        // SAFETY: the model's blocks are live and fully written with their pattern.
        let bytes = unsafe { self.bytes(0, upto) };
        if let Some(i) = bytes.iter().position(|&b| b != self.pat) {
            panic!(
                "block {:p} (size {}, len {}, seq {}) corrupted at byte {i}: {:#x} instead of {:#x}",
                self.ptr, self.size, self.len, self.seq, bytes[i], self.pat
            );
        }
    }
}

/// Checks that the bytes `[from, to)` at `p` are zero.
///
/// # Safety
/// `p` is valid for reads of `to` initialised bytes.
pub unsafe fn assert_zero(p: NonNull<u8>, from: usize, to: usize, what: &str) {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr().add(from), to - from) };
    if let Some(i) = bytes.iter().position(|&b| b != 0) {
        panic!(
            "{what}: byte {} of {p:p} is {:#x}, not zero",
            from + i,
            bytes[i]
        );
    }
}

/// The live blocks: each filled with its own pattern, none overlapping another.
#[derive(Default)]
pub struct Model {
    blocks: Vec<Block>,
    /// Start -> end of every block with a non-zero length.
    spans: BTreeMap<usize, usize>,
    seq: u64,
}

impl Model {
    /// No block.
    pub fn new() -> Model {
        Model::default()
    }

    /// Live blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is live.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The live blocks.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The index of a live block chosen by `sel`, if there is one.
    pub fn pick(&self, sel: u16) -> Option<usize> {
        (!self.blocks.is_empty()).then(|| sel as usize % self.blocks.len())
    }

    /// The sequence number the next block will get.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Records a fresh block the allocator returned for `layout` with length `len`: checks
    /// its alignment, length and that it overlaps no live block, then fills it with a new
    /// pattern. Returns its index.
    pub fn insert(&mut self, ptr: NonNull<u8>, len: usize, layout: Layout, tag: u8) -> usize {
        let (size, align) = (layout.size(), layout.align());
        let addr = ptr.addr().get();
        assert!(
            addr.is_multiple_of(align),
            "{ptr:p} is not aligned to {align}"
        );
        assert!(len >= size, "{ptr:p}: length {len} < requested {size}");
        if len > 0 {
            let end = addr
                .checked_add(len)
                .expect("a block wraps the address space");
            if let Some((&s, &e)) = self.spans.range(..end).next_back() {
                assert!(
                    e <= addr,
                    "new block [{addr:#x}, {end:#x}) overlaps live block [{s:#x}, {e:#x})"
                );
            }
            self.spans.insert(addr, end);
        }
        let seq = self.seq;
        self.seq += 1;
        let pat = ((seq % 126) as u8 + 1) * 2;
        // SAFETY: the allocator handed out `len` writable bytes at `ptr`.
        unsafe { ptr.as_ptr().write_bytes(pat, len) };
        self.blocks.push(Block {
            ptr,
            size,
            len,
            align,
            pat,
            seq,
            born: seq,
            touched: seq,
            tag,
            typed: false,
        });
        self.blocks.len() - 1
    }

    /// [`insert`](Model::insert) of a block placed through the typed API (see [`Block::typed`]).
    pub fn insert_typed(&mut self, ptr: NonNull<u8>, len: usize, layout: Layout, tag: u8) -> usize {
        let i = self.insert(ptr, len, layout, tag);
        self.blocks[i].typed = true;
        i
    }

    /// Takes a sequence number for a block made now that enters the model later (see
    /// [`set_stamps`](Model::set_stamps)).
    pub fn take_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq - 1
    }

    /// Sets when block `i` was made and last touched (see [`Block::born`], [`Block::touched`]).
    pub fn set_stamps(&mut self, i: usize, born: u64, touched: u64) {
        let b = &mut self.blocks[i];
        assert!(born <= touched && touched <= b.seq);
        b.born = born;
        b.touched = touched;
    }

    /// Sets the tag of block `i`.
    pub fn set_tag(&mut self, i: usize, tag: u8) {
        self.blocks[i].tag = tag;
    }

    /// The index of a live block that was not placed through the typed API, chosen by `sel`.
    pub fn pick_untyped(&self, sel: u16) -> Option<usize> {
        let n = self.blocks.iter().filter(|b| !b.typed).count();
        if n == 0 {
            return None;
        }
        let k = sel as usize % n;
        self.blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.typed)
            .nth(k)
            .map(|(i, _)| i)
    }

    /// The index of the live block with sequence number `seq`, if there is one.
    pub fn find_seq(&self, seq: u64) -> Option<usize> {
        self.blocks.iter().position(|b| b.seq == seq)
    }

    /// Puts back a block [`remove`](Model::remove)d earlier and still live, unchanged (same
    /// pattern, same sequence number), after checking it overlaps no live block.
    pub fn reinsert(&mut self, b: Block) {
        if b.len > 0 {
            let (addr, end) = (b.ptr.addr().get(), b.ptr.addr().get() + b.len);
            if let Some((&s, &e)) = self.spans.range(..end).next_back() {
                assert!(
                    e <= addr,
                    "block [{addr:#x}, {end:#x}) overlaps live block [{s:#x}, {e:#x})"
                );
            }
            self.spans.insert(addr, end);
        }
        self.blocks.push(b);
    }

    /// The live blocks with a non-zero length, as (start, end), by start.
    pub fn spans(&self) -> Vec<(usize, usize)> {
        self.spans.iter().map(|(&s, &e)| (s, e)).collect()
    }

    /// Removes block `i` from the model (its memory is not touched).
    pub fn remove(&mut self, i: usize) -> Block {
        let b = self.blocks.swap_remove(i);
        if b.len > 0 {
            self.spans.remove(&b.ptr.addr().get());
        }
        b
    }

    /// Checks every live block's bytes.
    pub fn verify_all(&self) {
        for b in &self.blocks {
            b.verify(b.len);
        }
    }

    /// Forgets every block touched at or after `since` (made, grown or shrunk since: what a
    /// checkpoint's restore may free).
    pub fn forget_since(&mut self, since: u64) {
        self.forget_where(|b| b.touched >= since);
    }

    /// Forgets every block made at or after `since` (what a scope's exit frees).
    pub fn forget_made_since(&mut self, since: u64) {
        self.forget_where(|b| b.born >= since);
    }

    fn forget_where(&mut self, f: impl Fn(&Block) -> bool) {
        let mut i = 0;
        while i < self.blocks.len() {
            if f(&self.blocks[i]) {
                self.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Gives every block tagged `from` the tag `to` (e.g. when the handle that served them is
    /// gone but the blocks live on).
    pub fn retag(&mut self, from: u8, to: u8) {
        for b in self.blocks.iter_mut().filter(|b| b.tag == from) {
            b.tag = to;
        }
    }

    /// The sum of the lengths of the live blocks tagged `tag`.
    pub fn bytes_tagged(&self, tag: u8) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.tag == tag)
            .map(|b| b.len)
            .sum()
    }

    /// Forgets every block.
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.spans.clear();
    }
}

/// `allocate` (or `allocate_zeroed`) of `layout` through `a`; on success the block enters the
/// model (zeroed memory is checked first) and its index is returned.
pub fn alloc_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    layout: Layout,
    zeroed: bool,
    tag: u8,
) -> Option<usize> {
    let r = if zeroed {
        a.allocate_zeroed(layout)
    } else {
        a.allocate(layout)
    };
    let block = r.ok()?;
    let (p, len) = (block.cast::<u8>(), block.len());
    if zeroed {
        // SAFETY: a zeroed block of `len` bytes.
        unsafe { assert_zero(p, 0, len, "allocate_zeroed") };
    }
    Some(m.insert(p, len, layout, tag))
}

/// `grow` (or `grow_zeroed`) of block `i`, described with `old_size` (a fitting size), to `new`
/// through `a`. Checks the block before; on success checks that its first `old_size` bytes
/// moved with it and, for `grow_zeroed`, that the new bytes are zero (the bytes between the
/// new size and the old length may instead keep their old value), then replaces it in the
/// model. On failure checks that it is intact. Returns the new index, or `None` on failure.
pub fn grow_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    i: usize,
    old_size: usize,
    new: Layout,
    zeroed: bool,
    tag: u8,
) -> Option<usize> {
    let b = m.blocks[i];
    b.verify(b.len);
    assert!(new.size() >= old_size);
    // SAFETY: `b` is live in `a` and `old_size` fits it; the new size is not smaller.
    let r = unsafe {
        if zeroed {
            a.grow_zeroed(b.ptr, b.layout(old_size), new)
        } else {
            a.grow(b.ptr, b.layout(old_size), new)
        }
    };
    let Ok(q) = r else {
        b.verify(b.len);
        return None;
    };
    let (p, len) = (q.cast::<u8>(), q.len());
    assert!(len >= new.size(), "grow: length {len} < {}", new.size());
    // SAFETY: the new block holds `len` bytes: the first `old_size` were preserved, the rest
    // were either preserved or zeroed (`grow_zeroed`) or are the old block's, all initialised
    // but for plain `grow`, whose tail is not read.
    unsafe {
        let kept = std::slice::from_raw_parts(p.as_ptr(), old_size);
        if let Some(k) = kept.iter().position(|&x| x != b.pat) {
            panic!(
                "grow: byte {k} of {p:p} lost (was {:#x} at {:p})",
                b.pat, b.ptr
            );
        }
        if zeroed {
            let tail = std::slice::from_raw_parts(p.as_ptr().add(old_size), len - old_size);
            for (k, &x) in tail.iter().enumerate() {
                let at = old_size + k;
                let may_keep = at >= new.size() && at < b.len;
                assert!(
                    x == 0 || (may_keep && x == b.pat),
                    "grow_zeroed: byte {at} of {p:p} is {x:#x} (old size {old_size}, old len {}, new size {}, len {len})",
                    b.len,
                    new.size()
                );
            }
        }
    }
    m.remove(i);
    Some(m.insert(p, len, new, tag))
}

/// `shrink` of block `i`, described with `old_size`, to `new` through `a`: like
/// [`grow_op`], keeping the first `new.size()` bytes.
pub fn shrink_op<A: Allocator + ?Sized>(
    a: &A,
    m: &mut Model,
    i: usize,
    old_size: usize,
    new: Layout,
    tag: u8,
) -> Option<usize> {
    let b = m.blocks[i];
    b.verify(b.len);
    assert!(new.size() <= old_size);
    // SAFETY: `b` is live in `a` and `old_size` fits it; the new size is not larger.
    let r = unsafe { a.shrink(b.ptr, b.layout(old_size), new) };
    let Ok(q) = r else {
        b.verify(b.len);
        return None;
    };
    let (p, len) = (q.cast::<u8>(), q.len());
    assert!(len >= new.size(), "shrink: length {len} < {}", new.size());
    // SAFETY: the first `new.size()` bytes were preserved from the old block.
    let kept = unsafe { std::slice::from_raw_parts(p.as_ptr(), new.size()) };
    if let Some(k) = kept.iter().position(|&x| x != b.pat) {
        panic!(
            "shrink: byte {k} of {p:p} lost (was {:#x} at {:p})",
            b.pat, b.ptr
        );
    }
    m.remove(i);
    Some(m.insert(p, len, new, tag))
}

/// `deallocate` of block `i`, described with `size`, through `a`, after checking its bytes.
pub fn dealloc_op<A: Allocator + ?Sized>(a: &A, m: &mut Model, i: usize, size: usize) -> Block {
    let b = m.blocks[i];
    b.verify(b.len);
    m.remove(i);
    // SAFETY: `b` is live in `a` and `size` fits it; it leaves the model, so it is not used
    // again.
    unsafe { a.deallocate(b.ptr, b.layout(size)) };
    b
}
