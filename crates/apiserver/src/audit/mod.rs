//! Auditing: policy, events, backends and the audit filters.
