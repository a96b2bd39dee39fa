//! Which transformer a resource's values go through (upstream's `ResourceTransformers`,
//! `DynamicTransformers` and `transformerFromOverrides`): the resource's own entry, else its
//! group's `*.<group>` entry, else `*.*`, else `identity`. The set can be replaced while the
//! server runs (automatic reload); every value read or written after that uses the new one.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;

use super::identity::Identity;
use super::{Context, TransformError, Transformer, Untransformed};

/// A group and resource, as encryption configurations name them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    /// The API group (`""` for the core group, `*` for any).
    pub group: String,
    /// The resource (`*` for any).
    pub resource: String,
}

impl GroupResource {
    /// A group-resource.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// Parses `resource[.group]` as upstream's `schema.ParseGroupResource`: `secrets`,
    /// `deployments.apps`, `*.` (every core resource), `*.apps`, `*.*`.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", s),
        }
    }

    /// Every resource of any group (`*.*`).
    pub fn any() -> Self {
        GroupResource::new("*", "*")
    }

    /// How upstream's configuration errors print it (`*.` for every core resource).
    pub fn yaml_string(&self) -> String {
        if self.group.is_empty() && self.resource == "*" {
            "*.".to_string()
        } else {
            self.to_string()
        }
    }
}

impl fmt::Display for GroupResource {
    /// `secrets`, `deployments.apps` (upstream's `GroupResource.String`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// The transformers an encryption configuration gives its resources (exact names and
/// wildcards as written).
#[derive(Clone, Default)]
pub struct TransformerSet {
    overrides: HashMap<GroupResource, Arc<dyn Transformer>>,
}

impl fmt::Debug for TransformerSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<String> = self.overrides.keys().map(|g| g.yaml_string()).collect();
        names.sort();
        f.debug_struct("TransformerSet")
            .field("resources", &names)
            .finish()
    }
}

impl TransformerSet {
    /// A set from `(group-resource, transformer)` entries.
    pub fn new(overrides: HashMap<GroupResource, Arc<dyn Transformer>>) -> Self {
        TransformerSet { overrides }
    }

    /// Whether no resource is transformed.
    pub fn is_empty(&self) -> bool {
        self.overrides.is_empty()
    }

    /// The transformer of `resource` (`group_any` is `*.<its group>`).
    fn resolve(
        &self,
        resource: &GroupResource,
        group_any: &GroupResource,
        any: &GroupResource,
    ) -> Option<&Arc<dyn Transformer>> {
        if self.overrides.is_empty() {
            return None;
        }
        self.overrides
            .get(resource)
            .or_else(|| self.overrides.get(group_any))
            .or_else(|| self.overrides.get(any))
    }
}

/// The current [`TransformerSet`], replaceable at run time (upstream's `DynamicTransformers`).
pub struct ResourceTransformers {
    current: ArcSwap<TransformerSet>,
}

impl fmt::Debug for ResourceTransformers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTransformers")
            .field("current", &*self.current.load())
            .finish()
    }
}

impl ResourceTransformers {
    /// Transformers starting with `set`.
    pub fn new(set: TransformerSet) -> Arc<Self> {
        Arc::new(ResourceTransformers {
            current: ArcSwap::from_pointee(set),
        })
    }

    /// No encryption: every resource is stored as it is.
    pub fn identity() -> Arc<Self> {
        Self::new(TransformerSet::default())
    }

    /// Replaces the set; values read or written from now on use it.
    pub fn set(&self, set: TransformerSet) {
        self.current.store(Arc::new(set));
    }

    /// The transformer of one resource, following later [`set`](Self::set)s.
    pub fn for_resource(self: &Arc<Self>, group: &str, resource: &str) -> ResourceTransformer {
        let gr = GroupResource::new(group, resource);
        ResourceTransformer {
            inner: Arc::new(ResourceInner {
                label: gr.to_string(),
                group_any: GroupResource::new(group, "*"),
                any: GroupResource::any(),
                resource: gr,
                source: Some(self.clone()),
            }),
        }
    }
}

struct ResourceInner {
    resource: GroupResource,
    group_any: GroupResource,
    any: GroupResource,
    label: String,
    source: Option<Arc<ResourceTransformers>>,
}

/// What a storage backend runs one resource's values through: reads by
/// [`from_storage`](Self::from_storage), writes by [`to_storage`](Self::to_storage), with the
/// storage key as the authenticated data. Cheap to clone.
#[derive(Clone)]
pub struct ResourceTransformer {
    inner: Arc<ResourceInner>,
}

impl fmt::Debug for ResourceTransformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTransformer")
            .field("resource", &self.inner.label)
            .finish()
    }
}

impl Default for ResourceTransformer {
    fn default() -> Self {
        Self::identity()
    }
}

