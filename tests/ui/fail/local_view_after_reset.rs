// The `ArenaRef` view of a `LocalArena` hands out references of the `SyncArena` borrow: they
// outlive the handle, but not a reset.
use arena_pool::SyncArena;

fn main() {
    let mut shared = SyncArena::new();
    let x = shared.local().as_arena_ref().alloc(1u32);
    shared.reset();
    println!("{x}");
}
