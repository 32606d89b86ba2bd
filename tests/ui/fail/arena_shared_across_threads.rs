// Two threads cannot allocate from one `Arena` through `&Arena`.
fn main() {
    let arena = arena_pool::Arena::new();
    std::thread::scope(|s| {
        s.spawn(|| arena.alloc(1u8));
        arena.alloc(2u8);
    });
}
