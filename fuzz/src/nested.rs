//! The action a re-entrant [`Backing`] runs inside its next `allocate` call: it frees a block
//! of the model (if one was chosen) and allocates a block through the allocator that `Backing`
//! backs, the allocator under test, while that allocator waits for `Backing`.
//!
//! The new block is checked at once: aligned, at least as long as requested, zero when asked
//! for, and overlapping none of the blocks that were live when the action was armed (those the
//! outer operation still holds among them). It is filled with [`NESTED_FILL`]. Once the outer
//! operation is over, [`Settled::insert`] checks the fill is intact and the target adds the block
//! to its model, which checks it like any other from then on.

use std::cell::RefCell;
use std::ptr::NonNull;
use std::rc::Rc;

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Arena, ArenaRef, LocalArena, Pool, SizeClassPool, SyncArena, SyncPool};

use crate::{Backing, Block, Model, assert_zero};

/// The byte the action fills its block with (odd, so no block pattern, and neither the fresh
/// nor the freed fill of [`Backing`]).
pub const NESTED_FILL: u8 = 0x3B;

/// An allocator a nested action can use: what decides whether it may refuse a nested request.
pub trait Reentrant: Allocator {
    /// For the arenas and handles, the bytes left in the current chunk or piece; for the slot
    /// pools, the free slots; 0 where the targets do not use it.
    fn room(&self) -> usize;
}

impl Reentrant for Arena<&Backing> {
    fn room(&self) -> usize {
        self.chunk_capacity()
    }
}

/// A scope through a reference: `ArenaRef` itself is unsized.
impl Reentrant for &ArenaRef<'_> {
    fn room(&self) -> usize {
        self.chunk_capacity()
    }
}

impl Reentrant for LocalArena<'_, &Backing> {
    fn room(&self) -> usize {
        self.chunk_capacity()
    }
}

impl Reentrant for SyncArena<&Backing> {
    fn room(&self) -> usize {
        0
    }
}

impl Reentrant for Pool<&Backing> {
    fn room(&self) -> usize {
        self.capacity() - self.in_use()
    }
}

impl Reentrant for SyncPool<&Backing> {
    fn room(&self) -> usize {
        let s = self.stats();
        s.capacity - s.in_use
    }
}

impl Reentrant for SizeClassPool<&Backing> {
    fn room(&self) -> usize {
        0
    }
}

/// What the action does.
pub struct Plan {
    /// The block it allocates.
    pub layout: Layout,
    /// Through `allocate_zeroed`.
    pub zeroed: bool,
    /// A block it frees first, with the size it is described with: a block of the allocator
    /// the action uses, taken out of the model when the action is armed.
    pub free: Option<(Block, usize)>,
    /// The blocks live when it was armed (from [`Model::spans`]).
    pub spans: Vec<(usize, usize)>,
}

/// What the action saw and got.
#[derive(Default)]
struct Log {
    ran: bool,
    room: usize,
    failing: bool,
    block: Option<(NonNull<u8>, usize)>,
}

/// An armed action, until the operation after it is over.
pub struct Armed {
    log: Rc<RefCell<Log>>,
    layout: Layout,
    free: Option<Block>,
}

/// Arms `backing` to run `plan` through `a` inside its next `allocate` call. The targets arm it
/// at the start of the operation after `ReenterNext` and settle it when that is over.
///
/// # Safety
/// `a` is backed by `backing` and stays alive and in place until the action has run or
/// [`Armed::settle`] has disarmed `backing`; the block in `plan.free` is live in `a`.
pub unsafe fn arm<A: Reentrant>(backing: &Backing, a: &A, plan: Plan) -> Armed {
    let log = Rc::new(RefCell::new(Log::default()));
    let armed = Armed {
        log: log.clone(),
        layout: plan.layout,
        free: plan.free.map(|(b, _)| b),
    };
    // The allocator's type carries lifetimes a boxed action cannot; erased here and restored
    // in `run`, monomorphised for it.
    let erased = std::ptr::from_ref(a).cast::<()>();
    let run: unsafe fn(*const (), &Backing, Plan, &RefCell<Log>) = run::<A>;
    backing.run_inside_next(Box::new(move |backing| {
        // SAFETY: the action runs only inside an allocate call of `backing` made during the
        // operation it was armed for (it is disarmed once that is over), while the allocator
        // `erased` points to is alive and in place, by `arm`'s contract.
        unsafe { run(erased, backing, plan, &log) }
    }));
    armed
}

