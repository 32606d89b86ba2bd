//! Fills through the typed API ([`BumpAlloc`]) whose callbacks place blocks in the arena they
//! fill, then fail: `alloc_slice_try_fill_iter`, `try_alloc_slice_try_fill_iter`,
//! `alloc_slice_try_fill_with`, `try_alloc_slice_try_fill_with`, `alloc_try_with`,
//! `try_alloc_try_with`, `alloc_fmt` / `try_alloc_fmt` (a `Display` that allocates), and the
//! panicking forms `alloc_slice_fill_iter`, `alloc_slice_fill_with`, `alloc_with` (a callback
//! that panics with [`InjectedPanic`]).
//!
//! The callback for item `i` first places a block in the same arena when the input says so (at
//! most four per fill, with `try_alloc_slice_fill_copy`), which enters the model at once as a typed block (never resized
//! or freed on its own), then returns item `i` (a value computed from `i`), or fails at the item
//! the input chose. A failed fill gives back only its own buffer: the placed blocks stay in the
//! model, which checks them like any other block. A fill that succeeds returns exactly the items
//! made, in order, and its result enters the model too. A fill that failed with nothing placed
//! and no backing call leaves `used_bytes` as it was (the forms that rewind their padding), or
//! less than the item's alignment above (the others).

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;

use arbitrary::Arbitrary;
use arena_pool::allocator_api2::alloc::Layout;
use arena_pool::{AllocOrInitError, BumpAlloc};

use crate::{Backing, InjectedPanic, Model, Size};

/// The largest ordinary size of a placed block (`Size::Any`); `Size::Large` places large blocks.
const PLACE_MAX: usize = 64 * 1024;
/// The most blocks a fill's callbacks place (later requests to place one are ignored): a fill
/// costs about as much memory as a few `Alloc` operations, so that an input never makes the
/// arena need more than [`BACKING_CAP`](crate::BACKING_CAP) at once.
const MAX_PLACED: usize = 4;

/// Which method fills.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillKind {
    /// `alloc_slice_try_fill_iter` (its `try_` form when the arena may refuse).
    TryFillIter,
    /// `try_alloc_slice_try_fill_iter`.
    TryAllocTryFillIter,
    /// `alloc_slice_try_fill_with` (its `try_` form when the arena may refuse).
    TryFillWith,
    /// `try_alloc_slice_try_fill_with`.
    TryAllocTryFillWith,
    /// `alloc_try_with` (its `try_` form when the arena may refuse): the initialiser places its
    /// blocks (one per bit of `place`, at most 3), then fails if `fail_at` is set.
    TryWith,
    /// `try_alloc_try_with`.
    TryAllocTryWith,
    /// `alloc_fmt` of a `Display` that writes `items` pieces and places blocks between them; it
    /// never fails (the method would panic), and `try_alloc_fmt` is used when the arena may
    /// refuse.
    Fmt,
    /// `try_alloc_fmt` of that `Display`, failing at piece `fail_at`.
    TryFmt,
    /// `alloc_slice_fill_iter` of an iterator that panics at item `fail_at` (the `try_` fill of
    /// an iterator that fails there instead, when the arena may refuse or a panic in
    /// `deallocate` is armed: a second panic while unwinding would abort).
    FillIter,
    /// `alloc_slice_fill_with` with an initialiser that panics at item `fail_at` (as above).
    FillWith,
    /// `alloc_with` with an initialiser that places its blocks and then panics if `fail_at` is
    /// set (as above).
    With,
}

impl FillKind {
    /// The kind run: the panicking API only where the arena cannot refuse (it would panic with
    /// a message of its own), and no panicking callback while a panic in `deallocate` is armed.
    fn effective(self, may_fail: bool, free_armed: bool) -> FillKind {
        use FillKind::*;
        match self {
            TryFillIter if may_fail => TryAllocTryFillIter,
            TryFillWith if may_fail => TryAllocTryFillWith,
            TryWith if may_fail => TryAllocTryWith,
            Fmt if may_fail => TryFmt,
            FillIter if may_fail || free_armed => TryAllocTryFillIter,
            FillWith if may_fail || free_armed => TryAllocTryFillWith,
            With if may_fail || free_armed => TryAllocTryWith,
            k => k,
        }
    }

    /// Whether a failure gives the padding before the buffer back too (the fills that rewind).
    fn rewinds(self) -> bool {
        use FillKind::*;
        matches!(
            self,
            TryFillIter | TryAllocTryFillIter | TryFillWith | TryAllocTryFillWith
        )
    }
}

/// The element type of a fill or a placed block (its size and alignment).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Elem {
    U8,
    U16,
    U32,
    U64,
    U128,
    A64,
}

