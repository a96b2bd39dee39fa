use super::*;
use crate::storage::value::ResourceTransformers;

/// 32 bytes, base64.
const KEY32: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbywgb2s=";
/// 16 bytes, base64.
const KEY16: &str = "c2VjcmV0IGlzIHNlY3VyZQ==";

fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enc.yaml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn load_text(text: &str) -> Result<LoadedEncryptionConfig, String> {
    let (_dir, path) = write(text);
    load_encryption_config(&path).map_err(|e| e.0)
}

fn err_of(text: &str) -> String {
    match load_text(text) {
        Ok(_) => panic!("the configuration should be refused"),
        Err(e) => e,
    }
}

fn config(resources: &str, providers: &str) -> String {
    format!(
        "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources:\n- resources: {resources}\n  providers:\n{providers}"
    )
}

#[test]
fn valid_yaml_and_json_configs_load_with_their_hash() {
    let yaml = config(
        "[secrets, '*.apps']",
        &format!(
            "  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY32}\n  - aesgcm:\n      keys:\n      - name: k\n        secret: {KEY16}\n  - secretbox:\n      keys:\n      - name: s\n        secret: {KEY32}\n  - identity: {{}}\n"
        ),
    );
    let loaded = load_text(&yaml).unwrap();
    assert!(loaded.content_hash.starts_with("sha256:"));
    assert_eq!(loaded.content_hash.len(), "sha256:".len() + 64);
    let json = r#"{"kind":"EncryptionConfiguration","apiVersion":"apiserver.config.k8s.io/v1","resources":[{"resources":["secrets"],"providers":[{"identity":{}}]}]}"#;
    load_text(json).unwrap();
    // The legacy kind upstream still reads.
    load_text("kind: EncryptionConfig\napiVersion: v1\nresources:\n- resources: [secrets]\n  providers:\n  - identity: {}\n").unwrap();
}

#[test]
fn a_loaded_config_encrypts_the_configured_resources_only() {
    let yaml = config(
        "[secrets]",
        &format!("  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY32}\n"),
    );
    let loaded = load_text(&yaml).unwrap();
    let all = ResourceTransformers::new(loaded.transformers);
    let secrets = all.for_resource("", "secrets");
    let key = "/registry/secrets/ns/a";
    let stored = secrets.to_storage(key, Bytes::from_static(b"{}")).unwrap();
    assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"), "{stored:?}");
    assert_eq!(&secrets.from_storage(key, stored).unwrap().data[..], b"{}");
    // Plain data is not readable without identity in the list.
    assert_eq!(
        secrets
            .from_storage(key, Bytes::from_static(b"{}"))
            .unwrap_err()
            .to_string(),
        "no matching prefix found"
    );
    let configmaps = all.for_resource("", "configmaps");
    assert_eq!(
        &configmaps
            .to_storage("/registry/configmaps/ns/a", Bytes::from_static(b"{}"))
            .unwrap()[..],
        b"{}"
    );
}

#[test]
fn unreadable_and_empty_files_are_refused_with_upstream_texts() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let err = load_encryption_config(&missing).unwrap_err().0;
    assert_eq!(
        err,
        format!(
            "error while parsing file: error while loading file: error reading encryption provider configuration file {:?}: open {}: no such file or directory",
            missing.display().to_string(),
            missing.display()
        )
    );
    let (_d, path) = write("");
    assert_eq!(
        load_encryption_config(&path).unwrap_err().0,
        format!(
            "error while parsing file: error while loading file: encryption provider configuration file {:?} is empty",
            path.display().to_string()
        )
    );
}

