//! The panicking helpers outside the arenas' typed API report their caller's line (they are
//! `#[track_caller]`): pools' `alloc` in strict mode, the `with_capacity` constructors, and
//! `SyncArena`'s shared-path helpers at the allocation limit.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use arena_pool::allocator_api2::alloc::{Allocator, Layout};
use arena_pool::{Arena, Pool, SyncArena, SyncPool, TypedPool};

thread_local! {
    /// Set while this thread runs a call expected to panic.
    static EXPECTING: Cell<bool> = const { Cell::new(false) };
    /// The line of the last expected panic on this thread, if it was in this file.
    static LINE: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Runs `f`, which must panic, and returns the line of this file the panic reports (`None` if
/// it reports another file). Unexpected panics (failed assertions) are reported as usual.
fn panic_line<R>(f: impl FnOnce() -> R) -> Option<u32> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if EXPECTING.get() {
                let line = info
                    .location()
                    .filter(|l| l.file() == file!())
                    .map(|l| l.line());
                LINE.set(line);
            } else {
                default(info);
            }
        }))
    });
    EXPECTING.set(true);
    LINE.set(None);
    let result = catch_unwind(AssertUnwindSafe(f));
    EXPECTING.set(false);
    assert!(result.is_err(), "no panic");
    LINE.get()
}

/// Asserts that `$call` panics, reporting the line it is written on.
macro_rules! panics_here {
    ($call:expr) => {
        assert_eq!(panic_line(|| $call), Some(line!()), "{}", stringify!($call))
    };
}

#[test]
fn pools_report_the_callers_line() {
    let pool = Pool::for_type::<u8>();
    pool.set_strict(true);
    // The `Allocator` methods refuse (`Err`); `alloc` panics, at the caller's line.
    assert!(pool.allocate(Layout::new::<[u64; 4]>()).is_err());
    panics_here!(pool.alloc([0u64; 4]));
    let shared = SyncPool::for_type::<u8>();
    shared.set_strict(true);
    panics_here!(shared.alloc([0u64; 4]));
    let (huge, layout) = (usize::MAX / 2, Layout::new::<u64>());
    panics_here!(Pool::with_capacity(layout, huge));
    panics_here!(TypedPool::<u64>::with_capacity(huge));
}

#[test]
fn arena_constructors_and_sync_arena_helpers_report_the_callers_line() {
    panics_here!(Arena::with_capacity(usize::MAX));
    panics_here!(SyncArena::with_capacity(usize::MAX));
    let arena = SyncArena::new();
    arena.set_allocation_limit(Some(4096));
    panics_here!(arena.alloc([0u8; 8192]));
    panics_here!(arena.alloc_with(|| [0u8; 8192]));
    let layout = Layout::new::<[u8; 8192]>();
    panics_here!(arena.alloc_layout(layout));
    let bytes = vec![0u8; 8192];
    panics_here!(arena.alloc_slice_copy(&bytes));
    let text = "x".repeat(8192);
    panics_here!(arena.alloc_str(&text));
}

#[test]
fn format_in_reports_the_callers_line_at_the_limit() {
    // The text is written through `fmt::Write`, whose calls cannot carry the caller's location:
    // the refusal is answered once formatting stops, in `format_in!`'s own frame.
    let arena = Arena::new();
    arena.set_allocation_limit(Some(4096));
    panics_here!(arena_pool::format_in!(&arena, "{:>10000}", "x"));
    let e = catch_unwind(AssertUnwindSafe(|| {
        let _ = arena_pool::format_in!(&arena, "{:>10000}", "x");
    }))
    .unwrap_err();
    let message = e.downcast_ref::<std::string::String>().unwrap();
    assert!(
        message.starts_with("arena-pool: format_in!: ") && message.contains("allocation limit"),
        "{message}"
    );
}
