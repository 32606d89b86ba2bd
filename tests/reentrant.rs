//! Backing allocators that panic, and backing allocators that use the arena or pool they back
//! (docs/DESIGN.md §7): every live block stays intact and in place, no two blocks overlap, and every
//! statistic is exact afterwards, for `Arena`, scopes, `SyncArena`, `LocalArena`, `Pool`,
//! `SizeClassPool` and `SyncPool`. A nested request that needs a refill of the allocator being
//! refilled is refused (`Err`); everything else a nested call asks for is served.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Once;

use arena_pool::allocator_api2::alloc::{AllocError, Allocator, Global};
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, LocalArena, Pool, SizeClassOptions, SizeClassPool, SyncArena, SyncPool};

// ----- the backing allocator -----

/// Scales a count down under Miri (about 1 000 times slower than a native run).
const fn scaled(native: usize, miri: usize) -> usize {
    if cfg!(miri) { miri } else { native }
}

/// What [`Hooked`] panics with.
const PANIC: &str = "the backing allocator panics (test)";

/// A backing allocator on `Global` that records the blocks it holds, can panic in a chosen
/// `allocate` call, and can run one nested action (a use of the allocator it backs) inside the
/// next `allocate` call, before it allocates.
#[derive(Default)]
struct Hooked {
    /// `allocate` calls so far.
    calls: Cell<usize>,
    /// Panic in the `allocate` call with this number.
    panic_at: Cell<Option<usize>>,
    /// Run inside the next `allocate` call.
    nested: RefCell<Option<std::boxed::Box<dyn FnOnce()>>>,
    /// Live blocks by address.
    blocks: RefCell<HashMap<usize, Layout>>,
}

impl Hooked {
    /// The next `allocate` call panics.
    fn panic_on_next(&self) {
        self.panic_at.set(Some(self.calls.get()));
    }

    /// The `allocate` call `n` calls from now panics.
    fn panic_after(&self, n: usize) {
        self.panic_at.set(Some(self.calls.get() + n));
    }

    fn disarm(&self) {
        self.panic_at.set(None);
        self.nested.borrow_mut().take();
    }

    /// Runs `f` inside the next `allocate` call.
    fn run_inside_next(&self, f: impl FnOnce() + 'static) {
        *self.nested.borrow_mut() = Some(std::boxed::Box::new(f));
    }

    /// Whether the action set by `run_inside_next` has run.
    fn nested_ran(&self) -> bool {
        self.nested.borrow().is_none()
    }

    fn held_blocks(&self) -> usize {
        self.blocks.borrow().len()
    }

    fn held_bytes(&self) -> usize {
        self.blocks.borrow().values().map(|l| l.size()).sum()
    }
}

// SAFETY: every block comes from `Global` and goes back to it with the layout it was taken
// with; the hooks run before a block is taken and touch no block.
unsafe impl Allocator for Hooked {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let n = self.calls.get();
        self.calls.set(n + 1);
        if self.panic_at.get() == Some(n) {
            self.panic_at.set(None);
            panic!("{PANIC}");
        }
        // Taken out first, so that the action may use this allocator again.
        let nested = self.nested.borrow_mut().take();
        if let Some(f) = nested {
            f();
        }
        let p = Global.allocate(layout)?;
        let old = self
            .blocks
            .borrow_mut()
            .insert(p.cast::<u8>().addr().get(), layout);
        assert!(old.is_none(), "block handed out twice");
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let held = self.blocks.borrow_mut().remove(&ptr.addr().get());
        assert_eq!(held, Some(layout), "freed with another layout, or not ours");
        // SAFETY: the block came from `Global` with `layout`.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// Silences the test panics (others still print), once for the whole test binary.
fn quiet() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(std::boxed::Box::new(move |info| {
            if info.payload().downcast_ref::<String>().map(String::as_str) != Some(PANIC) {
                default(info);
            }
        }));
    });
}

/// Runs `f`, expecting it to unwind with the backing allocator's panic.
fn expect_backing_panic(f: impl FnOnce()) {
    let payload =
        catch_unwind(AssertUnwindSafe(f)).expect_err("the backing allocator was not called");
    assert_eq!(
        payload.downcast_ref::<String>().map(String::as_str),
        Some(PANIC),
        "another panic"
    );
}

/// The message of a panic `f` unwinds with.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("no panic");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast_ref::<&str>()
            .map_or_else(|| "<not a string>".into(), |s| s.to_string()),
    }
}

