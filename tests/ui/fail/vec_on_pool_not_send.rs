// A `Vec<T, &Pool>` cannot be sent to another thread: both threads would use the pool.
use arena_pool::Pool;
use arena_pool::allocator_api2::vec::Vec;

fn main() {
    let pool = Pool::for_type::<u64>();
    let mut v = Vec::new_in(&pool);
    v.push(1u64);
    std::thread::scope(|s| {
        s.spawn(move || v.push(2));
    });
}
