// Pools move to another thread whole (with their blocks' owners gone).
use arena_pool::allocator_api2::boxed::Box;
use arena_pool::{Pool, SizeClassPool};

fn main() {
    let pool = Pool::for_type::<u64>();
    let classes = SizeClassPool::new();
    let (a, b) = std::thread::spawn(move || {
        let x = Box::new_in(5u64, &pool);
        let y = Box::new_in([1u8; 100], &classes);
        (*x, y[99])
    })
    .join()
    .unwrap();
    assert_eq!((a, b), (5, 1));
}
