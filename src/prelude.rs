//! The crate's traits, for a glob import: `use arena_pool::prelude::*;`.
//!
//! It holds traits only (their methods need them in scope); types are imported by name, so that
//! a glob import never shadows a name of std's prelude (such as `String`). Calling the arena
//! types' own methods needs no import: the typed API is inherent on each arena type too, and
//! [`BumpAlloc`] is for code generic over them.
//!
//! ```
//! use arena_pool::Arena;
//! use arena_pool::allocator_api2::vec::Vec;
//! use arena_pool::prelude::*;
//!
//! let arena = Arena::new();
//! let v: Vec<_, _> = "a b c".split(' ').collect_in(&arena);
//! assert_eq!(v, ["a", "b", "c"]);
//! ```

pub use crate::BumpAlloc;
pub use crate::collections::CollectIn;
pub use crate::collections::FromIteratorIn;
pub use crate::collections::TryFromIteratorIn;
#[cfg(feature = "serde")]
pub use crate::serde::DeserializeIn;
