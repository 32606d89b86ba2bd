//! A panic of a typed helper (`BumpAlloc`'s panicking methods, and the inherent forwarders of
//! each type) points at the caller's line, not at the crate's source: every panicking path is
//! `#[track_caller]` down to the panic. Each call
//! below runs on an arena of each kind whose allocation limit is 0, so that it panics, and a
//! panic hook records the location the panic reports.
//!
//! One test in its own binary: the panic hook is process-wide.
#![cfg_attr(feature = "nightly", feature(allocator_api))]

use std::alloc::Layout;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use arena_pool::allocator_api2::vec::Vec;
use arena_pool::{Arena, BumpAlloc, SyncArena};

/// Where the last panic said it happened, and its message.
static LAST: Mutex<Option<(String, u32, String)>> = Mutex::new(None);

/// Runs `$call`, which must panic, and checks that the panic reports this file and the line of
/// the invocation (the call must fit on it).
macro_rules! panics_here {
    ($call:expr) => {{
        let line = line!();
        *LAST.lock().unwrap() = None;
        let r = panic::catch_unwind(AssertUnwindSafe(|| {
            let _ = $call;
        }));
        assert!(r.is_err(), "line {line}: no panic");
        let (file, at, message) = LAST.lock().unwrap().take().expect("the hook saw no panic");
        assert_eq!(
            (file.as_str(), at),
            (file!(), line),
            "the panic of line {line} ({message})"
        );
        assert!(
            message.starts_with("arena-pool: "),
            "line {line}: {message}"
        );
    }};
}

/// Every panicking typed helper, called on `$a` (an expression naming an arena whose every
/// allocation fails). On a concrete type the calls go to the inherent forwarders; the panics then
/// report the line of this macro's invocation (a location inside a macro is its outermost call
/// site), which still tells the caller's file from the crate's source.
macro_rules! every_panicking_helper {
    ($a:expr) => {
        // `match` keeps the temporaries of `$a` (a handle, a guard) alive for the calls.
        match $a {
            a => {
                panics_here!(a.alloc(1u64));
                panics_here!(a.alloc_with(|| 1u64));
                panics_here!(a.alloc_try_with(|| Ok::<u64, ()>(1)));
                panics_here!(a.alloc_layout(Layout::new::<u64>()));
                panics_here!(a.alloc_slice_copy(&[1u8, 2]));
                panics_here!(a.alloc_slice_clone(&[1u8, 2]));
                panics_here!(a.alloc_slice_fill_with(3, |i| i));
                panics_here!(a.alloc_slice_fill_copy(3, 1u8));
                panics_here!(a.alloc_slice_fill_clone(3, &1u8));
                panics_here!(a.alloc_slice_fill_default::<u8>(3));
                panics_here!(a.alloc_slice_fill_iter(0..3u8));
                panics_here!(a.alloc_slice_try_fill_with(3, Ok::<usize, ()>));
                panics_here!(a.alloc_slice_try_fill_iter((0..3u8).map(Ok::<u8, ()>)));
                panics_here!(a.alloc_sized_slice_fill_default::<u8, 3>());
                panics_here!(a.alloc_sized_slice_fill_with::<u8, 3, _>(|i| i as u8));
                panics_here!(a.alloc_sized_slice_copy(&[1u8; 3]));
                panics_here!(a.alloc_str("abc"));
                panics_here!(a.alloc_fmt(format_args!("{}", 12)));
            }
        }
    };
}

/// Every panicking typed helper through the trait (what generic code calls: in a generic
/// function the method calls of the macro resolve to `BumpAlloc`'s).
fn through_the_trait<X: BumpAlloc + ?Sized>(a: &X) {
    every_panicking_helper!(a);
}

#[test]
fn panics_point_at_the_caller() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(|info| {
        let message = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            String::new()
        };
        if !message.starts_with("arena-pool: ") {
            // Not one of the crate's panics (a failed assertion of this test): show it.
            eprintln!("{info}");
        }
        let at = info.location().map(|l| (l.file().to_string(), l.line()));
        if let Some((file, line)) = at {
            *LAST.lock().unwrap() = Some((file, line, message));
        }
    }));

    let mut arena = Arena::new();
    arena.set_allocation_limit(Some(0));
    through_the_trait(&arena);
    through_the_trait(arena.as_arena_ref());
    arena.with_scope(|scope| through_the_trait(scope));
    through_the_trait(&arena.scope_guard());
    let shared = SyncArena::new();
    shared.set_allocation_limit(Some(0));
    through_the_trait(&shared);
    through_the_trait(&shared.local());
    through_the_trait(shared.local().as_arena_ref());
    // The inherent forwarders, on each concrete type.
    every_panicking_helper!(&arena);
    every_panicking_helper!(arena.as_arena_ref());
    arena.with_scope(|scope| every_panicking_helper!(scope));
    every_panicking_helper!(&arena.scope_guard());
    every_panicking_helper!(&shared);
    every_panicking_helper!(&shared.local());
    every_panicking_helper!(shared.local().as_arena_ref());
    // A size that overflows, on an arena with no limit.
    panics_here!(Arena::new().alloc_slice_fill_copy(usize::MAX, 0u64));

    panic::set_hook(previous);
    // The panics changed nothing: with the limit lifted, the arenas serve as before.
    arena.set_allocation_limit(None);
    shared.set_allocation_limit(None);
    let mut v = Vec::new_in(&arena);
    v.extend([1u8, 2]);
    assert_eq!(v.as_slice(), [1, 2]);
    assert!(arena.used_bytes() >= 2);
    assert_eq!(*shared.local().alloc(3u8), 3);
}
