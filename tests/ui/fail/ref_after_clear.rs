// A reference from `alloc` cannot be used after `clear()`.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x = arena.alloc(42u32);
    arena.clear();
    println!("{x}");
}