impl ResourceTransformer {
    /// Stores values as they are (refusing to read encrypted ones), whatever the
    /// configuration: the transformer of storage not opened for a resource.
    pub fn identity() -> Self {
        ResourceTransformer {
            inner: Arc::new(ResourceInner {
                resource: GroupResource::new("", ""),
                group_any: GroupResource::new("", "*"),
                any: GroupResource::any(),
                label: String::new(),
                source: None,
            }),
        }
    }

    /// The resource (`secrets`, `deployments.apps`).
    pub fn resource(&self) -> &str {
        &self.inner.label
    }

    fn with<T>(&self, f: impl FnOnce(&dyn Transformer) -> T) -> T {
        let Some(source) = &self.inner.source else {
            return f(&Identity);
        };
        let set = source.current.load();
        match set.resolve(&self.inner.resource, &self.inner.group_any, &self.inner.any) {
            Some(t) => f(t.as_ref()),
            None => f(&Identity),
        }
    }

    /// The plain value of what is stored under `key`.
    pub fn from_storage(&self, key: &str, data: Bytes) -> Result<Untransformed, TransformError> {
        let ctx = Context {
            authenticated_data: key.as_bytes(),
            resource: &self.inner.label,
        };
        self.with(|t| t.transform_from_storage(data, &ctx))
    }

    /// What to store under `key` for the plain value `data`.
    pub fn to_storage(&self, key: &str, data: Bytes) -> Result<Bytes, TransformError> {
        let ctx = Context {
            authenticated_data: key.as_bytes(),
            resource: &self.inner.label,
        };
        self.with(|t| t.transform_to_storage(data, &ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::value::PrefixTransformers;
    use crate::storage::value::prefix::PrefixTransformer;

    /// Marks what it writes with a tag.
    struct Tag(&'static str);

    impl Transformer for Tag {
        fn transform_from_storage(
            &self,
            data: Bytes,
            _ctx: &Context<'_>,
        ) -> Result<Untransformed, TransformError> {
            Ok(Untransformed { data, stale: false })
        }

        fn transform_to_storage(
            &self,
            data: Bytes,
            _ctx: &Context<'_>,
        ) -> Result<Bytes, TransformError> {
            Ok(Bytes::from([self.0.as_bytes(), &data[..]].concat()))
        }
    }

    fn set(entries: &[(&str, &'static str)]) -> TransformerSet {
        TransformerSet::new(
            entries
                .iter()
                .map(|(gr, tag)| {
                    let t: Arc<dyn Transformer> = Arc::new(PrefixTransformers::new(
                        "no match",
                        vec![PrefixTransformer {
                            prefix: Bytes::new(),
                            transformer: Arc::new(Tag(tag)),
                        }],
                    ));
                    (GroupResource::parse(gr), t)
                })
                .collect(),
        )
    }

    fn written(t: &ResourceTransformer) -> String {
        let out = t.to_storage("/k", Bytes::from_static(b"v")).unwrap();
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn group_resources_parse_and_print_as_upstream() {
        assert_eq!(
            GroupResource::parse("secrets"),
            GroupResource::new("", "secrets")
        );
        assert_eq!(
            GroupResource::parse("deployments.apps"),
            GroupResource::new("apps", "deployments")
        );
        assert_eq!(
            GroupResource::parse("foos.example.com"),
            GroupResource::new("example.com", "foos")
        );
        assert_eq!(GroupResource::parse("*."), GroupResource::new("", "*"));
        assert_eq!(GroupResource::parse("*.*"), GroupResource::any());
        assert_eq!(GroupResource::parse("*.").yaml_string(), "*.");
        assert_eq!(GroupResource::new("apps", "*").yaml_string(), "*.apps");
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
    }

    #[test]
    fn exact_then_group_wildcard_then_any_then_identity() {
        let all =
            ResourceTransformers::new(set(&[("secrets", "S"), ("*.apps", "A"), ("*.*", "X")]));
        assert_eq!(written(&all.for_resource("", "secrets")), "Sv");
        assert_eq!(written(&all.for_resource("apps", "deployments")), "Av");
        assert_eq!(written(&all.for_resource("", "configmaps")), "Xv");
        assert_eq!(written(&all.for_resource("example.com", "foos")), "Xv");

        let some = ResourceTransformers::new(set(&[("*.", "C")]));
        let cm = some.for_resource("", "configmaps");
        let deploy = some.for_resource("apps", "deployments");
        assert_eq!(written(&cm), "Cv");
        assert_eq!(written(&deploy), "v", "not configured: identity");
        assert_eq!(written(&ResourceTransformer::identity()), "v");
    }

    #[test]
    fn a_new_set_applies_to_existing_resource_transformers() {
        let all = ResourceTransformers::identity();
        let secrets = all.for_resource("", "secrets");
        assert_eq!(written(&secrets), "v");
        all.set(set(&[("secrets", "N")]));
        assert_eq!(written(&secrets), "Nv");
        assert_eq!(secrets.resource(), "secrets");
    }
}
