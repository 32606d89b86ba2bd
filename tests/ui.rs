//! Compile-fail tests: the borrow and thread-safety guarantees of `Arena`, `ArenaRef`, scopes,
//! scope guards, the pools, the thread-safe types and `collections::String` (its leaked text),
//! each next to a neighbouring case that must compile. The `.stderr` snapshots are for the
//! stable toolchain; regenerate them with `TRYBUILD=overwrite cargo test --test ui`.
// trybuild cannot run under miri (file-system isolation), and the snapshots are for the stable
// compiler without the `nightly` feature (which changes the errors).
#![cfg(not(any(miri, feature = "nightly")))]

#[test]
fn ui() {
    // Under sanitizer or loom flags the inner build would rebuild everything: the snapshots are
    // checked by the plain `cargo test` run.
    if std::env::var_os("RUSTFLAGS").is_some_and(|f| !f.is_empty()) {
        eprintln!("skipping the trybuild snapshots: RUSTFLAGS is set");
        return;
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
