//! Field tables of networking.k8s.io/v1 `Ingress` (`kubectl create ingress` sends protobuf).

use super::schema::{Message, Ty, inline, ptr, rep, val};
use super::types::OBJECT_META;

use Ty::{Int, String as Str};

const fn msg(m: &'static Message) -> Ty {
    Ty::Message(m)
}

pub(super) static INGRESS: Message = Message {
    name: "Ingress",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&INGRESS_SPEC)),
        val(3, "status", msg(&INGRESS_STATUS)),
    ],
};

static INGRESS_SPEC: Message = Message {
    name: "IngressSpec",
    fields: &[
        ptr(4, "ingressClassName", Str),
        ptr(1, "defaultBackend", msg(&INGRESS_BACKEND)),
        rep(2, "tls", msg(&INGRESS_TLS)),
        rep(3, "rules", msg(&INGRESS_RULE)),
    ],
};

static INGRESS_BACKEND: Message = Message {
    name: "IngressBackend",
    fields: &[
        ptr(4, "service", msg(&INGRESS_SERVICE_BACKEND)),
        ptr(3, "resource", msg(&TYPED_LOCAL_OBJECT_REFERENCE)),
    ],
};

static INGRESS_SERVICE_BACKEND: Message = Message {
    name: "IngressServiceBackend",
    fields: &[
        val(1, "name", Str),
        val(2, "port", msg(&SERVICE_BACKEND_PORT)),
    ],
};

static SERVICE_BACKEND_PORT: Message = Message {
    name: "ServiceBackendPort",
    fields: &[val(1, "name", Str), val(2, "number", Int)],
};

static INGRESS_TLS: Message = Message {
    name: "IngressTls",
    fields: &[rep(1, "hosts", Str), val(2, "secretName", Str)],
};

static INGRESS_RULE: Message = Message {
    name: "IngressRule",
    fields: &[val(1, "host", Str), inline(2, &INGRESS_RULE_VALUE)],
};

static INGRESS_RULE_VALUE: Message = Message {
    name: "IngressRuleValue",
    fields: &[ptr(1, "http", msg(&HTTP_INGRESS_RULE_VALUE))],
};

static HTTP_INGRESS_RULE_VALUE: Message = Message {
    name: "HttpIngressRuleValue",
    fields: &[rep(1, "paths", msg(&HTTP_INGRESS_PATH))],
};

static HTTP_INGRESS_PATH: Message = Message {
    name: "HttpIngressPath",
    fields: &[
        val(1, "path", Str),
        ptr(3, "pathType", Str),
        val(2, "backend", msg(&INGRESS_BACKEND)),
    ],
};

static INGRESS_STATUS: Message = Message {
    name: "IngressStatus",
    fields: &[val(1, "loadBalancer", msg(&INGRESS_LOAD_BALANCER_STATUS))],
};

static INGRESS_LOAD_BALANCER_STATUS: Message = Message {
    name: "IngressLoadBalancerStatus",
    fields: &[rep(1, "ingress", msg(&INGRESS_LOAD_BALANCER_INGRESS))],
};

static INGRESS_LOAD_BALANCER_INGRESS: Message = Message {
    name: "IngressLoadBalancerIngress",
    fields: &[
        val(1, "ip", Str),
        val(2, "hostname", Str),
        rep(4, "ports", msg(&INGRESS_PORT_STATUS)),
    ],
};

static INGRESS_PORT_STATUS: Message = Message {
    name: "IngressPortStatus",
    fields: &[
        val(1, "port", Int),
        val(2, "protocol", Str),
        ptr(3, "error", Str),
    ],
};

static TYPED_LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "TypedLocalObjectReference",
    fields: &[
        ptr(1, "apiGroup", Str),
        val(2, "kind", Str),
        val(3, "name", Str),
    ],
};
