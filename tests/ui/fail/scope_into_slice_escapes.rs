// A slice made from a `Vec` in a scope lives as long as the scope, not beyond it.
use arena_pool::allocator_api2::vec::Vec;
use arena_pool::ArenaRef;

fn main() {
    let mut arena = arena_pool::Arena::new();
    let s = arena.with_scope(|scope| {
        let mut v = Vec::new_in(&*scope);
        v.push(1u8);
        ArenaRef::into_slice(v)
    });
    println!("{s:?}");
}
