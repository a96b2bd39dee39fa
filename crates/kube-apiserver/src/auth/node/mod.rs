//! The Node authorization mode (`--authorization-mode=Node`, upstream
//! `plugin/pkg/auth/authorizer/node`): kubelets reach the objects of the pods bound to their
//! node, as a graph kept current by informers says.

use std::sync::Arc;

pub mod authorizer;
pub mod graph;
pub mod populator;

pub use authorizer::NodeAuthorizer;

use crate::bootstrappolicy::node_rules;
use crate::informers::SharedInformers;

/// The Node authorizer, its graph fed by the shared informers.
pub fn node_authorizer(informers: &SharedInformers) -> NodeAuthorizer {
    let graph = Arc::new(graph::Graph::new());
    populator::populate(&graph, informers);
    NodeAuthorizer::new(graph, node_rules())
}
