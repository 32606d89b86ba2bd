// The thread-safe types are `Send + Sync`; `LocalArena` is `Send`; boxes on `&SyncPool` and
// blocks of a `LocalArena` can be sent to other threads, and outlive the handle.
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{LocalArena, SyncArena, SyncPool};

fn needs_send_sync<T: Send + Sync>() {}
fn needs_send<T: Send>() {}

fn main() {
    needs_send_sync::<SyncArena>();
    needs_send_sync::<SyncPool>();
    needs_send::<LocalArena<'static>>();
    let pool = SyncPool::for_type::<u32>();
    let arena = SyncArena::new();
    let b = Box::new_in(1u32, &pool);
    let s: &str = arena.local().alloc_str("outlives the handle");
    std::thread::scope(|scope| {
        scope.spawn(move || assert_eq!((*b, s.len()), (1, 19)));
    });
}
