//! The watch cache (upstream `pkg/storage/cacher`).
