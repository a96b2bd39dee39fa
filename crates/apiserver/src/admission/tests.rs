use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;

/// Records what it saw; adds a label when mutating; refuses objects named `bad`.
struct Recorder {
    name: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
    reinvoke_once: bool,
}

#[async_trait::async_trait]
impl Plugin for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    fn handles(&self, operation: Operation) -> bool {
        operation != Operation::Connect
    }
    fn mutates(&self) -> bool {
        true
    }
    fn validates(&self) -> bool {
        true
    }
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        self.seen.lock().unwrap().push(format!(
            "admit {} reinvoke={}",
            self.name,
            attrs.is_reinvoke()
        ));
        if let Some(obj) = attrs.object.as_mut() {
            obj["metadata"]["labels"][self.name] = json!("yes");
        }
        if self.reinvoke_once && !attrs.is_reinvoke() {
            attrs.request_reinvocation();
        }
        Ok(())
    }
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("validate {}", self.name));
        if attrs.reported_name() == "bad" {
            return Err(forbidden(attrs, "bad names are refused"));
        }
        Ok(())
    }
}

fn request(chain: Chain) -> RequestAdmission {
    RequestAdmission {
        chain: Arc::new(chain),
        kind: GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        },
        resource: GroupVersionResource {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
        },
        subresource: String::new(),
        options: json!({"fieldManager": "kubectl"}),
        dry_run: false,
        user: Arc::new(crate::request::UserInfo::default()),
        warnings: None,
        audit: None,
    }
}

#[tokio::test]
async fn mutating_plugins_run_in_order_and_rerun_once_when_one_asks() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let plugin = |name, reinvoke_once| {
        Arc::new(Recorder {
            name,
            seen: seen.clone(),
            reinvoke_once,
        }) as Arc<dyn Plugin>
    };
    let adm = request(Chain::new(vec![plugin("a", true), plugin("b", false)]));
    let mut obj = json!({"metadata": {"name": "x"}});
    adm.admit(Operation::Create, "ns", "x", &mut obj, None)
        .await
        .unwrap();
    assert_eq!(obj["metadata"]["labels"], json!({"a": "yes", "b": "yes"}));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "admit a reinvoke=false",
            "admit b reinvoke=false",
            "admit a reinvoke=true",
            "admit b reinvoke=true"
        ]
    );
}

#[tokio::test]
async fn a_refusal_names_the_resource_and_the_generate_name() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let adm = request(Chain::new(vec![Arc::new(Recorder {
        name: "a",
        seen: seen.clone(),
        reinvoke_once: false,
    })]));
    let mut obj = json!({"metadata": {"name": "bad"}});
    let err = adm
        .validate(Operation::Create, "ns", "", Some(&mut obj), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), http::StatusCode::FORBIDDEN);
    assert_eq!(
        err.0.message,
        "configmaps \"bad\" is forbidden: bad names are refused"
    );
    // The object comes back after validation.
    assert_eq!(obj["metadata"]["name"], "bad");
    let attrs = Attributes::new(
        Operation::Create,
        GroupVersionKind::default(),
        GroupVersionResource::default(),
        Arc::default(),
    );
    assert_eq!(attrs.reported_name(), "Unknown");
}

#[test]
fn options_carry_their_kind_and_drop_empty_fields() {
    let opts = options_object(
        Operation::Create,
        &json!({"dryRun": [], "fieldManager": "m"}),
    );
    assert_eq!(
        opts,
        Some(json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "m"}))
    );
    assert_eq!(options_object(Operation::Connect, &Value::Null), None);
}
