// Generic code over `BumpAlloc` gets references that live as long as its borrow, no longer.
use arena_pool::BumpAlloc;

fn leak<X: BumpAlloc + ?Sized>(arena: &X) -> &'static u32 {
    arena.alloc(1)
}

fn main() {
    let arena = arena_pool::Arena::new();
    leak(&arena);
}
