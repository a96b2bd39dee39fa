//! Periodic compaction.
