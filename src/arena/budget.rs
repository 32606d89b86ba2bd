//! The allocation limit's rule, once for every arena: what counts as held from the backing
//! allocator (chunks and large blocks, headers included, and for a `SyncArena` the bytes other
//! threads are taking right now), and whether a request for more stays under the limit
//! (docs/DESIGN.md §4).

use crate::error::Failure;

/// What an arena holds from its backing allocator, and its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Cap on `held`, if any.
    pub(crate) limit: Option<usize>,
    /// Bytes held, or being taken, from the backing allocator.
    pub(crate) held: usize,
}

impl Budget {
    /// Fails when `more` bytes from the backing allocator would pass the limit.
    #[inline]
    pub(crate) fn admit(self, more: usize) -> Result<(), Failure> {
        match self.limit {
            Some(limit) if more > limit.saturating_sub(self.held) => {
                Err(Failure::LimitReached { limit })
            }
            _ => Ok(()),
        }
    }

    /// The limit and the bytes left under it, for sizing a new chunk (`None`: no limit).
    #[inline]
    pub(crate) fn headroom(self) -> Option<(usize, usize)> {
        self.limit
            .map(|limit| (limit, limit.saturating_sub(self.held)))
    }
}

#[cfg(test)]
mod tests {
    use super::Budget;
    use crate::error::Failure;

    #[test]
    fn a_request_is_admitted_up_to_the_limit_and_not_a_byte_more() {
        let b = Budget {
            limit: Some(100),
            held: 60,
        };
        assert_eq!(b.admit(40), Ok(()));
        assert_eq!(b.admit(41), Err(Failure::LimitReached { limit: 100 }));
        assert_eq!(b.headroom(), Some((100, 40)));
        // Held past the limit (a limit lowered below what is held): nothing more is admitted.
        let over = Budget {
            limit: Some(10),
            held: 60,
        };
        assert_eq!(over.admit(1), Err(Failure::LimitReached { limit: 10 }));
        assert_eq!(over.admit(0), Ok(()));
        assert_eq!(over.headroom(), Some((10, 0)));
        let free = Budget {
            limit: None,
            held: usize::MAX,
        };
        assert_eq!(free.admit(usize::MAX), Ok(()));
        assert_eq!(free.headroom(), None);
    }
}