/// Asserts that no two of `ranges` (address, length) overlap.
fn assert_disjoint(ranges: &[(usize, usize)]) {
    let mut r: std::vec::Vec<_> = ranges.iter().filter(|r| r.1 > 0).copied().collect();
    r.sort_unstable();
    for pair in r.windows(2) {
        assert!(
            pair[0].0 + pair[0].1 <= pair[1].0,
            "blocks overlap: {pair:?}"
        );
    }
}

fn range_of<T>(s: &[T]) -> (usize, usize) {
    (s.as_ptr().addr(), size_of_val(s))
}

/// Pushes onto `v` until a push calls the backing allocator, which `arm` sets up. If that push
/// unwinds, `v` and `snapshot()` (the allocator's statistics) must be as they were before it.
fn push_until_backing_call<T: Clone + PartialEq + core::fmt::Debug, A: Allocator, S>(
    v: &mut Vec<T, A>,
    value: T,
    hooked: &Hooked,
    arm: impl FnOnce(&Hooked),
    snapshot: impl Fn() -> S,
) where
    S: PartialEq + core::fmt::Debug,
{
    let calls = hooked.calls.get();
    arm(hooked);
    for _ in 0..100_000 {
        let (before, stats) = (v.len(), snapshot());
        let pushed = catch_unwind(AssertUnwindSafe(|| v.push(value.clone())));
        if hooked.calls.get() != calls {
            if pushed.is_err() {
                assert_eq!(v.len(), before);
                assert_eq!(snapshot(), stats, "a statistic changed");
            }
            return;
        }
        pushed.expect("a push that did not call the backing allocator panicked");
    }
    panic!("the backing allocator was never called");
}

// ----- Arena -----

/// A `Vec<Box<u64>>` that is the arena's last block, grown when its chunk is full with a backing
/// allocator that panics. The vector keeps its buffer (as allocator-api2's `Vec` does when `grow`
/// unwinds), so the buffer must still be allocated: the next allocation must not land on it
/// (under Miri, a box in the buffer would then dangle).
#[test]
fn arena_grow_that_unwinds_keeps_the_last_block_allocated() {
    quiet();
    let arena = Arena::new_in(Hooked::default());
    let mut v: Vec<std::boxed::Box<u64>, &Arena<Hooked>> = Vec::with_capacity_in(32, &arena);
    for i in 0..32 {
        v.push(std::boxed::Box::new(i));
    }
    let stats = arena.stats();
    arena.allocator().panic_on_next();
    expect_backing_panic(|| v.push(std::boxed::Box::new(32)));
    assert_eq!(arena.stats(), stats, "a statistic changed");
    let other = arena.alloc([0xEEu8; 64]);
    assert_disjoint(&[range_of(&v), range_of(other)]);
    assert!(v.iter().map(|b| **b).eq(0..32));
    // The vector is still the block before `other`, and grows elsewhere now.
    v.push(std::boxed::Box::new(32));
    assert!(v.iter().map(|b| **b).eq(0..33));
    assert_eq!(*other, [0xEE; 64]);
    assert_eq!(
        arena.stats().allocated_bytes_including_metadata,
        arena.allocator().held_bytes()
    );
}

/// The first chunk of an empty arena, with a backing allocator that panics: the arena stays
/// empty and usable.
#[test]
fn arena_first_chunk_that_unwinds_leaves_an_empty_arena() {
    quiet();
    let arena = Arena::new_in(Hooked::default());
    arena.allocator().panic_on_next();
    expect_backing_panic(|| {
        arena.alloc(1u64);
    });
    let s = arena.stats();
    assert_eq!((s.chunks, s.used_bytes, s.allocated_bytes), (0, 0, 0));
    assert_eq!(*arena.alloc(7u64), 7);
    assert_eq!(arena.stats().chunks, 1);
}

