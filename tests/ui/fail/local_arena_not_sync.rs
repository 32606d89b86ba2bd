// A `LocalArena` handle bumps without atomics: it cannot be shared between threads.
fn needs_sync<T: Sync>() {}

fn main() {
    needs_sync::<arena_pool::LocalArena<'static>>();
}
