//! What the allocator fuzz targets share: [`Backing`], a backing allocator that checks how it is
//! used and fails, panics or calls back into the allocator it backs on request, [`Model`], the
//! live blocks with their byte patterns, [`nested`], the action a re-entrant `Backing` runs, and
//! [`pool_checker`], the slot-pool operations and checks of `pool_ops` and `sync_ops`.

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

/// The payload of the panic [`Backing`] injects after [`panic_next`](Backing::panic_next): a
/// type of its own, so that no other panic can be mistaken for it.
#[derive(Debug)]
pub struct InjectedPanic;

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

/// Runs `f`, under `catch_unwind` when `backing` has a panic armed: `None` when `f` unwound with
/// [`InjectedPanic`]. Any other panic goes on unwinding (the hook has aborted already).
pub fn run_catching<R>(backing: &Backing, f: impl FnOnce() -> R) -> Option<R> {
    if !backing.panic_armed() {
        return Some(f());
    }
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
#[derive(Default)]
pub struct Backing {
    blocks: RefCell<HashMap<usize, Held>>,
    fail: Cell<u32>,
    panic: Cell<bool>,
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

    /// Whether an injected panic is pending.
    pub fn panic_armed(&self) -> bool {
        self.panic.get()
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

    /// Forgets a pending injected panic and a pending action (which then never runs).
    pub fn disarm(&self) {
        self.panic.set(false);
        self.disarm_nested();
    }

    /// Forgets a pending action (which then never runs).
    pub fn disarm_nested(&self) {
        let pending = self.nested.borrow_mut().take();
        drop(pending);
    }

    /// Blocks handed out and not given back.
    pub fn live_blocks(&self) -> usize {
        self.blocks.borrow().len()
    }

    /// Bytes (returned lengths) of the blocks handed out and not given back.
    pub fn live_bytes(&self) -> usize {
        self.blocks.borrow().values().map(|h| h.len).sum()
    }
}

// SAFETY: every block comes from `Global` with a layout of at least the requested size and the
// requested alignment, and goes back to it with that same layout; the record of live blocks
// only adds checks.
unsafe impl Allocator for Backing {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if self.panic.replace(false) {
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
        let Some(held) = self.blocks.borrow_mut().remove(&ptr.addr().get()) else {
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
        // SAFETY: the block is live and `held.len` bytes long; it came from `Global` with this
        // layout, which was valid then.
        unsafe {
            ptr.as_ptr().write_bytes(FREED, held.len);
            Global.deallocate(ptr, Layout::from_size_align_unchecked(held.len, held.align));
        }
    }
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
    /// What the target wants to remember about it (e.g. which path served it).
    pub tag: u8,
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
            tag,
        });
        self.blocks.len() - 1
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

    /// Forgets every block with `seq >= since` (freed by a scope exit or a checkpoint restore).
    pub fn forget_since(&mut self, since: u64) {
        let mut i = 0;
        while i < self.blocks.len() {
            if self.blocks[i].seq >= since {
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
