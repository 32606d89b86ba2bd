// The `ArenaRef` view of an `Arena` (`(&arena).into()`) hands out references that cannot
// outlive the arena's borrow.
use arena_pool::{Arena, ArenaRef};

fn main() {
    let mut arena = Arena::new();
    let view: &ArenaRef<'_> = (&arena).into();
    let x = view.alloc(1u32);
    arena.reset();
    println!("{x}");
}
