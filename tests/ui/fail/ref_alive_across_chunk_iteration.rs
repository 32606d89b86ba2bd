// A block of the arena cannot be alive while `iter_allocated_chunks` reads the arena's memory:
// the iteration borrows the arena mutably, so the slices it yields never alias a live `&mut`.
fn main() {
    let mut arena = arena_pool::Arena::new();
    let x = arena.alloc(1u32);
    let total: usize = arena.iter_allocated_chunks().map(<[_]>::len).sum();
    *x += 1;
    println!("{total} {x}");
}
