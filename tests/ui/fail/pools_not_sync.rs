// `Pool`, `TypedPool` and `SizeClassPool` cannot be used where `Sync` is needed.
fn needs_sync<T: Sync>() {}

fn main() {
    needs_sync::<arena_pool::Pool>();
    needs_sync::<arena_pool::TypedPool<u64>>();
    needs_sync::<arena_pool::SizeClassPool>();
}
