//! Keeps the Node authorizer's graph current from informers (upstream `graph_populator.go`):
//! pods, persistent volumes, volume attachments and resource slices. Nothing is read from
//! storage per request.

use std::sync::Arc;

use apiserver::registry::informer::InformerEvent;
use serde_json::Value;

use crate::apis::json::str_at;

use super::graph::{Graph, VertexType};
use crate::informers::SharedInformers;

/// The string at the dotted `path`, empty when absent.
fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    str_at(v, path).unwrap_or_default()
}

fn on_pod(graph: &Graph, event: &InformerEvent) {
    match event {
        InformerEvent::Added(pod) | InformerEvent::Modified { new: pod, .. } => {
            // An unscheduled pod grants nothing yet; once bound, its node never changes.
            if !text(pod, "spec.nodeName").is_empty() {
                graph.add_pod(pod);
            }
        }
        InformerEvent::Deleted(pod) => {
            graph.delete_pod(text(pod, "metadata.namespace"), text(pod, "metadata.name"))
        }
    }
}

fn on_pv(graph: &Graph, event: &InformerEvent) {
    match event {
        InformerEvent::Added(pv) | InformerEvent::Modified { new: pv, .. } => graph.add_pv(pv),
        InformerEvent::Deleted(pv) => graph.delete_pv(text(pv, "metadata.name")),
    }
}

/// Volume attachments and resource slices: cluster-scoped objects naming their node.
fn on_node_owned(graph: &Graph, ty: VertexType, event: &InformerEvent) {
    match event {
        InformerEvent::Added(obj) | InformerEvent::Modified { new: obj, .. } => {
            graph.set_node_of(ty, text(obj, "metadata.name"), text(obj, "spec.nodeName"))
        }
        InformerEvent::Deleted(obj) => graph.delete(ty, text(obj, "metadata.name")),
    }
}

/// Subscribes `graph` to the shared informers of pods, persistent volumes, volume
/// attachments and resource slices (a resource the server does not have is skipped).
pub fn populate(graph: &Arc<Graph>, informers: &SharedInformers) {
    type Handler = fn(&Graph, &InformerEvent);
    let volume_attachment: Handler = |g, e| on_node_owned(g, VertexType::VolumeAttachment, e);
    let resource_slice: Handler = |g, e| on_node_owned(g, VertexType::ResourceSlice, e);
    let wiring: [(&str, &str, Handler); 4] = [
        ("", "pods", on_pod),
        ("", "persistentvolumes", on_pv),
        ("storage.k8s.io", "volumeattachments", volume_attachment),
        ("resource.k8s.io", "resourceslices", resource_slice),
    ];
    for (group, resource, handler) in wiring {
        let Some(informer) = informers.informer(group, resource) else {
            continue;
        };
        let graph = graph.clone();
        informer.add_handler(Arc::new(move |event: &InformerEvent| {
            handler(&graph, event)
        }));
    }
}
