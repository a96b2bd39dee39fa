//! The schemas of the built-in types, generated from k8s-openapi's schemars impls, in the two
//! flavours the server publishes: Swagger 2.0 (`#/definitions/…`, `$ref` with sibling
//! `description` as upstream's v2 document has it) and OpenAPI 3.0 (`#/components/schemas/…`,
//! a described `$ref` wrapped in `allOf`, as upstream's v3 documents have it).
//!
//! Definition names are k8s-openapi's schema names, which are upstream's
//! (`io.k8s.api.core.v1.ConfigMap`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, …).

use k8s_openapi::api::{
    admissionregistration, apps, authentication, autoscaling, batch, certificates, coordination,
    core, discovery, events, networking, node, policy, rbac, resource, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

/// Which document flavour a schema is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Swagger 2.0 (`/openapi/v2`).
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/<gv>`).
    V3,
}

impl Flavour {
    /// The `$ref` prefix of a definition.
    pub fn ref_prefix(self) -> &'static str {
        match self {
            Flavour::V2 => "#/definitions/",
            Flavour::V3 => "#/components/schemas/",
        }
    }

    /// A `$ref` to definition `name`.
    pub fn reference(self, name: &str) -> Value {
        json!({ "$ref": format!("{}{name}", self.ref_prefix()) })
    }
}

/// Declares the built-in kinds with their k8s-openapi types: generates the registration of
/// every schema and the kind → definition-name lookup.
macro_rules! builtin_kinds {
    ($( ($group:literal, $version:literal, $kind:literal) => $ty:ty ),* $(,)?) => {
        fn register_kinds(generator: &mut SchemaGenerator) {
            $( generator.subschema_for::<$ty>(); )*
        }

        /// Registers the kinds of one group-version only.
        fn register_group_version_kinds(generator: &mut SchemaGenerator, group: &str, version: &str) {
            $(
                if $group == group && $version == version {
                    generator.subschema_for::<$ty>();
                }
            )*
        }

        /// The definition name of a built-in kind (`None` for kinds the server does not know).
        pub fn definition_name(group: &str, version: &str, kind: &str) -> Option<String> {
            match (group, version, kind) {
                $( ($group, $version, $kind) => Some(<$ty as JsonSchema>::schema_name().into_owned()), )*
                _ => None,
            }
        }
    };
}

builtin_kinds! {
    ("", "v1", "Namespace") => core::v1::Namespace,
    ("", "v1", "ConfigMap") => core::v1::ConfigMap,
    ("", "v1", "Secret") => core::v1::Secret,
    ("", "v1", "ServiceAccount") => core::v1::ServiceAccount,
    ("", "v1", "Service") => core::v1::Service,
    ("", "v1", "Endpoints") => core::v1::Endpoints,
    ("", "v1", "Event") => core::v1::Event,
    ("", "v1", "Pod") => core::v1::Pod,
    ("", "v1", "Node") => core::v1::Node,
    ("", "v1", "PersistentVolumeClaim") => core::v1::PersistentVolumeClaim,
    ("", "v1", "PersistentVolume") => core::v1::PersistentVolume,
    ("", "v1", "LimitRange") => core::v1::LimitRange,
    ("", "v1", "ResourceQuota") => core::v1::ResourceQuota,
    ("", "v1", "ReplicationController") => core::v1::ReplicationController,
    ("", "v1", "PodTemplate") => core::v1::PodTemplate,
    ("", "v1", "Binding") => core::v1::Binding,
    ("", "v1", "ComponentStatus") => core::v1::ComponentStatus,
    ("autoscaling", "v2", "HorizontalPodAutoscaler") => autoscaling::v2::HorizontalPodAutoscaler,
    ("autoscaling", "v1", "HorizontalPodAutoscaler") => autoscaling::v1::HorizontalPodAutoscaler,
    ("certificates.k8s.io", "v1", "CertificateSigningRequest")
        => certificates::v1::CertificateSigningRequest,
    ("node.k8s.io", "v1", "RuntimeClass") => node::v1::RuntimeClass,
    ("resource.k8s.io", "v1", "DeviceClass") => resource::v1::DeviceClass,
    ("resource.k8s.io", "v1", "ResourceClaim") => resource::v1::ResourceClaim,
    ("resource.k8s.io", "v1", "ResourceClaimTemplate") => resource::v1::ResourceClaimTemplate,
    ("resource.k8s.io", "v1", "ResourceSlice") => resource::v1::ResourceSlice,
    ("storage.k8s.io", "v1", "CSIDriver") => storage::v1::CSIDriver,
    ("storage.k8s.io", "v1", "CSINode") => storage::v1::CSINode,
    ("storage.k8s.io", "v1", "CSIStorageCapacity") => storage::v1::CSIStorageCapacity,
    ("storage.k8s.io", "v1", "VolumeAttachment") => storage::v1::VolumeAttachment,
    ("storage.k8s.io", "v1", "VolumeAttributesClass") => storage::v1::VolumeAttributesClass,
    ("networking.k8s.io", "v1", "IPAddress") => networking::v1::IPAddress,
    ("networking.k8s.io", "v1", "ServiceCIDR") => networking::v1::ServiceCIDR,
    ("apps", "v1", "Deployment") => apps::v1::Deployment,
    ("apps", "v1", "ReplicaSet") => apps::v1::ReplicaSet,
    ("apps", "v1", "StatefulSet") => apps::v1::StatefulSet,
    ("apps", "v1", "DaemonSet") => apps::v1::DaemonSet,
    ("apps", "v1", "ControllerRevision") => apps::v1::ControllerRevision,
    ("batch", "v1", "Job") => batch::v1::Job,
    ("batch", "v1", "CronJob") => batch::v1::CronJob,
    ("coordination.k8s.io", "v1", "Lease") => coordination::v1::Lease,
    ("events.k8s.io", "v1", "Event") => events::v1::Event,
    ("discovery.k8s.io", "v1", "EndpointSlice") => discovery::v1::EndpointSlice,
    ("policy", "v1", "PodDisruptionBudget") => policy::v1::PodDisruptionBudget,
    ("networking.k8s.io", "v1", "Ingress") => networking::v1::Ingress,
    ("networking.k8s.io", "v1", "IngressClass") => networking::v1::IngressClass,
    ("networking.k8s.io", "v1", "NetworkPolicy") => networking::v1::NetworkPolicy,
    ("rbac.authorization.k8s.io", "v1", "Role") => rbac::v1::Role,
    ("rbac.authorization.k8s.io", "v1", "RoleBinding") => rbac::v1::RoleBinding,
    ("rbac.authorization.k8s.io", "v1", "ClusterRole") => rbac::v1::ClusterRole,
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => rbac::v1::ClusterRoleBinding,
    ("storage.k8s.io", "v1", "StorageClass") => storage::v1::StorageClass,
    ("scheduling.k8s.io", "v1", "PriorityClass") => scheduling::v1::PriorityClass,
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
        => apiextensions::v1::CustomResourceDefinition,
    ("apiregistration.k8s.io", "v1", "APIService") => apiregistration::v1::APIService,
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")
        => admissionregistration::v1::MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")
        => admissionregistration::v1::ValidatingWebhookConfiguration,
    ("autoscaling", "v1", "Scale") => autoscaling::v1::Scale,
    ("authentication.k8s.io", "v1", "TokenReview") => authentication::v1::TokenReview,
    ("authentication.k8s.io", "v1", "SelfSubjectReview") => authentication::v1::SelfSubjectReview,
    ("authentication.k8s.io", "v1", "TokenRequest") => authentication::v1::TokenRequest,
}

/// `io.k8s.api.authentication.v1.TokenRequest`, the body of `serviceaccounts/token`.
pub const TOKEN_REQUEST: &str = "io.k8s.api.authentication.v1.TokenRequest";

/// `io.k8s.apimachinery.pkg.apis.meta.v1.Status`.
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// `io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions`.
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// `io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent`.
pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
/// `io.k8s.apimachinery.pkg.apis.meta.v1.Patch`.
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// `io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList`.
pub const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
/// `io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta`.
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// `io.k8s.api.autoscaling.v1.Scale`.
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

fn settings(flavour: Flavour) -> SchemaSettings {
    match flavour {
        Flavour::V2 => {
            // Swagger 2.0 is draft-4-like: keep `$ref` siblings (kubectl 1.20's proto model
            // only follows a bare `$ref`, never `allOf`).
            let mut settings = SchemaSettings::draft07();
            settings.meta_schema = None;
            settings.transforms.clear();
            settings
        }
        Flavour::V3 => SchemaSettings::openapi3(),
    }
}

/// Every definition of the built-in kinds and the meta types the paths refer to, in `flavour`.
pub fn definitions(flavour: Flavour) -> Map<String, Value> {
    definitions_with(flavour, register_kinds)
}

/// The definitions of the kinds of one group-version (with everything they refer to), the
/// meta types the paths refer to and the `autoscaling/v1` Scale of scale subresources, in
/// `flavour`: what that group-version's document needs, without generating every type.
pub fn group_version_definitions(
    flavour: Flavour,
    group: &str,
    version: &str,
) -> Map<String, Value> {
    definitions_with(flavour, |generator| {
        register_group_version_kinds(generator, group, version);
        generator.subschema_for::<autoscaling::v1::Scale>();
        if group.is_empty() {
            generator.subschema_for::<authentication::v1::TokenRequest>();
        }
    })
}

fn definitions_with(
    flavour: Flavour,
    register: impl FnOnce(&mut SchemaGenerator),
) -> Map<String, Value> {
    let mut generator = SchemaGenerator::new(settings(flavour));
    register(&mut generator);
    generator.subschema_for::<meta::v1::Status>();
    generator.subschema_for::<meta::v1::DeleteOptions>();
    generator.subschema_for::<meta::v1::WatchEvent<core::v1::ConfigMap>>();
    generator.subschema_for::<meta::v1::Patch>();
    generator.subschema_for::<meta::v1::APIResourceList>();
    generator.subschema_for::<meta::v1::ListMeta>();
    let mut defs = generator.take_definitions(true);
    // Upstream publishes the CRD's free-form JSON types with a description only (any value):
    // a `type: object` or `oneOf` makes kubectl's client-side validation refuse e.g. a string
    // `default` in a CRD schema.
    for name in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        let key = format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}");
        if let Some(Value::Object(def)) = defs.get_mut(&key) {
            def.retain(|k, _| k == "description");
        }
    }
    defs
}

/// The `<Kind>List` schema of a kind (k8s-openapi has no schema for its generic `List<T>`).
pub fn list_schema(flavour: Flavour, item_definition: &str, kind: &str) -> Value {
    let metadata = match flavour {
        Flavour::V2 => json!({
            "$ref": format!("{}{LIST_META}", flavour.ref_prefix()),
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        }),
        Flavour::V3 => json!({
            "allOf": [flavour.reference(LIST_META)],
            "default": {},
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        }),
    };
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string",
            },
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": flavour.reference(item_definition),
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string",
            },
            "metadata": metadata,
        },
    })
}