/// Shrinking the last block to an alignment it does not have moves it; when that needs a chunk
/// and the backing allocator panics, the block stays where it was, last, with its bytes.
#[test]
fn arena_shrink_to_a_larger_alignment_that_unwinds_keeps_the_block() {
    quiet();
    let arena = Arena::new_in(Hooked::default());
    let old = Layout::from_size_align(400, 16).unwrap();
    let new = Layout::from_size_align(200, 4096).unwrap();
    let p = arena.allocate(old).unwrap().cast::<u8>();
    // SAFETY: a fresh block of 400 bytes.
    unsafe { p.as_ptr().write_bytes(0x5A, 400) };
    let stats = arena.stats();
    // Whether the chunk holds a 4096-aligned place for 200 bytes at or after `p` (then the block
    // moves within the chunk and the backing allocator is not called).
    let end = p.addr().get() + 400 + arena.chunk_capacity();
    let in_chunk = p.addr().get().next_multiple_of(4096) + 200 <= end;
    arena.allocator().panic_on_next();
    // SAFETY: `p` is a live block of `old`, and `new` is smaller.
    let shrunk = catch_unwind(AssertUnwindSafe(|| unsafe { arena.shrink(p, old, new) }));
    if in_chunk {
        arena.allocator().disarm();
        assert!(shrunk.is_ok());
        return;
    }
    assert!(shrunk.is_err());
    assert_eq!(arena.stats(), stats);
    // SAFETY: the block is still live and holds its 400 bytes.
    let bytes = unsafe { core::slice::from_raw_parts(p.as_ptr(), 400) };
    assert!(bytes.iter().all(|&b| b == 0x5A));
    // Still the last block: freeing it rolls the position back.
    // SAFETY: `p` is a live block of `old`.
    unsafe { arena.deallocate(p, old) };
    assert_eq!(arena.used_bytes(), 0);
}

/// In a scope, a growing vector whose grow unwinds keeps its buffer; the scope's later blocks
/// do not overlap it, and the scope's exit brings the position back exactly.
#[test]
fn arena_scope_grow_that_unwinds_keeps_the_block() {
    quiet();
    let hooked = Hooked::default();
    let mut arena = Arena::new_in(&hooked);
    let kept = arena.alloc_str("parent").as_ptr();
    let before = arena.used_bytes();
    arena.with_scope(|scope| {
        let mut v: Vec<u32, &arena_pool::ArenaRef> = Vec::new_in(&*scope);
        push_until_backing_call(&mut v, 7, &hooked, Hooked::panic_on_next, || scope.stats());
        let n = v.len();
        assert!(v.iter().all(|&x| x == 7));
        let other = scope.alloc_slice_fill_copy(100, 0xC3u8);
        assert_disjoint(&[range_of(&v), range_of(other), (kept.addr(), 6)]);
        v.push(8);
        assert_eq!(v.len(), n + 1);
        assert!(other.iter().all(|&b| b == 0xC3));
    });
    assert_eq!(arena.used_bytes(), before);
    // SAFETY: the parent's block lives until the arena is reset or dropped.
    assert_eq!(unsafe { core::slice::from_raw_parts(kept, 6) }, b"parent");
    assert_eq!(
        arena.stats().allocated_bytes_including_metadata,
        hooked.held_bytes()
    );
}

/// A block: where it starts and how many bytes it has.
type Span = (NonNull<u8>, usize);

/// What a re-entrant backing allocator's action reports back to the test, once it has run.
type Report<T> = Rc<Cell<Option<T>>>;

/// A nested block, as the action records it; `None` when the nested request was refused.
type Nested = Report<Option<Span>>;

/// Asserts the nested block is intact: `len` bytes of `fill`.
fn assert_filled(block: Span, fill: u8) {
    // SAFETY: the block was allocated by the nested action and lives until its arena is reset or
    // dropped, or its pool frees it; the tests read it before that.
    let bytes = unsafe { core::slice::from_raw_parts(block.0.as_ptr(), block.1) };
    // Compared as a whole (a byte at a time is slow under Miri).
    assert!(bytes == vec![fill; block.1], "nested block overwritten");
}

/// An arena on a backing allocator that allocates in it: a nested request the current chunk
/// holds is served; one that needs a chunk is refused (`Err` from the fallible API); none of it
/// disturbs the outer call.
fn arena_with_reentrant_backing(nested_len: usize) -> (std::vec::Vec<u64>, Option<Span>) {
    let arena = Rc::new(Arena::new_in(Hooked::default()));
    let mut v: Vec<u64, &Arena<Hooked>> = Vec::with_capacity_in(32, &*arena);
    v.extend(0..32);
    let weak = Rc::downgrade(&arena);
    let nested: Nested = Rc::default();
    let out = nested.clone();
    arena.allocator().run_inside_next(move || {
        let arena = weak.upgrade().expect("the arena is alive");
        let block = arena
            .try_alloc_slice_fill_copy(nested_len, 0xAAu8)
            .ok()
            .map(|s| (NonNull::from(&mut *s).cast::<u8>(), s.len()));
        out.set(Some(block));
    });
    v.push(32); // outgrows the first chunk: the backing allocator is called, and re-enters
    assert!(arena.allocator().nested_ran());
    let block = nested.get().expect("the nested action ran");
    let after = arena.alloc_slice_fill_copy(64, 0x55u8);
    let mut ranges = vec![range_of(&v), range_of(after)];
    ranges.extend(block.map(|(p, len)| (p.addr().get(), len)));
    assert_disjoint(&ranges);
    if let Some(b) = block {
        assert_filled(b, 0xAA);
    }
    assert!(after.iter().all(|&b| b == 0x55));
    assert!(v.iter().copied().eq(0..33));
    let s = arena.stats();
    assert_eq!(
        s.allocated_bytes_including_metadata,
        arena.allocator().held_bytes()
    );
    assert_eq!(s.chunks + s.large_blocks, arena.allocator().held_blocks());
    let values = v.to_vec();
    drop(v);
    (values, block)
}