/// The iterator's lower size hint.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Hint {
    /// 0: the buffer is allocated with the first item.
    Zero,
    /// The number of items it yields at most.
    Exact,
    /// Any number, more than it yields too (a hint is only a guess).
    Lie(u16),
}

/// A fill, as the fuzzer picks it.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Fill {
    pub kind: FillKind,
    pub elem: Elem,
    /// Items asked for (`fill_with`), yielded at most (iterators), pieces of text (`fmt`).
    pub items: u8,
    pub hint: Hint,
    /// The item (or piece) at which the callback fails or panics; none when it is `None` or not
    /// below `items`.
    pub fail_at: Option<u8>,
    /// Before item `i`, the callback places a block when bit `i % 16` is set (at most four in
    /// all).
    pub place: u16,
    /// The size in bytes of each placed block (a huge size is read as a small one).
    pub size: Size,
    /// The element type of the placed blocks.
    pub place_elem: Elem,
}

/// A value of a fill's element type, for item `i`: what the result must hold at index `i`.
pub trait Item: Copy + PartialEq + fmt::Debug + 'static {
    fn at(i: usize) -> Self;
}

macro_rules! int_item {
    ($($t:ty),*) => {$(
        impl Item for $t {
            fn at(i: usize) -> $t {
                (i as $t).wrapping_mul(0x9B).wrapping_add(0x5A)
            }
        }
    )*};
}
int_item!(u8, u16, u32, u64, u128);

/// A 64-byte element aligned to 64.
#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(C, align(64))]
pub struct A64([u8; 64]);

impl Item for A64 {
    fn at(i: usize) -> A64 {
        A64([(i as u8) ^ 0xA6; 64])
    }
}

/// The text pieces of the `Display` (piece `i` is `PIECES[i % 8]`).
const PIECES: [&str; 8] = [
    "a",
    "bc",
    "def",
    "ghij",
    "0123456789",
    "",
    "the quick brown fox jumps over the dog",
    "xyz",
];

/// How the environment of a fill looks.
pub struct Env<'a> {
    pub backing: &'a Backing,
    /// A limit is set or a backing failure is pending: the arena may refuse.
    pub may_fail: bool,
    /// The arena's `used_bytes` and `chunk_capacity`, where a failed fill must give back its
    /// own buffer exactly (`None` for a `SyncArena`'s shared path, whose padding stays used).
    pub room: Option<&'a dyn Fn() -> (usize, usize)>,
}

/// What a fill did.
#[derive(Debug)]
pub struct Outcome {
    /// Blocks its callbacks placed (in the model).
    pub placed: usize,
    /// Its result entered the model.
    pub made: bool,
}

/// Why a callback stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    At(usize),
    /// The arena refused a block the callback placed.
    Refused,
}

/// Why the fill failed.
#[derive(Debug)]
enum Failed {
    Init(Stop),
    Alloc,
    /// The callback panicked (with `InjectedPanic`).
    Panicked,
}

/// The blocks the callbacks place, into the model.
struct Placer<'m> {
    model: &'m mut Model,
    tag: u8,
    placed: usize,
}

/// A block of `size` bytes of `P`, placed through `x`'s typed API.
fn place_as<X: BumpAlloc + ?Sized, P: Item>(
    x: &X,
    size: usize,
) -> Option<(NonNull<u8>, usize, Layout)> {
    let n = size / size_of::<P>();
    let s: &mut [P] = x.try_alloc_slice_fill_copy(n, P::at(n)).ok()?;
    let bytes = size_of_val(s);
    let l = Layout::from_size_align(bytes, align_of::<P>()).expect("a slice's layout");
    Some((NonNull::from(s).cast(), bytes, l))
}

impl Placer<'_> {
    fn place<X: BumpAlloc + ?Sized>(cell: &RefCell<Self>, x: &X, fill: &Fill) -> Result<(), Stop> {
        if cell.borrow().placed >= MAX_PLACED {
            return Ok(());
        }
        let size = match fill.size {
            Size::Huge(n) => n as usize,
            s => s.bytes(PLACE_MAX),
        };
        // The arena runs without the model borrowed (its backing allocator may unwind).
        let r = match fill.place_elem {
            Elem::U8 => place_as::<X, u8>(x, size),
            Elem::U16 => place_as::<X, u16>(x, size),
            Elem::U32 => place_as::<X, u32>(x, size),
            Elem::U64 => place_as::<X, u64>(x, size),
            Elem::U128 => place_as::<X, u128>(x, size),
            Elem::A64 => place_as::<X, A64>(x, size),
        };
        let (p, len, l) = r.ok_or(Stop::Refused)?;
        let mut me = cell.borrow_mut();
        let tag = me.tag;
        me.model.insert_typed(p, len, l, tag);
        me.placed += 1;
        Ok(())
    }
}

