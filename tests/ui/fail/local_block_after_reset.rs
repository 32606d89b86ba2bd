// Blocks of a `LocalArena` live as long as the `SyncArena` borrow: `reset` (which needs
// `&mut SyncArena`) cannot run while one is in use.
use arena_pool::SyncArena;

fn main() {
    let mut arena = SyncArena::new();
    let x = arena.local().alloc(1u32);
    arena.reset();
    assert_eq!(*x, 1);
}