/// The action.
///
/// # Safety
/// `a` points to a live `A`, and the block in `plan.free` is live in it.
unsafe fn run<A: Reentrant>(a: *const (), backing: &Backing, plan: Plan, log: &RefCell<Log>) {
    // SAFETY: forwarded from the caller.
    let a = unsafe { &*a.cast::<A>() };
    let mut spans = plan.spans;
    if let Some((b, size)) = plan.free {
        b.verify(b.len);
        // SAFETY: `b` is live in `a` and `size` fits it; it left the model when the action was
        // armed, so nothing uses it again.
        unsafe { a.deallocate(b.ptr, b.layout(size)) };
        if b.len > 0 {
            spans.retain(|&(s, _)| s != b.ptr.addr().get());
        }
    }
    let (room, failing) = (a.room(), backing.failing());
    let l = plan.layout;
    let r = if plan.zeroed {
        a.allocate_zeroed(l)
    } else {
        a.allocate(l)
    };
    let block = r.ok().map(|q| {
        let (p, len) = (q.cast::<u8>(), q.len());
        let addr = p.addr().get();
        assert!(
            addr.is_multiple_of(l.align()),
            "nested: {p:p} is not aligned to {}",
            l.align()
        );
        assert!(len >= l.size(), "nested: length {len} < requested {l:?}");
        if plan.zeroed {
            // SAFETY: a zeroed block of `len` bytes.
            unsafe { assert_zero(p, 0, len, "nested allocate_zeroed") };
        }
        if len > 0 {
            let end = addr + len;
            let i = spans.partition_point(|&(s, _)| s < end);
            if let Some(&(s, e)) = i.checked_sub(1).map(|i| &spans[i]) {
                assert!(
                    e <= addr,
                    "nested block [{addr:#x}, {end:#x}) overlaps block [{s:#x}, {e:#x}), live while the backing allocator ran"
                );
            }
            // SAFETY: a fresh block of `len` writable bytes.
            unsafe { p.as_ptr().write_bytes(NESTED_FILL, len) };
        }
        (p, len)
    });
    *log.borrow_mut() = Log {
        ran: true,
        room,
        failing,
        block,
    };
}

impl Armed {
    /// After the operation that followed the arming: disarms `backing`'s action (one that did
    /// not run never will). When the action ran, what it did; when it did not, the block it was
    /// to free goes back to the model.
    pub fn settle(self, backing: &Backing, m: &mut Model) -> Option<Settled> {
        backing.disarm_nested();
        let log = self.log.take();
        if !log.ran {
            if let Some(b) = self.free {
                m.reinsert(b);
            }
            return None;
        }
        Some(Settled {
            layout: self.layout,
            room: log.room,
            failing: log.failing,
            block: log.block,
            freed: self.free,
        })
    }
}

/// What an action that ran did.
#[derive(Debug)]
pub struct Settled {
    /// The layout it requested.
    pub layout: Layout,
    /// The allocator's [`Reentrant::room`] just before the request.
    pub room: usize,
    /// Whether an injected failure was pending just before the request.
    pub failing: bool,
    /// The block it got (start, length), `None` when the request was refused.
    pub block: Option<(NonNull<u8>, usize)>,
    /// The block it freed.
    pub freed: Option<Block>,
}

impl Settled {
    /// Whether the request was served.
    pub fn served(&self) -> bool {
        self.block.is_some()
    }

    /// Adds the block it got to the model, tagged `tag`, after checking that the outer
    /// operation left its fill intact. Returns its index.
    pub fn insert(&self, m: &mut Model, tag: u8) -> Option<usize> {
        let (p, len) = self.block?;
        // SAFETY: the block is live (nothing frees it before it is in the model) and `len`
        // bytes long, written with the fill by the action.
        let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
        if let Some(i) = bytes.iter().position(|&b| b != NESTED_FILL) {
            panic!(
                "nested block {p:p} ({:?}, len {len}) overwritten at byte {i} ({:#x}) by the outer operation",
                self.layout, bytes[i]
            );
        }
        Some(m.insert(p, len, self.layout, tag))
    }
}