/// A nested allocation that fits the current chunk, made while a growing `Vec` waits for the
/// backing allocator: the vector's bytes stay allocated during the call, so the nested block
/// cannot land on them (the vector would then read the nested block's `0xAA…`).
#[test]
fn arena_nested_allocation_in_the_current_chunk_is_served() {
    let (values, block) = arena_with_reentrant_backing(64);
    assert!(values.into_iter().eq(0..33));
    assert!(
        block.is_some(),
        "a nested request with room in the chunk is served"
    );
}

/// A nested allocation that needs a chunk of its own is refused: the outer call has read the
/// chunk ring and is about to link its chunk there.
#[test]
fn arena_nested_refill_is_refused() {
    let (values, block) = arena_with_reentrant_backing(4096);
    assert!(values.into_iter().eq(0..33));
    assert!(block.is_none(), "a nested refill is refused");
}

/// Through the `Allocator` methods a request of at least 64 KiB is a large block even where the
/// chunk has room, so made nested it is refused like a refill; the same bytes through the typed
/// API are bumped in the chunk and served.
#[test]
fn arena_nested_large_block_is_refused_where_the_chunk_has_room() {
    let len = scaled(96 * 1024, 66 * 1024);
    for typed in [false, true] {
        let arena = Rc::new(Arena::with_capacity_in(4 * len, Hooked::default()));
        let room = arena.chunk_capacity();
        assert!(room >= 4 * len);
        let weak = Rc::downgrade(&arena);
        let nested: Nested = Rc::default();
        let out = nested.clone();
        arena.allocator().run_inside_next(move || {
            let arena = weak.upgrade().expect("the arena is alive");
            let block = if typed {
                arena
                    .try_alloc_slice_fill_copy(len, 0xAAu8)
                    .ok()
                    .map(|s| (NonNull::from(&mut *s).cast::<u8>(), s.len()))
            } else {
                let l = Layout::from_size_align(len, 8).unwrap();
                (*arena).allocate(l).ok().map(|q| {
                    // SAFETY: a fresh block of `len` writable bytes.
                    unsafe { q.cast::<u8>().as_ptr().write_bytes(0xAA, len) };
                    (q.cast::<u8>(), len)
                })
            };
            out.set(Some(block));
        });
        // A large block of its own: the backing allocator is called, and re-enters.
        let outer: Vec<u8, &Arena<Hooked>> = Vec::with_capacity_in(len, &*arena);
        assert!(arena.allocator().nested_ran());
        let block = nested.get().expect("the nested action ran");
        let s = arena.stats();
        assert_eq!(s.large_blocks, 1, "typed: {typed}");
        if typed {
            let b = block.expect("a typed nested request the chunk holds is served");
            assert_filled(b, 0xAA);
            assert_disjoint(&[range_of(&outer), (b.0.addr().get(), b.1)]);
            assert!(arena.chunk_capacity() < room - len + 8);
        } else {
            assert!(block.is_none(), "a nested large block is refused");
            assert_eq!(arena.chunk_capacity(), room, "the chunk is untouched");
        }
        assert_eq!(
            s.allocated_bytes_including_metadata,
            arena.allocator().held_bytes()
        );
        drop(outer);
    }
}