/// An iterator of `n` items from `f`, with `lo` as its lower size hint; it stops after an error.
struct Items<F> {
    i: usize,
    n: usize,
    lo: usize,
    stopped: bool,
    f: F,
}

impl<T, F: FnMut(usize) -> Result<T, Stop>> Iterator for Items<F> {
    type Item = Result<T, Stop>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped || self.i >= self.n {
            return None;
        }
        let r = (self.f)(self.i);
        self.i += 1;
        self.stopped = r.is_err();
        Some(r)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.lo, None)
    }
}

/// The `Display` of the `fmt` fills: piece `i` from `f(i)`.
struct Text<F> {
    n: usize,
    f: F,
}

impl<F: Fn(usize) -> Result<&'static str, Stop>> fmt::Display for Text<F> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.n {
            out.write_str((self.f)(i).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

/// Runs `fill` through `x` (whose blocks the model tags `tag`), with its checks (see the module
/// documentation).
pub fn run<X: BumpAlloc + ?Sized>(
    x: &X,
    m: &mut Model,
    tag: u8,
    fill: &Fill,
    env: &Env<'_>,
) -> Outcome {
    match fill.elem {
        Elem::U8 => run_as::<X, u8>(x, m, tag, fill, env),
        Elem::U16 => run_as::<X, u16>(x, m, tag, fill, env),
        Elem::U32 => run_as::<X, u32>(x, m, tag, fill, env),
        Elem::U64 => run_as::<X, u64>(x, m, tag, fill, env),
        Elem::U128 => run_as::<X, u128>(x, m, tag, fill, env),
        Elem::A64 => run_as::<X, A64>(x, m, tag, fill, env),
    }
}

fn run_as<X: BumpAlloc + ?Sized, T: Item>(
    x: &X,
    m: &mut Model,
    tag: u8,
    fill: &Fill,
    env: &Env<'_>,
) -> Outcome {
    use FillKind::*;
    let kind = fill
        .kind
        .effective(env.may_fail, env.backing.free_panic_armed());
    let items = fill.items as usize;
    let (one, pieces) = (
        matches!(kind, TryWith | TryAllocTryWith | With),
        matches!(kind, Fmt | TryFmt),
    );
    // The item that fails: below the number of items (any for the single-value fills).
    let fail = match fill.fail_at {
        Some(_) if one => Some(0),
        Some(k) if (k as usize) < items && kind != Fmt => Some(k as usize),
        _ => None,
    };
    let lo = match fill.hint {
        Hint::Zero => 0,
        Hint::Exact => items,
        Hint::Lie(n) => n as usize,
    };
    let placer = RefCell::new(Placer {
        model: m,
        tag,
        placed: 0,
    });
    let before = env.room.map(|f| f());
    let allocs = env.backing.allocs();
    let fmt_failed = Cell::new(false);

    // Item `i`: a block placed first if asked, then the value, or the failure.
    let item = |i: usize, panics: bool| -> Result<T, Stop> {
        if (fill.place >> (i % 16)) & 1 != 0 {
            Placer::place(&placer, x, fill)?;
        }
        if fail == Some(i) {
            if panics {
                std::panic::panic_any(InjectedPanic);
            }
            return Err(Stop::At(i));
        }
        Ok(T::at(i))
    };
    // The single value: its blocks (one per bit of `place`, at most 3), then the value.
    let value = |panics: bool| -> Result<T, Stop> {
        for _ in 0..fill.place.count_ones().min(3) {
            Placer::place(&placer, x, fill)?;
        }
        if fail.is_some() {
            if panics {
                std::panic::panic_any(InjectedPanic);
            }
            return Err(Stop::At(0));
        }
        Ok(T::at(0))
    };
    let piece = |i: usize| -> Result<&'static str, Stop> {
        if (fill.place >> (i % 16)) & 1 != 0 {
            Placer::place(&placer, x, fill)?;
        }
        if fail == Some(i) {
            fmt_failed.set(true);
            return Err(Stop::At(i));
        }
        Ok(PIECES[i % PIECES.len()])
    };
    let iter = || Items {
        i: 0,
        n: items,
        lo,
        stopped: false,
        f: |i| item(i, false),
    };
    let text = Text {
        n: items,
        f: &piece,
    };
    let slice = |p: &mut [T]| NonNull::from(p).cast::<u8>();
    let init = |e: AllocOrInitError<Stop>| match e {
        AllocOrInitError::Init(s) => Failed::Init(s),
        AllocOrInitError::Alloc(_) => Failed::Alloc,
    };
    // The panicking forms: an `InjectedPanic` of the callback is the planned failure; one of the
    // backing allocator goes on unwinding, to the target.
    let caught = |f: &mut dyn FnMut() -> NonNull<u8>| -> Result<NonNull<u8>, Failed> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(p) => Ok(p),
            Err(payload) if payload.is::<InjectedPanic>() && env.backing.unwound().is_none() => {
                Err(Failed::Panicked)
            }
            Err(payload) => resume_unwind(payload),
        }
    };
    let r: Result<NonNull<u8>, Failed> = match kind {
        TryFillIter => x
            .alloc_slice_try_fill_iter(iter())
            .map(slice)
            .map_err(Failed::Init),
        TryAllocTryFillIter => x
            .try_alloc_slice_try_fill_iter(iter())
            .map(slice)
            .map_err(init),
        TryFillWith => x
            .alloc_slice_try_fill_with(items, |i| item(i, false))
            .map(slice)
            .map_err(Failed::Init),
        TryAllocTryFillWith => x
            .try_alloc_slice_try_fill_with(items, |i| item(i, false))
            .map(slice)
            .map_err(init),
        TryWith => x
            .alloc_try_with(|| value(false))
            .map(|p| NonNull::from(p).cast())
            .map_err(Failed::Init),
        TryAllocTryWith => x
            .try_alloc_try_with(|| value(false))
            .map(|p| NonNull::from(p).cast())
            .map_err(init),
        Fmt => Ok(NonNull::from(x.alloc_fmt(format_args!("{text}"))).cast()),
        TryFmt => match x.try_alloc_fmt(format_args!("{text}")) {
            Ok(s) => Ok(NonNull::from(s).cast()),
            // The `Display` failed (at the planned piece, or a block it placed was refused), or
            // the arena refused the text.
            Err(_) if fmt_failed.get() => Err(Failed::Init(Stop::At(fail.unwrap_or(0)))),
            Err(_) => Err(Failed::Alloc),
        },
        FillIter => caught(&mut || {
            let it = (0..items).map(|i| item(i, true).expect("a placed block refused"));
            slice(x.alloc_slice_fill_iter(it))
        }),
        FillWith => caught(&mut || {
            slice(
                x.alloc_slice_fill_with(items, |i| item(i, true).expect("a placed block refused")),
            )
        }),
        With => caught(&mut || {
            NonNull::from(x.alloc_with(|| value(true).expect("a placed block refused"))).cast()
        }),
    };
    let Placer { model, placed, .. } = placer.into_inner();
    match r {
        Ok(p) => {
            assert!(
                fail.is_none(),
                "{kind:?} succeeded, its callback failing at {fail:?}"
            );
            let (len, l) = if pieces {
                let text: String = (0..items).map(|i| PIECES[i % PIECES.len()]).collect();
                // SAFETY: the text the fill returned: `text.len()` bytes if it is right.
                let got = unsafe { std::slice::from_raw_parts(p.as_ptr(), text.len()) };
                assert_eq!(got, text.as_bytes(), "{kind:?} wrote other text");
                (text.len(), Layout::from_size_align(text.len(), 1).unwrap())
            } else {
                let n = if one { 1 } else { items };
                // SAFETY: the slice the fill returned, of `n` items if it is right.
                let got = unsafe { std::slice::from_raw_parts(p.cast::<T>().as_ptr(), n) };
                for (i, v) in got.iter().enumerate() {
                    assert_eq!(*v, T::at(i), "{kind:?}: item {i} of {n} lost");
                }
                (n * size_of::<T>(), Layout::array::<T>(n).unwrap())
            };
            model.insert_typed(p, len, l, tag);
            Outcome { placed, made: true }
        }
        Err(failed) => {
            match failed {
                Failed::Init(Stop::At(k)) => assert!(
                    fail == Some(k) || (pieces && fail.is_some()),
                    "{kind:?} failed at item {k}, its callback failing at {fail:?}"
                ),
                Failed::Init(Stop::Refused) | Failed::Alloc => assert!(
                    env.may_fail,
                    "{kind:?} refused ({failed:?}) with no limit or injected failure"
                ),
                Failed::Panicked => assert!(fail.is_some(), "{kind:?} panicked"),
            }
            // A failure that placed nothing and called nothing gives back exactly its buffer.
            if let (Some(room), Some((used, cap)), Failed::Init(_) | Failed::Panicked) =
                (env.room, before, &failed)
            {
                let (used_after, cap_after) = room();
                if placed == 0
                    && env.backing.allocs() == allocs
                    && used_after + cap_after == used + cap
                {
                    let pad = if kind.rewinds() { 1 } else { align_of::<T>() };
                    assert!(
                        used <= used_after && used_after < used + pad,
                        "a failed {kind:?} took used_bytes from {used} to {used_after}"
                    );
                }
            }
            Outcome {
                placed,
                made: false,
            }
        }
    }
}
