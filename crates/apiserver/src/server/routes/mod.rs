//! Built-in non-API routes (upstream `pkg/server/routes`): index, version, profiling, the debug
//! socket, and the end-of-chain not-found handler.
