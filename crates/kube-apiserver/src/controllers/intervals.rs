//! How often the replica controllers work: upstream's constants, which its integration tests
//! change through package variables (`IdentityLeaseDurationSeconds` …) and which have no
//! flag. The black-box tests here change them through environment variables instead, read
//! once at start; they are for tests only (README, "Flags"), with upstream's defaults.

use std::time::Duration;

/// `DefaultEndpointReconcilerInterval`: how often the endpoints are reconciled.
pub const ENDPOINT_RECONCILER_INTERVAL_ENV: &str = "APISERVER_TEST_ENDPOINT_RECONCILER_INTERVAL";
/// `DefaultEndpointReconcilerTTL`: how long a master lease lives unless renewed.
pub const MASTER_LEASE_TTL_ENV: &str = "APISERVER_TEST_MASTER_LEASE_TTL";
/// `IdentityLeaseDurationSeconds`.
pub const IDENTITY_LEASE_DURATION_ENV: &str = "APISERVER_TEST_IDENTITY_LEASE_DURATION";
/// `IdentityLeaseRenewIntervalPeriod`.
pub const IDENTITY_LEASE_RENEW_INTERVAL_ENV: &str = "APISERVER_TEST_IDENTITY_LEASE_RENEW_INTERVAL";
/// `IdentityLeaseGCPeriod`.
pub const IDENTITY_LEASE_GC_PERIOD_ENV: &str = "APISERVER_TEST_IDENTITY_LEASE_GC_PERIOD";

/// The intervals in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intervals {
    /// How often the `kubernetes` Service's endpoints are reconciled (10 s).
    pub endpoint_reconciler: Duration,
    /// The master leases' time to live (15 s).
    pub master_lease_ttl: Duration,
    /// The identity leases' `leaseDurationSeconds` (3600 s).
    pub identity_lease_duration: Duration,
    /// How often the identity lease is renewed (10 s).
    pub identity_lease_renew: Duration,
    /// How often expired identity leases are collected (3600 s).
    pub identity_lease_gc: Duration,
}

impl Default for Intervals {
    fn default() -> Self {
        Intervals {
            endpoint_reconciler: Duration::from_secs(10),
            master_lease_ttl: Duration::from_secs(15),
            identity_lease_duration: Duration::from_secs(3600),
            identity_lease_renew: Duration::from_secs(10),
            identity_lease_gc: Duration::from_secs(3600),
        }
    }
}

impl Intervals {
    /// Upstream's intervals, with any of the environment variables above (Go durations)
    /// applied; a bad value is a start-up error naming the variable.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut intervals = Intervals::default();
        for (name, field) in [
            (
                ENDPOINT_RECONCILER_INTERVAL_ENV,
                &mut intervals.endpoint_reconciler,
            ),
            (MASTER_LEASE_TTL_ENV, &mut intervals.master_lease_ttl),
            (
                IDENTITY_LEASE_DURATION_ENV,
                &mut intervals.identity_lease_duration,
            ),
            (
                IDENTITY_LEASE_RENEW_INTERVAL_ENV,
                &mut intervals.identity_lease_renew,
            ),
            (
                IDENTITY_LEASE_GC_PERIOD_ENV,
                &mut intervals.identity_lease_gc,
            ),
        ] {
            let Some(value) = lookup(name) else {
                continue;
            };
            let parsed = apiserver::util::duration::parse(&value)
                .map_err(|e| format!("{name}={value:?}: {e}"))?;
            if parsed.is_zero() {
                return Err(format!("{name}={value:?}: must be positive"));
            }
            *field = parsed;
        }
        Ok(intervals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_upstreams_and_variables_override_them() {
        assert_eq!(Intervals::from_lookup(|_| None), Ok(Intervals::default()));
        let set =
            Intervals::from_lookup(|name| (name == MASTER_LEASE_TTL_ENV).then(|| "2s".to_string()))
                .unwrap();
        assert_eq!(set.master_lease_ttl, Duration::from_secs(2));
        assert_eq!(set.endpoint_reconciler, Duration::from_secs(10));
        let err = Intervals::from_lookup(|name| {
            (name == IDENTITY_LEASE_GC_PERIOD_ENV).then(|| "soon".to_string())
        })
        .unwrap_err();
        assert!(
            err.starts_with("APISERVER_TEST_IDENTITY_LEASE_GC_PERIOD=\"soon\": "),
            "{err}"
        );
        assert!(
            Intervals::from_lookup(|name| (name == MASTER_LEASE_TTL_ENV).then(|| "0s".into()))
                .is_err()
        );
    }
}