#[test]
fn unknown_kinds_versions_and_fields_are_refused() {
    let err = err_of(
        "kind: EncryptionConfigurations\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n",
    );
    assert!(err.contains(r#"no kind "EncryptionConfigurations" is registered for version "apiserver.config.k8s.io/v1""#), "{err}");
    let err = err_of(
        "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v9\nresources: []\n",
    );
    assert!(err.contains(r#"no kind "EncryptionConfiguration" is registered for version "apiserver.config.k8s.io/v9""#), "{err}");
    let err = err_of("kinds: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\n");
    assert!(
        err.contains("error decoding encryption provider configuration file"),
        "{err}"
    );
    assert!(err.contains("Object 'Kind' is missing"), "{err}");
    let err = err_of("kind: AuthenticationConfiguration\napiVersion: apiserver.config.k8s.io/v1\n");
    assert_eq!(
        err,
        "error while parsing file: got unexpected config type: apiserver.config.k8s.io/v1, Kind=AuthenticationConfiguration"
    );
    // An unknown provider is an unknown field of the provider.
    let err = err_of(&config("[secrets]", "  - rot13:\n      keys: []\n"));
    assert!(
        err.ends_with(r#"strict decoding error: unknown field "resources[0].providers[0].rot13""#),
        "{err}"
    );
}

#[test]
fn invalid_keys_and_lists_get_upstream_field_errors() {
    let err = err_of(&config(
        "[secrets]",
        "  - aescbc:\n      keys:\n      - name: key1\n        secret: c2hvcnQ=\n",
    ));
    assert_eq!(
        err,
        r#"error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]"#
    );
    let err = err_of(&config(
        "[secrets]",
        "  - secretbox:\n      keys:\n      - name: key1\n        secret: '%%%'\n",
    ));
    assert_eq!(
        err,
        r#"error while parsing file: resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded"#
    );
    let err = err_of(&config(
        "[secrets]",
        &format!("  - secretbox:\n      keys:\n      - name: key1\n        secret: {KEY16}\n"),
    ));
    assert!(err.ends_with("got 16, expected one of [32]"), "{err}");
    let err = err_of(&config("[secrets]", "    []\n"));
    assert_eq!(
        err,
        "error while parsing file: resources[0].providers: Required value: at least one resources[0].providers is required"
    );
    let err = err_of(
        "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources: []\n",
    );
    assert_eq!(
        err,
        "error while parsing file: resources: Required value: at least one resources is required"
    );
    let err = err_of(&config("[secrets, secrets]", "  - identity: {}\n"));
    assert_eq!(
        err,
        r#"error while parsing file: resources[0].resources: Invalid value: []string{"secrets", "secrets"}: the same resource cannot be specified multiple times"#
    );
    let err = err_of(&config("[secrets, '*.']", "  - identity: {}\n"));
    assert!(err.contains("using overlapping resources"), "{err}");
    let err = err_of(&config("['*', Secrets]", "  - aescbc:\n      keys: []\n"));
    assert_eq!(
        err,
        r#"error while parsing file: [resources[0].resources: Invalid value: []string{"*", "Secrets"}: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked, resources[0].resources[0]: Invalid value: "*": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources, resources[0].resources[1]: Invalid value: "Secrets": resource name should not contain capital letters, resources[0].providers[0].aescbc.keys: Required value: at least one keys is required]"#
    );
    let err = err_of(&config("[secrets]", "  - {}\n"));
    assert!(
        err.ends_with("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"),
        "{err}"
    );
    let err = err_of(&config(
        "[secrets]",
        &format!(
            "  - identity: {{}}\n    aescbc:\n      keys:\n      - name: k\n        secret: {KEY32}\n"
        ),
    ));
    assert!(
        err.contains("more than one provider specified in a single element"),
        "{err}"
    );
    assert!(
        !err.contains(KEY32),
        "secrets never appear in errors: {err}"
    );
}

#[test]
fn masked_resources_and_kms_are_refused_when_building() {
    let yaml = "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources:\n- resources: ['*.apps']\n  providers:\n  - identity: {}\n- resources: [deployments.apps]\n  providers:\n  - identity: {}\n";
    assert_eq!(
        err_of(yaml),
        r#"error while building transformers: resource "deployments.apps" is masked by earlier rule "*.apps""#
    );
    let yaml = "kind: EncryptionConfiguration\napiVersion: apiserver.config.k8s.io/v1\nresources:\n- resources: ['*.*']\n  providers:\n  - identity: {}\n- resources: [secrets]\n  providers:\n  - identity: {}\n";
    assert_eq!(
        err_of(yaml),
        r#"error while building transformers: resource "secrets" is masked by earlier rule "*.*""#
    );
    let err = err_of(&config(
        "[secrets]",
        "  - kms:\n      apiVersion: v2\n      name: plugin\n      endpoint: unix:///tmp/kms.sock\n",
    ));
    assert!(
        err.starts_with(
            "error while building transformers: could not configure KMS plugin \"plugin\""
        ),
        "{err}"
    );
}

#[test]
fn the_controller_applies_a_changed_valid_file_and_keeps_the_old_one_otherwise() {
    let first = config(
        "[secrets]",
        &format!("  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY32}\n"),
    );
    let (_dir, path) = write(&first);
    let loaded = load_encryption_config(&path).unwrap();
    let all = ResourceTransformers::new(loaded.transformers);
    let secrets = all.for_resource("", "secrets");
    let mut controller = controller::EncryptionConfigController::new(
        &path,
        all.clone(),
        loaded.content_hash,
        "apiserver-test".into(),
    );
    let written = |t: &crate::storage::value::ResourceTransformer| {
        t.to_storage("/registry/secrets/a/b", Bytes::from_static(b"{}"))
            .unwrap()
    };
    assert!(!controller.process(), "unchanged");
    assert!(written(&secrets).starts_with(b"k8s:enc:aescbc:v1:key1:"));

    std::fs::write(&path, "not: [valid").unwrap();
    assert!(!controller.process(), "an invalid file is not applied");
    assert!(written(&secrets).starts_with(b"k8s:enc:aescbc:v1:key1:"));

    let second = config(
        "[secrets]",
        &format!(
            "  - secretbox:\n      keys:\n      - name: key2\n        secret: {KEY32}\n  - aescbc:\n      keys:\n      - name: key1\n        secret: {KEY32}\n"
        ),
    );
    std::fs::write(&path, &second).unwrap();
    assert!(controller.process());
    let stored = written(&secrets);
    assert!(stored.starts_with(b"k8s:enc:secretbox:v1:key2:"));
    assert_eq!(
        &secrets
            .from_storage("/registry/secrets/a/b", stored)
            .unwrap()
            .data[..],
        b"{}"
    );
}
