// The parent cannot be used while a scope guard is alive.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let mut guard = arena.scope_guard();
    arena.alloc(1u8);
    guard.scope().alloc(2u8);
}
