//! Errors: the public [`AllocOrInitError`], and the crate's internal record of why an allocation
//! failed, which the panicking API turns into a message that names the cause.

use core::alloc::Layout;
use core::fmt;

pub use allocator_api2::alloc::AllocError;

/// Why an allocation failed, kept until the public API decides between `Err(AllocError)` and a
/// panic. (Nominally `pub` in this private module: the sealed `Core` trait names it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The requested size, with its alignment and bookkeeping, does not fit in `isize::MAX`.
    CapacityOverflow,
    /// Taking another chunk would pass the allocation limit.
    LimitReached {
        /// The limit in force, in bytes.
        limit: usize,
    },
    /// Taking another slab, page or block from the backing allocator would pass a pool's
    /// allocation limit.
    PoolLimitReached {
        /// The limit in force, in bytes.
        limit: usize,
    },
    /// The backing allocator refused a block of this layout.
    OutOfMemory(Layout),
    /// A formatting trait implementation returned an error (only from `alloc_fmt`).
    Format,
    /// The backing allocator, while the arena or pool was waiting for it, called back into that
    /// same arena or pool for memory it would have to take from the backing allocator again:
    /// a nested request is refused rather than served from state the outer call is changing.
    Reentered,
}

impl Failure {
    /// The panicking API's answer: a panic naming the cause, or `handle_alloc_error` when the
    /// backing allocator is out of memory.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn raise(self) -> ! {
        match self {
            Failure::CapacityOverflow => {
                panic!("arena-pool: allocation size overflows (more than isize::MAX bytes)")
            }
            Failure::LimitReached { limit } => {
                panic!("arena-pool: the arena's allocation limit of {limit} bytes is reached")
            }
            Failure::PoolLimitReached { limit } => {
                panic!("arena-pool: the pool's allocation limit of {limit} bytes is reached")
            }
            Failure::OutOfMemory(layout) => alloc::alloc::handle_alloc_error(layout),
            Failure::Format => {
                panic!("arena-pool: a formatting trait implementation returned an error")
            }
            Failure::Reentered => panic!(
                "arena-pool: the backing allocator called back into the arena it backs for more \
                 memory while the arena was taking memory from it (a nested refill is refused)"
            ),
        }
    }
}

impl From<Failure> for AllocError {
    fn from(_: Failure) -> AllocError {
        AllocError
    }
}

/// The error of [`BumpAlloc::try_alloc_try_with`](crate::BumpAlloc::try_alloc_try_with) and the
/// other `try_` methods with a fallible initialiser: either the arena could not allocate, or the
/// initialiser returned an error.
///
/// ```
/// use arena_pool::{AllocOrInitError, Arena};
///
/// let arena = Arena::new();
/// let r: Result<&mut u32, AllocOrInitError<&str>> = arena.try_alloc_try_with(|| Err("bad"));
/// assert_eq!(r, Err(AllocOrInitError::Init("bad")));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocOrInitError<E> {
    /// The arena could not allocate.
    Alloc(AllocError),
    /// The initialiser returned this error.
    Init(E),
}

impl<E: fmt::Display> fmt::Display for AllocOrInitError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocOrInitError::Alloc(e) => write!(f, "arena allocation failed: {e}"),
            AllocOrInitError::Init(e) => write!(f, "initialiser failed: {e}"),
        }
    }
}

#[cfg(feature = "std")]
impl<E: fmt::Debug + fmt::Display> std::error::Error for AllocOrInitError<E> {}
