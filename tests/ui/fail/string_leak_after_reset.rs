// A leaked `&str` from `format_in!` cannot be used after `reset()` (which needs `&mut`).
fn main() {
    let mut arena = arena_pool::Arena::new();
    let text = arena_pool::format_in!(&arena, "request {}", 1).leak();
    arena.reset();
    println!("{text}");
}