/// The panicking API names the refusal, and the outer call, unwound by it, leaves everything as
/// it was.
#[test]
fn arena_nested_refill_through_the_panicking_api_names_the_cause() {
    let arena = Rc::new(Arena::new_in(Hooked::default()));
    let mut v: Vec<u64, &Arena<Hooked>> = Vec::with_capacity_in(32, &*arena);
    v.extend(0..32);
    let stats = arena.stats();
    let weak = Rc::downgrade(&arena);
    arena.allocator().run_inside_next(move || {
        let arena = weak.upgrade().expect("the arena is alive");
        arena.alloc_slice_fill_copy(4096, 0u8);
    });
    let message = panic_message(|| v.push(32));
    assert!(message.contains("called back into the arena"), "{message}");
    assert_eq!(arena.stats(), stats);
    let after = arena.alloc(0x77u64);
    assert_disjoint(&[range_of(&v), range_of(core::slice::from_ref(after))]);
    assert!(v.iter().copied().eq(0..32));
}

/// A large block (outside the chunks) whose grow unwinds in the backing allocator stays the
/// caller's: same bytes, same statistics, still freed by the arena afterwards. For `Arena` and
/// `SyncArena`'s shared path.
#[test]
fn large_block_grow_that_unwinds_keeps_the_block() {
    fn check<A: Allocator>(a: &A, hooked: &Hooked, stats: impl Fn() -> (usize, usize)) {
        // Past the 64 KiB threshold: a large block.
        const SIZE: usize = scaled(100_000, 70_000);
        // Filled and compared in one piece each (byte by byte, Miri takes a minute here).
        let expected = std::vec![0x6Bu8; SIZE];
        let mut v: Vec<u8, &A> = Vec::with_capacity_in(SIZE, a);
        // SAFETY: `with_capacity_in(SIZE)` made room for `SIZE` bytes, all written before
        // `set_len`.
        unsafe {
            v.as_mut_ptr().write_bytes(0x6B, SIZE);
            v.set_len(SIZE);
        }
        let before = stats();
        hooked.panic_on_next();
        expect_backing_panic(|| v.reserve(SIZE));
        assert_eq!(stats(), before, "a statistic changed");
        assert!(v[..] == expected[..]);
        v.reserve(SIZE);
        assert!(v[..] == expected[..]);
        drop(v);
    }
    quiet();
    let hooked = Hooked::default();
    let arena = Arena::new_in(&hooked);
    check(&arena, &hooked, || {
        let s = arena.stats();
        (s.large_blocks, s.allocated_bytes_including_metadata)
    });
    assert_eq!(arena.stats().large_blocks, 0);
    assert_eq!(
        arena.stats().allocated_bytes_including_metadata,
        hooked.held_bytes()
    );
    let shared = SyncArena::new_in(&hooked);
    check(&shared, &hooked, || {
        let s = shared.stats();
        (s.large_blocks, s.allocated_bytes_including_metadata)
    });
    drop((arena, shared));
    assert_eq!(hooked.held_blocks(), 0);
}

// ----- LocalArena (its pieces come from a SyncArena) -----

/// A handle's grow that needs a piece, whose shared arena needs a chunk, whose backing allocator
/// panics: the handle's last block stays allocated, and both arenas' statistics are unchanged.
#[test]
fn local_arena_grow_that_unwinds_keeps_the_last_block() {
    quiet();
    let hooked = Hooked::default();
    let shared = SyncArena::new_in(&hooked);
    let local = shared.local();
    let mut v: Vec<u32, &LocalArena<&Hooked>> = Vec::new_in(&local);
    // Several times: the first pieces come from chunks the shared arena already holds.
    for _ in 0..scaled(3, 1) {
        push_until_backing_call(&mut v, 9, &hooked, Hooked::panic_on_next, || {
            (local.stats(), shared.stats())
        });
        let other = local.alloc_slice_fill_copy(40, 0x3Cu8);
        assert_disjoint(&[range_of(&v), range_of(other)]);
        assert!(v.iter().all(|&x| x == 9));
        v.push(9);
        assert!(other.iter().all(|&b| b == 0x3C));
        assert_eq!(
            shared.stats().allocated_bytes_including_metadata,
            hooked.held_bytes()
        );
    }
}

