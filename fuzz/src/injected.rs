//! Panics injected by [`Backing`]: their payload and which call raised them, the panic hook that
//! lets them through, and the runners that catch them.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Once;

use crate::Backing;

/// The payload of the panic [`Backing`] injects after [`panic_next`](Backing::panic_next) or
/// [`panic_in_free`](Backing::panic_in_free), and of the panics the fills' callbacks raise (see
/// [`fills`](crate::fills)): a type of its own, so that no other panic can be mistaken for it.
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
