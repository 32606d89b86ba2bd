// `ArenaRef` cannot be used where `Sync` is needed.
fn needs_sync<T: Sync + ?Sized>() {}

fn main() {
    needs_sync::<arena_pool::ArenaRef<'static>>();
}