/// A handle whose shared arena's backing allocator allocates in the handle while the handle
/// waits for a piece: a nested request the handle's current piece holds is served, one that
/// needs a piece is refused. Repeated until both have been seen.
#[test]
fn local_arena_nested_requests() {
    let shared = SyncArena::new_in(Hooked::default());
    let local = shared.local();
    let hooked = shared.allocator();
    let mut v: Vec<u64, &LocalArena<Hooked>> = Vec::new_in(&local);
    let mut blocks = std::vec::Vec::new();
    let (mut served, mut refused) = (0, 0);
    for trial in 0..40 {
        let len = if trial % 2 == 0 { 16 } else { 1 << 20 };
        let nested: Report<(usize, Option<Span>)> = Rc::default();
        let out = nested.clone();
        let target = NonNull::from(&local).cast::<()>();
        let calls = hooked.calls.get();
        hooked.run_inside_next(move || {
            // SAFETY: the action runs inside a backing call made during a push below, while
            // `local` is alive; only its lifetime, which does not exist at run time, is restated.
            let local = unsafe { target.cast::<LocalArena<'static, Hooked>>().as_ref() };
            let room = local.chunk_capacity();
            let block = local
                .try_alloc_slice_fill_copy(len, 0xAAu8)
                .ok()
                .map(|s| (NonNull::from(&mut *s).cast::<u8>(), s.len()));
            out.set(Some((room, block)));
        });
        while hooked.calls.get() == calls {
            v.push(v.len() as u64);
        }
        let (room, block) = nested.get().expect("the nested action ran");
        assert_eq!(block.is_some(), len <= room, "{len} bytes with {room} left");
        match block {
            Some(b) => {
                served += 1;
                blocks.push(b);
            }
            None => refused += 1,
        }
        if served > 0 && refused > 0 {
            break;
        }
    }
    assert!(
        served > 0 && refused > 0,
        "served {served}, refused {refused}"
    );
    let mut ranges = vec![range_of(&v)];
    ranges.extend(blocks.iter().map(|&(p, len)| (p.addr().get(), len)));
    assert_disjoint(&ranges);
    for &b in &blocks {
        assert_filled(b, 0xAA);
    }
    assert!(v.iter().copied().eq(0..v.len() as u64));
}

// ----- SyncArena -----

/// The shared arena takes chunks with its lock released: a backing allocator that panics leaves
/// nothing pending (the limit is whole again), and one that allocates in the arena meanwhile,
/// even a block that needs a chunk of its own, or asks for the statistics, is served.
#[test]
fn sync_arena_refill_that_unwinds_and_nested_requests() {
    /// More than the first chunk holds; more than any chunk so far.
    const SMALL: usize = scaled(10_000, 2_000);
    const BIG: usize = scaled(200_000, 20_000);
    quiet();
    let arena = Rc::new(SyncArena::new_in(Hooked::default()));
    let first = arena.alloc_slice_copy(&[1u8; 100]).as_ptr();
    let stats = arena.stats();
    arena.allocator().panic_on_next();
    expect_backing_panic(|| {
        arena.alloc_slice_copy(&vec![2u8; SMALL]);
    });
    assert_eq!(arena.stats(), stats);
    // Nothing is left pending against a limit: exactly what is held, plus one chunk for the
    // request, is allowed.
    let held = arena.stats().allocated_bytes_including_metadata;
    arena.set_allocation_limit(Some(held + 2 * SMALL));
    let second = arena
        .try_alloc_slice_copy(&vec![2u8; SMALL])
        .expect("within the limit");
    let second = (second.as_ptr(), second.len());
    arena.set_allocation_limit(None);

    let nested: Rc<RefCell<std::vec::Vec<(Span, u8)>>> = Rc::default();
    let (weak, out) = (Rc::downgrade(&arena), nested.clone());
    arena.allocator().run_inside_next(move || {
        let arena = weak.upgrade().expect("the arena is alive");
        // Statistics take the lock: not held across the backing call, so no deadlock.
        let _ = arena.stats();
        for (len, fill) in [(32, 0xA1u8), (BIG, 0xA2)] {
            let s = arena.alloc_slice_copy(&vec![fill; len]);
            out.borrow_mut()
                .push(((NonNull::from(&mut *s).cast(), len), fill));
        }
    });
    let big = arena.alloc_slice_copy(&vec![3u8; BIG / 2]);
    let big = (big.as_ptr(), big.len());
    assert!(arena.allocator().nested_ran());
    let nested = nested.borrow();
    assert_eq!(nested.len(), 2);
    let mut ranges = vec![
        (first.addr(), 100),
        (second.0.addr(), second.1),
        (big.0.addr(), big.1),
    ];
    ranges.extend(nested.iter().map(|&((p, len), _)| (p.addr().get(), len)));
    assert_disjoint(&ranges);
    for &(span, fill) in nested.iter() {
        assert_filled(span, fill);
    }
    for (p, len, fill) in [
        (first, 100, 1u8),
        (second.0, second.1, 2),
        (big.0, big.1, 3),
    ] {
        assert_filled((NonNull::new(p.cast_mut()).unwrap(), len), fill);
    }
    let s = arena.stats();
    assert_eq!(
        s.allocated_bytes_including_metadata,
        arena.allocator().held_bytes()
    );
    assert_eq!(s.chunks + s.large_blocks, arena.allocator().held_blocks());
}

// ----- Pool, SizeClassPool, SyncPool -----

/// Boxes are allocated until the backing allocator panics at its `n`th call from now (the map
/// table, the slab or page, a later slab or page): every box stays intact, the statistics are
/// as before the failing call, the pool works again once the backing allocator does, and it
/// gives back every block on drop.
fn pool_refill_that_unwinds<P: Allocator, S: PartialEq + core::fmt::Debug>(
    hooked: &Hooked,
    pool: P,
    n: usize,
    stats: impl Fn(&P) -> S,
) {
    quiet();
    let mut boxes: std::vec::Vec<Box<[u64; 3], &P>> = std::vec::Vec::new();
    hooked.panic_after(n);
    let mut i = 0u64;
    loop {
        let before = stats(&pool);
        match catch_unwind(AssertUnwindSafe(|| Box::new_in([i; 3], &pool))) {
            Ok(b) => boxes.push(b),
            Err(_) => {
                assert_eq!(stats(&pool), before, "panic at call {n}");
                break;
            }
        }
        i += 1;
        assert!(i < 100_000, "the backing allocator never panicked");
    }
    for (j, b) in boxes.iter().enumerate() {
        assert_eq!(**b, [j as u64; 3]);
    }
    let more: std::vec::Vec<_> = (0..scaled(1000, 100) as u64)
        .map(|k| Box::new_in([k; 3], &pool))
        .collect();
    let mut ranges: std::vec::Vec<_> = boxes.iter().map(|b| range_of(&b[..])).collect();
    ranges.extend(more.iter().map(|b| range_of(&b[..])));
    assert_disjoint(&ranges);
    drop((boxes, more));
    drop(pool);
    assert_eq!(
        hooked.held_blocks(),
        0,
        "panic at call {n}: a block was not given back"
    );
}

#[test]
fn pool_slab_refill_that_unwinds() {
    for n in 0..scaled(4, 3) {
        let hooked = Hooked::default();
        let pool = Pool::new_in(Layout::new::<[u64; 3]>(), &hooked);
        pool_refill_that_unwinds(&hooked, pool, n, |p| p.stats());
    }
}

#[test]
fn size_class_pool_page_refill_that_unwinds() {
    // Small pages, so that a few hundred blocks take several.
    let options = SizeClassOptions {
        page_size: 4096,
        ..SizeClassOptions::default()
    };
    for n in 0..scaled(4, 3) {
        let hooked = Hooked::default();
        let pool = SizeClassPool::with_options_in(options, &hooked);
        pool_refill_that_unwinds(&hooked, pool, n, |p| {
            let s = p.stats();
            (s.pages, s.bytes_held, s.live_blocks(), s.fallback_blocks)
        });
    }
}

#[test]
fn sync_pool_slab_refill_that_unwinds() {
    for n in 0..scaled(4, 3) {
        let hooked = Hooked::default();
        let pool = SyncPool::with_shards_in(Layout::new::<[u64; 3]>(), 2, &hooked);
        pool_refill_that_unwinds(&hooked, pool, n, |p| p.stats());
    }
}

/// What a pool's re-entrant backing allocator does inside a refill: allocate a block of the
/// layout being refilled (refused: the pool is taking a slab or page for it), allocate a block
/// that goes elsewhere (served), free a block the pool holds (served), read the statistics.
///
/// `in_use` counts the pool's live blocks; `background` of them are not the test's, and the
/// nested `elsewhere` block counts when `elsewhere_counts`.
fn pool_nested_requests<P: Allocator + 'static>(
    pool: Rc<P>,
    hooked: impl Fn(&P) -> &Hooked,
    elsewhere: Layout,
    in_use: fn(&P) -> usize,
    (background, elsewhere_counts): (usize, bool),
) {
    let refilled = Layout::new::<[u64; 3]>();
    let held: std::vec::Vec<NonNull<u8>> = (0..3)
        .map(|_| pool.allocate(refilled).unwrap().cast())
        .collect();
    for (k, p) in held.iter().enumerate() {
        // SAFETY: a fresh block of 24 bytes.
        unsafe { p.cast::<[u64; 3]>().write([k as u64; 3]) };
    }
    let freed = held[1];
    let outcome: Report<(bool, Option<NonNull<u8>>)> = Rc::default();
    let (weak, out) = (Rc::downgrade(&pool), outcome.clone());
    hooked(&pool).run_inside_next(move || {
        let pool = weak.upgrade().expect("the pool is alive");
        // The statistics, read inside the refill (a `SyncPool` shard is locked meanwhile).
        let _ = in_use(&pool);
        let same = pool.allocate(refilled).is_ok();
        let other = pool.allocate(elsewhere).ok().map(|b| b.cast::<u8>());
        if let Some(o) = other {
            // SAFETY: a fresh block of `elsewhere`'s size.
            unsafe { o.as_ptr().write_bytes(0xBB, elsewhere.size()) };
        }
        // SAFETY: `freed` is a live block of `refilled`, not used again.
        unsafe { pool.deallocate(freed, refilled) };
        out.set(Some((same, other)));
    });
    let calls = hooked(&pool).calls.get();
    let mut more = std::vec::Vec::new();
    while hooked(&pool).calls.get() == calls {
        let p = pool
            .allocate(refilled)
            .expect("the outer refill succeeds")
            .cast::<u8>();
        // SAFETY: a fresh block of 24 bytes.
        unsafe { p.cast::<[u64; 3]>().write([7; 3]) };
        more.push(p);
    }
    let (same, other) = outcome.get().expect("the nested action ran");
    assert!(!same, "a nested refill of the same layout is refused");
    let other = other.expect("a nested request that needs no refill is served");
    assert_filled((other, elsewhere.size()), 0xBB);
    for (k, p) in held.iter().enumerate().filter(|&(k, _)| k != 1) {
        // SAFETY: live blocks written above.
        assert_eq!(unsafe { p.cast::<[u64; 3]>().read() }, [k as u64; 3]);
    }
    for p in &more {
        // SAFETY: live blocks written above.
        assert_eq!(unsafe { p.cast::<[u64; 3]>().read() }, [7; 3]);
    }
    let mut ranges: std::vec::Vec<_> = more.iter().map(|p| (p.addr().get(), 24)).collect();
    ranges.extend([(held[0].addr().get(), 24), (held[2].addr().get(), 24)]);
    ranges.push((other.addr().get(), elsewhere.size()));
    assert_disjoint(&ranges);
    // Three held, one freed inside, and `more`.
    let expected = background + 2 + more.len() + usize::from(elsewhere_counts);
    assert_eq!(in_use(&pool), expected);
    // SAFETY: every block is live and was allocated with these layouts.
    unsafe {
        pool.deallocate(other, elsewhere);
        for p in more.into_iter().chain([held[0], held[2]]) {
            pool.deallocate(p, refilled);
        }
    }
    assert_eq!(in_use(&pool), background);
}

