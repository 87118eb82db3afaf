//! One time budget for a whole fetch: name resolution, every redirect hop and the body all
//! draw from it, so a chain of slow hops cannot add up to more than the caller allowed.

use std::time::{Duration, Instant};

use super::error::BrowseError;

/// The moment a fetch must be finished by, with the limit it came from (for messages).
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    /// `None` when the limit is so large that `Instant` cannot represent its end: such a
    /// fetch is simply not time-limited.
    ends_at: Option<Instant>,
    limit: Duration,
}

impl Deadline {
    /// Starts the clock now for a request allowed to take `limit`.
    pub(super) fn starting_now(limit: Duration) -> Self {
        Deadline {
            ends_at: Instant::now().checked_add(limit),
            limit,
        }
    }

    /// Time left, `Ok(None)` when unlimited, or the timeout error once the budget is spent.
    pub(super) fn remaining(&self) -> Result<Option<Duration>, BrowseError> {
        let Some(ends_at) = self.ends_at else {
            return Ok(None);
        };
        let left = ends_at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.timeout_error())
        } else {
            Ok(Some(left))
        }
    }

    /// The error reported when this deadline passes.
    pub(super) fn timeout_error(&self) -> BrowseError {
        BrowseError::Timeout { limit: self.limit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_limit_is_already_spent() {
        let deadline = Deadline::starting_now(Duration::ZERO);
        assert!(matches!(
            deadline.remaining(),
            Err(BrowseError::Timeout { .. })
        ));
    }

    #[test]
    fn unrepresentable_limit_means_unlimited() {
        let deadline = Deadline::starting_now(Duration::MAX);
        assert!(matches!(deadline.remaining(), Ok(None)));
    }

    #[test]
    fn ordinary_limit_leaves_time() {
        let deadline = Deadline::starting_now(Duration::from_secs(60));
        let left = deadline.remaining().ok().flatten();
        assert!(left.is_some_and(|duration| duration <= Duration::from_secs(60)));
    }
}
