// The scope's `ArenaRef` cannot be smuggled out of the closure.
use arena_pool::{Arena, ArenaRef};

fn main() {
    let mut arena = Arena::new();
    let mut smuggled: Option<&ArenaRef<'_>> = None;
    arena.with_scope(|scope| {
        smuggled = Some(scope);
    });
    smuggled.unwrap().alloc(1u8);
}