#[test]
fn pool_nested_requests_during_a_slab_refill() {
    let pool = Rc::new(Pool::new_in(Layout::new::<[u64; 3]>(), Hooked::default()));
    // A layout that does not fit the slot goes to the backing allocator.
    pool_nested_requests(
        pool,
        |p| p.allocator(),
        Layout::new::<[u64; 8]>(),
        |p| p.in_use(),
        (0, false),
    );
}

#[test]
fn size_class_pool_nested_requests_during_a_page_refill() {
    // Small pages, so that a few hundred blocks fill one.
    let options = SizeClassOptions {
        page_size: 4096,
        ..SizeClassOptions::default()
    };
    let pool = Rc::new(SizeClassPool::with_options_in(options, Hooked::default()));
    // Another class, with a page of its own already (kept by a live block of it).
    let class = Layout::new::<[u8; 200]>();
    let warm = pool.allocate(class).unwrap().cast::<u8>();
    pool_nested_requests(
        pool.clone(),
        |p| p.allocator(),
        class,
        |p| p.stats().live_blocks(),
        (1, true),
    );
    // SAFETY: allocated above with this layout.
    unsafe { pool.deallocate(warm, class) };
}

#[test]
fn sync_pool_nested_requests_during_a_slab_refill() {
    let pool = Rc::new(SyncPool::with_shards_in(
        Layout::new::<[u64; 3]>(),
        1,
        Hooked::default(),
    ));
    pool_nested_requests(
        pool,
        |p| p.allocator(),
        Layout::new::<[u64; 8]>(),
        |p| p.stats().in_use,
        (0, false),
    );
}
