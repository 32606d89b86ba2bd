// A collection created outside a scope cannot grow while the scope runs.
use arena_pool::allocator_api2::vec::Vec;

fn main() {
    let mut arena = arena_pool::Arena::new();
    let mut v = Vec::new_in(&arena);
    v.push(1u32);
    arena.with_scope(|scope| {
        v.push(2);
        scope.alloc(3u8);
    });
}
